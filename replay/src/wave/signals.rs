//! A waveform's signals for viewing beside packets: the hierarchy's names
//! at once, one signal's changes on demand (only that signal streamed, with
//! a cap on what is kept).

use std::path::Path;

use wellen::{LoadOptions, SignalValueRef, stream};

use super::{Timescale, WaveError, WaveFormat, WaveOptions};
use crate::contain::contain;

/// Changes of one signal kept at most; the rest are counted, not kept.
/// A change is 24 bytes, so a loaded signal costs at most 24 MiB.
pub const MAX_CHANGES: usize = 1 << 20;

/// One signal of the hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalInfo {
    /// Full dotted path (`tb.dut.rx_opcode`).
    pub path: String,
    /// Bits of a bit vector; `None` for reals and strings (not shown).
    pub width_bits: Option<u32>,
}

/// A waveform's signal names and time unit.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    pub signals: Vec<SignalInfo>,
    pub timescale: Timescale,
    /// Times to mark on the charts: an ILA capture's triggers and window
    /// starts.
    pub markers: Vec<Marker>,
}

/// A time marked on the signal charts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// In the waveform's time (ns).
    pub ts_ns: u64,
    pub kind: MarkerKind,
}

/// What a marker marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// An ILA capture's trigger.
    Trigger,
    /// The first sample of an ILA capture window after the first (the
    /// time between windows is unknown).
    Window,
}

/// One change of a signal: its new value from `ts_ns` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub ts_ns: u64,
    /// The low 64 bits (X and Z as 0).
    pub value: u64,
    /// Every bit was 0 or 1.
    pub known: bool,
}

/// One signal's changes, in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSignal {
    pub path: String,
    pub width_bits: u32,
    pub changes: Vec<Change>,
    /// Changes past [`MAX_CHANGES`], counted and not kept.
    pub dropped: u64,
    /// The file ended mid-body: wellen's message (the changes before it kept).
    pub cut: Option<String>,
}

pub(super) fn open(
    path: &Path,
) -> Result<stream::StreamingWaveform<std::io::BufReader<std::fs::File>>, WaveError> {
    let load = LoadOptions {
        multi_thread: false,
        remove_scopes_with_empty_name: false,
    };
    let format = super::detect(path).ok_or_else(|| WaveError::Read {
        path: path.to_path_buf(),
        message: "not a VCD or FST waveform".into(),
    })?;
    super::check::before_parsing(path, format)?;
    let wave = contain(|| stream::read_from_file(path, &load))
        .map_err(|why| WaveError::Read {
            path: path.to_path_buf(),
            message: format!("the parser failed on the header: {why}"),
        })?
        .map_err(|e| WaveError::Read {
            path: path.to_path_buf(),
            message: flat(&e.to_string()),
        })?;
    super::check::widths(path, wave.hierarchy())?;
    Ok(wave)
}

fn timescale_of(h: &wellen::Hierarchy) -> Timescale {
    h.timescale()
        .and_then(|t| Some(Timescale::new(t.factor, t.unit.to_exponent()?)))
        .unwrap_or(Timescale::new(1, -9))
}

/// Reads the hierarchy only (the header of a VCD, FST's hierarchy block).
pub fn hierarchy(path: &Path) -> Result<Hierarchy, WaveError> {
    hierarchy_with(path, &WaveOptions::default())
}

