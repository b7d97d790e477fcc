//! Sources an agent serves: anything that produces [`Record`]s on its own
//! thread and publishes them in [`Batch`]es through a [`Publisher`].
//!
//! - [`CaptureSource`]: any pcap / pcapng / BALBOA sniffer dump from a byte
//!   stream (stdin, or a growing file through [`FollowFile`]);
//! - [`CounterSource`]: polls a driver counter file into profiler samples;
//! - [`SimSource`](crate::sim::SimSource): the bundled simulator.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocescope_replay::record::{ProbeDef, ProfilerSample};
use rocescope_replay::{CaptureItem, CaptureReader, LinkType, Record};

use crate::batch::{Batch, BatchPool};
use crate::protocol::{LinkEvents, LinkReader};

/// Items per batch a source publishes at most.
pub const BATCH_ITEMS: usize = 4096;

/// Why a source stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Capture(#[from] rocescope_replay::CaptureError),
    #[error("{what}: {cause}")]
    Io { what: String, cause: io::Error },
    #[error("{0}")]
    Other(String),
}

/// Where a source hands its batches; cheap to clone, `Send`.
#[derive(Clone)]
pub struct Publisher {
    f: Arc<dyn Fn(Batch) + Send + Sync>,
    stop: Arc<AtomicBool>,
    pool: BatchPool,
    audience: Option<Arc<dyn Fn() -> usize + Send + Sync>>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("stopped", &self.stopped())
            .finish_non_exhaustive()
    }
}

impl Publisher {
    pub fn new(stop: Arc<AtomicBool>, f: impl Fn(Batch) + Send + Sync + 'static) -> Publisher {
        Publisher {
            f: Arc::new(f),
            stop,
            pool: BatchPool::default(),
            audience: None,
        }
    }

    /// Tells the source how many receive what it publishes (the agent's
    /// attached clients), so that a source free to wait (the simulator)
    /// waits while nobody is there.
    pub fn with_audience(mut self, count: impl Fn() -> usize + Send + Sync + 'static) -> Publisher {
        self.audience = Some(Arc::new(count));
        self
    }

    /// How many receive what is published now (`None`: not known).
    pub fn audience(&self) -> Option<usize> {
        self.audience.as_ref().map(|f| f())
    }

    /// Refills emptied batches from `pool` (where their consumer returns
    /// them) instead of allocating.
    pub fn with_pool(mut self, pool: BatchPool) -> Publisher {
        self.pool = pool;
        self
    }

    /// Hands a batch on (empty ones are ignored).
    pub fn publish(&self, batch: Batch) {
        if !batch.is_empty() {
            (self.f)(batch);
        }
    }

    /// Publishes `batch` and leaves it empty.
    pub fn publish_from(&self, batch: &mut Batch) {
        if !batch.is_empty() {
            self.publish(self.pool.take(batch));
        }
    }

    /// Whether the source should end now.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// How a source ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceStatus {
    /// The input ended: no more records will come.
    End,
    /// Asked to stop.
    Stopped,
}

/// A producer of records, run on its own thread by the agent.
///
/// `run` publishes batches of at most about [`BATCH_ITEMS`] items, and
/// publishes what it has before it blocks (so a slow stream is not held
/// back), until the input ends or [`Publisher::stopped`].
pub trait Source: Send {
    /// For HELLO and logs, e.g. `stdin`, `follow:/tmp/x.pcap`.
    fn describe(&self) -> String;
    fn run(&mut self, out: &Publisher) -> Result<SourceStatus, SourceError>;
}

/// A file read as it grows (`tail -f`): at its end, waits and reads on
/// (reporting `WouldBlock` every `poll` so the reader above can check for
/// stop).
#[derive(Debug)]
pub struct FollowFile {
    file: File,
    poll: Duration,
}

impl FollowFile {
    pub fn open(path: &Path) -> io::Result<FollowFile> {
        Ok(FollowFile {
            file: File::open(path)?,
            poll: Duration::from_millis(20),
        })
    }
}

impl Read for FollowFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.file.read(buf)? {
            0 if !buf.is_empty() => {
                std::thread::sleep(self.poll);
                Err(io::ErrorKind::WouldBlock.into())
            }
            k => Ok(k),
        }
    }
}

/// Before each read that may block: publish what is pending. When idle:
/// stop if asked.
struct SourceEvents {
    pending: Rc<RefCell<Batch>>,
    out: Publisher,
}

