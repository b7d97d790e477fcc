//! What if: a capture's workload rerun by the simulator with a parameter
//! changed. [`derive`] turns a capture into a [`Scenario`] (its twin), [`run`]
//! runs a scenario through the same analysis a capture gets, and
//! [`WhatIf::check`] holds the twin against the capture before the changed
//! run is believed.
//!
//! - `scan.rs`: one pass over a store's rows per QP (messages, their
//!   completion times, the frame ordinals losses are placed at);
//! - `derive.rs`: the scenario from a capture's report and scan;
//! - `toml.rs`: a scenario as the TOML `Scenario::from_toml` reads back;
//! - `outcome.rs`: what each run gives per QP, and the comparisons;
//! - `validate.rs`: predictions held against direct runs of the shipped
//!   scenarios (FIDELITY.md).

mod derive;
mod outcome;
mod scan;
mod toml;
pub mod validate;

use std::path::Path;
use std::sync::Arc;

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::Report;
use rocescope_replay::TimeBase;
use rocescope_replay::store::{RcAnalyzer, Store};

pub use derive::{Derived, QpKey, derive};
pub use outcome::{
    Mismatch, QpOutcome, RunOutcome, TWIN_GOODPUT_TOLERANCE, causes_text, check, refusal_text,
    relative_gap,
};
pub use scan::{QpScan, scan};
pub use toml::to_toml;

use crate::{ParamError, Params, Scenario, StoreSink};

/// Why a what-if could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    /// The capture could not be opened or read whole.
    #[error("{path}: {message}")]
    Capture {
        /// The capture.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The capture has no requester QP to model.
    #[error("{path}: no RoCE requester QP in the capture: nothing to model")]
    NoQps {
        /// The capture.
        path: String,
    },
    /// The capture's addresses are not ones a scenario can hold.
    #[error("{path}: {message}")]
    Unmodelable {
        /// The capture.
        path: String,
        /// What cannot be modelled.
        message: String,
    },
    /// A `--set` that names no parameter or has a value the model cannot
    /// run.
    #[error("--set {given}: {reason}")]
    Set {
        /// The text given.
        given: String,
        /// Why it was refused, with the valid keys.
        reason: String,
    },
    /// A what-if key with a value it does not take.
    #[error("--set {given}: {message}")]
    SetValue {
        /// The text given.
        given: String,
        /// Why.
        message: String,
    },
    /// A `--set` without `=`.
    #[error("--set {given}: expected KEY=VALUE; valid keys: {valid}")]
    SetSyntax {
        /// The text given.
        given: String,
        /// Every parameter's name.
        valid: String,
    },
}

/// A capture indexed and analysed: its store (rows) and report.
#[derive(Debug)]
pub struct Analysed {
    pub store: Arc<Store>,
    pub report: Report,
}

/// Opens `path`, indexes it whole and analyses it as `rocescope stats` does.
pub fn analyse_capture(path: &Path) -> Result<Analysed, WhatIfError> {
    let err = |message: String| WhatIfError::Capture {
        path: path.display().to_string(),
        message,
    };
    let analysis = RcAnalyzer::default();
    let store = Store::open(path, DecodeConfig::default(), Box::new(analysis.clone()))
        .map_err(|e| err(e.to_string()))?;
    store.wait();
    // Indexing that stopped early (a reader that failed) is an error, never
    // a model of part of the capture.
    if let Some(e) = store.progress().error {
        return Err(err(format!("indexing stopped early: {e}")));
    }
    if let Some((w, n)) = store.first_warning() {
        // A capture read in part would be modelled in part: refused.
        return Err(err(format!(
            "{} (at byte {}; {n} warning(s)): the capture was not read whole",
            w.message, w.offset
        )));
    }
    if store.time_base() == TimeBase::Ordinal {
        return Err(err(
            "its stamps are frame numbers, not times: no rates or round trips to model".into(),
        ));
    }
    let report = analysis.finish_report();
    Ok(Analysed { store, report })
}

/// Runs `sc` to its end through a store and the RC analysis, as a
/// recording of it would be analysed.
pub fn run(sc: &Scenario) -> Analysed {
    let (store, analysis) = StoreSink::run_scenario(sc, (sc.duration_ns / 100).max(1_000));
    store.wait();
    let report = analysis.finish_report();
    Analysed { store, report }
}

