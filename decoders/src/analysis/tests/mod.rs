//! Hand-built traces, one per rule: the classification and pairing here,
//! the diagnosis in `diagnosis.rs`.

use super::*;
use crate::analysis::QpState;
use crate::{DecodeConfig, LinkLayer, NakCode, PacketBuilder, Reth, decode};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

struct Trace {
    an: RcAnalysis,
    t: u64,
    index: u64,
    classes: Vec<Class>,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            an: RcAnalysis::default(),
            t: 1_000_000,
            index: 0,
            classes: Vec::new(),
        }
    }

    fn push(&mut self, frame: Vec<u8>, gap_ns: u64) -> Class {
        self.t += gap_ns;
        let p = decode(&frame, LinkLayer::Ethernet, &DecodeConfig::default());
        let o = Observation::from_packet(&p, self.t, frame.len() as u32).unwrap();
        let c = self.an.observe(self.index, &o);
        self.index += 1;
        self.classes.push(c);
        for late in self.an.drain_late().collect::<Vec<_>>() {
            let c = &mut self.classes[late.index as usize];
            c.0 = (c.0 & !late.clear.0) | late.set.0;
        }
        c
    }

    fn req(&mut self, op: Opcode, psn: u32, gap_ns: u64) -> Class {
        let mut b = PacketBuilder::rocev2_ipv4(A, B, op, 0x12, psn);
        b.ext.reth = Reth {
            va: 0,
            rkey: 1,
            dma_len: 4096 * 4,
        };
        let payload = if op == Opcode::RC_READ_REQUEST {
            vec![]
        } else {
            vec![0; 4096]
        };
        self.push(b.build(&payload), gap_ns)
    }

    fn resp(&mut self, op: Opcode, psn: u32, syndrome: Syndrome, gap_ns: u64) -> Class {
        let mut b = PacketBuilder::rocev2_ipv4(B, A, op, 0x11, psn);
        b.ext.aeth.syndrome = syndrome.to_u8();
        let payload = if op.operation().is_some_and(|o| o != Operation::Acknowledge) {
            vec![0; 4096]
        } else {
            vec![]
        };
        self.push(b.build(&payload), gap_ns)
    }

    fn ack(&mut self, psn: u32, gap_ns: u64) -> Class {
        self.resp(Opcode::RC_ACK, psn, Syndrome::Ack { credits: 31 }, gap_ns)
    }

    /// A PSN sequence error NAK: the responder asks for `psn` again.
    fn seq_nak(&mut self, psn: u32, gap_ns: u64) -> Class {
        let nak = Syndrome::Nak(NakCode::PsnSequenceError);
        self.resp(Opcode::RC_ACK, psn, nak, gap_ns)
    }

    /// WRITE `*psn` lost: `*psn + 1` arrives `gap_ns` on and is NAKed 100 ns
    /// later; both are resent, the first `resend_ns` after the NAK, the
    /// second 400 ns on and ACKed `ack_ns` after it. `*psn` moves past both.
    /// The NAK's row and time.
    fn go_back_n(&mut self, psn: &mut u32, gap_ns: u64, resend_ns: u64, ack_ns: u64) -> (u64, u64) {
        self.req(Opcode::RC_WRITE_MIDDLE, *psn + 1, gap_ns);
        let nak_row = self.index;
        self.seq_nak(*psn, 100);
        let nak_ns = self.t;
        self.req(Opcode::RC_WRITE_MIDDLE, *psn, resend_ns);
        self.req(Opcode::RC_WRITE_MIDDLE, *psn + 1, 400);
        self.ack(*psn + 1, ack_ns);
        *psn += 2;
        (nak_row, nak_ns)
    }
}

const ACK: Syndrome = Syndrome::Ack { credits: 31 };

#[test]
fn clean_write_stream_is_all_new_and_pairs_the_flows() {
    let mut t = Trace::new();
    for psn in 100..110 {
        assert_eq!(t.req(Opcode::RC_WRITE_MIDDLE, psn, 400), Class::default());
        assert_eq!(t.ack(psn, 100), Class::default());
    }
    let r = t.an.report();
    assert_eq!(
        r.qps.len(),
        1,
        "{:?}",
        r.qps.iter().map(|q| q.dest_qp).collect::<Vec<_>>()
    );
    let q = &r.qps[0];
    assert_eq!((q.dest_qp, q.requester_qp), (0x12, Some(0x11)));
    assert_eq!((q.requests, q.responses, q.outstanding), (10, 10, 0));
    assert_eq!(q.next_psn, 110);
    assert_eq!(q.rtt_p50_ns, Some(100));
    assert!(r.episodes.is_empty());
    assert_eq!(r.counters.retransmitted_packets, 0);
}