impl LinkEvents for SourceEvents {
    fn before_read(&mut self) {
        if let Ok(mut b) = self.pending.try_borrow_mut() {
            self.out.publish_from(&mut b);
        }
    }
    fn idle(&mut self) -> io::Result<()> {
        if self.out.stopped() {
            return Err(io::Error::other("stopped"));
        }
        Ok(())
    }
}

/// Any capture stream `CaptureReader` reads: pcap, pcapng (rocescope
/// records included), BALBOA sniffer dumps. Frames that are not Ethernet
/// are skipped and counted (the stream the agent sends declares Ethernet).
pub struct CaptureSource {
    name: String,
    input: Option<Box<dyn Read + Send>>,
    skipped_link: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for CaptureSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureSource")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl CaptureSource {
    pub fn new(name: impl Into<String>, input: impl Read + Send + 'static) -> CaptureSource {
        CaptureSource {
            name: name.into(),
            input: Some(Box::new(input)),
            skipped_link: Arc::default(),
        }
    }

    /// Standard input.
    pub fn stdin() -> CaptureSource {
        CaptureSource::new("stdin", io::stdin())
    }

    /// A file followed as it grows.
    pub fn follow(path: &Path) -> Result<CaptureSource, SourceError> {
        let f = FollowFile::open(path).map_err(|cause| SourceError::Io {
            what: format!("open {}", path.display()),
            cause,
        })?;
        Ok(CaptureSource::new(format!("follow:{}", path.display()), f))
    }

    /// Frames skipped because their link type is not Ethernet.
    pub fn skipped_link_frames(&self) -> Arc<std::sync::atomic::AtomicU64> {
        Arc::clone(&self.skipped_link)
    }
}

impl Source for CaptureSource {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn run(&mut self, out: &Publisher) -> Result<SourceStatus, SourceError> {
        let Some(input) = self.input.take() else {
            return Ok(SourceStatus::End);
        };
        let pending = Rc::new(RefCell::new(Batch::with_capacity(BATCH_ITEMS, 1 << 18)));
        let events = SourceEvents {
            pending: Rc::clone(&pending),
            out: out.clone(),
        };
        let reader = LinkReader::new(input, events, false);
        let mut cr = match CaptureReader::new(reader) {
            Ok(cr) => cr,
            Err(_) if out.stopped() => return Ok(SourceStatus::Stopped),
            Err(e) => return Err(e.into()),
        };
        let result = loop {
            match cr.next_item() {
                Ok(Some(CaptureItem::Frame(f))) => {
                    if f.linktype != LinkType::ETHERNET {
                        self.skipped_link.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let mut b = pending.borrow_mut();
                    b.push_capture_frame(&f);
                    if b.len() >= BATCH_ITEMS {
                        out.publish_from(&mut b);
                    }
                }
                Ok(Some(CaptureItem::Record(r))) => {
                    let mut b = pending.borrow_mut();
                    b.push_record(r);
                    if b.len() >= BATCH_ITEMS {
                        out.publish_from(&mut b);
                    }
                }
                Ok(None) => break Ok(SourceStatus::End),
                Err(_) if out.stopped() => break Ok(SourceStatus::Stopped),
                Err(e) => break Err(e.into()),
            }
        };
        out.publish_from(&mut pending.borrow_mut());
        result
    }
}

/// One counter of a counter file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    pub name: String,
    pub value: i64,
}

/// Parses a driver counter file (e.g. the BALBOA driver's
/// `cyt_attr_nstats`): every line holding a label and a number, as
/// `label: 123`, `label = 0x7b` or `label 123`, is a counter; its name is
/// the label in lower case with runs of other characters as `_`. ANSI
/// colour codes (the driver colours its heading) are ignored, and so are
/// other lines without a number, except the port headings the driver
/// writes (`-- NET STATS QSFP0`): the counters under the second and later
/// ones are named after the heading's last word (`qsfp1_rx_pkgs`), so that
/// no port's counters hide another's. A name seen twice keeps the first.
pub fn parse_counters(text: &str) -> Vec<Counter> {
    let mut out: Vec<Counter> = Vec::new();
    let mut headings = 0usize;
    let mut prefix = String::new();
    for line in text.lines().take(1024) {
        let line = strip_ansi(line);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some((label, value)) = counter_line(line) else {
            if !line.starts_with("--") {
                continue;
            }
            // A port's heading: the counters after it are its port's.
            headings += 1;
            prefix.clear();
            if headings > 1
                && let Some(word) = line.split_whitespace().last()
            {
                prefix = name_of(word);
                if !prefix.is_empty() {
                    prefix.push('_');
                }
            }
            continue;
        };
        let name = format!("{prefix}{}", name_of(label));
        if name.is_empty() || name.len() > 64 || out.iter().any(|c| c.name == name) {
            continue;
        }
        out.push(Counter { name, value });
    }
    out
}

