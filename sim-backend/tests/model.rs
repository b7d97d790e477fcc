//! Behaviour of the model on small traces: PSN/ACK rules, Go-Back-N,
//! timeouts, the window, determinism, frames, service slots.

mod common;

use common::*;
use rocescope_decoders::IcrcStatus;
use rocescope_replay::Record;
use rocescope_replay::record::{
    Direction, QpState, RetransmitCause, SlotKind, TruthEvent, Verdict,
};
use rocescope_sim::{FaultKind, FaultSpec, LinkDir, OpKind, Scenario, Simulator, slots};

const ACK: u8 = 0x11;

fn teaching() -> Scenario {
    full_capture(Scenario::builtin("teaching-basic").expect("shipped"))
}

#[test]
fn every_ack_acknowledges_epsn_minus_one_and_requests_ask_for_acks() {
    // No loss: the responder ACKs every request packet with its PSN.
    let mut sc = teaching();
    sc.faults.clear();
    let recs = run(sc, 100_000);
    let f = frames(&recs);
    let tx: Vec<&F> = f.iter().filter(|x| x.dir == Some(Direction::Tx)).collect();
    let acks: Vec<&F> = f.iter().filter(|x| x.opcode == ACK).collect();
    assert_eq!(tx.len(), 8, "2 messages of 16 KiB = 8 packets");
    assert_eq!(acks.len(), tx.len(), "BALBOA ACKs every request packet");
    for (t, a) in tx.iter().zip(&acks) {
        assert_eq!(
            a.psn, t.psn,
            "ACK PSN = ePSN - 1 after accepting PSN {}",
            t.psn
        );
        assert_eq!(a.syndrome.map(|s| s >> 5), Some(0));
        assert!(a.ts_ns > t.ts_ns);
    }
    // PSNs consecutive; First carries the RETH with the whole length.
    for w in tx.windows(2) {
        assert_eq!(w[1].psn, (w[0].psn + 1) & 0xFF_FFFF);
    }
    assert_eq!(tx[0].opcode, 0x06);
    assert_eq!(tx[0].dma_len, Some(16384));
    assert_eq!(tx[3].opcode, 0x08);
}

#[test]
fn go_back_n_resends_from_the_naked_psn() {
    let recs = run(teaching(), 100_000);
    let f = frames(&recs);
    let t = truths(&recs);
    let (drop_ts, _, lost, _) = *t
        .iter()
        .find(|x| x.3 == TruthEvent::WireDrop)
        .expect("one loss");
    let (_, _, naked, _) = *t
        .iter()
        .find(|x| x.3 == TruthEvent::NakSent { code: 0 })
        .expect("a NAK");
    assert_eq!(naked, lost, "the NAK names the missing PSN");
    // Exactly one NAK for the episode although later packets also arrived out of order.
    let naks: Vec<&F> = f
        .iter()
        .filter(|x| x.opcode == ACK && x.syndrome == Some(0x60))
        .collect();
    assert_eq!(naks.len(), 1);
    assert_eq!(naks[0].psn, lost);
    // The first resent packet is the NAKed one, marked Retransmit{Nak}.
    let resent: Vec<&F> = f
        .iter()
        .filter(|x| x.dir == Some(Direction::Tx) && x.ts_ns > naks[0].ts_ns)
        .collect();
    assert_eq!(resent[0].psn, lost);
    let retx: Vec<_> = t
        .iter()
        .filter(|x| matches!(x.3, TruthEvent::Retransmit { .. }))
        .collect();
    assert_eq!(retx[0].2, lost);
    assert_eq!(
        retx[0].3,
        TruthEvent::Retransmit {
            cause: RetransmitCause::Nak
        }
    );
    assert!(retx[0].0 > drop_ts);
    // Both messages complete: the data got through.
    let acked_last = f.iter().filter(|x| x.opcode == ACK).map(|x| x.psn).max();
    assert_eq!(
        acked_last,
        f.iter()
            .filter(|x| x.dir == Some(Direction::Tx))
            .map(|x| x.psn)
            .max()
    );
}

fn single_packet_loss(nth: u64, fault: FaultKind) -> Scenario {
    let mut sc = Scenario::two_cards(OpKind::Write, 4096, 1, 1);
    sc.qps[0].messages = 1;
    sc.duration_ns = 5_000_000;
    sc.faults.push(FaultSpec {
        kind: fault,
        node: 0,
        direction: LinkDir::ToSwitch,
        at: rocescope_sim::scenario::FaultAt::Wire,
        qp: None,
        probability: 0.0,
        nth,
        start_ns: 0,
        end_ns: 0,
        delay_ns: 0,
        every_ns: 0,
    });
    sc.sniffer = Scenario::builtin("teaching-basic").and_then(|s| s.sniffer);
    full_capture(sc)
}

