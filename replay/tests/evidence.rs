//! A recording reopened as a file hands its evidence records (a
//! simulator's PFC pauses and DPI drops) to the analysis, as the live
//! sources do, so one scenario gives the same findings however it is
//! opened.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rocescope_decoders::DecodeConfig;
use rocescope_replay::record::{GroundTruth, TruthEvent};
use rocescope_replay::store::{Analyzer, LateFlags, PacketInfo, Store, Wide};
use rocescope_replay::{PcapngWriter, Record};

/// Counts frames and keeps the records it is handed, in order.
#[derive(Default, Clone)]
struct Seen {
    frames: Arc<AtomicUsize>,
    records: Arc<Mutex<Vec<Record>>>,
}

impl Analyzer for Seen {
    fn batch(&mut self, _: u64, batch: &mut [PacketInfo], _: &[Wide], _: &mut Vec<LateFlags>) {
        self.frames.fetch_add(batch.len(), Ordering::Relaxed);
    }
    fn record(&mut self, r: &Record) {
        self.records.lock().unwrap().push(r.clone());
    }
}

#[test]
fn a_recordings_evidence_reaches_the_analysis() {
    let tmp = rocescope_testkit::temp_dir("evidence");
    let path = tmp.path().join("evidence.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let truth = |ts_ns, event| {
        Record::Truth(GroundTruth {
            ts_ns,
            qpn: 0x100,
            psn: 7,
            event,
        })
    };
    let frame = [0u8; 60];
    let mut evidence = Vec::new();
    for i in 0..50_000u64 {
        w.write_frame(1_000 + i, 0, None, 60, &frame).unwrap();
        if i % 10_000 == 5 {
            let r = truth(1_000 + i, TruthEvent::DpiDrop);
            w.write_record(&r).unwrap();
            evidence.push(r);
        }
    }
    // Not evidence: the analysis is not handed it.
    w.write_record(&truth(99_999, TruthEvent::WireDrop))
        .unwrap();
    let pause = truth(100_000, TruthEvent::PfcPause { ns: 3_000 });
    w.write_record(&pause).unwrap();
    evidence.push(pause);
    w.flush().unwrap();
    drop(w);

    let seen = Seen::default();
    let store = Store::open(&path, DecodeConfig::default(), Box::new(seen.clone())).unwrap();
    store.wait();
    assert_eq!(seen.frames.load(Ordering::Relaxed), 50_000);
    assert_eq!(*seen.records.lock().unwrap(), evidence);
    assert_eq!(
        store.record_count(),
        evidence.len() + 1,
        "every record is kept"
    );
}

/// The card's counter file, as a live link's `counters` probes carry it,
/// reaches the diagnosis: STRM down above 0 is told.
#[test]
fn the_cards_counter_probes_reach_the_diagnosis() {
    use rocescope_decoders::analysis::FindingCause;
    use rocescope_replay::record::{ProbeDef, ProfilerSample};
    use rocescope_replay::store::RcAnalyzer;
    let an = RcAnalyzer::default();
    let def = |probe, name: &str| {
        Record::ProbeDef(ProbeDef {
            probe,
            name: name.into(),
            unit: String::new(),
            module: "counters".into(),
        })
    };
    for r in [
        def(0x8000, "rx_packets"),
        def(0x8001, "psn_drop_count"),
        def(0x8002, "strm_down"),
    ] {
        an.note_record(&r);
    }
    let sample = |ts_ns, probe, value| {
        Record::Profiler(ProfilerSample {
            cycle: 0,
            ts_ns,
            probe,
            value,
        })
    };
    for (t, down) in [(1_000_000u64, 0i64), (2_000_000, 0), (3_000_000, 1)] {
        an.note_record(&sample(t, 0x8000, 10));
        an.note_record(&sample(t, 0x8001, 0));
        an.note_record(&sample(t, 0x8002, down));
    }
    let report = an.0.lock().unwrap().report();
    let down: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.cause == FindingCause::StreamDown)
        .collect();
    assert_eq!(down.len(), 1, "{:?}", report.findings);
    assert_eq!(down[0].start_ns, 3_000_000);
}

/// PAUSE and PFC frames in a capture reach the time by state through the
/// store (issue 48): a PFC frame received on the requester's port holds its
/// link for its quanta; a PAUSE of 0 quanta releases it.
#[test]
fn pause_frames_in_a_capture_hold_the_requester_they_reach() {
    use rocescope_decoders::analysis::TimeState;
    use rocescope_decoders::{Opcode, PacketBuilder};
    use rocescope_replay::Direction;
    use rocescope_replay::store::RcAnalyzer;
    let tmp = rocescope_testkit::temp_dir("pfc");
    let path = tmp.path().join("pfc.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    // PFC: class 3 enabled, 2000 quanta (10.24 µs at 100 Gb/s).
    let mut pfc = vec![
        0x01, 0x80, 0xc2, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x09, 0x88, 0x08,
    ];
    pfc.extend([0x01, 0x01, 0x00, 0x08]);
    for class in 0..8u16 {
        pfc.extend(if class == 3 { 2000u16 } else { 0 }.to_be_bytes());
    }
    pfc.resize(60, 0);
    let mut pause = pfc.clone();
    pause[14..18].copy_from_slice(&[0x00, 0x01, 0x00, 0x00]);
    let mut t = 1_000u64;
    for psn in 0..40u32 {
        let op = match psn {
            0 => Opcode::RC_WRITE_FIRST,
            39 => Opcode::RC_WRITE_LAST,
            _ => Opcode::RC_WRITE_MIDDLE,
        };
        let f = PacketBuilder::rocev2_ipv4(a, b, op, 0x12, psn).build(&[0; 4096]);
        w.write_frame(t, 0, Some(Direction::Tx), f.len() as u32, &f)
            .unwrap();
        let mut ack = PacketBuilder::rocev2_ipv4(b, a, Opcode::RC_ACK, 0x11, psn);
        ack.ext.aeth.syndrome = 0x1F;
        let ack = ack.build(&[]);
        w.write_frame(t + 200, 0, Some(Direction::Rx), ack.len() as u32, &ack)
            .unwrap();
        t += 400;
        if psn == 9 {
            // Held 10.24 µs mid-message.
            w.write_frame(t, 0, Some(Direction::Rx), 60, &pfc).unwrap();
            t += 11_000;
        }
        if psn == 19 {
            // Held again, released after 3 µs.
            w.write_frame(t, 0, Some(Direction::Rx), 60, &pfc).unwrap();
            w.write_frame(t + 3_000, 0, Some(Direction::Rx), 60, &pause)
                .unwrap();
            t += 4_000;
        }
    }
    w.flush().unwrap();
    drop(w);
    let an = RcAnalyzer::default();
    let store = Store::open(&path, DecodeConfig::default(), Box::new(an.clone())).unwrap();
    store.wait();
    let r = an.finish_report();
    let states = &r.qps[0].states;
    assert_eq!(
        states.totals_ns[TimeState::Paused as usize],
        10_240 + 3_000,
        "{:?}",
        states.totals_ns
    );
}