#[test]
fn nak_then_go_back_n_is_one_episode_with_its_cost() {
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 100, 0);
    t.ack(100, 100);
    // 101 lost before the capture point (a responder-side capture).
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 102, 100),
        Class::OUT_OF_SEQUENCE
    );
    t.seq_nak(101, 100);
    t.req(Opcode::RC_WRITE_MIDDLE, 103, 10);
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 101, 2000),
        Class::RETRANSMISSION
    );
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 102, 10),
        Class::RETRANSMISSION
    );
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 103, 10),
        Class::RETRANSMISSION
    );
    t.ack(101, 100);
    t.ack(102, 10);
    t.ack(103, 10);
    assert_eq!(t.req(Opcode::RC_WRITE_MIDDLE, 104, 10), Class::default());
    let r = t.an.report();
    assert_eq!(r.episodes.len(), 1);
    let e = r.episodes[0];
    assert_eq!(e.cause, EpisodeCause::NakSeqErr);
    assert_eq!(
        (e.from_psn, e.packets_resent, e.bytes_resent),
        (101, 3, 3 * 4096)
    );
    assert_eq!(e.first_index, 3, "the NAK is the first evidence");
    assert!(e.recovery_ns >= 2000);
    let c = r.qps[0].counters;
    assert_eq!(
        (
            c.packet_seq_err,
            c.retransmitted_packets,
            c.capture_loss_packets
        ),
        (1, 3, 0)
    );
    assert_eq!(
        r.qps[0].episodes_by_cause,
        vec![(EpisodeCause::NakSeqErr, 1)]
    );
}

#[test]
fn a_resend_without_nak_after_silence_is_a_timeout() {
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 5, 0);
    t.req(Opcode::RC_WRITE_MIDDLE, 6, 100);
    t.ack(5, 100);
    // ACK of 6 lost; after 1 ms the requester resends 6.
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 6, 1_000_000),
        Class::RETRANSMISSION
    );
    t.ack(6, 100);
    let r = t.an.report();
    assert_eq!(r.episodes.len(), 1);
    assert_eq!(r.episodes[0].cause, EpisodeCause::Timeout);
    assert!(r.episodes[0].silence_ns >= 1_000_000);
    assert_eq!(r.counters.local_ack_timeout_err, 1);
}

#[test]
fn a_gap_that_acks_cover_is_capture_loss_not_a_retransmission() {
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 10, 0);
    // 11 and 12 went over the wire but the sniffer missed them.
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 13, 100),
        Class::OUT_OF_SEQUENCE
    );
    t.ack(13, 100);
    assert_eq!(
        t.classes[1],
        Class::CAPTURE_LOSS,
        "the late verdict replaces out-of-sequence"
    );
    let r = t.an.report();
    assert_eq!(r.counters.capture_loss_packets, 2);
    assert_eq!(r.counters.retransmitted_packets, 0);
    assert_eq!(r.counters.out_of_sequence, 0);
    assert!(r.episodes.is_empty());
}

#[test]
fn read_span_consumes_psns_and_duplicate_responses_are_flagged() {
    let mut t = Trace::new();
    t.req(Opcode::RC_READ_REQUEST, 200, 0); // 16 KiB: 4 PSNs at PMTU 4096
    t.resp(Opcode::RC_READ_RESPONSE_FIRST, 200, ACK, 1000);
    t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, 201, ACK, 10);
    t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, 202, ACK, 10);
    t.resp(Opcode::RC_READ_RESPONSE_LAST, 203, ACK, 10);
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 204, 10),
        Class::default(),
        "the READ consumed 200..203"
    );
    assert_eq!(
        t.resp(Opcode::RC_READ_RESPONSE_LAST, 203, ACK, 10),
        Class::DUPLICATE
    );
    let r = t.an.report();
    assert_eq!(r.counters.duplicate_read_responses, 1);
    assert_eq!(r.qps[0].next_psn, 205);
}

