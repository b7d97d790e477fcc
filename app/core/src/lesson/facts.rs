//! The facts of a run a lesson can state and ask about, each under a
//! stable name. `qpN`, `episodeN` and `findingN` hold every field `stats
//! --json` gives the N-th QP, episode or finding, under its JSON path
//! (`qp1.counters.acks`, `episode1.from_psn`): the report's rows are the one
//! source, so a field added there is a fact too. Beside them, measures a
//! lesson states in its own words (`qp1.rtt_p50_us`, `qp1.time.most`).
//! `rocescope lesson NAME --facts` lists them for a lesson's scenario.

use std::collections::BTreeMap;

use rocescope_decoders::analysis::{EpisodeCause, Report, TimeState};
use rocescope_replay::store::StoreStats;
use serde::Serialize;

use super::Value;

/// Episodes, QPs and findings named one by one (the first few: a lesson's
/// scenario has a handful).
const NAMED: usize = 8;

type Facts = BTreeMap<String, Value>;

/// Every field of `row` under `prefix`, nested objects by their path;
/// lists (a finding's evidence frames and drops) and absent values are no
/// facts, yes/no fields are the words `true` and `false`.
fn row_facts(f: &mut Facts, prefix: &str, row: &impl Serialize) {
    fn walk(f: &mut Facts, path: &str, v: serde_json::Value) {
        use serde_json::Value as J;
        match v {
            J::Object(m) => {
                for (k, v) in m {
                    walk(f, &format!("{path}.{k}"), v);
                }
            }
            J::Number(n) => {
                if let Some(n) = n.as_f64() {
                    f.insert(path.to_owned(), Value::Number(n));
                }
            }
            J::String(s) => {
                f.insert(path.to_owned(), Value::Text(s));
            }
            J::Bool(b) => {
                f.insert(path.to_owned(), Value::Text(b.to_string()));
            }
            J::Null | J::Array(_) => {}
        }
    }
    // The rows are plain data: serialising one cannot fail.
    if let Ok(v) = serde_json::to_value(row) {
        walk(f, prefix, v);
    }
}

