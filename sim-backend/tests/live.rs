//! A scenario is a workload: a live run goes on until stopped, posting new
//! messages with its faults applying throughout, in bounded memory; finite
//! runs and scenarios that give `duration_ns` still end.

mod common;

use rocescope_replay::Record;
use rocescope_replay::record::{MarkerKind, TruthEvent};
use rocescope_sim::{Scenario, Simulator};

fn builtin(name: &str) -> Scenario {
    Scenario::builtin(name).unwrap_or_else(|| panic!("no scenario {name}"))
}

#[test]
fn shipped_workloads_run_until_stopped_and_the_lesson_clip_ends() {
    for name in Scenario::builtin_names() {
        let sc = builtin(name);
        assert_eq!(sc.until_stopped, name != "teaching-basic", "{name}");
    }
    // The finite run of a workload is as long as before (the pinned streams).
    assert_eq!(builtin("default").duration_ns, 10_000_000);
    assert_eq!(builtin("aes").duration_ns, 200_000);
    assert_eq!(builtin("teaching-basic").duration_ns, 100_000);
}

#[test]
fn duration_and_finite_run_are_exclusive_and_bounding_ends_the_workload() {
    let base = "[[node]]\nname=\"a\"\nkind=\"balboa\"\n[[node]]\nname=\"b\"\nkind=\"balboa\"\n[[qp]]\nfrom=\"a\"\nto=\"b\"\n";
    let both = format!("duration_ns = 5\nfinite_run_ns = 7\n{base}");
    let e = Scenario::from_toml(&both, "both.toml").unwrap_err();
    assert_eq!(e.key, "finite_run_ns", "{e}");
    assert_eq!(e.line, Some(2), "{e}");
    let zero = format!("finite_run_ns = 0\n{base}");
    let e = Scenario::from_toml(&zero, "zero.toml").unwrap_err();
    assert_eq!(e.key, "finite_run_ns", "{e}");
    let plain = Scenario::from_toml(base, "plain.toml").expect("plain");
    assert!(plain.until_stopped);
    assert_eq!(
        plain.duration_ns,
        rocescope_sim::scenario::DEFAULT_FINITE_RUN_NS
    );
    let clip = Scenario::from_toml(&format!("duration_ns = 5000\n{base}"), "clip.toml").unwrap();
    assert!(!clip.until_stopped);
    let mut sc = builtin("default");
    sc.bound_to_ns(300_000);
    assert!(!sc.until_stopped);
    let mut sim = Simulator::live(sc);
    assert!(sim.is_bounded());
    let mut t_ns = 0;
    while sim.run_until(t_ns, &mut |_| {}) {
        t_ns += 50_000;
        assert!(t_ns <= 400_000, "a bounded live run did not end");
    }
    assert_eq!(sim.now_ns(), 300_000);
}

/// Runs on to `t_ns`: messages completed so far, wire drops on the way,
/// and whether a stop marker came.
fn live_until(sim: &mut Simulator, t_ns: u64) -> (u64, u64, bool) {
    let mut drops = 0;
    let mut stop = false;
    assert!(sim.run_until(t_ns, &mut |r| match r {
        Record::Truth(t) if t.event == TruthEvent::WireDrop => drops += 1,
        Record::Marker {
            kind: MarkerKind::Stop,
            ..
        } => stop = true,
        _ => {}
    }));
    let messages = sim.stats().qps.iter().map(|q| q.messages).sum();
    (messages, drops, stop)
}

#[test]
fn a_live_workload_keeps_posting_past_its_finite_run_with_faults_throughout() {
    let mut sc = builtin("lossy-link");
    sc.profiler.enabled = false;
    let finite_ns = sc.duration_ns;
    let mut sim = Simulator::live(sc);
    assert!(!sim.is_bounded());
    let (m1, d1, stop1) = live_until(&mut sim, finite_ns);
    let (m2, d2, stop2) = live_until(&mut sim, 3 * finite_ns);
    assert!(!stop1 && !stop2, "a run until stopped sent a stop marker");
    assert!(m1 > 0, "no message completed in the finite run's time");
    // Twice the time again: more messages, and the loss rule still hits.
    assert!(m2 - m1 > m1, "{m1} then {m2} messages");
    assert!(d1 > 0 && d2 > d1 / 2, "{d1} then {d2} wire drops");
    assert_eq!(sim.now_ns(), 3 * finite_ns);
}

#[test]
fn a_live_run_holds_no_more_state_after_ten_times_as_long() {
    // Every kind of per-message work: WRITE and READ, losses and Go-Back-N
    // (HBM refetches, without the profiler that used to prune them), DPI.
    for name in ["default", "lossy-link", "dpi-drop"] {
        let mut sc = builtin(name);
        sc.profiler.enabled = false;
        let mut sim = Simulator::live(sc);
        let early_ns = 1_000_000;
        sim.run_until(early_ns, &mut |_| {});
        let early = sim.held_items();
        let mut peak = early;
        for k in 2..=10 {
            sim.run_until(k * early_ns, &mut |_| {});
            peak = peak.max(sim.held_items());
        }
        assert!(
            peak <= 2 * early + 64,
            "{name}: {early} items held after 1 ms, up to {peak} by 10 ms"
        );
        assert!(
            sim.stats().qps.iter().map(|q| q.messages).sum::<u64>() > 10,
            "{name}"
        );
    }
}

#[test]
fn an_idle_live_card_does_not_end() {
    // Two messages, then nothing more to post: the card idles.
    let mut sc = builtin("teaching-basic");
    sc.until_stopped = true;
    sc.profiler.enabled = false;
    let mut sim = Simulator::live(sc);
    let (m, _, stop) = live_until(&mut sim, 1_000_000);
    assert_eq!(m, 2);
    assert!(!stop);
    assert!(!sim.is_finished());
    let (m, _, _) = live_until(&mut sim, 2_000_000);
    assert_eq!(m, 2);
    assert_eq!(sim.now_ns(), 2_000_000);
}

