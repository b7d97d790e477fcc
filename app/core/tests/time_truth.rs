//! The capture-only time by state against the simulator's own reasons
//! (issue 48): every requester QP the sniffer sees, on every shipped
//! scenario and on each limit, has at least 95% of its span in the state
//! the simulator's model says it was in. The analysis sees the frames and
//! the records a recording carries (the link rate, the windows); the
//! reasons reach only this test, through the same record stream.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::{TIME_STATES, TimeState};
use rocescope_replay::record::TruthEvent;
use rocescope_replay::store::{Ingest, RcAnalyzer, Store};
use rocescope_replay::{Record, TimeBase};
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator, StoreSink};

/// The simulator's reasons of one QP: (since, state) in time order; a
/// later record overrides what earlier ones said from its `since` on.
#[derive(Debug, Default)]
struct Timeline(Vec<(u64, u8)>);

impl Timeline {
    fn tell(&mut self, since_ns: u64, state: u8) {
        while self.0.last().is_some_and(|&(s, _)| s >= since_ns) {
            self.0.pop();
        }
        self.0.push((since_ns, state));
    }
}

/// The run into a store, the simulator's own reasons kept aside as truth.
struct Sink<'a> {
    into: StoreSink<'a>,
    truth: HashMap<(u32, u32), Timeline>,
}

impl RecordSink for Sink<'_> {
    fn frame(&mut self, f: FrameRef<'_>) {
        self.into.frame(f);
    }
    fn record(&mut self, r: Record) {
        if let Record::Truth(t) = &r
            && let TruthEvent::QpReason { state, since_ns } = t.event
        {
            self.truth
                .entry((t.qpn, t.psn))
                .or_default()
                .tell(since_ns, state);
            return;
        }
        self.into.record(r);
    }
}

/// One QP's agreement: the share of its span in the state the simulator
/// says, and where they differ (truth state, capture state, ns).
struct Agreement {
    qp: String,
    share: f64,
    span_ns: u64,
    confusion: [[u64; TIME_STATES]; TIME_STATES],
    /// The state when the capture ends, as each tells it.
    end_capture: Option<TimeState>,
    end_truth: Option<TimeState>,
}

fn agreement(sc: Scenario) -> Vec<Agreement> {
    let store = Store::live(TimeBase::Nanoseconds);
    let analysis = RcAnalyzer::default();
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    let mut sim = Simulator::new(sc);
    sim.record_states(true);
    let mut sink = Sink {
        into: StoreSink {
            store: &store,
            ingest: &mut ingest,
            analysis: &analysis,
        },
        truth: HashMap::new(),
    };
    sim.run_into(&mut sink);
    let truth = std::mem::take(&mut sink.truth);
    store.finish_live(&mut ingest);
    let report = analysis.finish_report();
    let end_ns = report.qps.iter().map(|q| q.last_ts_ns).max().unwrap_or(0);
    let mut out = Vec::new();
    for (index, q) in report.qps.iter().enumerate() {
        let runs = &q.states;
        if runs.is_empty() {
            continue;
        }
        // A QP no response came back for does not show its requester's
        // QPN: the one truth of its DestQP no other QP takes.
        let key = q.requester_qp.map(|rq| (q.dest_qp, rq)).or_else(|| {
            let taken: Vec<(u32, u32)> = report
                .qps
                .iter()
                .filter_map(|o| o.requester_qp.map(|rq| (o.dest_qp, rq)))
                .collect();
            let mut left = truth
                .keys()
                .filter(|k| k.0 == q.dest_qp && !taken.contains(k));
            match (left.next(), left.next()) {
                (Some(k), None) => Some(*k),
                _ => None,
            }
        });
        let Some(t) = key.and_then(|k| truth.get(&k)) else {
            continue;
        };
        if let Ok(w) = std::env::var("ROCESCOPE_DUMP") {
            // `QPN:FROM:TO` (ns): both timelines there.
            let v: Vec<u64> = w
                .split(':')
                .map(|x| {
                    u64::from_str_radix(
                        x.trim_start_matches("0x"),
                        if x.starts_with("0x") { 16 } else { 10 },
                    )
                    .unwrap()
                })
                .collect();
            if u64::from(q.dest_qp) == v[0] {
                for (a, b, st) in runs.iter().filter(|r| r.1 > v[1] && r.0 < v[2]) {
                    eprintln!("capture {a}..{b} {}", st.name());
                }
                for (since, st) in t.0.iter().filter(|r| r.0 > v[1] && r.0 < v[2]) {
                    eprintln!("truth {since} {}", TimeState::ALL[usize::from(*st)].name());
                }
            }
        }
        let mut confusion = [[0u64; TIME_STATES]; TIME_STATES];
        let mut agreed = 0u64;
        let mut ti = 0usize;
        for (start, end, state) in runs.iter() {
            let mut at = start;
            while at < end {
                while ti + 1 < t.0.len() && t.0[ti + 1].0 <= at {
                    ti += 1;
                }
                let (since, truth_state) = t.0.get(ti).copied().unwrap_or((0, 255));
                let truth_state = if since <= at { truth_state } else { 255 };
                let until =
                    t.0.get(ti + 1)
                        .map_or(end, |&(s, _)| s.min(end))
                        .max(at + 1);
                let n = until.min(end) - at;
                if usize::from(truth_state) < TIME_STATES {
                    confusion[usize::from(truth_state)][state as usize] += n;
                    if truth_state == state.code() {
                        agreed += n;
                    }
                }
                at += n;
            }
        }
        let span_ns = runs.end_ns - runs.start_ns;
        out.push(Agreement {
            qp: format!("0x{:06x} from 0x{:06x}", q.dest_qp, key.map_or(0, |k| k.1)),
            share: agreed as f64 / span_ns as f64,
            span_ns,
            confusion,
            end_capture: report.time_state_at(index as u32, end_ns),
            end_truth: t
                .0
                .iter()
                .rev()
                .find(|(since, _)| *since <= end_ns)
                .and_then(|&(_, st)| TimeState::from_code(st)),
        });
    }
    out
}

