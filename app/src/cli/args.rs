//! Option groups several commands share, flattened into their `Args`, and
//! the value parsers every command uses: a bad value fails in clap, naming
//! the flag.

use std::path::PathBuf;
use std::time::Duration;

use rocescope_core::session::{SessionLimits, default_max_memory_bytes};
use rocescope_decoders::DecodeConfig;
use rocescope_decoders::units;

/// How frames are decoded: the UDP ports taken for RoCEv2.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DecodeOpts {
    /// Extra UDP destination port to decode as RoCEv2 (4791 always is);
    /// repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    pub roce_ports: Vec<u16>,
}

impl DecodeOpts {
    pub fn config(&self) -> DecodeConfig {
        DecodeConfig {
            extra_roce_ports: self.roce_ports.clone(),
        }
    }
}

/// A waveform beside a capture, aligned with it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AlignArgs {
    /// A waveform (VCD, FST) of the same traffic: aligned with the capture
    /// by content; the offset and the frames matched and unmatched are
    /// shown (in the workbench, in its status line).
    #[arg(long, value_name = "WAVE")]
    pub wave: Option<PathBuf>,
}

/// How a waveform or ILA capture is read: `--axis`, `--clock`,
/// `--sample-clock` (`decode`, `info`, `stats`, `open`, `gui`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WaveArgs {
    /// Waveforms: only this AXI4-Stream interface (scope path or its end);
    /// or, for an ILA capture with generic probe names, which probe is
    /// which: tdata=probe0,tkeep=probe1,tvalid=probe2,tlast=probe3,tready=probe4.
    #[arg(long, value_name = "SCOPE|MAP")]
    pub axis: Option<String>,
    /// Waveforms: the clock of the interfaces (full path or name), instead
    /// of the clk/aclk/ap_clk/aclk_i found in scope.
    #[arg(long, value_name = "SIGNAL")]
    pub clock: Option<String>,
    /// ILA captures: the clock the ILA sampled at (250MHz, 322.265625MHz,
    /// 4ns), which the file does not hold [default: 250MHz, the card's].
    #[arg(long, value_name = "FREQ", value_parser = rocescope_replay::wave::ila::parse_sample_clock)]
    pub sample_clock: Option<u64>,
}

impl WaveArgs {
    /// As the reader takes them.
    pub fn options(&self) -> rocescope_replay::wave::WaveOptions {
        rocescope_replay::wave::WaveOptions {
            axis: self.axis.clone(),
            clock: self.clock.clone(),
            sample_clock_hz: self.sample_clock,
        }
    }
}

/// What a live session may hold (the simulator, an attached link).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// Memory the session may hold, e.g. 512MiB, 4GiB (default: 2 GiB, or a
    /// quarter of the machine's memory where that is less). Older frames
    /// and index rows move to disk segments and stay queryable.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_memory: Option<u64>,
    /// Disk the session's segments may take, e.g. 20GiB: past it the oldest
    /// are deleted (a ring), counted and shown (default: the smaller of
    /// 8 GiB and a tenth of the free space).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_disk: Option<u64>,
    /// Folder for the session's segments (default: a new folder under the
    /// cache directory, ~/.cache/rocescope/sessions), removed at exit.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
}

impl SessionArgs {
    pub fn limits(&self) -> SessionLimits {
        SessionLimits {
            max_memory_bytes: self.max_memory.unwrap_or_else(default_max_memory_bytes),
            max_disk_bytes: self.max_disk,
            dir: self.session_dir.clone(),
        }
    }
}

/// A size: `512MiB`, `4GiB`, `1.5G`.
pub fn size(s: &str) -> Result<u64, String> {
    units::parse_size_bytes(s).map_err(|e| e.to_string())
}

/// A duration of capture or simulated time, up to an hour: `100us`, `10ms`,
/// `2s`, `1m`.
pub fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration_ns(s, units::HOUR_NS)
        .map(Duration::from_nanos)
        .map_err(|e| e.to_string())
}

/// A wall-clock duration up to a week (a soak may run for days): `30s`,
/// `12h`.
pub fn long_duration(s: &str) -> Result<Duration, String> {
    const WEEK_NS: u64 = 7 * 24 * 3_600_000_000_000;
    units::parse_duration_ns(s, WEEK_NS)
        .map(Duration::from_nanos)
        .map_err(|e| e.to_string())
}

/// A link rate in Gb/s: a positive number (`100`, `25`, `12.5`).
pub fn rate_gbps(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(g) if g.is_finite() && g > 0.0 => Ok(g),
        _ => Err(format!(
            "{s:?}: expected a positive number of Gb/s, e.g. 100"
        )),
    }
}

/// Nanoseconds of a parsed duration (within u64 by the parsers' bounds).
pub fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
