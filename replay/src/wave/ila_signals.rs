//! An ILA capture's probes for the signals view: names, the trigger and
//! window markers, and a probe's values as changes at its sample clock.

use std::path::Path;

use wellen::stream;

use super::ila::{CsvReader, Row, sample_ns};
use super::ila_open::VcdProbes;
use super::signals::{Change, Hierarchy, LoadedSignal, Marker, MarkerKind, SignalInfo};
use super::{Timescale, WaveError};
use crate::contain::contain;

fn read_err(path: &Path, message: String) -> WaveError {
    WaveError::Read {
        path: path.to_path_buf(),
        message,
    }
}

fn csv(path: &Path) -> Result<CsvReader<std::io::BufReader<std::fs::File>>, WaveError> {
    let file = std::fs::File::open(path).map_err(|e| read_err(path, e.to_string()))?;
    CsvReader::new(std::io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| read_err(path, format!("not an ILA capture: {e}")))
}

/// The markers as the rows go by: triggers, and each window's start after
/// the first.
#[derive(Default)]
struct Windows {
    last_in_window: Option<u64>,
    markers: Vec<Marker>,
}

impl Windows {
    fn row(&mut self, row: &Row, hz: u64) {
        let ts_ns = sample_ns(row.sample, hz);
        if self.last_in_window.is_some_and(|l| row.in_window <= l) {
            self.markers.push(Marker {
                ts_ns,
                kind: MarkerKind::Window,
            });
        }
        self.last_in_window = Some(row.in_window);
        if row.trigger {
            self.markers.push(Marker {
                ts_ns,
                kind: MarkerKind::Trigger,
            });
        }
    }
}

/// A CSV's probes and markers (its rows read once; a damaged row ends the
/// markers there, and loading a probe tells where).
pub(super) fn csv_hierarchy(path: &Path, hz: u64) -> Result<Hierarchy, WaveError> {
    let mut r = csv(path)?;
    let mut signals: Vec<SignalInfo> = r
        .probes
        .iter()
        .map(|p| SignalInfo {
            path: p.name.clone(),
            width_bits: Some(p.width_bits),
        })
        .collect();
    signals.sort_by(|a, b| a.path.cmp(&b.path));
    signals.dedup_by(|a, b| a.path == b.path);
    let mut windows = Windows::default();
    let mut row = Row::default();
    while let Ok(true) = r.next(&mut row) {
        windows.row(&row, hz);
    }
    Ok(Hierarchy {
        signals,
        timescale: Timescale::per_sample(hz),
        markers: windows.markers,
    })
}

/// The values of `signals` (probe names) in a CSV, as changes.
pub(super) fn csv_load(
    path: &Path,
    signals: &[String],
    max_changes: usize,
    hz: u64,
) -> Result<Vec<LoadedSignal>, WaveError> {
    let mut r = csv(path)?;
    let mut columns = Vec::with_capacity(signals.len());
    let mut out = Vec::with_capacity(signals.len());
    for s in signals {
        let i = r
            .probes
            .iter()
            .position(|p| p.name == *s)
            .ok_or_else(|| read_err(path, format!("no signal named {s}")))?;
        columns.push(i);
        out.push(LoadedSignal {
            path: s.clone(),
            width_bits: r.probes[i].width_bits,
            changes: Vec::new(),
            dropped: 0,
            cut: None,
        });
    }
    let mut row = Row::default();
    let mut last_ns = None;
    let failed = loop {
        match r.next(&mut row) {
            Ok(true) => {}
            Ok(false) => break None,
            Err(e) => break Some(e),
        }
        let ts_ns = sample_ns(row.sample, hz);
        last_ns = Some(ts_ns);
        for (sig, &col) in out.iter_mut().zip(&columns) {
            let v = &row.values[col];
            let value = v
                .iter()
                .take(8)
                .enumerate()
                .fold(0u64, |acc, (k, b)| acc | u64::from(*b) << (8 * k));
            let change = Change {
                ts_ns,
                value,
                known: !row.gap,
            };
            let same = sig
                .changes
                .last()
                .is_some_and(|c| c.value == change.value && c.known == change.known);
            if same {
                continue;
            }
            if sig.changes.len() < max_changes {
                sig.changes.push(change);
            } else {
                sig.dropped += 1;
            }
        }
    };
    if let Some(e) = failed {
        let Some(t) = last_ns else {
            return Err(read_err(path, e));
        };
        let why = format!("unreadable past {t} ns: {e}");
        for s in &mut out {
            s.cut = Some(why.clone());
        }
    }
    Ok(out)
}

/// An ILA VCD's markers, from `_TRIGGER` and `_WINDOW`.
pub(super) fn vcd_markers(
    wave: &mut stream::StreamingWaveform<std::io::BufReader<std::fs::File>>,
    v: &VcdProbes,
    hz: u64,
) -> Result<Vec<Marker>, WaveError> {
    let refs = [v.trigger, v.window];
    let mut markers = Vec::new();
    let mut seen_window = false;
    let streamed = contain(|| {
        wave.stream_changes(
            stream::Filter::include_signals(&refs),
            |s, signal, value| {
                let ts_ns = sample_ns(s, hz);
                if signal == v.window {
                    if seen_window {
                        markers.push(Marker {
                            ts_ns,
                            kind: MarkerKind::Window,
                        });
                    }
                    seen_window = true;
                } else if super::signals::low_bits(&value) == (1, true) {
                    markers.push(Marker {
                        ts_ns,
                        kind: MarkerKind::Trigger,
                    });
                }
                Ok::<(), std::convert::Infallible>(())
            },
        )
    });
    // A damaged body keeps the markers before it; loading a signal says
    // where it stopped.
    match streamed {
        Ok(Err(stream::StreamError::Callback(never))) => match never {},
        _ => Ok(markers),
    }
}
