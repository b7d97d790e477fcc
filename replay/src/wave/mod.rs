//! Waveforms (VCD, FST) as captures: Ethernet frames out of AXI4-Stream.
//!
//! [`WaveStream::open`] reads only the hierarchy (with `wellen`, the
//! library Surfer is built on), finds the AXI4-Stream interfaces and their
//! clocks ([`axis`]), then streams the value changes of just those signals
//! on a thread of its own through the sampler ([`beats`]), handing whole
//! frames over a bounded channel: the signal data of a large file is never
//! held, and rows appear while the rest is read. Each interface is one
//! capture port, numbered in hierarchy order; frames are numbered in time
//! order across ports, their time the first beat's edge. A Vivado ILA
//! capture (CSV, or a VCD with `_TRIGGER` and `_WINDOW`) reads the same
//! way, a sample per cycle of its sample clock ([`ila`]).

pub mod axis;
pub mod beats;
mod check;
pub mod ila;
mod ila_open;
mod ila_signals;
mod ila_stream;
mod signal_file;
mod stream;

use std::fmt;
use std::path::{Path, PathBuf};

pub mod align;
pub mod signals;

pub use align::{Alignment, align};
pub use axis::{AxisInterface, CLOCK_NAMES};
pub use beats::{MAX_FRAME_BYTES, WaveFrame};
pub use signal_file::{LoadTiming, SignalFile};
pub use stream::WaveStream;

/// Which interfaces to decode, and on which clock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaveOptions {
    /// Only the interface with this name or scope (`tb.dut.m_axis_rx`, or a
    /// suffix of it such as `m_axis_rx`); all of them when `None`. For an
    /// ILA capture also a mapping of probes to signals,
    /// `tdata=probe0,tkeep=probe1,tvalid=probe2,tlast=probe3,tready=probe4`
    /// ([`ila::AxisMap`]: a list of `KEY=VALUE` is a mapping).
    pub axis: Option<String>,
    /// The clock for every interface (full path or plain name), instead of
    /// the `clk`/`aclk`/`ap_clk`/`aclk_i` found in scope.
    pub clock: Option<String>,
    /// An ILA capture's sample clock in Hz (`--sample-clock`); the card's
    /// 250 MHz ([`ila::DEFAULT_SAMPLE_CLOCK_HZ`]) when `None`.
    pub sample_clock_hz: Option<u64>,
    /// What a VCD's body held in memory for the signals view may take
    /// ([`SignalFile`]): its body pass stops there, and each signal is read
    /// from the file instead; [`crate::store::default_max_memory_bytes`]
    /// when `None`.
    pub max_held_bytes: Option<u64>,
}

/// The waveform formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaveFormat {
    /// Value Change Dump (IEEE 1364), text.
    Vcd,
    /// GTKWave's Fast Signal Trace, binary.
    Fst,
    /// A Vivado ILA capture written as CSV ([`ila`]).
    IlaCsv,
    /// A Vivado ILA capture written as VCD: a sample per time step, with
    /// `_TRIGGER` and `_WINDOW` ([`ila`]).
    IlaVcd,
}

impl fmt::Display for WaveFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Vcd => "VCD",
            Self::Fst => "FST",
            Self::IlaCsv => "ILA CSV",
            Self::IlaVcd => "ILA VCD",
        })
    }
}

/// Why a waveform could not be read as a capture; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum WaveError {
    /// The path names a pipe, a folder or a device, not a file.
    #[error("{path}: {kind}")]
    NotAFile {
        /// The path given.
        path: PathBuf,
        /// What it names.
        kind: crate::capture::NotAFile,
    },
    /// wellen could not read the header or the body.
    #[error("{path}: {message}")]
    Read {
        /// The waveform file.
        path: PathBuf,
        /// wellen's message, with the time reached when known.
        message: String,
    },
    /// No scope holds `tdata`, `tvalid` and `tlast`.
    #[error(
        "{path}: no AXI4-Stream interface (a scope with tdata, tvalid and tlast, or signals sharing a prefix such as m_axis_tdata)"
    )]
    NoInterface {
        /// The waveform file.
        path: PathBuf,
    },
    /// Interfaces were found but no clock for any of them.
    #[error(
        "{path}: no clock (one-bit clk, aclk, ap_clk or aclk_i in scope or above) for {names}; name one with --clock"
    )]
    NoClock {
        /// The waveform file.
        path: PathBuf,
        /// The interfaces without a clock.
        names: String,
    },
    /// `--axis` names no interface found.
    #[error("{path}: no AXI4-Stream interface {axis:?}; found: {found}")]
    NoSuchAxis {
        /// The waveform file.
        path: PathBuf,
        /// What was asked for.
        axis: String,
        /// The interfaces there are.
        found: String,
    },
    /// `--clock` names no usable signal.
    #[error("{path}: {message}")]
    Clock {
        /// The waveform file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// More interfaces than capture ports (255).
    #[error(
        "{path}: {count} AXI4-Stream interfaces; at most 255 are decoded at once (choose with --axis)"
    )]
    TooMany {
        /// The waveform file.
        path: PathBuf,
        /// How many were found.
        count: usize,
    },
}

impl WaveError {
    /// `--axis` named no interface; `names` lists those there are.
    pub(crate) fn no_such_axis(path: &Path, axis: &str, names: String) -> WaveError {
        WaveError::NoSuchAxis {
            path: path.to_path_buf(),
            axis: axis.to_owned(),
            found: if names.is_empty() {
                "none".into()
            } else {
                names
            },
        }
    }
}

