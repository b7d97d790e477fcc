//! The what-if held against the simulator itself: a shipped scenario's
//! run is the capture, and the prediction for a change is compared with a
//! direct run of the scenario with that change (FIDELITY.md, "What if").

use super::outcome::relative_gap;
use super::{Analysed, RunOutcome, apply_sets, changed, check, derive, run};
use crate::Scenario;

/// How far a prediction may be from the direct run, per QP goodput.
pub const PREDICTION_TOLERANCE: f64 = 0.10;

/// The changes the validation makes: window, propagation, timer, loss.
pub const CHANGES: &[&str] = &[
    "window_packets=32",
    "link_prop_ns=2000",
    "timeout_first_ns=200000",
    "losses=none",
];

/// One QP's prediction and the direct run's goodput.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QpCheck {
    pub dest_qp: u32,
    pub predicted_gbytes_s: f64,
    pub direct_gbytes_s: f64,
    /// `|predicted - direct| / direct`.
    pub gap: f64,
}

/// A scenario and change checked, or why the twin was refused.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Validation {
    pub scenario: String,
    pub change: String,
    pub qps: Vec<QpCheck>,
    /// The twin did not hold: the mismatches' text, no prediction made.
    pub refused: Option<String>,
}

impl Validation {
    /// The largest gap of its QPs.
    pub fn worst_gap(&self) -> f64 {
        self.qps.iter().map(|q| q.gap).fold(0.0, f64::max)
    }
}

/// The shipped scenario `name`, at most `max_ns` long, checked with each
/// change: the capture is its run, analysed as a recording is.
pub fn validate(name: &str, max_ns: u64, changes: &[&str]) -> Vec<Validation> {
    let Some(mut sc) = Scenario::builtin(name) else {
        return Vec::new();
    };
    sc.bound_to_ns(sc.duration_ns.min(max_ns));
    let cap: Analysed = run(&sc);
    let derived = match derive(&cap, name) {
        Ok(d) => d,
        Err(e) => {
            return changes
                .iter()
                .map(|c| Validation {
                    scenario: name.into(),
                    change: (*c).into(),
                    qps: Vec::new(),
                    refused: Some(e.to_string()),
                })
                .collect();
        }
    };
    let capture = RunOutcome::of(&cap, &derived.qp_keys, true);
    let twin = RunOutcome::of(&run(&derived.scenario), &derived.qp_keys, false);
    let mismatches = check(&capture, &twin);
    changes
        .iter()
        .map(|change| {
            let mut v = Validation {
                scenario: name.into(),
                change: (*change).into(),
                qps: Vec::new(),
                refused: None,
            };
            if !mismatches.is_empty() {
                let text: Vec<String> = mismatches
                    .iter()
                    .map(|m| format!("QP {:#x}: {}", m.dest_qp, m.why))
                    .collect();
                v.refused = Some(text.join("; "));
                return v;
            }
            let sets = [(*change).to_owned()];
            let mut direct = sc.clone();
            let changed = match changed(&derived.scenario, &sets)
                .and_then(|c| apply_sets(&mut direct, &sets).map(|()| c))
            {
                Ok(c) => c,
                Err(e) => {
                    v.refused = Some(e.to_string());
                    return v;
                }
            };
            let predicted = RunOutcome::of(&run(&changed), &derived.qp_keys, false);
            // The direct run is the scenario itself: its QPs are named as
            // the capture's.
            let direct = RunOutcome::of(&run(&direct), &derived.qp_keys, true);
            v.qps = predicted
                .qps
                .iter()
                .zip(&direct.qps)
                .map(|(p, d)| QpCheck {
                    dest_qp: p.dest_qp,
                    predicted_gbytes_s: p.goodput_gbytes_s,
                    direct_gbytes_s: d.goodput_gbytes_s,
                    gap: relative_gap(d.goodput_gbytes_s, p.goodput_gbytes_s),
                })
                .collect();
            v
        })
        .collect()
}

/// The validations as a Markdown table (FIDELITY.md's).
pub fn markdown(rows: &[Validation]) -> String {
    let mut s = String::from(
        "| scenario | change | QPs | worst goodput gap | predicted / direct GB/s (worst QP) |\n|---|---|---|---|---|\n",
    );
    let mut refused_last: Option<&str> = None;
    for v in rows {
        if let Some(why) = &v.refused {
            // A twin refused is refused for every change: one row.
            if refused_last != Some(v.scenario.as_str()) {
                s.push_str(&format!(
                    "| {} | every change | - | refused | {} |\n",
                    v.scenario,
                    why.replace('|', "/")
                ));
            }
            refused_last = Some(v.scenario.as_str());
            continue;
        }
        let worst = v.qps.iter().max_by(|a, b| a.gap.total_cmp(&b.gap));
        s.push_str(&format!(
            "| {} | `{}` | {} | {:.1}% | {} |\n",
            v.scenario,
            v.change,
            v.qps.len(),
            v.worst_gap() * 100.0,
            worst.map_or("-".into(), |q| format!(
                "{:.3} / {:.3}",
                q.predicted_gbytes_s, q.direct_gbytes_s
            ))
        ));
    }
    s
}