/// [`hierarchy`], with an ILA capture's sample clock from `options`; an
/// ILA capture's markers are read from its body (a capture is small).
pub fn hierarchy_with(path: &Path, options: &WaveOptions) -> Result<Hierarchy, WaveError> {
    if let Some(kind) = crate::capture::NotAFile::of(path) {
        return Err(WaveError::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let hz = options
        .sample_clock_hz
        .unwrap_or(super::ila::DEFAULT_SAMPLE_CLOCK_HZ);
    if super::detect(path) == Some(WaveFormat::IlaCsv) {
        return super::ila_signals::csv_hierarchy(path, hz);
    }
    let mut wave = open(path)?;
    let ila = contain(|| super::ila_open::vcd_probes(wave.hierarchy()))
        .ok()
        .flatten();
    let markers = match &ila {
        Some(v) => super::ila_signals::vcd_markers(&mut wave, v, hz)?,
        None => Vec::new(),
    };
    let h = wave.hierarchy();
    let mut signals: Vec<SignalInfo> = contain(|| {
        h.all_vars()
            .map(|v| SignalInfo {
                path: h[v].full_name(h),
                width_bits: h[v].length(h),
            })
            .collect()
    })
    .map_err(|why| WaveError::Read {
        path: path.to_path_buf(),
        message: format!("the hierarchy could not be read: {why}"),
    })?;
    signals.sort_by(|a, b| a.path.cmp(&b.path));
    signals.dedup_by(|a, b| a.path == b.path);
    Ok(Hierarchy {
        signals,
        timescale: if ila.is_some() {
            Timescale::per_sample(hz)
        } else {
            timescale_of(h)
        },
        markers,
    })
}

/// Streams the changes of the signals at `signals` (full paths) in one
/// pass over the file, only those signals, keeping at most `max_changes`
/// of each.
pub fn load(
    path: &Path,
    signals: &[String],
    max_changes: usize,
) -> Result<Vec<LoadedSignal>, WaveError> {
    load_with(path, signals, max_changes, &WaveOptions::default())
}

/// [`load`], with an ILA capture's sample clock from `options`: a
/// [`SignalFile`](super::SignalFile) opened for this one load.
pub fn load_with(
    path: &Path,
    signals: &[String],
    max_changes: usize,
    options: &WaveOptions,
) -> Result<Vec<LoadedSignal>, WaveError> {
    super::SignalFile::open(path, options)?.load(signals, max_changes)
}

/// The changes of `signals` streamed from the file in one pass, only
/// those signals: what a load costs where the body could not be held (a
/// damaged file: the changes before the damage are kept, and where it
/// stopped is told), and the way every load went before
/// [`SignalFile`](super::SignalFile).
pub fn stream_load(
    path: &Path,
    signals: &[String],
    max_changes: usize,
    options: &WaveOptions,
) -> Result<Vec<LoadedSignal>, WaveError> {
    let hz = options
        .sample_clock_hz
        .unwrap_or(super::ila::DEFAULT_SAMPLE_CLOCK_HZ);
    if super::detect(path) == Some(WaveFormat::IlaCsv) {
        return super::ila_signals::csv_load(path, signals, max_changes, hz);
    }
    let mut wave = open(path)?;
    let h = wave.hierarchy();
    let ila = contain(|| super::ila_open::vcd_probes(h).is_some()).unwrap_or(false);
    let ts = if ila {
        Timescale::per_sample(hz)
    } else {
        timescale_of(h)
    };
    let mut out = Vec::with_capacity(signals.len());
    let mut refs = Vec::with_capacity(signals.len());
    for signal in signals {
        let var = h
            .all_vars()
            .find(|v| h[*v].full_name(h) == *signal)
            .ok_or_else(|| WaveError::Read {
                path: path.to_path_buf(),
                message: format!("no signal named {signal}"),
            })?;
        let width_bits = h[var].length(h).ok_or_else(|| WaveError::Read {
            path: path.to_path_buf(),
            message: format!("{signal} is a real or a string, not a bit vector"),
        })?;
        refs.push(h[var].signal_ref());
        out.push(LoadedSignal {
            path: signal.clone(),
            width_bits,
            changes: Vec::new(),
            dropped: 0,
            cut: None,
        });
    }
    let streamed = contain(|| {
        wave.stream_changes(stream::Filter::include_signals(&refs), |time, s, value| {
            let (v, known) = low_bits(&value);
            let ts_ns = ts.to_ns(time);
            let change = Change {
                ts_ns,
                value: v,
                known,
            };
            // Two names of one signal (a port and the wire it is bound to) both get it.
            for (sig, _) in out.iter_mut().zip(&refs).filter(|(_, r)| **r == s) {
                // A later change at the same time replaces the earlier one.
                let n = sig.changes.len();
                if n > 0 && sig.changes[n - 1].ts_ns == ts_ns {
                    sig.changes[n - 1] = change;
                } else if n < max_changes {
                    sig.changes.push(change);
                } else {
                    sig.dropped += 1;
                }
            }
            Ok::<(), std::convert::Infallible>(())
        })
    });
    let why = match streamed {
        Ok(Ok(())) => return Ok(out),
        Ok(Err(stream::StreamError::Wellen(e))) => flat(&e.to_string()),
        Ok(Err(stream::StreamError::Callback(never))) => match never {},
        Err(panic) => format!("the parser failed: {panic}"),
    };
    // A cut or damaged file: the changes before it are kept, as frames are.
    let last_ns = out
        .iter()
        .filter_map(|s| s.changes.last())
        .map(|c| c.ts_ns)
        .max();
    match last_ns {
        Some(t) => {
            let why = format!("unreadable past {t} ns: {why}");
            for s in &mut out {
                s.cut = Some(why.clone());
            }
            Ok(out)
        }
        None => Err(WaveError::Read {
            path: path.to_path_buf(),
            message: why,
        }),
    }
}

/// The low 64 bits of a value; false when a bit was X or Z.
pub(super) fn low_bits(value: &SignalValueRef<'_>) -> (u64, bool) {
    let SignalValueRef::BitVec(bits) = value else {
        return (0, false);
    };
    if let Some(be) = bits.be_bytes() {
        let low = &be[be.len().saturating_sub(8)..];
        let mut word = [0u8; 8];
        word[8 - low.len()..].copy_from_slice(low);
        return (u64::from_be_bytes(word), true);
    }
    let mut v = 0u64;
    let mut known = true;
    for i in 0..bits.width() {
        match u8::from(bits.get_bit(i)) {
            0 => {}
            1 if i < 64 => v |= 1 << i,
            1 => {}
            _ => known = false,
        }
    }
    (v, known)
}

pub(super) fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