/// A READ request on the QP whose responder's QPN is `qp` (its requester's
/// is `qp - 1`), or one of its responses.
fn read_on(t: &mut Trace, qp: u32, op: Opcode, psn: u32) -> Class {
    let request = op == Opcode::RC_READ_REQUEST;
    let (src, dst, dest_qp) = if request { (A, B, qp) } else { (B, A, qp - 1) };
    let mut b = PacketBuilder::rocev2_ipv4(src, dst, op, dest_qp, psn);
    b.ext.reth = Reth {
        va: 0,
        rkey: 1,
        dma_len: 4096 * 4,
    };
    b.ext.aeth.syndrome = ACK.to_u8();
    let payload = if request { vec![] } else { vec![0; 4096] };
    t.push(b.build(&payload), 300)
}

#[test]
fn responses_seen_before_any_request_pair_with_the_qp_they_answer() {
    // A capture that starts mid-stream: QP 0x12's READ responses come
    // first, then QP 0x22's request (the one requester that has sent
    // anything), then QP 0x12's own next requests, in sequence.
    let mut t = Trace::new();
    read_on(&mut t, 0x12, Opcode::RC_READ_RESPONSE_MIDDLE, 96);
    read_on(&mut t, 0x22, Opcode::RC_READ_REQUEST, 5_000_000);
    read_on(&mut t, 0x12, Opcode::RC_READ_RESPONSE_LAST, 97);
    read_on(&mut t, 0x12, Opcode::RC_READ_REQUEST, 100);
    for (i, op) in [
        Opcode::RC_READ_RESPONSE_FIRST,
        Opcode::RC_READ_RESPONSE_MIDDLE,
        Opcode::RC_READ_RESPONSE_MIDDLE,
        Opcode::RC_READ_RESPONSE_LAST,
    ]
    .into_iter()
    .enumerate()
    {
        read_on(&mut t, 0x22, op, 5_000_000 + i as u32);
        read_on(&mut t, 0x12, op, 100 + i as u32);
    }
    read_on(&mut t, 0x22, Opcode::RC_READ_REQUEST, 5_000_004);
    read_on(&mut t, 0x12, Opcode::RC_READ_REQUEST, 104);
    assert!(
        t.classes.iter().all(|c| *c == Class::default()),
        "{:?}",
        t.classes
    );
    let r = t.an.report();
    let qp = |dest_qp: u32| r.qps.iter().find(|q| q.dest_qp == dest_qp).unwrap();
    assert_eq!(
        (qp(0x12).next_psn, qp(0x12).requester_qp),
        (108, Some(0x11))
    );
    assert_eq!(
        (qp(0x22).next_psn, qp(0x22).requester_qp),
        (5_000_008, Some(0x21))
    );
}

#[test]
fn an_ack_of_what_was_sent_before_the_capture_pairs_with_its_requester() {
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 100, 0);
    // ACKs through PSNs sent before the capture began.
    assert_eq!(t.ack(98, 100), Class::default());
    t.req(Opcode::RC_WRITE_MIDDLE, 101, 100);
    t.ack(99, 100);
    let r = t.an.report();
    assert_eq!(r.qps.len(), 1, "one conversation: {:?}", r.qps);
    assert_eq!((r.qps[0].responses, r.qps[0].requester_qp), (2, Some(0x11)));
}

#[test]
fn a_missing_read_response_is_an_implied_nak() {
    let mut t = Trace::new();
    t.req(Opcode::RC_READ_REQUEST, 50, 0);
    t.resp(Opcode::RC_READ_RESPONSE_FIRST, 50, ACK, 1000);
    assert_eq!(
        t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, 52, ACK, 10),
        Class::OUT_OF_SEQUENCE
    );
    assert_eq!(
        t.req(Opcode::RC_READ_REQUEST, 51, 500),
        Class::RETRANSMISSION
    );
    let r = t.an.report();
    assert_eq!(r.episodes[0].cause, EpisodeCause::ImpliedNak);
    assert_eq!(r.counters.implied_nak_seq_err, 1);
}

#[test]
fn duplicate_acks_rnr_and_other_naks_are_counted() {
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 1, 0);
    t.ack(1, 10);
    assert_eq!(t.ack(1, 10), Class::DUPLICATE);
    t.req(Opcode::RC_WRITE_MIDDLE, 2, 10);
    t.resp(Opcode::RC_ACK, 2, Syndrome::RnrNak { timer: 14 }, 10);
    t.resp(
        Opcode::RC_ACK,
        2,
        Syndrome::Nak(NakCode::RemoteAccessError),
        10,
    );
    let r = t.an.report();
    assert_eq!(r.counters.duplicate_acks, 1);
    assert_eq!(r.counters.rnr_nak, 1);
    assert_eq!(r.counters.nak_remote_access, 1);
}

