//! A waveform's signals held for viewing: the hierarchy at open, the body
//! read once, every later signal from memory.
//!
//! A VCD has no index: whatever signal is asked for, its changes are spread
//! through the whole text. So the first load parses the whole body once
//! with wellen, the way Surfer does (`viewers::read_body`, on both cores):
//! wellen keeps every signal's changes compressed in memory, and each later
//! signal is decompressed from there in milliseconds instead of another
//! pass over the file: block by block up to the changes a load keeps, the
//! blocks past them only counted (wellen's `visit_signal_prefixes`). An
//! FST's body is not read at all: a load streams only the chosen signals'
//! blocks from the file, keeping the changes it keeps (wellen's own load of
//! an FST signal builds all of it first: 252 KB of FST of a 65,536-bit
//! signal took 200 MB). An ILA
//! CSV is parsed once, every probe kept. The memory this takes is what
//! wellen's compressed signals need (BENCHMARKS.md, "Signals at a viewer's
//! speed"); it is given back when the waveform is closed.
//!
//! A damaged body cannot be held (wellen stops without what it read): such
//! a file is then loaded signal by signal the streaming way
//! ([`stream_load`](super::signals::stream_load)), which keeps every change
//! before the damage and tells where it stopped. So is a body past the
//! memory budget (`WaveOptions::max_held_bytes`): wellen holds each change
//! of a vector at its full width and a VCD writes `b0` for a zero of any
//! width, so a file can ask for hundreds of times its size; the body pass
//! stops once what its threads hold passes the budget (`HeldBudget`, a
//! patch of the vendored wellen), at most about twice the budget held.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use wellen::{LoadOptions, SignalRef, SignalValueRef, viewers};

use super::signals::{
    Change, Hierarchy, LoadedSignal, MAX_CHANGES, flat, hierarchy_with, low_bits, stream_load,
};
use super::{Timescale, WaveError, WaveFormat, WaveOptions};
use crate::contain::contain_parallel;

/// What is held of the body.
enum Body {
    /// Not read yet: the header wellen read at open, to go on from.
    Unread(Box<Header>),
    /// Read whole: every signal's changes, compressed.
    Held(Box<Held>),
    /// An FST: each load reads its signals' blocks from the file.
    Blocks,
    /// An ILA CSV not parsed yet.
    CsvUnread,
    /// An ILA CSV's probes, every change.
    Csv(Vec<LoadedSignal>),
    /// The body could not be held (why): loads stream from the file.
    Streamed(String),
    /// Taken by a load in progress (never seen outside one).
    Busy,
}

struct Header {
    hierarchy: wellen::Hierarchy,
    body: viewers::ReadBodyContinuation<BufReader<std::fs::File>>,
}

struct Held {
    hierarchy: wellen::Hierarchy,
    source: wellen::SignalSource,
    time_table: Vec<u64>,
    /// Full path to its signal.
    refs: HashMap<String, (SignalRef, Option<u32>)>,
}

/// How long the last load took, and whether it read the body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadTiming {
    /// Seconds the load took, the body pass included.
    pub seconds: f64,
    /// Seconds of that spent reading the body (0 when it was held).
    pub body_seconds: f64,
}

/// A waveform's signals; see the module documentation. Loads may come from
/// several threads: they take turns, the first one reading the body.
pub struct SignalFile {
    path: PathBuf,
    options: WaveOptions,
    hierarchy: Hierarchy,
    timescale: Timescale,
    /// A VCD whose last line has no newline was cut while written.
    cut_mid_line: bool,
    body: Mutex<Body>,
    /// Why the body is not held, once known: read without the body's lock,
    /// which a load holds for as long as it reads the body.
    streamed: OnceLock<String>,
}

impl std::fmt::Debug for SignalFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalFile")
            .field("path", &self.path)
            .field("signals", &self.hierarchy.signals.len())
            .finish_non_exhaustive()
    }
}

fn read_err(path: &Path, message: String) -> WaveError {
    WaveError::Read {
        path: path.to_path_buf(),
        message,
    }
}

