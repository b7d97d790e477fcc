//! Option groups several commands share, flattened into their `Args`, and
//! the value parsers every command uses: a bad value fails in clap, naming
//! the flag.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rocescope_core::session::SessionLimits;
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
            max_held_bytes: None,
        }
    }
}

/// How `info`, `stats` and `open` read a capture file or waveform: its
/// decoding, a waveform beside it, how a waveform is read, and what the
/// index may hold.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FileArgs {
    #[command(flatten)]
    pub decode: DecodeOpts,
    #[command(flatten)]
    pub align: AlignArgs,
    #[command(flatten)]
    pub wave_args: WaveArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// What a live session may hold (the simulator, an attached link).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// Memory the session may hold, e.g. 512MiB, 4GiB (default: 2 GiB, or a
    /// quarter of the machine's memory where that is less). Older frames
    /// and index rows (of a capture file too) move to disk segments and
    /// stay queryable; a waveform's body is not held past it.
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
            max_disk_bytes: self.max_disk,
            dir: self.session_dir.clone(),
            ..SessionLimits::with_max_memory(self.max_memory)
        }
    }
}

/// What a command that opens a capture file may hold of its index.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MemoryArgs {
    /// Memory the process may hold, e.g. 512MiB, 4GiB (default: 2 GiB, or a
    /// quarter of the machine's memory where that is less). Past it, the
    /// capture's older index rows move to disk segments (a session folder
    /// under ~/.cache/rocescope/sessions, removed at exit) and are read
    /// back from there: every row stays listed, filtered and exported. A
    /// waveform's body is not held past it: its signals then read the file.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_memory: Option<u64>,
    /// Keep the capture's index in DIR (one folder per capture, about 24
    /// bytes a packet), with its RC analysis, and read them back at the
    /// next open of the unchanged file instead of indexing it; a stale one
    /// (the file's size or modification time changed, other --roce-port or
    /// analysis settings, another version) is said and rebuilt.
    #[arg(long, value_name = "DIR")]
    pub index_dir: Option<PathBuf>,
}

impl MemoryArgs {
    pub fn limits(&self) -> SessionLimits {
        SessionLimits {
            index_dir: self.index_dir.clone(),
            ..SessionLimits::with_max_memory(self.max_memory)
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

/// A link rate in Gb/s: a positive number up to 1600 (`100`, `25`, `12.5`).
pub fn rate_gbps(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(g) if g.is_finite() && g > 0.0 && g <= 1600.0 => Ok(g),
        _ => Err(format!(
            "{s:?}: the link rate must be a positive number of Gb/s, at most 1600 (e.g. 100)"
        )),
    }
}

/// Nanoseconds of a parsed duration (within u64 by the parsers' bounds).
pub fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Several capture points of the same traffic as one session (`stats`,
/// `export`, `report`, `open`, `gui`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PointArgs {
    /// A capture point: NAME=FILE, in path order from one host to the
    /// other (both cards' sniffers, a switch's mirror...); NAME=FILE@OFFSET
    /// fixes its clock's offset against the first point by hand
    /// (sw=mirror.pcap@-1.25ms). Repeatable: two or more. `gui` also takes
    /// NAME=tcp://HOST:PORT, an agent per point, analysed live.
    #[arg(long = "point", value_name = "NAME=FILE[@OFFSET]", value_parser = point_spec)]
    pub points: Vec<PointSpec>,
    /// The link rate in Gb/s: with --point, each frame's serialisation in
    /// the clock alignment (default 100); for `stats`, also the time by
    /// state's (default: the one a simulator's recording gives, else the
    /// fastest the capture shows).
    #[arg(long, value_name = "GBPS", value_parser = rate_gbps)]
    pub link_gbps: Option<f64>,
}

impl PointArgs {
    /// None without points; an error for one point alone.
    pub fn given(&self) -> anyhow::Result<bool> {
        match self.points.len() {
            0 => Ok(false),
            1 => anyhow::bail!(
                "one --point alone: give two or more, in path order (--point a=A.pcap --point b=B.pcap)"
            ),
            _ => Ok(true),
        }
    }

    /// The links' rate the clock alignment reckons with, Gb/s.
    pub fn link_gbps(&self) -> f64 {
        self.link_gbps.unwrap_or(100.0)
    }

    /// The analysis' settings.
    pub fn config(&self) -> rocescope_replay::points::PointsConfig {
        rocescope_replay::points::PointsConfig {
            link_gbps: self.link_gbps(),
            ..Default::default()
        }
    }
}

/// One `--point`.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSpec {
    pub name: String,
    pub file: PathBuf,
    /// Its offset against the first point, given by hand.
    pub offset_ns: Option<i64>,
}

/// `NAME=FILE` or `NAME=FILE@OFFSET` (OFFSET a signed duration: `-1.25ms`).
pub fn point_spec(s: &str) -> Result<PointSpec, String> {
    let Some((name, rest)) = s.split_once('=') else {
        return Err(format!("{s:?}: expected NAME=FILE or NAME=FILE@OFFSET"));
    };
    let ok = !name.is_empty()
        && name.len() <= 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(format!(
            "{s:?}: a point's name is 1 to 16 letters, digits, `_` or `-` (it names segments: a>sw)"
        ));
    }
    let offset = |o: &str| -> Result<i64, String> {
        let (neg, mag) = match o.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, o.strip_prefix('+').unwrap_or(o)),
        };
        // Zero is an offset (the point's clock is the reference's), not a
        // duration.
        let number = mag.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
        let ns = if number.parse::<f64>() == Ok(0.0) {
            0
        } else {
            units::parse_duration_ns(mag, units::HOUR_NS).map_err(|e| e.to_string())?
        };
        let ns = i64::try_from(ns).map_err(|_| format!("offset {o:?}: too large"))?;
        Ok(if neg { -ns } else { ns })
    };
    let (file, offset_ns) = match rest.rsplit_once('@') {
        // A file whose name holds `@` stays whole unless what follows
        // reads as an offset.
        Some((f, o)) if !f.is_empty() => match offset(o) {
            Ok(ns) => (f, Some(ns)),
            Err(_) if Path::new(rest).exists() => (rest, None),
            Err(e) => return Err(format!("{s:?}: {e}")),
        },
        _ => (rest, None),
    };
    if file.is_empty() {
        return Err(format!("{s:?}: no file"));
    }
    Ok(PointSpec {
        name: name.to_owned(),
        file: PathBuf::from(file),
        offset_ns,
    })
}
