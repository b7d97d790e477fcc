//! What a run (the capture, the twin, the changed run) gives per QP, and
//! the twin's check against the capture.

use std::collections::BTreeMap;

use rocescope_decoders::analysis::{EpisodeCause, QpReport, TimeState};

use super::Analysed;
use super::derive::QpKey;
use super::scan::scan;

/// How far the twin's goodput may be from the capture's, as a share of it.
pub const TWIN_GOODPUT_TOLERANCE: f64 = 0.05;

/// One QP of one run, named as the capture names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QpOutcome {
    pub src_ip: String,
    pub dst_ip: String,
    pub dest_qp: u32,
    /// The run has no such QP (it sent nothing).
    pub missing: bool,
    pub goodput_gbytes_s: f64,
    pub messages_completed: u64,
    pub message_completion_p50_ns: Option<u64>,
    pub message_completion_p99_ns: Option<u64>,
    pub episodes_by_cause: BTreeMap<&'static str, u64>,
    pub time_by_state_ns: BTreeMap<&'static str, u64>,
}

/// A run's QPs, in the capture's order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunOutcome {
    pub qps: Vec<QpOutcome>,
}

impl RunOutcome {
    /// The QPs of `run` named by `keys`: the capture's own names where
    /// `capture`, else the simulator's names of the twin's QPs.
    pub fn of(run: &Analysed, keys: &[QpKey], capture: bool) -> RunOutcome {
        let scans = scan(&run.store, &run.report);
        let qps = keys
            .iter()
            .map(|k| {
                let found = run.report.qps.iter().position(|q| k.is(q, capture));
                match found {
                    Some(i) => outcome_of(k, &run.report.qps[i], &scans[i]),
                    None => QpOutcome {
                        src_ip: k.src_ip.clone(),
                        dst_ip: k.dst_ip.clone(),
                        dest_qp: k.dest_qp,
                        missing: true,
                        goodput_gbytes_s: 0.0,
                        messages_completed: 0,
                        message_completion_p50_ns: None,
                        message_completion_p99_ns: None,
                        episodes_by_cause: causes(&[]),
                        time_by_state_ns: TimeState::ALL.iter().map(|s| (s.name(), 0)).collect(),
                    },
                }
            })
            .collect();
        RunOutcome { qps }
    }
}

fn causes(by: &[(EpisodeCause, u64)]) -> BTreeMap<&'static str, u64> {
    EpisodeCause::ALL
        .iter()
        .map(|c| {
            let n = by.iter().find(|(x, _)| x == c).map_or(0, |(_, n)| *n);
            (c.name(), n)
        })
        .collect()
}

fn outcome_of(k: &QpKey, q: &QpReport, s: &super::QpScan) -> QpOutcome {
    let (p50, p99) = s.completion_p50_p99_ns();
    QpOutcome {
        src_ip: k.src_ip.clone(),
        dst_ip: k.dst_ip.clone(),
        dest_qp: k.dest_qp,
        missing: false,
        goodput_gbytes_s: q.goodput_gbytes_s(),
        messages_completed: s.completion_ns.len() as u64,
        message_completion_p50_ns: p50,
        message_completion_p99_ns: p99,
        episodes_by_cause: causes(&q.episodes_by_cause),
        time_by_state_ns: TimeState::ALL
            .iter()
            .map(|&st| (st.name(), q.states.totals_ns[st as usize]))
            .collect(),
    }
}

/// Where the twin departs from the capture: a QP and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mismatch {
    pub src_ip: String,
    pub dst_ip: String,
    pub dest_qp: u32,
    pub why: String,
}

