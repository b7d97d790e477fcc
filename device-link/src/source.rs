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
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
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
        let f = FollowFile::open(path).map_err(|source| SourceError::Io {
            what: format!("open {}", path.display()),
            source,
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
/// the label in lower case with runs of other characters as `_`. Lines
/// without a number (headings) are skipped; so are names seen twice.
pub fn parse_counters(text: &str) -> Vec<Counter> {
    let mut out: Vec<Counter> = Vec::new();
    for line in text.lines().take(1024) {
        let line = line.trim();
        let Some((label, value)) = line.rsplit_once([':', '=', ' ', '\t']) else {
            continue;
        };
        let value = value.trim();
        let parsed = match value
            .strip_prefix("0x")
            .or_else(|| value.strip_prefix("0X"))
        {
            Some(h) => i64::from_str_radix(h, 16).ok(),
            None => value.parse::<i64>().ok(),
        };
        let Some(value) = parsed else { continue };
        let mut name = String::new();
        for c in label.trim().trim_end_matches([':', '=']).chars() {
            if c.is_ascii_alphanumeric() {
                name.push(c.to_ascii_lowercase());
            } else if !name.ends_with('_') && !name.is_empty() {
                name.push('_');
            }
        }
        let name = name.trim_end_matches('_').to_owned();
        if name.is_empty() || name.len() > 64 || out.iter().any(|c| c.name == name) {
            continue;
        }
        out.push(Counter { name, value });
    }
    out
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
}

impl CounterSource {
    pub fn new(path: &Path, interval: Duration) -> CounterSource {
        CounterSource {
            path: path.to_path_buf(),
            interval,
            first_probe: 0x8000,
            defs: Arc::default(),
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
                    batch.push_record(Record::Profiler(ProfilerSample {
                        cycle,
                        ts_ns,
                        probe,
                        value: c.value,
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