#[test]
fn psns_wrap_at_24_bits() {
    let mut t = Trace::new();
    for psn in [0xFF_FFFE, 0xFF_FFFF, 0, 1] {
        assert_eq!(
            t.req(Opcode::RC_WRITE_MIDDLE, psn, 100),
            Class::default(),
            "psn {psn:#x}"
        );
        t.ack(psn, 50);
    }
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 0xFF_FFFF, 100),
        Class::RETRANSMISSION
    );
    assert_eq!(t.an.report().qps[0].next_psn, 2);
}

#[test]
fn cnp_and_ecn_are_counted_on_the_qp() {
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 1, 0);
    let mut b = PacketBuilder::rocev2_ipv4(A, B, Opcode::RC_WRITE_MIDDLE, 0x12, 2);
    if let crate::NetHeader::Ipv4 { ecn, .. } = &mut b.net {
        *ecn = 3;
    }
    t.push(b.build(&[0; 64]), 10);
    let mut cnp = PacketBuilder::rocev2_ipv4(B, A, Opcode::CNP, 0x11, 0);
    cnp.bth.becn = true;
    t.ack(2, 10);
    t.push(cnp.build(&[]), 10);
    let r = t.an.report();
    assert_eq!(r.counters.np_ecn_marked_roce_packets, 1);
    assert_eq!(r.counters.np_cnp_sent, 1);
    assert_eq!(r.counters.rp_cnp_handled, 1);
}

#[test]
fn a_throughput_drop_is_found_and_explained() {
    let mut t = Trace::new();
    let mut psn = 0u32;
    // Steady: a 4 KiB WRITE every 400 ns (10 GB/s) for 100 µs.
    for _ in 0..250 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 400);
        t.ack(psn, 0);
        psn += 1;
    }
    // Loss: NAK, 20 µs stall, resend.
    t.go_back_n(&mut psn, 400, 20_000, 0);
    for _ in 0..250 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 400);
        t.ack(psn, 0);
        psn += 1;
    }
    let r = t.an.report();
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    let f = &r.findings[0];
    assert_eq!(f.cause, FindingCause::LossGoBackN);
    assert!(f.before_gbytes_s > 5.0 && f.during_gbytes_s < 5.0, "{f:?}");
    rocescope_testkit::assert_starts_with(&f.text, "QP 0x000012 10.0.0.1 > 10.0.0.2: ");
    assert!(
        f.text
            .contains("NAK (PSN sequence error) at PSN 250, Go-Back-N resent 2 packets"),
        "{}",
        f.text
    );
    assert_eq!(f.first_index, Some(501));
    // The sentence README.md shows.
    assert!(
        f.text
            .ends_with("recovery took 20.4 µs; time: recovering 100% (3% before)"),
        "{}",
        f.text
    );
}

fn cm(src: [u8; 4], dst: [u8; 4], rep: bool, comm: u32, remote: u32, qpn: u32) -> Vec<u8> {
    PacketBuilder::cm_frame(src, dst, rep, comm, remote, qpn)
}