/// `label: 123`, `label = 0x7b` or `label 123` as its label and value.
fn counter_line(line: &str) -> Option<(&str, i64)> {
    let (label, value) = line.rsplit_once([':', '=', ' ', '\t'])?;
    let value = value.trim();
    let value = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => value.parse::<i64>().ok()?,
    };
    Some((label, value))
}

/// A label as a counter name: lower case, runs of other characters as `_`.
fn name_of(label: &str) -> String {
    let mut name = String::new();
    for c in label.trim().trim_end_matches([':', '=']).chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    name.trim_end_matches('_').to_owned()
}

/// `line` without ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\x1b') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.clone().next() == Some('[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A 32-bit driver counter as a running 64-bit total. The BALBOA driver
/// prints each counter's low 32 bits, so a busy card's packet counts wrap
/// every few minutes; a fall by more than half the range is a wrap, a
/// smaller one a reset (the card reprogrammed), after which the total
/// goes on from where it was.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unwrapped32 {
    last: Option<u64>,
    total: u64,
}

impl Unwrapped32 {
    /// Take a new reading; returns the running total.
    pub fn update(&mut self, raw: u64) -> u64 {
        const RANGE: u64 = 1 << 32;
        let raw = raw & (RANGE - 1);
        self.total = match self.last {
            None => raw,
            Some(last) if raw >= last => self.total + (raw - last),
            // Wrapped: it passed 2^32 - 1 and went on from 0.
            Some(last) if last - raw > RANGE / 2 => self.total + (RANGE - last + raw),
            // Reset: it starts again from 0.
            Some(_) => self.total + raw,
        };
        self.last = Some(raw);
        self.total
    }
}

/// Polls a counter file every `interval` and publishes each counter as a
/// profiler sample (probe ids from `first_probe` up, in order of first
/// appearance; a [`ProbeDef`] with module `counters` names each).
///
/// The file has no card clock: `cycle` is host time since the first poll
/// at the card's nominal 250 MHz (4 ns per cycle).
#[derive(Debug)]
pub struct CounterSource {
    path: PathBuf,
    interval: Duration,
    first_probe: u16,
    defs: Arc<std::sync::Mutex<Vec<ProbeDef>>>,
    /// Each probe's running total (the driver's counters are 32-bit).
    totals: Vec<Unwrapped32>,
}

