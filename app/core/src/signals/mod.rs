//! Waveform signals beside packets: the hierarchy browser's search, the
//! chosen signals with their formats, the waveform cursor. UI-free: the
//! views read [`Signals`] through the model and send commands.
//!
//! The hierarchy is read at open (names only); a chosen signal's changes are
//! streamed from the file on a thread of its own (one pass for several),
//! never on the UI's. Each signal keeps at most
//! [`rocescope_replay::wave::signals::MAX_CHANGES`] changes of 24 bytes
//! (24 MiB), the rest counted and shown; at most [`MAX_CHOSEN`] are chosen.
//! Times are capture times: the waveform's plus the alignment offset.

pub mod chart;
pub mod format;
mod saved;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};

use rocescope_replay::wave::signals::{self as wave, Change, LoadedSignal, Marker, SignalInfo};
use rocescope_replay::wave::{LoadTiming, SignalFile, WaveOptions};

pub use format::{Radix, format_value};

/// Signals chosen at most at once.
pub const MAX_CHOSEN: usize = 8;

/// Why a waveform could not be opened, or a signal not shown, changed or
/// its choice kept.
#[derive(Debug, thiserror::Error)]
pub enum SignalsError {
    /// The waveform could not be opened or a signal not loaded.
    #[error("{cause}")]
    Wave {
        cause: rocescope_replay::wave::WaveError,
    },
    /// `#N` past the search's matches (`n` 1-based).
    #[error("no match #{n} for {search:?}")]
    NoMatch { n: usize, search: String },
    /// `#N` past the shown signals (`n` 1-based).
    #[error("no signal #{n} shown")]
    NoShown { n: usize },
    #[error("{path} is not shown")]
    NotShown { path: String },
    #[error("{path} is shown already")]
    ShownAlready { path: String },
    #[error("at most {MAX_CHOSEN} signals are shown; drop one first")]
    TooMany,
    #[error("no signal {path} in {}", file.display())]
    NoSignal { path: String, file: PathBuf },
    #[error("{path} is a real or a string, not a bit vector")]
    NotBits { path: String },
    /// The saved choices (`signals.json`) could not be read or written.
    #[error("{}: {cause}", file.display())]
    StateIo {
        file: PathBuf,
        cause: std::io::Error,
    },
    /// The saved choices are not JSON of ours; they are ignored.
    #[error("{}: {cause} (saved signals ignored)", file.display())]
    StateCorrupt {
        file: PathBuf,
        cause: serde_json::Error,
    },
    #[error("{cause}")]
    StateEncode { cause: serde_json::Error },
    /// The thread that loads the chosen signals could not start.
    #[error("cannot start a thread: {cause}")]
    Thread { cause: std::io::Error },
}

/// A chosen signal's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trace {
    /// Being read from the file.
    Loading,
    Loaded {
        /// In capture time, sorted.
        changes: Vec<Change>,
        /// Changes past the cap, not kept.
        dropped: u64,
        /// The file was cut: wellen's words.
        cut: Option<String>,
    },
    Failed(String),
}

/// One chosen signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub path: String,
    pub width_bits: u32,
    pub radix: Radix,
    pub trace: Trace,
}

impl Chosen {
    /// The change in force at `ts_ns` (the last at or before it).
    pub fn at(&self, ts_ns: u64) -> Option<Change> {
        let Trace::Loaded { changes, .. } = &self.trace else {
            return None;
        };
        let i = changes.partition_point(|c| c.ts_ns <= ts_ns);
        i.checked_sub(1).map(|i| changes[i])
    }

    /// The changes, empty until loaded.
    pub fn changes(&self) -> &[Change] {
        match &self.trace {
            Trace::Loaded { changes, .. } => changes,
            _ => &[],
        }
    }

    /// `value` in this signal's format.
    pub fn text(&self, c: Change) -> String {
        format_value(c.value, c.known, self.width_bits, self.radix)
    }

