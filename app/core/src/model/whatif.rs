//! The what-if beside the capture: `:whatif set KEY=VALUE` reruns the
//! capture file's workload in the simulator (`rocescope_sim::whatif`, what
//! `rocescope whatif` runs) on a thread of its own; the Overview and QPs
//! views read its outcome from here.

use std::path::PathBuf;
use std::thread::JoinHandle;

use rocescope_sim::whatif::{self, WhatIf, WhatIfError};

use super::*;

/// What the views show of a what-if.
#[derive(Debug)]
pub enum WhatIfState {
    /// The twin and the changed run are being simulated.
    Running { changes: Vec<String> },
    /// Both runs with the twin's check: a prediction, or the refusal where
    /// the twin does not hold (`mismatches`).
    Ready(Box<WhatIf>),
}

#[derive(Debug)]
pub(super) struct WhatIfRun {
    state: WhatIfState,
    thread: Option<JoinHandle<Result<WhatIf, WhatIfError>>>,
}

/// `window_packets=32, losses=none` (`no change` for none).
pub fn changes_text(changes: &[String]) -> String {
    if changes.is_empty() {
        "no change".into()
    } else {
        changes.join(", ")
    }
}

impl Model {
    /// The what-if shown beside the capture, while it runs and once run.
    pub fn whatif(&self) -> Option<&WhatIfState> {
        self.whatif.as_ref().map(|w| &w.state)
    }

    /// Start a what-if of this capture file with `sets`: checked here (a
    /// bad key is told at once, with the valid keys), run on a thread.
    pub(super) fn start_whatif(&mut self, sets: Vec<String>) {
        if let Err(e) = whatif::check_sets(&sets) {
            self.status = format!("whatif: {e}");
            return;
        }
        let path: Option<PathBuf> = self.source.path.clone();
        let path = match path {
            Some(p) if !self.source.live => p,
            _ if self.source.live => {
                self.status = format!(
                    "whatif: not available in a live session ({}): it reruns a capture file; record one and open it",
                    self.source.name
                );
                return;
            }
            _ => {
                self.status = format!(
                    "whatif: not available: {} was not opened from a capture file",
                    self.source.name
                );
                return;
            }
        };
        let run = {
            let (path, sets) = (path.clone(), sets.clone());
            std::thread::Builder::new()
                .name("whatif".into())
                .spawn(move || whatif::what_if(&path, &sets).map(|(w, _)| w))
        };
        match run {
            Ok(thread) => {
                self.status = format!(
                    "whatif {}: running the twin of {} and the changed run…",
                    changes_text(&sets),
                    path.display()
                );
                // A what-if still running is let go: its thread ends on
                // its own and its outcome is not shown.
                self.whatif = Some(WhatIfRun {
                    state: WhatIfState::Running { changes: sets },
                    thread: Some(thread),
                });
            }
            Err(e) => self.status = format!("whatif: could not start its thread: {e}"),
        }
    }

    pub(super) fn clear_whatif(&mut self) {
        self.status = match self.whatif.take() {
            Some(_) => "whatif closed".into(),
            None => "whatif: none is open (whatif set KEY=VALUE opens one)".into(),
        };
    }

    /// Take a finished what-if's runs into the views, or its error (a
    /// panic in its thread too) into the status line.
    pub(super) fn poll_whatif(&mut self) {
        let Some(run) = &mut self.whatif else {
            return;
        };
        if !run.thread.as_ref().is_some_and(|t| t.is_finished()) {
            return;
        }
        let Some(thread) = run.thread.take() else {
            return;
        };
        match thread.join() {
            Ok(Ok(w)) => {
                self.status = ready_text(&w);
                run.state = WhatIfState::Ready(Box::new(w));
            }
            Ok(Err(e)) => {
                self.status = format!("whatif: {e}");
                self.whatif = None;
            }
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                self.status = format!("whatif: the simulator's run failed (a panic: {why})");
                self.whatif = None;
            }
        }
    }
}

/// The status line of a finished what-if: each QP's change of goodput
/// against the twin, or which QP the twin does not reproduce.
fn ready_text(w: &WhatIf) -> String {
    let changes = changes_text(&w.changes);
    if let Some(m) = w.mismatches.first() {
        return format!(
            "whatif {changes}: no prediction: the twin does not reproduce QP {} ({} -> {}): {}{}",
            rocescope_replay::text::qpn(m.dest_qp),
            m.src_ip,
            m.dst_ip,
            m.why,
            match w.mismatches.len() {
                1 => String::new(),
                n => format!(" (and {} more QPs)", n - 1),
            }
        );
    }
    let gains: Vec<String> = w
        .twin
        .qps
        .iter()
        .zip(&w.changed.qps)
        .map(|(t, c)| {
            format!(
                "QP {} {:+.1}%",
                rocescope_replay::text::qpn(t.dest_qp),
                crate::query::whatif_gain_pct(t, c)
            )
        })
        .collect();
    format!(
        "whatif {changes}: goodput against the twin: {} (Overview and QPs show both runs)",
        gains.join(", ")
    )
}