/// Read `data` as a waveform file the way rocescope does (detection, the
/// frames through [`crate::CaptureReader`], the signals' hierarchy and the
/// first signals loaded): the body of the fuzz target `wave`, also run
/// over its corpus by the tests. Returns the frames read and the error
/// that ended reading, if any; a panic here is a bug (the parsers' own are
/// contained and come back as that error).
#[doc(hidden)]
pub fn exercise(data: &[u8]) -> (usize, Option<String>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "rocescope-wave-exercise-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&path, data).is_err() {
        return (0, Some("cannot write a temporary file".into()));
    }
    let mut frames = 0;
    let mut error = None;
    match crate::CaptureReader::open(&path) {
        Ok(mut r) => loop {
            match r.next_frame() {
                Ok(Some(_)) => frames += 1,
                Ok(None) => break,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            }
        },
        Err(e) => error = Some(e.to_string()),
    }
    if let Ok(h) = signals::hierarchy(&path) {
        let some: Vec<String> = h
            .signals
            .iter()
            .filter(|s| s.width_bits.is_some())
            .take(4)
            .map(|s| s.path.clone())
            .collect();
        let _ = signals::load(&path, &some, 1024);
    }
    let _ = std::fs::remove_file(&path);
    (frames, error)
}

/// The format of a waveform file, by content; `None` for anything else
/// (a capture, a sniffer dump). Told from the first bytes, without the
/// parsers: fst-reader's own test walks every block of any file it is
/// given and loops forever on a block of length 0 (`check` walks them
/// safely before an FST is parsed).
pub fn detect(path: &Path) -> Option<WaveFormat> {
    use std::io::Read;
    // A pipe is not opened: with no writer that would wait forever.
    if crate::capture::NotAFile::of(path).is_some() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::with_capacity(512);
    file.take(512).read_to_end(&mut head).ok()?;
    // An FST begins with its header block (type 0; 255 while a writer
    // still has it open) of 329 bytes, or is a gzip-wrapped FST (254).
    if let Some((&ty, rest)) = head.split_first()
        && let Some(len) = rest.first_chunk::<8>()
    {
        let len = u64::from_be_bytes(*len);
        if (matches!(ty, 0 | 255) && len == 329) || (ty == 254 && len >= 8) {
            return Some(WaveFormat::Fst);
        }
    }
    // An ILA's CSV begins with its fixed columns.
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
    if text.starts_with(ila::CSV_HEAD.as_bytes()) {
        return Some(WaveFormat::IlaCsv);
    }
    // A VCD begins with a command: `$date`, `$version`, `$timescale`,
    // `$scope`, `$comment`... after any white space.
    let text = head.trim_ascii_start();
    let word = text.strip_prefix(b"$")?;
    let n = word.iter().take_while(|b| b.is_ascii_lowercase()).count();
    (n >= 3 && word.get(n).is_some_and(u8::is_ascii_whitespace)).then_some(WaveFormat::Vcd)
}

/// A waveform time in the file's units as nanoseconds (sub-nanosecond
/// parts are cut: edges of one clock stay distinct down to 1 GHz).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timescale {
    mul: u64,
    div: u64,
}

impl Timescale {
    /// From a factor and a power of ten of seconds (`1`, `-12` for 1 ps).
    pub fn new(factor: u32, exponent: i8) -> Self {
        let e = i32::from(exponent) + 9;
        let pow = |n: i32| 10u64.saturating_pow(n.unsigned_abs());
        if e >= 0 {
            Self {
                mul: u64::from(factor).saturating_mul(pow(e)),
                div: 1,
            }
        } else {
            Self {
                mul: u64::from(factor),
                div: pow(e),
            }
        }
    }

    /// One unit per sample of a clock at `hz` (an ILA capture's time).
    pub fn per_sample(hz: u64) -> Self {
        Self {
            mul: 1_000_000_000,
            div: hz.max(1),
        }
    }

    /// `time` (file units) in nanoseconds.
    pub fn to_ns(self, time: u64) -> u64 {
        // In 64 bits when the product fits (a 128-bit division is a call,
        // and a load converts a million times).
        if let Some(p) = time.checked_mul(self.mul) {
            return p / self.div.max(1);
        }
        let ns = u128::from(time) * u128::from(self.mul) / u128::from(self.div.max(1));
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// How long one file unit is, in words (`1 ps`, `10 ns`).
    pub fn unit_text(self) -> String {
        if self.div == 1 {
            format!("{} ns", self.mul)
        } else {
            let fs = u128::from(self.mul) * 1_000_000 / u128::from(self.div);
            match fs {
                f if f % 1000 == 0 => format!("{} ps", f / 1000),
                f => format!("{f} fs"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Timescale;

    #[test]
    fn timescales_convert_to_nanoseconds() {
        assert_eq!(Timescale::new(1, -12).to_ns(12_345), 12);
        assert_eq!(Timescale::new(1, -9).to_ns(7), 7);
        assert_eq!(Timescale::new(10, -9).to_ns(7), 70);
        assert_eq!(Timescale::new(100, -12).to_ns(25), 2);
        assert_eq!(Timescale::new(1, -6).to_ns(3), 3_000);
        assert_eq!(Timescale::new(1, -12).unit_text(), "1 ps");
        assert_eq!(Timescale::new(10, -9).unit_text(), "10 ns");
    }
}