#[test]
fn the_cm_exchange_pairs_flows_the_psns_cannot() {
    let mut t = Trace::new();
    // Two connections between the same hosts: A's QP 0x30 <-> B's 0x20 and
    // A's 0x31 <-> B's 0x21.
    t.push(cm(A, B, false, 0x111, 0, 0x30), 10);
    t.push(cm(B, A, true, 0x222, 0x111, 0x20), 10);
    t.push(cm(A, B, false, 0x333, 0, 0x31), 10);
    t.push(cm(B, A, true, 0x444, 0x333, 0x21), 10);
    // Same PSNs on both: the PSNs cannot tell which ACK flow is whose.
    for qp in [0x20, 0x21] {
        let b = PacketBuilder::rocev2_ipv4(A, B, Opcode::RC_WRITE_ONLY, qp, 5);
        t.push(b.build(&[0; 64]), 10);
    }
    let mut ack = PacketBuilder::rocev2_ipv4(B, A, Opcode::RC_ACK, 0x31, 5);
    ack.ext.aeth.syndrome = ACK.to_u8();
    t.push(ack.build(&[]), 10);
    let r = t.an.report();
    let q21 = r.qps.iter().find(|q| q.dest_qp == 0x21).unwrap();
    assert_eq!(
        q21.requester_qp,
        Some(0x31),
        "{:?}",
        r.qps
            .iter()
            .map(|q| (q.dest_qp, q.requester_qp))
            .collect::<Vec<_>>()
    );
    assert_eq!(q21.outstanding, 0, "the ACK acknowledged QP 0x21's request");
    let q20 = r.qps.iter().find(|q| q.dest_qp == 0x20).unwrap();
    assert_eq!(q20.outstanding, 1);
    // The QPs' ends alone are the report's, in its order.
    let ends: Vec<QpEnds> = r
        .qps
        .iter()
        .map(|q| QpEnds {
            requester: q.requester,
            responder: q.responder,
            dest_qp: q.dest_qp,
            requester_qp: q.requester_qp,
        })
        .collect();
    assert_eq!(t.an.qp_ends(), ends);
}

#[test]
fn rtt_buckets_are_quarter_octaves_and_cover_every_sample() {
    assert_eq!(rtt_bucket_ns(0), (0, 1));
    assert_eq!(rtt_bucket_ns(7), (7, 8));
    assert_eq!(rtt_bucket_ns(8), (8, 10));
    assert_eq!(rtt_bucket_ns(1_000), (896, 1_024));
    assert_eq!(rtt_bucket_ns(1_024), (1_024, 1_280));
    for ns in [9u64, 1_500, 123_456_789, u64::MAX] {
        let (lo, hi) = rtt_bucket_ns(ns);
        assert!(lo <= ns && (ns < hi || hi == u64::MAX), "{ns}: {lo}..{hi}");
    }
    let h = rtt_histogram(&[900, 950, 1_000, 1_100, 5_000]);
    assert_eq!(h, vec![(896, 3), (1_024, 1), (4_096, 1)]);
    // In any order, and over every bucket: what sorting the samples and
    // merging equal buckets gives.
    let mut samples: Vec<u64> = (0..64)
        .flat_map(|b: u32| {
            [0u64, 1, 2, 3].map(move |k| (1u64 << b).wrapping_add(k << b.saturating_sub(2)))
        })
        .chain([0, 5, 7, u64::MAX, u64::MAX - 1, 1_000, 1_000])
        .collect();
    samples.reverse();
    let mut sorted = samples.clone();
    sorted.sort_unstable();
    let mut want: Vec<(u64, u64)> = Vec::new();
    for &ns in &sorted {
        let lower = rtt_bucket_ns(ns).0;
        match want.last_mut() {
            Some((l, n)) if *l == lower => *n += 1,
            _ => want.push((lower, 1)),
        }
    }
    assert_eq!(rtt_histogram(&samples), want);
    assert!(want.len() > 200, "{} buckets", want.len());
}

/// The percentiles name the sample a sort would put there.
#[test]
fn rtt_percentiles_are_the_sorted_samples_at_their_rank() {
    let at = |v: &[u64], ps: [f64; 3]| rtt_percentiles(v, &rtt_histogram(v), ps);
    let samples: Vec<u64> = (0..1_001u64).map(|i| (i * 7_919) % 1_001).collect();
    assert_eq!(
        at(&samples, [0.5, 0.99, 0.0]),
        [Some(500), Some(990), Some(0)]
    );
    assert_eq!(
        at(&samples, [0.0, 0.25, 1.0]),
        [Some(0), Some(250), Some(1_000)]
    );
    // Many equal samples: each rank still names one of them.
    let mut same = vec![5u64; 300];
    same.extend([9, 1]);
    assert_eq!(at(&same, [0.5, 0.99, 1.0]), [Some(5), Some(5), Some(9)]);
    assert_eq!(at(&[42], [0.5, 0.99, 0.0]), [Some(42), Some(42), Some(42)]);
    assert_eq!(at(&[], [0.5, 0.99, 0.0]), [None, None, None]);
    // Clustered, spread over decades, and at the top of the range: the
    // counting passes narrow buckets of every width down to one value.
    let mut rng = rocescope_testkit::Rng(0x9e37_79b9_7f4a_7c15u64);
    let mut next = move || rng.next_u64();
    for case in 0..60 {
        let n = 1 + (next() % 5_000) as usize;
        let v: Vec<u64> = (0..n)
            .map(|_| match case % 4 {
                0 => 2_000 + next() % 300,
                1 => next() >> (next() % 64),
                2 if n.is_multiple_of(2) => u64::MAX - next() % 100_000,
                2 => u64::MAX - next() % 3,
                _ => [1_000, 1_001, 70_000_000][(next() % 3) as usize],
            })
            .collect();
        let mut sorted = v.clone();
        sorted.sort_unstable();
        let ps = [0.5, 0.99, (next() % 1_000) as f64 / 999.0];
        let want = ps.map(|p| sorted.get(((n - 1) as f64 * p) as usize).copied());
        assert_eq!(at(&v, ps), want, "case {case}, {n} samples");
    }
}