fn report(name: &str, a: &[Agreement]) -> String {
    let mut s = String::new();
    for q in a {
        s.push_str(&format!(
            "{name} QP {}: {:.2}% of {} ns\n",
            q.qp,
            q.share * 100.0,
            q.span_ns
        ));
        for (ti, row) in q.confusion.iter().enumerate() {
            for (ci, &n) in row.iter().enumerate() {
                if ti != ci && n * 200 > q.span_ns {
                    s.push_str(&format!(
                        "    truth {} read as {}: {:.2}%\n",
                        TimeState::ALL[ti].name(),
                        TimeState::ALL[ci].name(),
                        n as f64 * 100.0 / q.span_ns as f64
                    ));
                }
            }
        }
    }
    s
}

fn check(name: &str, sc: Scenario) {
    let a = agreement(sc);
    let text = report(name, &a);
    eprint!("{text}");
    assert!(!a.is_empty(), "{name}: no QP compared");
    for q in &a {
        assert!(q.share >= 0.95, "{name}: below 95%:\n{text}");
    }
}

/// `name`'s first `duration_ns`, sniffed at a requester: the time by
/// state is the requester's, and a sniffer at the responder sees each
/// request later and each ACK sooner than the requester did (by the path
/// between them, which a capture there cannot measure), so its times are
/// shifted against the simulator's. A scenario sniffed elsewhere (dpi-drop,
/// at its responder) is compared with the sniffer at its first QP's
/// requester; the traffic is the same.
fn scenario(name: &str, duration_ns: u64) -> Scenario {
    let mut sc = Scenario::resolve(name).unwrap();
    sc.bound_to_ns(sc.duration_ns.min(duration_ns));
    if let Some(sn) = &mut sc.sniffer
        && !sc.qps.iter().any(|q| q.from == sn.node)
        && let Some(q) = sc.qps.first()
    {
        sn.node = q.from;
    }
    sc
}

/// The truth's share of the span in `state`, and how much of that the
/// capture read as the same state (recall), over a scenario's QPs.
fn state_share(a: &[Agreement], state: TimeState) -> (f64, f64) {
    let s = state as usize;
    let span: u64 = a.iter().map(|q| q.span_ns).sum();
    let truth: u64 = a.iter().map(|q| q.confusion[s].iter().sum::<u64>()).sum();
    let found: u64 = a.iter().map(|q| q.confusion[s][s]).sum();
    (
        truth as f64 / span.max(1) as f64,
        found as f64 / truth.max(1) as f64,
    )
}

/// Each limit, on a scenario that has it for a good share of its time
/// (the course's for the timer and the error state): the QPs agree with
/// the simulator on at least 95% of their time, and the capture finds that
/// state for most of the time the simulator says it held.
#[test]
fn each_limit_agrees_with_the_simulators_reasons() {
    let lesson = |f: &str| {
        format!(
            "{}/../../assets/lessons/scenarios/{f}.toml",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let limits: [(String, TimeState, f64); 10] = [
        ("line-rate".into(), TimeState::Sending, 0.1),
        ("line-rate".into(), TimeState::Sharing, 0.5),
        ("window-stall".into(), TimeState::WindowFull, 0.9),
        ("lossy-link".into(), TimeState::Recovering, 0.3),
        (lesson("lost-last"), TimeState::WaitingOnTimer, 0.8),
        ("rnr".into(), TimeState::RnrWait, 0.3),
        ("pfc".into(), TimeState::Paused, 0.1),
        ("dcqcn".into(), TimeState::RateLimited, 0.1),
        ("host-stall".into(), TimeState::HostLimited, 0.1),
        ("teaching-basic".into(), TimeState::Idle, 0.3),
    ];
    for (name, state, least) in limits {
        let a = agreement(scenario(&name, 10_000_000));
        let text = report(&name, &a);
        let (share, found) = state_share(&a, state);
        eprintln!(
            "{name}: {} {:.1}% of the time, found {:.1}% of it",
            state.name(),
            share * 100.0,
            found * 100.0
        );
        assert!(
            share >= least,
            "{name}: {} only {share:.3}:\n{text}",
            state.name()
        );
        assert!(
            found >= 0.9,
            "{name}: {} found {found:.3}:\n{text}",
            state.name()
        );
        for q in &a {
            assert!(q.share >= 0.95, "{name}: below 95%:\n{text}");
        }
    }
    // The error state: a QP whose retries ran out sends nothing more, so
    // its span ends at its last retry; both tell it in error when the
    // capture ends.
    let a = agreement(scenario(&lesson("retry-limit"), 10_000_000));
    // alice's first QP, to bob (her second, to carol, keeps the capture
    // going).
    let q = a.iter().find(|q| q.qp == "0x000100 from 0x000100").unwrap();
    assert_eq!(
        (q.end_capture, q.end_truth),
        (Some(TimeState::Error), Some(TimeState::Error)),
        "{}",
        report("retry-limit", &a)
    );
    assert!(q.share >= 0.95, "{}", report("retry-limit", &a));
}

#[test]
fn every_shipped_scenario_agrees_with_the_simulators_reasons() {
    for name in Scenario::builtin_names() {
        // `ROCESCOPE_SCENARIO=NAME` to look at one.
        if std::env::var("ROCESCOPE_SCENARIO").is_ok_and(|o| o != *name) {
            continue;
        }
        check(name, scenario(name, 2_000_000));
    }
}