    /// The name shown: the path, the format, and what was not kept.
    pub fn label(&self) -> String {
        let wide = if self.width_bits > 64 {
            format!(", low 64 of {} bits", self.width_bits)
        } else {
            String::new()
        };
        let state = match &self.trace {
            Trace::Loading => ", loading".to_owned(),
            Trace::Failed(e) => format!(", failed: {e}"),
            Trace::Loaded { dropped, cut, .. } => {
                let mut s = String::new();
                if *dropped > 0 {
                    s += &format!(", {dropped} later changes not kept");
                }
                if let Some(c) = cut {
                    s += &format!(", file cut: {c}");
                }
                s
            }
        };
        format!("{} [{}{wide}{state}]", self.path, self.radix.word())
    }
}

/// Probe ids of the chosen signals in a `profiler` export: this plus
/// their place in the list (the simulator's probes are below it, the card's
/// counters at 0x8000).
pub const WAVE_PROBE_BASE: u16 = 0x2000;

/// The module a chosen signal's probe definition names.
pub const WAVE_MODULE: &str = "wave";

/// `#N` (1-based) as an index.
fn nth(s: &str) -> Option<usize> {
    s.strip_prefix('#')?.parse::<usize>().ok()?.checked_sub(1)
}

/// A load's signals, or the paths it was for and why it failed.
type Loaded = Result<Vec<LoadedSignal>, (Vec<String>, SignalsError)>;

/// The waveform's signals as the workbench shows them.
#[derive(Debug)]
pub struct Signals {
    file: PathBuf,
    /// The waveform's signals, shared with the loading threads: the first
    /// load reads the body, every later one is from memory.
    source: std::sync::Arc<SignalFile>,
    /// Capture time minus waveform time (ns).
    offset_ns: i64,
    hierarchy: Vec<SignalInfo>,
    /// Times marked on the charts (an ILA capture's triggers and window
    /// starts), in capture time.
    markers: Vec<Marker>,
    search: String,
    chosen: Vec<Chosen>,
    /// Set by moving the waveform cursor; selecting a packet clears it
    /// (the cursor is then the packet's time).
    cursor_ns: Option<u64>,
    /// The time the TUI's charts span.
    span_ns: u64,
    tx: Sender<Loaded>,
    rx: Receiver<Loaded>,
}