/// Each QP's twin within [`TWIN_GOODPUT_TOLERANCE`] of the capture's
/// goodput and with the same episodes by cause.
pub fn check(capture: &RunOutcome, twin: &RunOutcome) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for (c, t) in capture.qps.iter().zip(&twin.qps) {
        let mismatch = |why: String| Mismatch {
            src_ip: c.src_ip.clone(),
            dst_ip: c.dst_ip.clone(),
            dest_qp: c.dest_qp,
            why,
        };
        if t.missing {
            out.push(mismatch("the twin sent nothing on it".into()));
            continue;
        }
        let off = relative_gap(c.goodput_gbytes_s, t.goodput_gbytes_s);
        if off > TWIN_GOODPUT_TOLERANCE {
            out.push(mismatch(format!(
                "goodput {:.3} GB/s in the twin against {:.3} GB/s captured ({:+.1}%, more than {:.0}%): {}",
                t.goodput_gbytes_s,
                c.goodput_gbytes_s,
                (t.goodput_gbytes_s / c.goodput_gbytes_s.max(1e-12) - 1.0) * 100.0,
                TWIN_GOODPUT_TOLERANCE * 100.0,
                unmodelled(c, t)
            )));
        }
        if c.episodes_by_cause != t.episodes_by_cause {
            out.push(mismatch(format!(
                "episodes {} in the twin against {} captured: its losses do not replay as they happened",
                causes_text(&t.episodes_by_cause),
                causes_text(&c.episodes_by_cause)
            )));
        }
    }
    out
}

/// What the what-if says when the twin does not hold: the rule it is held
/// to, then each QP that departs and why, one a line.
pub fn refusal_text(mismatches: &[Mismatch]) -> String {
    let mut text = format!(
        "the twin does not hold (per QP goodput within {:.0}% and the same episodes by cause), so no prediction:",
        TWIN_GOODPUT_TOLERANCE * 100.0
    );
    for m in mismatches {
        text.push_str(&format!(
            "\n  QP {:#x} {} -> {}: {}",
            m.dest_qp, m.src_ip, m.dst_ip, m.why
        ));
    }
    text
}

/// What the twin leaves out, told by the state whose share of the span
/// the capture shows most above the twin's.
fn unmodelled(c: &QpOutcome, t: &QpOutcome) -> String {
    let share = |o: &QpOutcome, s: &str| {
        let total: u64 = o.time_by_state_ns.values().sum();
        o.time_by_state_ns.get(s).copied().unwrap_or(0) as f64 / total.max(1) as f64
    };
    let worst = TimeState::ALL
        .iter()
        .map(|s| (s.name(), share(c, s.name()) - share(t, s.name())))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((state, more)) = worst.filter(|w| w.1 > 0.02) else {
        return "a workload the model does not reproduce (its posting, the switch's queues, the peer)".into();
    };
    let what = match state {
        "rnr_wait" => "RNR waits: the responder's receive queue, which the capture does not show",
        "paused" => {
            "PFC pauses: traffic of other hosts into the switch, which the capture does not show"
        }
        "rate_limited" => {
            "congestion control slowing it after CNPs: queues of traffic the capture does not show"
        }
        "host_limited" => {
            "gaps with nothing on the wire (the host, PCIe or the card's fetches), whose cause the capture does not show"
        }
        "sharing" => "a port shared with traffic the capture does not show",
        "window_full" => {
            "longer round trips: the switch's queues of traffic the capture does not show"
        }
        "idle" => "its application's own posting, which the twin posts differently",
        "waiting_on_timer" | "recovering" => "losses the twin does not replay as they happened",
        _ => "a limit the twin does not reproduce",
    };
    format!(
        "the capture spent {:.0}% more of its time {state} than the twin: {what}",
        more * 100.0
    )
}

/// `|b - a| / a` (0 when both are 0).
pub fn relative_gap(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        return if b == 0.0 { 0.0 } else { f64::INFINITY };
    }
    ((b - a) / a).abs()
}

/// `nak_seq_err 2, timeout 1`, or `none`.
pub fn causes_text(by: &BTreeMap<&'static str, u64>) -> String {
    let parts: Vec<String> = by
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