/// An ACK takes the sends it acknowledges off; what stays outstanding is
/// counted from the oldest left, in the report and in the series.
#[test]
fn an_ack_leaves_the_sends_after_it_outstanding() {
    let mut t = Trace::new();
    for psn in 100..105 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 400);
    }
    t.ack(101, 100);
    let r = t.an.report();
    let q = &r.qps[0];
    assert_eq!((q.outstanding, q.oldest_unacked_psn), (3, Some(102)));
    t.ack(104, 100);
    let r = t.an.report();
    assert_eq!(
        (r.qps[0].outstanding, r.qps[0].oldest_unacked_psn),
        (0, None)
    );
}

/// A header-only capture that cut the ACKs' AETH (the RTL's RX-cut quirk)
/// still counts the window the sender keeps: an Acknowledge of PSN x says
/// x arrived (a NAK of x would be resent, which the resend then tells), so
/// 16 in flight read 16, not 17.
#[test]
fn acknowledges_cut_before_their_aeth_acknowledge_their_own_psn() {
    let mut t = Trace::new();
    let cut_ack = |t: &mut Trace, psn: u32, gap_ns: u64| {
        let mut b = PacketBuilder::rocev2_ipv4(B, A, Opcode::RC_ACK, 0x11, psn);
        b.ext.aeth.syndrome = ACK.to_u8();
        let mut frame = b.build(&[]);
        let wire_len = frame.len() as u32;
        frame.truncate(54);
        t.t += gap_ns;
        let p = decode(&frame, LinkLayer::Ethernet, &DecodeConfig::default());
        let o = Observation::from_packet(&p, t.t, wire_len).unwrap();
        assert_eq!(o.syndrome, None, "the AETH is cut");
        t.an.observe(t.index, &o);
        t.index += 1;
    };
    let mut next = 0u32;
    // A window of 16: 16 sent, then each ACK lets one more go.
    for _ in 0..16 {
        t.req(Opcode::RC_WRITE_MIDDLE, next, 300);
        next += 1;
    }
    for acked in 0..48 {
        cut_ack(&mut t, acked, 200_000);
        t.req(Opcode::RC_WRITE_MIDDLE, next, 40);
        next += 1;
    }
    let r = t.an.report();
    let q = &r.qps[0];
    assert_eq!(q.window_packets, 16, "the most outstanding");
    assert_eq!(q.outstanding, 16);
    assert_eq!(q.oldest_unacked_psn, Some(48));
    assert!(
        q.series.bins.iter().all(|b| b.max_outstanding <= 16),
        "{:?}",
        q.series.bins.iter().map(|b| b.max_outstanding).max()
    );
    // A cut NAK read as an ACK of its PSN: the resend after it still
    // opens a Go-Back-N episode, its NAK inferred.
    cut_ack(&mut t, 48, 20_000);
    t.req(Opcode::RC_WRITE_MIDDLE, 48, 500);
    t.req(Opcode::RC_WRITE_MIDDLE, 49, 300);
    let r = t.an.report();
    assert_eq!(r.episodes.len(), 1);
    assert_eq!(r.episodes[0].cause, EpisodeCause::NakSeqErr);
    assert!(r.episodes[0].nak_inferred);
}