impl Signals {
    /// Reads `file`'s hierarchy and the selection saved for it, and starts
    /// loading that selection.
    pub fn open(
        file: &Path,
        offset_ns: i64,
        options: &WaveOptions,
    ) -> Result<(Signals, Option<SignalsError>), SignalsError> {
        let source =
            SignalFile::open(file, options).map_err(|cause| SignalsError::Wave { cause })?;
        let h = source.hierarchy().clone();
        let (tx, rx) = channel();
        let markers = h
            .markers
            .into_iter()
            .map(|m| Marker {
                ts_ns: m.ts_ns.saturating_add_signed(offset_ns),
                ..m
            })
            .collect();
        let mut s = Signals {
            file: file.to_path_buf(),
            source: std::sync::Arc::new(source),
            offset_ns,
            hierarchy: h.signals,
            markers,
            search: String::new(),
            chosen: Vec::new(),
            cursor_ns: None,
            span_ns: 1_000,
            tx,
            rx,
        };
        let (saved, warning) = saved::load(file);
        let mut paths = Vec::new();
        for (path, radix) in saved {
            if s.add_unloaded(&path, Some(radix)).is_ok() {
                paths.push(path);
            }
        }
        s.spawn_load(paths);
        Ok((s, warning))
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    pub fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// Times to mark on the charts (an ILA capture's triggers and window
    /// starts), in capture time, in time order.
    pub fn markers(&self) -> &[Marker] {
        &self.markers
    }

    /// Every signal of the hierarchy, sorted by path.
    pub fn hierarchy(&self) -> &[SignalInfo] {
        &self.hierarchy
    }

    pub fn search(&self) -> &str {
        &self.search
    }

    /// Signals whose path holds every word of the search (any case).
    pub fn matches(&self) -> impl Iterator<Item = &SignalInfo> {
        let words: Vec<String> = self
            .search
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        self.hierarchy.iter().filter(move |s| {
            let p = s.path.to_ascii_lowercase();
            words.iter().all(|w| p.contains(w.as_str()))
        })
    }

    pub fn chosen(&self) -> &[Chosen] {
        &self.chosen
    }

    pub fn span_ns(&self) -> u64 {
        self.span_ns
    }

    pub(crate) fn cursor_override(&self) -> Option<u64> {
        self.cursor_ns
    }

    pub(crate) fn set_cursor(&mut self, ts_ns: Option<u64>) {
        self.cursor_ns = ts_ns;
    }

    pub(crate) fn set_search(&mut self, text: String) {
        self.search = text;
    }

    pub(crate) fn set_span(&mut self, span_ns: u64) {
        self.span_ns = span_ns.max(1);
    }

    /// Choose a signal (a path, or `#N`: the Nth search match) and load
    /// it on a thread.
    pub(crate) fn add(&mut self, path: &str) -> Result<(), SignalsError> {
        let path = match nth(path) {
            Some(n) => self
                .matches()
                .nth(n)
                .map(|s| s.path.clone())
                .ok_or_else(|| SignalsError::NoMatch {
                    n: n + 1,
                    search: self.search.clone(),
                })?,
            None => path.to_owned(),
        };
        self.add_unloaded(&path, None)?;
        self.spawn_load(vec![path]);
        self.save()
    }

    /// A shown signal's path from a path or `#N` (the Nth shown).
    fn shown(&self, path: &str) -> Result<String, SignalsError> {
        match nth(path) {
            Some(n) => self
                .chosen
                .get(n)
                .map(|c| c.path.clone())
                .ok_or(SignalsError::NoShown { n: n + 1 }),
            None => Ok(path.to_owned()),
        }
    }

    pub(crate) fn remove(&mut self, path: &str) -> Result<(), SignalsError> {
        let path = &self.shown(path)?;
        let before = self.chosen.len();
        self.chosen.retain(|c| c.path != *path);
        if self.chosen.len() == before {
            return Err(SignalsError::NotShown { path: path.clone() });
        }
        self.save()
    }

    pub(crate) fn set_radix(&mut self, path: &str, radix: Radix) -> Result<(), SignalsError> {
        let path = &self.shown(path)?;
        let c = self
            .chosen
            .iter_mut()
            .find(|c| c.path == *path)
            .ok_or_else(|| SignalsError::NotShown { path: path.clone() })?;
        c.radix = radix;
        self.save()
    }

    fn add_unloaded(&mut self, path: &str, radix: Option<Radix>) -> Result<(), SignalsError> {
        if self.chosen.iter().any(|c| c.path == path) {
            return Err(SignalsError::ShownAlready { path: path.into() });
        }
        if self.chosen.len() >= MAX_CHOSEN {
            return Err(SignalsError::TooMany);
        }
        let info = self
            .hierarchy
            .iter()
            .find(|s| s.path == path)
            .ok_or_else(|| SignalsError::NoSignal {
                path: path.into(),
                file: self.file.clone(),
            })?;
        let width_bits = info
            .width_bits
            .ok_or_else(|| SignalsError::NotBits { path: path.into() })?;
        self.chosen.push(Chosen {
            path: path.to_owned(),
            width_bits,
            radix: radix.unwrap_or_else(|| Radix::default_for(path, width_bits)),
            trace: Trace::Loading,
        });
        Ok(())
    }

    fn spawn_load(&self, paths: Vec<String>) {
        if paths.is_empty() {
            return;
        }
        let tx = self.tx.clone();
        let file = self.file.clone();
        let source = std::sync::Arc::clone(&self.source);
        let spawned = std::thread::Builder::new()
            .name("rocescope-signal".into())
            .spawn({
                let paths = paths.clone();
                move || {
                    // The parser's panics are contained inside `load`; this
                    // holds any other, so the signal fails rather than
                    // loading forever.
                    let r = rocescope_replay::contain::contain(|| {
                        source.load(&paths, wave::MAX_CHANGES)
                    })
                    .unwrap_or_else(|why| {
                        Err(rocescope_replay::wave::WaveError::Read {
                            path: file.clone(),
                            message: format!("loading failed: {why}"),
                        })
                    })
                    .map_err(|cause| (paths, SignalsError::Wave { cause }));
                    let _ = tx.send(r);
                }
            });
        if let Err(cause) = spawned {
            let _ = self.tx.send(Err((paths, SignalsError::Thread { cause })));
        }
    }

    /// Shows `path` at once, loading it on this thread (headless runs:
    /// `rocescope signals`): the selection saved for the file is left as
    /// it was. Returns how long the load took.
    pub fn show_now(&mut self, path: &str) -> Result<LoadTiming, SignalsError> {
        self.add_unloaded(path, None)?;
        let paths = vec![path.to_owned()];
        match self.source.load_timed(&paths, wave::MAX_CHANGES) {
            Ok((loaded, timing)) => {
                self.take(Ok(loaded));
                Ok(timing)
            }
            Err(cause) => {
                // The chosen signal shows why; the caller gets it too.
                let e = SignalsError::Wave { cause };
                self.fail(&paths, &e);
                Err(e)
            }
        }
    }

    /// Why the waveform's body could not be held in memory, if it could
    /// not (every signal then reads the file again).
    pub fn streamed_because(&self) -> Option<String> {
        self.source.streamed_because()
    }

    /// Takes in what the loading threads finished. True when something changed.
    pub(crate) fn poll(&mut self) -> bool {
        let mut changed = false;
        while let Ok(r) = self.rx.try_recv() {
            changed = true;
            self.take(r);
        }
        changed
    }

    fn take(&mut self, r: Loaded) {
        {
            match r {
                Ok(loaded) => {
                    for l in loaded {
                        let off = self.offset_ns;
                        let Some(c) = self.chosen.iter_mut().find(|c| c.path == l.path) else {
                            continue;
                        };
                        let mut changes = l.changes;
                        for ch in &mut changes {
                            ch.ts_ns = ch.ts_ns.saturating_add_signed(off);
                        }
                        c.trace = Trace::Loaded {
                            changes,
                            dropped: l.dropped,
                            cut: l.cut,
                        };
                    }
                }
                Err((paths, e)) => self.fail(&paths, &e),
            }
        }
    }

    /// The chosen signals among `paths` failed to load, for `e`.
    fn fail(&mut self, paths: &[String], e: &SignalsError) {
        let e = e.to_string();
        for c in self.chosen.iter_mut().filter(|c| paths.contains(&c.path)) {
            c.trace = Trace::Failed(e.clone());
        }
    }

    /// Waits for every loading signal (tests and headless runs).
    pub fn wait_loaded(&mut self, timeout: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + timeout;
        while self.chosen.iter().any(|c| c.trace == Trace::Loading) {
            if std::time::Instant::now() > until {
                return false;
            }
            match self.rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(r) => self.take(r),
                Err(_) => continue,
            }
        }
        true
    }

