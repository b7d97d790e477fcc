//! The facts of a run a lesson can state and ask about: counts, measures
//! and words derived from the analysis report, each under a stable name
//! (`episodes.nak_seq_err`, `episode1.from_psn`, `qp1.rtt_p50_us`).
//! `rocescope lesson NAME --facts` lists them for a lesson's scenario.

use std::collections::BTreeMap;

use rocescope_decoders::analysis::{EpisodeCause, Report, TimeState};
use rocescope_replay::store::StoreStats;

use super::Value;

/// Episodes, QPs and findings named one by one (the first few: a lesson's
/// scenario has a handful).
const NAMED: usize = 8;

/// Every fact of a run, by name.
pub fn facts(report: &Report, stats: &StoreStats) -> BTreeMap<String, Value> {
    let mut f = BTreeMap::new();
    let num = |f: &mut BTreeMap<String, Value>, k: String, v: f64| {
        f.insert(k, Value::Number(v));
    };
    let t0_ns = stats.first_ts_ns.unwrap_or(0);
    let span_ns = stats.last_ts_ns.unwrap_or(t0_ns).saturating_sub(t0_ns);
    let us = |ns: u64| ns as f64 / 1e3;
    num(&mut f, "packets".into(), stats.packets as f64);
    num(&mut f, "roce_packets".into(), stats.roce_packets as f64);
    num(&mut f, "icrc_errors".into(), stats.icrc_errors as f64);
    num(&mut f, "truncated".into(), stats.truncated as f64);
    num(&mut f, "span_us".into(), us(span_ns));
    num(&mut f, "wire_bytes".into(), stats.wire_bytes as f64);
    num(
        &mut f,
        "throughput_gbytes_s".into(),
        if span_ns == 0 {
            0.0
        } else {
            stats.wire_bytes as f64 / span_ns as f64
        },
    );
    num(&mut f, "qps".into(), report.qps.len() as f64);
    num(&mut f, "findings".into(), report.findings.len() as f64);
    let all_episodes: u64 = report
        .qps
        .iter()
        .flat_map(|q| q.episodes_by_cause.iter().map(|(_, n)| *n))
        .sum();
    num(&mut f, "episodes".into(), all_episodes as f64);
    for c in EpisodeCause::ALL {
        let n: u64 = report
            .qps
            .iter()
            .flat_map(|q| q.episodes_by_cause.iter())
            .filter(|(k, _)| *k == c)
            .map(|(_, n)| *n)
            .sum();
        num(&mut f, format!("episodes.{}", c.name()), n as f64);
    }
    for (name, v) in report.counters.named() {
        num(&mut f, format!("counters.{name}"), v as f64);
    }
    for (i, e) in report.episodes.iter().take(NAMED).enumerate() {
        let p = format!("episode{}", i + 1);
        f.insert(format!("{p}.cause"), Value::Text(e.cause.name().into()));
        num(&mut f, format!("{p}.qp"), f64::from(e.qp) + 1.0);
        num(
            &mut f,
            format!("{p}.first_frame"),
            e.first_index as f64 + 1.0,
        );
        num(&mut f, format!("{p}.from_psn"), f64::from(e.from_psn));
        num(
            &mut f,
            format!("{p}.packets_resent"),
            e.packets_resent as f64,
        );
        num(
            &mut f,
            format!("{p}.start_us"),
            us(e.start_ns.saturating_sub(t0_ns)),
        );
        num(&mut f, format!("{p}.recovery_us"), us(e.recovery_ns));
        num(&mut f, format!("{p}.silence_us"), us(e.silence_ns));
        num(&mut f, format!("{p}.retries"), f64::from(e.retries));
        num(
            &mut f,
            format!("{p}.timer_expiries"),
            f64::from(e.timer_expiries),
        );
    }
    for (i, q) in report.qps.iter().take(NAMED).enumerate() {
        let p = format!("qp{}", i + 1);
        num(&mut f, format!("{p}.dest_qp"), f64::from(q.dest_qp));
        if let Some(r) = q.requester_qp {
            num(&mut f, format!("{p}.requester_qp"), f64::from(r));
        }
        num(&mut f, format!("{p}.packets"), q.packets as f64);
        num(&mut f, format!("{p}.requests"), q.requests as f64);
        num(&mut f, format!("{p}.responses"), q.responses as f64);
        num(&mut f, format!("{p}.acks"), q.counters.acks as f64);
        num(
            &mut f,
            format!("{p}.acks_per_request"),
            if q.requests == 0 {
                0.0
            } else {
                q.counters.acks as f64 / q.requests as f64
            },
        );
        num(&mut f, format!("{p}.next_psn"), f64::from(q.next_psn));
        num(
            &mut f,
            format!("{p}.window_packets"),
            f64::from(q.window_packets),
        );
        num(&mut f, format!("{p}.wire_bytes"), q.wire_bytes as f64);
        let span_ns = q.last_ts_ns.saturating_sub(q.first_ts_ns);
        num(
            &mut f,
            format!("{p}.throughput_gbytes_s"),
            if span_ns == 0 {
                0.0
            } else {
                q.wire_bytes as f64 / span_ns as f64
            },
        );
        for (name, v) in q.counters.named() {
            num(&mut f, format!("{p}.{name}"), v as f64);
        }
        if let Some(ns) = q.rtt_p50_ns {
            num(&mut f, format!("{p}.rtt_p50_us"), us(ns));
        }
        // Where its time went: each state's share of its span (0 to 1),
        // and the state it ends in.
        let s = &q.states;
        let span = s.end_ns.saturating_sub(s.start_ns);
        for state in TimeState::ALL {
            let share = if span == 0 {
                0.0
            } else {
                s.totals_ns[state as usize] as f64 / span as f64
            };
            num(&mut f, format!("{p}.time.{}", state.name()), share);
        }
        if let Some(state) = s.last_state() {
            f.insert(
                format!("{p}.state_at_end"),
                Value::Text(state.name().into()),
            );
        }
        // The state that held it back most of its time, and an RNR NAK's
        // wait on average.
        if let Some(most) = TimeState::ALL
            .into_iter()
            .filter(|&st| s.totals_ns[st as usize] > 0)
            .max_by_key(|&st| s.totals_ns[st as usize])
        {
            f.insert(format!("{p}.time.most"), Value::Text(most.name().into()));
        }
        // Each RNR wait (a run: a resend ends it), the one the capture cuts
        // short left out.
        let mut waits: Vec<u64> = s
            .iter()
            .filter(|r| r.2 == TimeState::RnrWait)
            .map(|(a, b, _)| b - a)
            .collect();
        if s.last_state() == Some(TimeState::RnrWait) {
            waits.pop();
        }
        if !waits.is_empty() {
            num(
                &mut f,
                format!("{p}.rnr_wait_each_us"),
                us(waits.iter().sum::<u64>()) / waits.len() as f64,
            );
        }
        let error = q.error.map_or("none", |e| e.reason.name());
        f.insert(format!("{p}.error"), Value::Text(error.into()));
        if let Some(e) = q.error {
            num(&mut f, format!("{p}.error_frame"), e.index as f64 + 1.0);
            num(&mut f, format!("{p}.error_psn"), f64::from(e.psn));
        }
    }
    for (i, x) in report.findings.iter().take(NAMED).enumerate() {
        let p = format!("finding{}", i + 1);
        f.insert(format!("{p}.cause"), Value::Text(x.cause.name().into()));
        num(&mut f, format!("{p}.before_gbytes_s"), x.before_gbytes_s);
        num(&mut f, format!("{p}.during_gbytes_s"), x.during_gbytes_s);
        if let Some(i) = x.first_index {
            num(&mut f, format!("{p}.first_frame"), i as f64 + 1.0);
        }
    }
    f
}

/// Whether `check` holds among `facts`; the reason when it does not.
pub fn holds(check: &super::Check, facts: &BTreeMap<String, Value>) -> Result<(), String> {
    let Some(v) = facts.get(&check.fact) else {
        return Err(format!("the run has no fact {}", check.fact));
    };
    if let Some(want) = &check.equals {
        let same = match (want, v) {
            (Value::Number(a), Value::Number(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
            (Value::Text(a), Value::Text(b)) => a == b,
            _ => false,
        };
        if !same {
            return Err(format!("{} is {v}, the step says {want}", check.fact));
        }
    }
    let n = match v {
        Value::Number(n) => Some(*n),
        Value::Text(_) => None,
    };
    if let Some(lo) = check.at_least
        && !n.is_some_and(|n| n >= lo)
    {
        return Err(format!(
            "{} is {v}, the step says at least {lo}",
            check.fact
        ));
    }
    if let Some(hi) = check.at_most
        && !n.is_some_and(|n| n <= hi)
    {
        return Err(format!("{} is {v}, the step says at most {hi}", check.fact));
    }
    Ok(())
}