#[test]
fn a_finite_run_of_a_workload_ends_as_before() {
    let sc = builtin("aes");
    let mut sim = Simulator::new(sc);
    let mut stops = 0;
    sim.run(&mut |r| {
        if matches!(
            r,
            Record::Marker {
                kind: MarkerKind::Stop,
                ..
            }
        ) {
            stops += 1;
        }
    });
    assert!(sim.is_finished());
    assert_eq!(stops, 1);
    assert_eq!(sim.now_ns(), 200_000);
}

#[test]
fn repeating_fault_rules_hit_again_every_period() {
    let text = "\
[[node]]
name = \"a\"
kind = \"balboa\"
[[node]]
name = \"b\"
kind = \"balboa\"
[[qp]]
from = \"a\"
to = \"b\"
size_bytes = 16384
[[fault]]
kind = \"loss\"
node = \"a\"
direction = \"to_switch\"
nth = 3
every_ns = 100_000
[[fault]]
kind = \"link_down\"
node = \"b\"
direction = \"to_switch\"
start_ns = 50_000
end_ns = 52_000
every_ns = 100_000
";
    let mut sc = Scenario::from_toml(text, "repeat.toml").unwrap_or_else(|e| panic!("{e}"));
    sc.profiler.enabled = false;
    assert!(sc.until_stopped);
    let mut sim = Simulator::live(sc);
    // Drops per 100 us period: the 3rd frame of a's, and b's frames
    // (ACKs) sent during the 2 us the link is down.
    let mut per_period = [0u32; 10];
    sim.run_until(1_000_000 - 1, &mut |r| {
        if let Record::Truth(t) = r
            && t.event == TruthEvent::WireDrop
        {
            per_period[(t.ts_ns / 100_000) as usize] += 1;
        }
    });
    assert!(
        per_period.iter().all(|&d| d >= 2),
        "drops per period: {per_period:?}"
    );
    // Once only without every_ns.
    let once = text.replace("every_ns = 100_000\n", "");
    let mut sc = Scenario::from_toml(&once, "once.toml").unwrap_or_else(|e| panic!("{e}"));
    sc.profiler.enabled = false;
    let mut drops_after_first = 0;
    Simulator::live(sc).run_until(1_000_000, &mut |r| {
        if let Record::Truth(t) = r
            && t.event == TruthEvent::WireDrop
            && t.ts_ns >= 100_000
        {
            drops_after_first += 1;
        }
    });
    assert_eq!(drops_after_first, 0);
    let bad = text.replace("end_ns = 52_000", "end_ns = 152_000");
    let e = Scenario::from_toml(&bad, "bad.toml").unwrap_err();
    assert_eq!(e.key, "fault[1].every_ns", "{e}");
}

/// A client that joins a running card starts mid-stream: one QP's READ
/// responses can come before any of its requests, another QP's requests
/// first. Wherever the capture starts, every row the analysis calls out of
/// sequence, duplicate or resent is a packet the simulator resent.
#[test]
fn a_capture_joined_anywhere_flags_only_what_the_card_resent() {
    use std::collections::HashSet;

    use rocescope_decoders::DecodeConfig;
    use rocescope_replay::TimeBase;
    use rocescope_replay::store::{Flags, Ingest, RcAnalyzer, Store};

    let mut sc = builtin("default");
    sc.duration_ns = 4_000_000;
    let (mut frames, mut resent) = (Vec::new(), Vec::new());
    Simulator::new(sc).run(&mut |r| match r {
        r @ Record::Frame { .. } => frames.push(r),
        Record::Truth(t) if matches!(t.event, TruthEvent::Retransmit { .. }) => {
            resent.push((t.ts_ns, t.qpn, t.psn))
        }
        _ => {}
    });
    // Starts 301 frames apart, 3,000 frames each: about one start in nine
    // began with a QP's responses and paired them with the wrong requester.
    const WINDOW: usize = 3_000;
    let mut starts = 0;
    for start in (0..frames.len().saturating_sub(WINDOW)).step_by(301) {
        let window = &frames[start..start + WINDOW];
        let store = Store::live(TimeBase::Nanoseconds);
        let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(RcAnalyzer::default()));
        for f in window.iter().filter_map(Record::as_frame) {
            store.ingest(&mut ingest, &f.ingest_frame());
        }
        store.finish_live(&mut ingest);
        let (t0, t1) = (window[0].ts_ns(), window[WINDOW - 1].ts_ns());
        let truth: HashSet<(u32, u32)> = resent
            .iter()
            .filter(|(ts, ..)| (t0..=t1).contains(ts))
            .map(|&(_, qpn, psn)| (qpn, psn))
            .collect();
        let flagged = Flags::OUT_OF_SEQUENCE | Flags::DUPLICATE | Flags::RETRANSMISSION;
        for i in 0..store.len() {
            let row = store.row(i).unwrap();
            if !row.flags.intersects(flagged) {
                continue;
            }
            let qpn = store.conversation(row.conversation).map(|c| c.key.dest_qp);
            assert!(
                qpn.is_some_and(|q| truth.contains(&(q, row.psn))),
                "joined at frame {start}: row {i} (opcode {}, PSN {}, QP {qpn:?}) is {:?}, \
                 which the simulator did not resend",
                row.opcode,
                row.psn,
                row.flags
            );
        }
        starts += 1;
    }
    assert!(starts > 20, "{starts} starts");
}