/// The facts of several capture points' analysis: `points.*` (how many
/// frames were followed, lost, lost by kind), each point's row under
/// `point.NAME.*` (`point.sw.capture_loss`, `point.b.drift_ppm`), each
/// segment's under `segment.NAME.*` (`segment.a>sw.p50_ns`, its `losses`),
/// and the first losses under `lossN.*` (`loss1.segment`, `loss1.psn`,
/// `loss1.seen_at`), as `stats --point --json`'s `multipoint` has them.
pub fn points_facts(r: &rocescope_replay::points::PointsReport) -> Facts {
    use rocescope_replay::points::LossKind;
    let mut f = Facts::new();
    let count = |k: LossKind| r.losses.iter().filter(|l| l.kind == k).count();
    row_facts(
        &mut f,
        "points",
        &serde_json::json!({
            "frames_followed": r.journeys,
            "losses": r.losses.len(),
            "losses_wire": count(LossKind::Wire),
            "losses_stack": count(LossKind::Stack),
            "losses_either": count(LossKind::Either),
            "capture_loss": r.points.iter().map(|p| p.capture_loss).sum::<u64>(),
        }),
    );
    for p in &r.points {
        row_facts(
            &mut f,
            &format!("point.{}", p.name),
            &serde_json::json!({
                "frames": p.frames,
                "capture_loss": p.capture_loss,
                "offset_ns": p.offset_ns,
                "drift_ppm": p.drift_ppm,
                "spread_ns": p.spread_ns,
                "aligned": p.aligned,
            }),
        );
    }
    for s in &r.segments {
        row_facts(
            &mut f,
            &format!("segment.{}", s.name),
            &serde_json::json!({
                "frames": s.frames,
                "p50_ns": s.p50_ns,
                "p99_ns": s.p99_ns,
                "losses": r.losses.iter().filter(|l| l.segment == s.name).count(),
            }),
        );
    }
    // The receivers' stacks are segments of their own (`b`).
    for l in r.losses.iter().filter(|l| l.kind == LossKind::Stack) {
        let n = r.losses.iter().filter(|o| o.segment == l.segment).count();
        f.insert(
            format!("segment.{}.losses", l.segment),
            Value::Number(n as f64),
        );
    }
    let names = |seen: u16| -> String {
        r.points
            .iter()
            .enumerate()
            .filter(|(i, _)| seen & (1 << i) != 0)
            .map(|(_, p)| p.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    for (i, l) in r.losses.iter().take(NAMED).enumerate() {
        row_facts(
            &mut f,
            &format!("loss{}", i + 1),
            &serde_json::json!({
                "segment": l.segment,
                "kind": l.kind.name(),
                "psn": l.psn,
                "dest_qp": l.dest_qp,
                "opcode": l.opcode,
                "request": l.request,
                "seen_at": names(l.seen),
                "us": l.ts_ns.saturating_sub(r.t0_ns) as f64 / 1e3,
            }),
        );
    }
    f
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// Every fact of a run, by name.
pub fn facts(report: &Report, stats: &StoreStats) -> Facts {
    let mut f = Facts::new();
    let num = |f: &mut Facts, k: String, v: f64| {
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
        ratio(stats.wire_bytes as f64, span_ns as f64),
    );
    num(&mut f, "qps".into(), report.qps.len() as f64);
    num(&mut f, "findings".into(), report.findings.len() as f64);
    let qps = report.qp_rows();
    let mut by_cause: BTreeMap<&str, u64> = EpisodeCause::ALL.map(|c| (c.name(), 0)).into();
    for (k, n) in qps.iter().flat_map(|q| &q.episodes_by_cause) {
        *by_cause.entry(k).or_default() += n;
    }
    num(
        &mut f,
        "episodes".into(),
        by_cause.values().sum::<u64>() as f64,
    );
    for (k, n) in by_cause {
        num(&mut f, format!("episodes.{k}"), n as f64);
    }
    for (name, v) in report.counters.named() {
        num(&mut f, format!("counters.{name}"), v as f64);
    }
    for (i, e) in report.episode_rows().iter().take(NAMED).enumerate() {
        let p = format!("episode{}", i + 1);
        row_facts(&mut f, &p, e);
        // The QP as the facts number it (`qp1` is the first).
        num(&mut f, format!("{p}.qp"), f64::from(e.qp) + 1.0);
        num(
            &mut f,
            format!("{p}.start_us"),
            us(e.start_ns.saturating_sub(t0_ns)),
        );
        num(&mut f, format!("{p}.recovery_us"), us(e.recovery_ns));
        num(&mut f, format!("{p}.silence_us"), us(e.silence_ns));
    }
    for (i, (q, row)) in report.qps.iter().zip(&qps).take(NAMED).enumerate() {
        let p = format!("qp{}", i + 1);
        row_facts(&mut f, &p, row);
        let acks = row.counters.get("acks").copied().unwrap_or(0);
        num(
            &mut f,
            format!("{p}.acks_per_request"),
            ratio(acks as f64, row.requests as f64),
        );
        num(
            &mut f,
            format!("{p}.throughput_gbytes_s"),
            ratio(
                row.wire_bytes as f64,
                q.last_ts_ns.saturating_sub(q.first_ts_ns) as f64,
            ),
        );
        if let Some(ns) = row.rtt_p50_ns {
            num(&mut f, format!("{p}.rtt_p50_us"), us(ns));
        }
        // Where its time went: each state's share of its span (0 to 1),
        // and the state that held it back most.
        for (state, ns) in &row.time_by_state_ns {
            num(
                &mut f,
                format!("{p}.time.{state}"),
                ratio(*ns as f64, row.span_ns as f64),
            );
        }
        if let Some((most, _)) = TimeState::ALL
            .into_iter()
            .map(|st| (st, q.states.totals_ns[st as usize]))
            .filter(|&(_, ns)| ns > 0)
            .max_by_key(|&(_, ns)| ns)
        {
            f.insert(format!("{p}.time.most"), Value::Text(most.name().into()));
        }
        // An RNR NAK's wait on average: each RNR wait (a run: a resend ends
        // it), the one the capture cuts short left out.
        let s = &q.states;
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
        // `error` is its reason, or `none`; `error.frame` and `error.psn`
        // come with the row.
        let error = row.error.as_ref().map_or("none", |e| e.reason);
        f.insert(format!("{p}.error"), Value::Text(error.into()));
    }
    for (i, x) in report.finding_rows().iter().take(NAMED).enumerate() {
        let p = format!("finding{}", i + 1);
        row_facts(&mut f, &p, x);
        if let Some(qp) = x.qp {
            num(&mut f, format!("{p}.qp"), f64::from(qp) + 1.0);
        }
    }
    f
}

/// Why a step's check does not hold: the fact, its value in the run and
/// what the step says.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unmet {
    #[error("the run has no fact {fact}")]
    NoFact { fact: String },
    #[error("{fact} is {is}, the step says {want}")]
    NotEqual {
        fact: String,
        is: Value,
        want: Value,
    },
    #[error("{fact} is {is}, the step says at least {least}")]
    BelowLeast { fact: String, is: Value, least: f64 },
    #[error("{fact} is {is}, the step says at most {most}")]
    AboveMost { fact: String, is: Value, most: f64 },
}

/// Whether `check` holds among `facts`; the reason when it does not.
pub fn holds(check: &super::Check, facts: &BTreeMap<String, Value>) -> Result<(), Unmet> {
    let fact = || check.fact.clone();
    let Some(v) = facts.get(&check.fact) else {
        return Err(Unmet::NoFact { fact: fact() });
    };
    if let Some(want) = &check.equals {
        let same = match (want, v) {
            (Value::Number(a), Value::Number(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
            (Value::Text(a), Value::Text(b)) => a == b,
            _ => false,
        };
        if !same {
            return Err(Unmet::NotEqual {
                fact: fact(),
                is: v.clone(),
                want: want.clone(),
            });
        }
    }
    let n = match v {
        Value::Number(n) => Some(*n),
        Value::Text(_) => None,
    };
    if let Some(least) = check.at_least
        && !n.is_some_and(|n| n >= least)
    {
        return Err(Unmet::BelowLeast {
            fact: fact(),
            is: v.clone(),
            least,
        });
    }
    if let Some(most) = check.at_most
        && !n.is_some_and(|n| n <= most)
    {
        return Err(Unmet::AboveMost {
            fact: fact(),
            is: v.clone(),
            most,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lesson::Check;
    use rocescope_decoders::analysis::{EpisodeRow, QpRow, Row};

    #[test]
    fn every_field_of_a_row_is_a_fact_under_its_json_path() {
        let mut f = Facts::new();
        row_facts(&mut f, "qp1", &QpRow::specimen());
        row_facts(&mut f, "episode1", &EpisodeRow::specimen());
        assert_eq!(f.get("qp1.counters.acks"), Some(&Value::Number(0.0)));
        assert_eq!(f.get("qp1.naks.rnr"), Some(&Value::Number(0.0)));
        assert_eq!(f.get("qp1.error.frame"), Some(&Value::Number(1.0)));
        assert_eq!(
            f.get("qp1.time_by_state_ns.window_full"),
            Some(&Value::Number(1.0))
        );
        assert_eq!(f.get("qp1.src_ip"), Some(&Value::Text("10.0.0.1".into())));
        assert_eq!(
            f.get("qp1.both_request"),
            Some(&Value::Text("false".into()))
        );
        assert_eq!(
            f.get("episode1.unacted.cause"),
            Some(&Value::Text("implied_nak".into()))
        );
        // Every leaf of the JSON, and nothing else.
        fn leaves(v: &serde_json::Value) -> usize {
            match v {
                serde_json::Value::Object(m) => m.values().map(leaves).sum(),
                serde_json::Value::Null | serde_json::Value::Array(_) => 0,
                _ => 1,
            }
        }
        let json = |r: serde_json::Result<serde_json::Value>| leaves(&r.unwrap());
        assert_eq!(
            f.len(),
            json(serde_json::to_value(QpRow::specimen()))
                + json(serde_json::to_value(EpisodeRow::specimen()))
        );
    }

    #[test]
    fn an_unmet_check_names_the_fact_its_value_and_the_bound() {
        let facts = BTreeMap::from([("qp1.retransmissions".to_owned(), Value::Number(3.0))]);
        let check = |at_least, at_most| Check {
            fact: "qp1.retransmissions".into(),
            equals: None,
            at_least,
            at_most,
        };
        assert_eq!(holds(&check(Some(1.0), Some(5.0)), &facts), Ok(()));
        let e = holds(&check(Some(4.0), None), &facts).unwrap_err();
        assert_eq!(
            e,
            Unmet::BelowLeast {
                fact: "qp1.retransmissions".into(),
                is: Value::Number(3.0),
                least: 4.0
            }
        );
        assert_eq!(
            e.to_string(),
            "qp1.retransmissions is 3, the step says at least 4"
        );
        let missing = Check {
            fact: "qp9.naks".into(),
            ..check(None, Some(1.0))
        };
        assert_eq!(
            holds(&missing, &BTreeMap::new()),
            Err(Unmet::NoFact {
                fact: "qp9.naks".into()
            })
        );
    }
}