impl CounterSource {
    pub fn new(path: &Path, interval: Duration) -> CounterSource {
        CounterSource {
            path: path.to_path_buf(),
            interval,
            first_probe: 0x8000,
            defs: Arc::default(),
            totals: Vec::new(),
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Source for CounterSource {
    fn describe(&self) -> String {
        format!("counters:{}", self.path.display())
    }

    fn run(&mut self, out: &Publisher) -> Result<SourceStatus, SourceError> {
        let start = Instant::now();
        let mut next = start;
        let mut batch = Batch::default();
        loop {
            if out.stopped() {
                return Ok(SourceStatus::Stopped);
            }
            // A file that cannot be read now (driver reloading) is retried.
            if let Ok(text) = std::fs::read(&self.path) {
                let text = String::from_utf8_lossy(&text[..text.len().min(64 * 1024)]);
                let ts_ns = now_ns();
                let cycle = start.elapsed().as_nanos() as u64 / 4;
                for c in parse_counters(&text) {
                    let probe = {
                        let mut defs = self.defs.lock().unwrap_or_else(|e| e.into_inner());
                        match defs.iter().find(|d| d.name == c.name) {
                            Some(d) => d.probe,
                            None if defs.len() < 1024 => {
                                let def = ProbeDef {
                                    probe: self.first_probe + defs.len() as u16,
                                    name: c.name.clone(),
                                    unit: String::new(),
                                    module: "counters".into(),
                                };
                                batch.push_record(Record::ProbeDef(def.clone()));
                                defs.push(def);
                                self.first_probe + defs.len() as u16 - 1
                            }
                            None => continue,
                        }
                    };
                    let slot = usize::from(probe - self.first_probe);
                    if self.totals.len() <= slot {
                        self.totals.resize(slot + 1, Unwrapped32::default());
                    }
                    let value = if (0..=i64::from(u32::MAX)).contains(&c.value) {
                        self.totals[slot].update(c.value as u64) as i64
                    } else {
                        // Not a 32-bit counter: as it is.
                        c.value
                    };
                    batch.push_record(Record::Profiler(ProfilerSample {
                        cycle,
                        ts_ns,
                        probe,
                        value,
                    }));
                }
                out.publish_from(&mut batch);
            }
            next += self.interval;
            let now = Instant::now();
            if next < now {
                next = now;
            }
            // Sleep in short steps so a stop is seen quickly.
            while Instant::now() < next && !out.stopped() {
                std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_files_parse() {
        let text = "RDMA stats\nRX pkgs: 12\nTX pkgs: 0x10\nPSN drop count = 3\nretrans 4\n\
                    garbage line\nRX pkgs: 99\n";
        let got = parse_counters(text);
        let names: Vec<_> = got.iter().map(|c| (c.name.as_str(), c.value)).collect();
        assert_eq!(
            names,
            [
                ("rx_pkgs", 12),
                ("tx_pkgs", 16),
                ("psn_drop_count", 3),
                ("retrans", 4)
            ]
        );
    }

    /// The BALBOA driver's file as its `cyt_attr_nstats` show function
    /// writes it: a coloured heading per port, then `Label: N` lines.
    #[test]
    fn the_drivers_counter_file_parses_port_by_port() {
        let port = |n: u32, base: i64| {
            format!(
                "\n -- \x1b[31m\x1b[1mNET STATS\x1b[0m\x1b[0m QSFP{n}\n\n\
                 RX pkgs: {}\nTX pkgs: {}\nROCE RX pkgs: 245\nPSN drop cnt: 0\n\
                 Retrans cnt: 3\nTCP session cnt: 1\nSTRM down: 0\n\n",
                base,
                base + 1
            )
        };
        let text = port(0, 316) + &port(1, 7);
        let got = parse_counters(&text);
        let names: Vec<_> = got.iter().map(|c| (c.name.as_str(), c.value)).collect();
        assert_eq!(
            names,
            [
                ("rx_pkgs", 316),
                ("tx_pkgs", 317),
                ("roce_rx_pkgs", 245),
                ("psn_drop_cnt", 0),
                ("retrans_cnt", 3),
                ("tcp_session_cnt", 1),
                ("strm_down", 0),
                ("qsfp1_rx_pkgs", 7),
                ("qsfp1_tx_pkgs", 8),
                ("qsfp1_roce_rx_pkgs", 245),
                ("qsfp1_psn_drop_cnt", 0),
                ("qsfp1_retrans_cnt", 3),
                ("qsfp1_tcp_session_cnt", 1),
                ("qsfp1_strm_down", 0),
            ]
        );
    }

    #[test]
    fn thirty_two_bit_counters_are_unwrapped_into_running_totals() {
        let mut c = Unwrapped32::default();
        assert_eq!(c.update(4_294_967_290), 4_294_967_290);
        assert_eq!(c.update(4_294_967_295), 4_294_967_295);
        // Wrapped past 2^32 - 1: 1 + 5 more.
        assert_eq!(c.update(5), 4_294_967_301);
        assert_eq!(c.update(10), 4_294_967_306);
        // A reset (the card reprogrammed): the total goes on from there.
        let mut r = Unwrapped32::default();
        r.update(1_000);
        assert_eq!(r.update(10), 1_010);
        assert_eq!(r.update(15), 1_015);
    }

    #[test]
    fn capture_source_publishes_everything() {
        let mut w = rocescope_replay::PcapngWriter::new(Vec::new()).unwrap();
        for i in 0..10_000u64 {
            w.write_frame(i, 0, None, 60, &[1; 60]).unwrap();
        }
        let bytes = w.finish().unwrap();
        let got = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let g = Arc::clone(&got);
        let out = Publisher::new(Arc::default(), move |b| {
            g.fetch_add(b.frames(), Ordering::Relaxed);
        });
        let mut src = CaptureSource::new("mem", io::Cursor::new(bytes));
        assert_eq!(src.run(&out).unwrap(), SourceStatus::End);
        assert_eq!(got.load(Ordering::Relaxed), 10_000);
    }
}