    /// The loaded signals as profiler records, for a `profiler` export like
    /// the probes': a definition (the path as its name, the format as its
    /// unit, module `wave`), then a sample per change at its capture time,
    /// its `cycle` the waveform's own time in ns, its value the low 64
    /// bits (sign-extended when the format is `signed`).
    pub fn profiler_records(&self) -> Vec<rocescope_replay::Record> {
        use rocescope_replay::Record;
        use rocescope_replay::record::{ProbeDef, ProfilerSample};
        let mut out = Vec::new();
        for (i, c) in self.chosen.iter().enumerate() {
            let probe = WAVE_PROBE_BASE + i as u16;
            out.push(Record::ProbeDef(ProbeDef {
                probe,
                name: c.path.clone(),
                unit: c.radix.word().to_owned(),
                module: WAVE_MODULE.to_owned(),
            }));
            let w = c.width_bits.clamp(1, 64);
            for ch in c.changes() {
                let value = if c.radix == Radix::Signed && w < 64 {
                    ((ch.value << (64 - w)) as i64) >> (64 - w)
                } else {
                    ch.value as i64
                };
                out.push(Record::Profiler(ProfilerSample {
                    cycle: ch.ts_ns.saturating_add_signed(-self.offset_ns),
                    ts_ns: ch.ts_ns,
                    probe,
                    value,
                }));
            }
        }
        out
    }