impl SignalFile {
    /// Reads the hierarchy (a VCD's header, an FST's hierarchy block, an
    /// ILA capture's probes and markers).
    pub fn open(path: &Path, options: &WaveOptions) -> Result<Self, WaveError> {
        let hierarchy = hierarchy_with(path, options)?;
        let format = super::detect(path);
        let timescale = hierarchy.timescale;
        let body = if format == Some(WaveFormat::IlaCsv) {
            Body::CsvUnread
        } else if format == Some(WaveFormat::Fst) {
            Body::Blocks
        } else {
            // The checks ran in `hierarchy_with`; wellen reads the header
            // again, keeping what the body pass goes on from.
            let load = LoadOptions {
                multi_thread: true,
                remove_scopes_with_empty_name: false,
            };
            match contain_parallel(|| viewers::read_header_from_file(path, &load)) {
                Ok(Ok(h)) => Body::Unread(Box::new(Header {
                    hierarchy: h.hierarchy,
                    body: h.body,
                })),
                Ok(Err(e)) => Body::Streamed(flat(&e.to_string())),
                Err(why) => Body::Streamed(format!("the parser failed: {why}")),
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            options: options.clone(),
            cut_mid_line: format == Some(WaveFormat::Vcd) && super::stream::ends_mid_line(path),
            hierarchy,
            timescale,
            streamed: match &body {
                Body::Streamed(why) => OnceLock::from(why.clone()),
                _ => OnceLock::new(),
            },
            body: Mutex::new(body),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The signals' names and widths, the time unit, the markers.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    /// Why the body could not be held, when it could not: every load then
    /// reads the file again.
    pub fn streamed_because(&self) -> Option<String> {
        self.streamed.get().cloned()
    }

    /// Whether the body is held (every later load from memory).
    pub fn body_held(&self) -> bool {
        matches!(
            *self.body.lock().unwrap_or_else(|e| e.into_inner()),
            Body::Held(_) | Body::Csv(_)
        )
    }

    /// The changes of `signals` (full paths), at most `max_changes` of each
    /// kept. The first load of a VCD reads its body.
    pub fn load(
        &self,
        signals: &[String],
        max_changes: usize,
    ) -> Result<Vec<LoadedSignal>, WaveError> {
        self.load_timed(signals, max_changes).map(|(v, _)| v)
    }

    /// [`load`](Self::load), with how long it took.
    pub fn load_timed(
        &self,
        signals: &[String],
        max_changes: usize,
    ) -> Result<(Vec<LoadedSignal>, LoadTiming), WaveError> {
        let started = Instant::now();
        let mut guard = self.body.lock().unwrap_or_else(|e| e.into_inner());
        let mut body_seconds = 0.0;
        *guard = match std::mem::replace(&mut *guard, Body::Busy) {
            Body::Unread(header) => {
                let held = self.read_body(*header);
                body_seconds = started.elapsed().as_secs_f64();
                if let Body::Streamed(why) = &held {
                    let _ = self.streamed.set(why.clone());
                }
                held
            }
            other => other,
        };
        if matches!(*guard, Body::CsvUnread) {
            let names: Vec<String> = self
                .hierarchy
                .signals
                .iter()
                .map(|s| s.path.clone())
                .collect();
            let hz = self.sample_clock_hz();
            let all = super::ila_signals::csv_load(&self.path, &names, usize::MAX, hz)?;
            *guard = Body::Csv(all);
            body_seconds = started.elapsed().as_secs_f64();
        }
        let mut out = match &mut *guard {
            Body::Held(held) => self.load_held(held, signals, max_changes)?,
            Body::Csv(all) => signals
                .iter()
                .map(|s| {
                    let mut l = all
                        .iter()
                        .find(|l| l.path == *s)
                        .cloned()
                        .ok_or_else(|| read_err(&self.path, format!("no signal named {s}")))?;
                    if l.changes.len() > max_changes {
                        l.dropped += (l.changes.len() - max_changes) as u64;
                        l.changes.truncate(max_changes);
                    }
                    Ok(l)
                })
                .collect::<Result<Vec<_>, WaveError>>()?,
            Body::Blocks | Body::Streamed(_) | Body::Unread(_) | Body::CsvUnread | Body::Busy => {
                stream_load(&self.path, signals, max_changes, &self.options)?
            }
        };
        drop(guard);
        if self.cut_mid_line {
            for s in &mut out {
                s.cut
                    .get_or_insert_with(|| "its last line is incomplete".into());
            }
        }
        Ok((
            out,
            LoadTiming {
                seconds: started.elapsed().as_secs_f64(),
                body_seconds,
            },
        ))
    }

    fn sample_clock_hz(&self) -> u64 {
        self.options
            .sample_clock_hz
            .unwrap_or(super::ila::DEFAULT_SAMPLE_CLOCK_HZ)
    }

    /// The body pass: wellen's compressed signals, or why not.
    fn read_body(&self, header: Header) -> Body {
        let Header { hierarchy, body } = header;
        let max_bytes = self
            .options
            .max_held_bytes
            .unwrap_or_else(crate::store::default_max_memory_bytes);
        let budget = viewers::HeldBudget::new(max_bytes);
        match contain_parallel(|| viewers::read_body_within(body, &hierarchy, None, Some(&budget)))
        {
            Ok(Err(_)) if budget.passed() => Body::Streamed(format!(
                "holding it would take more than the {} it may hold: each change of a vector is \
                 held at its full width, and a VCD writes a value without its leading zeros",
                rocescope_decoders::units::size_text(max_bytes)
            )),
            Ok(Ok(r)) => {
                let refs = hierarchy
                    .all_vars()
                    .map(|v| {
                        let var = &hierarchy[v];
                        (
                            var.full_name(&hierarchy),
                            (var.signal_ref(), var.length(&hierarchy)),
                        )
                    })
                    .collect();
                Body::Held(Box::new(Held {
                    hierarchy,
                    source: r.source,
                    time_table: r.time_table,
                    refs,
                }))
            }
            Ok(Err(e)) => Body::Streamed(flat(&e.to_string())),
            Err(why) => Body::Streamed(format!("the parser failed: {why}")),
        }
    }

    fn load_held(
        &self,
        held: &mut Held,
        signals: &[String],
        max_changes: usize,
    ) -> Result<Vec<LoadedSignal>, WaveError> {
        let mut wanted = Vec::with_capacity(signals.len());
        for s in signals {
            let &(r, width) = held
                .refs
                .get(s)
                .ok_or_else(|| read_err(&self.path, format!("no signal named {s}")))?;
            let width_bits = width.ok_or_else(|| {
                read_err(
                    &self.path,
                    format!("{s} is a real or a string, not a bit vector"),
                )
            })?;
            wanted.push((s, r, width_bits));
        }
        let mut refs: Vec<SignalRef> = wanted.iter().map(|w| w.1).collect();
        refs.sort();
        refs.dedup();
        // Each signal's changes are taken as wellen decodes them, block by
        // block, up to the cap; the blocks after it are only counted, so a
        // signal is never built whole.
        let ts = self.timescale;
        let time_table = &held.time_table;
        let mut kept: Vec<Kept> = refs
            .iter()
            .map(|r| Kept {
                changes: Vec::new(),
                uses: wanted.iter().filter(|w| w.1 == *r).count(),
            })
            .collect();
        let mut visitors: Vec<wellen::ChangeVisitor<'_>> = kept
            .iter_mut()
            .map(|k| -> wellen::ChangeVisitor<'_> {
                Box::new(move |idx, value| {
                    k.take(
                        time_table.get(idx as usize).map(|&t| ts.to_ns(t)),
                        &value,
                        max_changes,
                    )
                })
            })
            .collect();
        let hierarchy = &held.hierarchy;
        let source = &mut held.source;
        let not_given = contain_parallel(|| {
            source.visit_signal_prefixes(&refs, hierarchy, &mut visitors, true)
        })
        .map_err(|why| read_err(&self.path, format!("the signals could not be read: {why}")))?;
        drop(visitors);
        let mut out = Vec::with_capacity(wanted.len());
        for (path, r, width_bits) in wanted {
            let mut sig = LoadedSignal {
                path: path.clone(),
                width_bits,
                changes: Vec::new(),
                dropped: 0,
                cut: None,
            };
            if let Ok(i) = refs.binary_search(&r) {
                // Two names of one signal both get it.
                kept[i].uses -= 1;
                sig.changes = if kept[i].uses == 0 {
                    let mut c = std::mem::take(&mut kept[i].changes);
                    c.shrink_to_fit();
                    c
                } else {
                    kept[i].changes.clone()
                };
                sig.dropped = not_given.get(i).copied().unwrap_or(0);
            }
            out.push(sig);
        }
        Ok(out)
    }
}

/// A signal's changes as a load keeps them.
struct Kept {
    changes: Vec<Change>,
    /// Names in the load that are this signal.
    uses: usize,
}

impl Kept {
    /// Takes the next change (at `ts_ns`, `None` past the time table: not
    /// kept); false at the first change past `max_changes` (not taken: it
    /// and the rest are counted, not decoded).
    fn take(&mut self, ts_ns: Option<u64>, value: &SignalValueRef<'_>, max_changes: usize) -> bool {
        let Some(ts_ns) = ts_ns else {
            return true;
        };
        // Times finer than a nanosecond land on one: the last wins.
        let n = self.changes.len();
        let same = n > 0 && self.changes[n - 1].ts_ns == ts_ns;
        if !same && n >= max_changes {
            return false;
        }
        let (v, known) = low_bits(value);
        let change = Change {
            ts_ns,
            value: v,
            known,
        };
        if same {
            self.changes[n - 1] = change;
        } else {
            if n == 0 {
                // Address space for the cap at once (pages are taken as
                // written, the rest given back by `shrink_to_fit`): growing
                // would copy what was kept, again and again.
                self.changes.reserve(max_changes.min(MAX_CHANGES));
            }
            self.changes.push(change);
        }
        true
    }
}