#[test]
fn a_capture_without_acks_tracks_a_bounded_number_of_sends_and_counts_the_rest() {
    let mut an = RcAnalysis::default();
    let frame = PacketBuilder::rocev2_ipv4(A, B, Opcode::RC_WRITE_MIDDLE, 0x12, 0).build(&[0; 64]);
    let p = decode(&frame, LinkLayer::Ethernet, &DecodeConfig::default());
    let mut o = Observation::from_packet(&p, 0, frame.len() as u32).unwrap();
    let n = MAX_TRACKED_SENDS as u64 + 10;
    for i in 0..n {
        o.psn = (i as u32) & 0xFF_FFFF;
        o.ts_ns = 1_000 + i * 100;
        an.observe(i, &o);
    }
    let flow = &an.flows[0];
    assert_eq!(flow.outstanding.len(), MAX_TRACKED_SENDS);
    // The front's PSN kept beside the ring follows the sends dropped off it.
    assert_eq!(flow.outstanding.front().map(|s| s.psn()), Some(10));
    assert_eq!(flow.outstanding_psns(), MAX_TRACKED_SENDS as u32);
    let r = an.report();
    assert_eq!(r.qps[0].oldest_unacked_psn, Some(10));
    assert_eq!(r.qps[0].outstanding, MAX_TRACKED_SENDS as u32);
    assert_eq!(r.counters.untracked_sends, 10);
    assert_eq!(r.counters.retransmitted_packets, 0);
    assert!(r.counters.named().contains(&("untracked_sends", 10)));
}

mod diagnosis;
mod time_states;

/// Lumina's latencies in one capture: at the receiver's side (the gap
/// seen) the out-of-sequence arrival to the NAK; at the requester's side
/// (no gap) the NAK to the first resend.
#[test]
fn a_nak_episode_has_its_generation_or_its_reaction() {
    let nak = Syndrome::Nak(NakCode::PsnSequenceError);
    // The receiver's side: 101 never arrives, 102 does, the NAK 300 ns on.
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 100, 0);
    t.ack(100, 100);
    t.req(Opcode::RC_WRITE_MIDDLE, 102, 100);
    t.resp(Opcode::RC_ACK, 101, nak, 300);
    t.req(Opcode::RC_WRITE_MIDDLE, 101, 5000);
    t.ack(101, 100);
    t.req(Opcode::RC_WRITE_MIDDLE, 102, 10);
    t.ack(102, 100);
    let e = t.an.report().episodes[0];
    assert_eq!((e.nak_generation_ns, e.nak_reaction_ns), (Some(300), None));
    // The requester's side: it sent 101 and 102; the NAK, then its first
    // resend 1,860 ns later.
    let mut t = Trace::new();
    t.req(Opcode::RC_WRITE_MIDDLE, 100, 0);
    t.ack(100, 100);
    t.req(Opcode::RC_WRITE_MIDDLE, 101, 100);
    t.req(Opcode::RC_WRITE_MIDDLE, 102, 100);
    t.resp(Opcode::RC_ACK, 101, nak, 1000);
    t.req(Opcode::RC_WRITE_MIDDLE, 101, 1860);
    t.req(Opcode::RC_WRITE_MIDDLE, 102, 10);
    t.ack(102, 1000);
    let e = t.an.report().episodes[0];
    assert_eq!((e.nak_generation_ns, e.nak_reaction_ns), (None, Some(1860)));
}

#[test]
fn goodput_counts_new_payload_once_over_the_span() {
    // Four new WRITE packets, one resent, a READ of four responses (one a
    // duplicate): 8 x 4096 new payload bytes.
    let mut t = Trace::new();
    for psn in 100..104 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 1000);
    }
    assert_eq!(
        t.req(Opcode::RC_WRITE_MIDDLE, 102, 1000),
        Class::RETRANSMISSION
    );
    t.ack(103, 1000);
    t.req(Opcode::RC_READ_REQUEST, 104, 1000);
    t.resp(Opcode::RC_READ_RESPONSE_FIRST, 104, ACK, 1000);
    t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, 105, ACK, 1000);
    assert_eq!(
        t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, 105, ACK, 1000),
        Class::DUPLICATE
    );
    t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, 106, ACK, 1000);
    t.resp(Opcode::RC_READ_RESPONSE_LAST, 107, ACK, 1000);
    let r = t.an.report();
    let q = &r.qps[0];
    assert_eq!(q.goodput_bytes, 8 * 4096);
    let span_ns = q.states.end_ns - q.states.start_ns;
    assert!(span_ns > 0);
    let row = &r.qp_rows()[0];
    assert!((row.goodput_gbytes_s - (8.0 * 4096.0) / span_ns as f64).abs() < 1e-9);
}