#[test]
fn lost_last_packet_is_resent_by_the_timer_after_1_ms() {
    let recs = run(single_packet_loss(1, FaultKind::Loss), 5_000_000);
    let f = frames(&recs);
    let t = truths(&recs);
    let tx: Vec<&F> = f.iter().filter(|x| x.dir == Some(Direction::Tx)).collect();
    assert_eq!(tx.len(), 2, "{tx:?}");
    assert_eq!(tx[0].psn, tx[1].psn);
    let gap = tx[1].ts_ns - tx[0].ts_ns;
    assert!(
        (1_000_000..1_010_000).contains(&gap),
        "timeout after {gap} ns"
    );
    assert!(t.iter().any(|x| x.3
        == TruthEvent::Retransmit {
            cause: RetransmitCause::Timeout
        }));
    assert!(f.iter().any(|x| x.opcode == ACK && x.psn == tx[0].psn));
}

#[test]
fn corrupt_frames_fail_their_icrc_and_are_recovered() {
    // Corrupted on the way into the responder, seen by the responder's sniffer.
    let mut sc = single_packet_loss(1, FaultKind::Corrupt);
    sc.faults[0].node = 1;
    sc.faults[0].direction = LinkDir::FromSwitch;
    if let Some(s) = &mut sc.sniffer {
        s.node = 1;
    }
    let recs = run(sc, 5_000_000);
    let f = frames(&recs);
    assert!(
        matches!(f[0].icrc, IcrcStatus::Bad { .. }),
        "{:?}",
        f[0].icrc
    );
    assert!(truths(&recs).iter().any(|x| x.3 == TruthEvent::WireCorrupt));
    assert_eq!(
        f.iter().filter(|x| x.icrc == IcrcStatus::Ok).count(),
        2,
        "resent + ACK"
    );
}

#[test]
fn retry_limit_puts_the_qp_in_error() {
    let mut sc = single_packet_loss(0, FaultKind::LinkDown);
    sc.params.set("timeout_next_ns", "2000000").expect("valid");
    sc.duration_ns = 100_000_000;
    let recs = run(sc, 100_000_000);
    let retries = truths(&recs)
        .iter()
        .filter(|x| {
            x.3 == TruthEvent::Retransmit {
                cause: RetransmitCause::Timeout,
            }
        })
        .count();
    assert_eq!(retries, 12);
    assert!(
        recs.iter()
            .any(|r| matches!(r, Record::QpState(q) if q.state == QpState::Err))
    );
}

#[test]
fn window_never_exceeds_its_size() {
    for window in [16u64, 5] {
        let mut sc = full_capture(Scenario::builtin("lossy-link").expect("shipped"));
        sc.params.window_packets = window;
        // The window_fill probe, sampled every cycle.
        sc.profiler.enabled = true;
        sc.profiler.every_cycles = 1;
        sc.profiler.on_change = true;
        sc.profiler.probes = vec!["window_fill".to_owned()];
        let recs = run(sc, 200_000);
        let fill: Vec<i64> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Profiler(s) => Some(s.value),
                _ => None,
            })
            .collect();
        assert!(!fill.is_empty());
        assert_eq!(
            fill.iter().max().copied(),
            Some(window as i64),
            "the window is used fully, never exceeded"
        );
        // What the sniffer sees agrees: never more than `window` PSNs beyond the last ACK.
        let f = frames(&recs);
        let mut max_sent: Option<u32> = None;
        let mut acked: Option<u32> = None;
        for x in &f {
            if x.dir == Some(Direction::Tx) {
                max_sent = Some(max_sent.map_or(x.psn, |m| m.max(x.psn)));
            } else if x.opcode == ACK {
                let upto = if x.syndrome == Some(0x60) {
                    x.psn.wrapping_sub(1)
                } else {
                    x.psn
                };
                acked = Some(acked.map_or(upto, |a| a.max(upto)));
            }
            if let Some(s) = max_sent {
                let base = acked.unwrap_or(f[0].psn.wrapping_sub(1));
                let outstanding = s.wrapping_sub(base);
                assert!(
                    u64::from(outstanding) <= window,
                    "{outstanding} outstanding at {}",
                    x.ts_ns
                );
            }
        }
    }
}

#[test]
fn same_seed_same_records_different_seed_different() {
    let sc = Scenario::builtin("default").expect("shipped");
    let a = run(sc.clone(), 300_000);
    let b = run(sc.clone(), 300_000);
    assert!(a.len() > 1000);
    assert_eq!(a, b);
    let mut other = sc;
    other.seed = 99;
    assert_ne!(a, run(other, 300_000));
}