/// Applies `KEY=VALUE` changes to a scenario; an unknown key or a bad
/// value names itself and the valid keys.
pub fn apply_sets(sc: &mut Scenario, sets: &[String]) -> Result<(), WhatIfError> {
    for kv in sets {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(WhatIfError::SetSyntax {
                given: kv.clone(),
                valid: valid_keys(),
            });
        };
        if k.trim() == LOSSES_KEY {
            match v.trim() {
                "none" => sc.faults.retain(|f| f.kind != crate::FaultKind::Loss),
                "as_captured" => {}
                other => {
                    return Err(WhatIfError::SetValue {
                        given: kv.clone(),
                        message: format!(
                            "`{other}` is not a value of {LOSSES_KEY} (none, as_captured)"
                        ),
                    });
                }
            }
            continue;
        }
        sc.set(k.trim(), v.trim()).map_err(|e| WhatIfError::Set {
            given: kv.clone(),
            reason: match e {
                ParamError::Unknown { name, .. } => {
                    format!("unknown key `{name}`; valid keys: {}", valid_keys())
                }
                // A value refused also says which keys there are.
                other => format!("{other}; valid keys: {}", valid_keys()),
            },
        })?;
    }
    Ok(())
}

/// Checks `KEY=VALUE` changes before a capture is read and twin run: the
/// error [`apply_sets`] would give on any scenario (the key named, the
/// valid keys listed).
pub fn check_sets(sets: &[String]) -> Result<(), WhatIfError> {
    let mut probe = Scenario::two_cards(crate::OpKind::Write, 4096, 1, 1);
    apply_sets(&mut probe, sets)
}

/// Where every QP posts a given number of messages, the changed run may
/// take this many times the capture's time to post them all.
const FINITE_RUN_ROOM: u64 = 10;

/// The twin with `sets` applied. A workload of a given number of messages
/// runs until they are done (a change may make them take longer than the
/// capture), one that posts until the end runs as long as the capture.
pub fn changed(twin: &Scenario, sets: &[String]) -> Result<Scenario, WhatIfError> {
    let mut sc = twin.clone();
    apply_sets(&mut sc, sets)?;
    if sc.qps.iter().all(|q| q.messages > 0) {
        sc.duration_ns = sc
            .duration_ns
            .saturating_mul(FINITE_RUN_ROOM)
            .saturating_add(1_000_000);
    }
    Ok(sc)
}

/// The what-if's own key beside the model's parameters: `losses=none`
/// takes the capture's losses out (`as_captured` keeps them).
pub const LOSSES_KEY: &str = "losses";

/// Every key `--set` takes: the model's parameters and [`LOSSES_KEY`].
pub fn valid_keys() -> String {
    let mut keys = Params::names();
    keys.push(LOSSES_KEY);
    keys.join(", ")
}

/// A what-if made: the capture, its twin and the changed run, per QP.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WhatIf {
    pub capture: RunOutcome,
    pub twin: RunOutcome,
    pub changed: RunOutcome,
    /// The `--set` changes, as given.
    pub changes: Vec<String>,
    /// Where the twin departs from the capture (empty: the twin holds and
    /// the changed run is a prediction).
    pub mismatches: Vec<Mismatch>,
}

/// Derives the twin of the capture at `path`, runs it and the changed run.
pub fn what_if(path: &Path, sets: &[String]) -> Result<(WhatIf, Derived), WhatIfError> {
    let capture = analyse_capture(path)?;
    let derived = derive(&capture, &path.display().to_string())?;
    let changed_sc = changed(&derived.scenario, sets)?;
    let twin = run(&derived.scenario);
    let changed = run(&changed_sc);
    let capture = RunOutcome::of(&capture, &derived.qp_keys, true);
    let twin = RunOutcome::of(&twin, &derived.qp_keys, false);
    let changed = RunOutcome::of(&changed, &derived.qp_keys, false);
    let mismatches = outcome::check(&capture, &twin);
    Ok((
        WhatIf {
            capture,
            twin,
            changed,
            changes: sets.to_vec(),
            mismatches,
        },
        derived,
    ))
}

#[cfg(test)]
mod tests;