    fn save(&self) -> Result<(), SignalsError> {
        let list: Vec<(String, Radix)> = self
            .chosen
            .iter()
            .map(|c| (c.path.clone(), c.radix))
            .collect();
        saved::save(&self.file, &list)
    }
}

/// The command that shows a waveform's signals beside the packets: `file`
/// itself when it is a waveform, else `wave` opened with it, through the
/// alignment's offset (none for a capture whose times are packet indexes).
pub fn open_command(
    file: &Path,
    wave: Option<(&Path, &rocescope_replay::wave::Alignment)>,
    options: &WaveOptions,
) -> Option<crate::Command> {
    match wave {
        Some((w, a)) => Some(crate::Command::OpenSignals {
            path: w.to_path_buf(),
            offset_ns: if a.ordinal || a.matched == 0 {
                0
            } else {
                a.offset_ns
            },
            sample_clock_hz: options.sample_clock_hz,
            max_held_bytes: options.max_held_bytes,
        }),
        None => rocescope_replay::wave::detect(file).map(|_| crate::Command::OpenSignals {
            path: file.to_path_buf(),
            offset_ns: 0,
            sample_clock_hz: options.sample_clock_hz,
            max_held_bytes: options.max_held_bytes,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Callers tell a refused choice from a missing signal by its variant.
    #[test]
    fn refusals_are_told_apart_by_variant() {
        let dir = rocescope_testkit::build_tmp().join("signals-err");
        std::fs::create_dir_all(&dir).unwrap();
        let vcd = dir.join("t.vcd");
        std::fs::write(
            &vcd,
            "$timescale 1ns $end\n$scope module tb $end\n$var wire 4 ! psn [3:0] $end\n\
             $var real 64 \" rate $end\n$upscope $end\n$enddefinitions $end\n\
             #0\nb0 !\nr0.5 \"\n#10\nb11 !\n",
        )
        .unwrap();
        let (mut s, _) = Signals::open(&vcd, 0, &WaveOptions::default()).unwrap();
        s.show_now("tb.psn").unwrap();
        let e = s.show_now("tb.psn").unwrap_err();
        assert!(
            matches!(&e, SignalsError::ShownAlready { path } if path == "tb.psn"),
            "{e}"
        );
        assert_eq!(e.to_string(), "tb.psn is shown already");
        let e = s.show_now("tb.nope").unwrap_err();
        assert!(
            matches!(&e, SignalsError::NoSignal { path, file } if path == "tb.nope" && *file == vcd),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!("no signal tb.nope in {}", vcd.display())
        );
        let e = s.show_now("tb.rate").unwrap_err();
        assert!(matches!(e, SignalsError::NotBits { .. }), "{e}");
        let e = Signals::open(&dir.join("absent.vcd"), 0, &WaveOptions::default()).unwrap_err();
        assert!(matches!(e, SignalsError::Wave { .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