#[test]
fn step_and_run_until_give_the_same_stream() {
    let sc = Scenario::builtin("teaching-basic").expect("shipped");
    let whole = run(sc.clone(), u64::MAX);
    let mut stepped = Vec::new();
    let mut sim = Simulator::new(sc);
    while sim.step(&mut |r| stepped.push(r)) {}
    assert_eq!(whole, stepped);
    // Chunked pulls too, and times never go backwards.
    let mut chunked = Vec::new();
    let mut sim = Simulator::new(Scenario::builtin("teaching-basic").expect("shipped"));
    let mut t = 0;
    while sim.run_until(t, &mut |r| chunked.push(r)) {
        t += 777;
    }
    assert_eq!(whole, chunked);
    let ts: Vec<u64> = whole
        .iter()
        .filter(|r| !matches!(r, Record::ProbeDef(_)))
        .map(Record::ts_ns)
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn aes_really_encrypts_on_the_wire() {
    let sc = Scenario::builtin("aes").expect("shipped");
    let mut plain_sc = sc.clone();
    for q in &mut plain_sc.qps {
        q.aes = false;
    }
    let enc = frames(&run(sc.clone(), 50_000));
    let plain = frames(&run(plain_sc, 50_000));
    let first_write = |f: &[F]| {
        f.iter()
            .find(|x| x.dir == Some(Direction::Tx) && x.opcode == 0x06)
            .cloned()
            .expect("a WRITE First")
    };
    let (e, p) = (first_write(&enc), first_write(&plain));
    assert_eq!(e.psn, p.psn);
    assert_eq!(e.icrc, IcrcStatus::Ok);
    assert_eq!(e.payload.len(), 4096);
    assert_ne!(e.payload, p.payload, "ciphertext differs from plaintext");
    let key = slots::aes_key(sc.seed, 0x100);
    let mut d = e.payload.clone();
    slots::aes_ctr_apply(&key, 0x100, u64::from(e.psn), &mut d);
    assert_eq!(d, p.payload, "decrypts back with the QP's key and counter");
    let recs = run(sc, 50_000);
    assert!(
        recs.iter()
            .any(|r| matches!(r, Record::Slot(s) if s.slot == SlotKind::Aes && s.latency_ns == 44))
    );
}

#[test]
fn dpi_drop_produces_a_nak() {
    let recs = run(Scenario::builtin("dpi-drop").expect("shipped"), 200_000);
    let t = truths(&recs);
    let (_, qpn, psn, _) = *t
        .iter()
        .find(|x| x.3 == TruthEvent::DpiDrop)
        .expect("a DPI drop");
    assert!(
        t.iter()
            .any(|x| x.3 == TruthEvent::NakSent { code: 1 } && x.2 == psn)
    );
    assert!(recs.iter().any(|r| matches!(r, Record::Slot(s)
        if s.slot == SlotKind::Dpi && s.verdict == Verdict::Drop && s.psn == psn && s.qpn == qpn)));
    assert!(recs.iter().any(
        |r| matches!(r, Record::Slot(s) if s.slot == SlotKind::Dpi && s.verdict == Verdict::Pass)
    ));
    let f = frames(&recs);
    let nak = f
        .iter()
        .find(|x| x.opcode == ACK && x.syndrome == Some(0x61))
        .expect("a NAK (invalid request) on the wire");
    assert_eq!(nak.psn, psn);
    assert_eq!(
        nak.dir,
        Some(Direction::Tx),
        "sent by the responder the sniffer sits on"
    );
    // The application slot transformed the other QP's payloads.
    assert!(
        recs.iter()
            .any(|r| matches!(r, Record::Slot(s) if s.slot == SlotKind::App))
    );
}

#[test]
fn incast_marks_ecn_and_the_connectx_sends_cnps() {
    let recs = run(Scenario::builtin("incast").expect("shipped"), 500_000);
    let t = truths(&recs);
    assert!(t.iter().any(|x| x.3 == TruthEvent::EcnMarked));
    assert!(t.iter().any(|x| x.3 == TruthEvent::CnpSent));
    assert!(
        frames(&recs).iter().any(|x| x.opcode == 0x81),
        "the CNP reaches the sniffed BALBOA"
    );
}

#[test]
fn header_only_cuts_are_54_58_70_and_whole_frames_verify() {
    let mut sc = Scenario::builtin("default").expect("shipped");
    if let Some(s) = &mut sc.sniffer {
        s.rx_cut_quirk = false;
    }
    let recs = run(sc, 100_000);
    for r in &recs {
        if let Record::Frame { data, .. } = r {
            let op = data[42];
            let want = match op {
                0x06 | 0x0A | 0x0C => 70,
                0x0D | 0x0F | 0x10 | 0x11 => 58,
                _ => 54,
            };
            assert_eq!(data.len(), want, "opcode {op:#x}");
        }
    }
}
