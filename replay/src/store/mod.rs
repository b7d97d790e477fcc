//! The indexed capture store every view reads.
//!
//! Each frame is decoded once at ingest into a 24-byte row (time, file
//! offset, lengths, direction, conversation, opcode, PSN, flags); the packet
//! bytes stay in the capture file and are read back by offset when a view
//! needs them. The store grows while a source appends (a file being indexed
//! in the background, a live feed) and answers queries by row range and time
//! window at any moment.

mod columns;
mod conv;
mod decoded;
mod fast;
mod frames;
mod index;
mod ingest;
mod kept;
pub(crate) mod prefault;
mod row;
mod saved;
mod saved_analysis;
mod slab;
mod spill;
mod staged;

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

pub use conv::{ConvKey, Conversation};
pub use decoded::{Decoded, PacketInfo, RowObs, Wide};
pub use fast::RoceV4Fields;
pub use ingest::{
    Analyzer, Appender, Ingest, IngestFrame, LateFlags, NoAnalysis, RcAnalyzer, decode_frame,
    decode_onto, evidence,
};
pub use row::{Flags, NO_CONVERSATION, Row};
pub use saved::{IndexDirStatus, Reuse};
pub use spill::{SpillConfig, SpillStats};
pub use staged::{Cut, Staged};

use crate::capture::{CaptureError, CaptureFormat, CaptureReader, CaptureWarning, TimeBase};
use crate::record::Record;
use columns::Columns;
use conv::ConvTable;
use rocescope_decoders::DecodeConfig;

/// The default memory cap (a live session's, a capture's index, a
/// waveform's held body): 2 GiB, or a quarter of the machine's memory where
/// that is less.
pub fn default_max_memory_bytes() -> u64 {
    const TWO_GIB: u64 = 2 << 30;
    machine_memory_bytes().map_or(TWO_GIB, |m| TWO_GIB.min(m / 4))
}

/// Physical memory, from /proc/meminfo (None elsewhere).
fn machine_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Why a store could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("cannot read frame bytes of row {row} at byte {offset} of {path}")]
    Read {
        row: u64,
        offset: u64,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("row {row} is not in the store ({len} rows)")]
    NoRow { row: u64, len: u64 },
    #[error("the frame bytes of row {row} were deleted by the disk ring (--max-disk)")]
    Deleted { row: u64 },
    #[error("cannot make the session folder {path}")]
    SessionDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The `--index-dir` folder cannot hold the capture's index.
    #[error("cannot keep the index in {path} (--index-dir)")]
    IndexDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Counters kept at ingest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub packets: u64,
    pub roce_packets: u64,
    pub icrc_errors: u64,
    /// Frames the capture cut before their end (header-only, snaplen).
    pub truncated: u64,
    /// Frames whose headers contradict themselves.
    pub malformed: u64,
    /// Frames of a link type rocescope does not decode.
    pub undecoded: u64,
    pub captured_bytes: u64,
    pub wire_bytes: u64,
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: Option<u64>,
}

impl StoreStats {
    /// Add the counters of rows counted apart (the same as counting them
    /// here: sums, and the earliest and latest time).
    pub(crate) fn merge(&mut self, o: &StoreStats) {
        self.packets += o.packets;
        self.roce_packets += o.roce_packets;
        self.icrc_errors += o.icrc_errors;
        self.truncated += o.truncated;
        self.malformed += o.malformed;
        self.undecoded += o.undecoded;
        self.captured_bytes += o.captured_bytes;
        self.wire_bytes += o.wire_bytes;
        self.first_ts_ns = match (self.first_ts_ns, o.first_ts_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_ts_ns = match (self.last_ts_ns, o.last_ts_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Where the store is in reading its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub bytes_done: u64,
    /// 0 when unknown (a stream).
    pub bytes_total: u64,
    pub rows: u64,
    pub complete: bool,
    /// Why indexing (or a link's ingest) stopped early, if it did (every
    /// row before is kept).
    pub error: Option<String>,
    /// Wall time spent indexing so far, ns.
    pub elapsed_ns: u64,
}

/// Where the frame bytes live.
enum Backing {
    /// A capture file: rows point at byte offsets in it.
    File { file: File, path: PathBuf },
    /// Frames kept in memory (streams without a file, sniffer text dumps),
    /// or for a bounded live store, recent ones in memory and older ones in
    /// disk segments.
    Memory(RwLock<spill::MemBytes>),
}

struct Inner {
    cols: Columns,
    convs: ConvTable,
    stats: StoreStats,
    /// The settings the rows were decoded with (the user's RoCE ports),
    /// for every later decode of the frames (detail, filters, export).
    decode: DecodeConfig,
}

/// Append `data` to a live store's bytes. Each time the bytes cross into
/// a new window, the rest of it and the window after are faulted in at
/// once (pages already in cost a page-table walk; a reallocation keeps
/// them).
fn extend_prefaulted(mem: &mut Vec<u8>, data: &[u8]) {
    let before = mem.len() / prefault::WINDOW_BYTES;
    mem.extend_from_slice(data);
    if mem.len() / prefault::WINDOW_BYTES != before {
        let spare = mem.spare_capacity_mut();
        let ahead = spare.len().min(2 * prefault::WINDOW_BYTES);
        prefault::populate(&mut spare[..ahead]);
    }
}

/// The store. Share it as `Arc<Store>`: one ingest thread appends, any
/// number of views query.
pub struct Store {
    inner: RwLock<Inner>,
    backing: Backing,
    format: Option<CaptureFormat>,
    time_base: RwLock<TimeBase>,
    warnings: Mutex<Vec<CaptureWarning>>,
    /// An ILA capture's windows and cut frames, once indexed.
    ila: Mutex<Option<crate::wave::ila::IlaSummary>>,
    /// Non-frame records (profiler samples, slot decisions, QP state,
    /// ground truth, drop counts, annotations) in source order.
    records: Mutex<std::collections::VecDeque<Record>>,
    /// The link type of each capture port, as (port, LINKTYPE_ value).
    links: RwLock<Vec<(u8, u32)>>,
    /// A bounded live store's segments and counters.
    spill: Option<Arc<spill::Spill>>,
    /// What became of the index kept in `--index-dir`, when one was given.
    index_dir: Mutex<Option<IndexDirStatus>>,
    bytes_done: AtomicU64,
    bytes_total: u64,
    complete: AtomicBool,
    error: Mutex<Option<String>>,
    elapsed_ns: AtomicU64,
    done: (Mutex<bool>, Condvar),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("rows", &self.len())
            .field("format", &self.format)
            .field("complete", &self.complete.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Rows per hand-over from a live source to the store: large enough that
/// the write lock is rare.
pub(crate) const BATCH_ROWS: usize = 16 * 1024;

/// What [`Store::records_after`] found.
#[derive(Debug, Clone, Default)]
pub struct RecordsAfter {
    /// Sequence number of the oldest record the store still holds.
    pub first_seq: u64,
    /// Sequence number the next record will have.
    pub next_seq: u64,
    /// The matching records after the ones seen, with their sequence numbers.
    pub records: Vec<(u64, Record)>,
}

impl Store {
    /// `file_spill`: where a capture file's index goes past its cap (a
    /// store whose bytes are in memory takes its memory's spill).
    fn new(
        backing: Backing,
        format: Option<CaptureFormat>,
        time_base: TimeBase,
        bytes_total: u64,
        file_spill: Option<Arc<spill::Spill>>,
    ) -> Store {
        let spill = match &backing {
            Backing::Memory(m) => m.read().unwrap_or_else(|e| e.into_inner()).spill(),
            Backing::File { .. } => file_spill,
        };
        Store {
            inner: RwLock::new(Inner {
                cols: match &spill {
                    Some(s) => Columns::bounded(Arc::clone(s)),
                    None => Columns::new(),
                },
                convs: ConvTable::default(),
                stats: StoreStats::default(),
                decode: DecodeConfig::default(),
            }),
            backing,
            format,
            time_base: RwLock::new(time_base),
            warnings: Mutex::new(Vec::new()),
            ila: Mutex::new(None),
            records: Mutex::new(std::collections::VecDeque::new()),
            links: RwLock::new(Vec::new()),
            spill,
            index_dir: Mutex::new(None),
            bytes_done: AtomicU64::new(0),
            bytes_total,
            complete: AtomicBool::new(false),
            error: Mutex::new(None),
            elapsed_ns: AtomicU64::new(0),
            done: (Mutex::new(false), Condvar::new()),
        }
    }

    /// An empty store fed by a live source through [`Store::ingest`]; frame
    /// bytes are kept in memory.
    pub fn live(time_base: TimeBase) -> Arc<Store> {
        Arc::new(Store::new(
            Backing::Memory(RwLock::new(spill::MemBytes::new(None))),
            None,
            time_base,
            0,
            None,
        ))
    }

    /// A live store bounded in memory: past `cfg.max_memory_bytes`, older
    /// frame bytes and index rows move to segments in `cfg.dir` and are read
    /// back from there; past `cfg.max_disk_bytes`, the oldest segments are
    /// deleted and counted ([`Store::spill_stats`]).
    pub fn live_bounded(time_base: TimeBase, cfg: SpillConfig) -> Result<Arc<Store>, StoreError> {
        let path = cfg.dir.display().to_string();
        let spill =
            spill::Spill::new(cfg).map_err(|source| StoreError::SessionDir { path, source })?;
        Ok(Arc::new(Store::new(
            Backing::Memory(RwLock::new(spill::MemBytes::new(Some(spill)))),
            None,
            time_base,
            0,
            None,
        )))
    }

    /// Where a bounded store stands: memory, disk, what its ring deleted.
    /// `None` for a store without a bound.
    pub fn spill_stats(&self) -> Option<SpillStats> {
        self.spill.as_ref().map(|s| s.stats())
    }

    /// Why a bounded store stopped moving data to disk, if it did.
    pub fn spill_error(&self) -> Option<String> {
        self.spill
            .as_ref()
            .and_then(|s| s.error.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// The first row the disk ring has not deleted (0 without a ring);
    /// rows before it read as placeholders without bytes.
    pub fn first_row(&self) -> u64 {
        self.read().cols.first_row()
    }

    /// Keep a bounded store within its caps after rows were appended.
    fn bound(&self) {
        if self.spill.is_none() {
            return;
        }
        let deleted_below = self
            .inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .cols
            .bound();
        if let (Some(offset), Backing::Memory(mem)) = (deleted_below, &self.backing) {
            mem.write()
                .unwrap_or_else(|e| e.into_inner())
                .delete_below(offset);
        }
    }

    /// Open a capture and index it on a background thread. Returns as soon
    /// as the format is known (a file that is not a capture fails here); rows
    /// become queryable while the rest is indexed. `analyzer` sees every
    /// packet at ingest.
    pub fn open(
        path: &Path,
        cfg: DecodeConfig,
        analyzer: Box<dyn Analyzer>,
    ) -> Result<Arc<Store>, StoreError> {
        Self::open_with(path, cfg, analyzer, &crate::wave::WaveOptions::default())
    }

    /// [`open`](Self::open), with the interfaces, clock and sample clock to
    /// use when the file is a waveform or an ILA capture.
    pub fn open_with(
        path: &Path,
        cfg: DecodeConfig,
        analyzer: Box<dyn Analyzer>,
        wave: &crate::wave::WaveOptions,
    ) -> Result<Arc<Store>, StoreError> {
        Self::open_kept(path, cfg, analyzer, wave, None, None)
    }

    /// [`open_with`](Self::open_with), the index bounded in memory by
    /// `spill` when given: past `spill.max_memory_bytes`, full index chunks
    /// move to segments in `spill.dir` and are read back from there (a
    /// file's frame bytes stay in the file; a sniffer dump's, kept in
    /// memory, spill as a live store's do). Every row stays: a disk cap
    /// is not taken (`max_disk_bytes` is ignored), and what is on disk is
    /// in [`Store::spill_stats`]. The index is kept in
    /// `index_dir` when given (`--index-dir`, a pcap or pcapng file's
    /// only): a saved index of the file as it is now, made with the same
    /// decode settings, is read back instead of indexing (every row at
    /// once; a costly analysis, the RC analysis, still reads the frames
    /// in the background, and the store is complete when it is done); a
    /// stale one is said ([`Reuse::stale`]) and rebuilt. What
    /// became of it is [`Store::index_dir_status`]. A folder that cannot
    /// be made or written is an error naming it.
    pub fn open_kept(
        path: &Path,
        cfg: DecodeConfig,
        analyzer: Box<dyn Analyzer>,
        wave: &crate::wave::WaveOptions,
        spill: Option<SpillConfig>,
        index_dir: Option<&Path>,
    ) -> Result<Arc<Store>, StoreError> {
        let started = std::time::Instant::now();
        let spill = spill.map(|c| SpillConfig {
            max_disk_bytes: None,
            ..c
        });
        let reader = CaptureReader::open_with(path, wave)?;
        let bytes_total = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let file = File::open(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let format = reader.format();
        // Only pcap/pcapng rows point at bytes of the file itself; other
        // formats (sniffer dumps) keep the decoded frame bytes in memory.
        let in_memory = !matches!(format, CaptureFormat::Pcap { .. } | CaptureFormat::Pcapng);
        let mut kept = None;
        let mut save = None;
        if let Some(dir) = index_dir {
            let mut status = IndexDirStatus {
                dir: dir.to_path_buf(),
                ..IndexDirStatus::default()
            };
            if in_memory {
                status.error = Some("only a pcap or pcapng file's index is kept".into());
            } else {
                let to = Self::index_folder(path, dir, analyzer.is_costly())?;
                status.folder = to.folder.clone();
                // A file store's index may take all its cap (`Spill::for_file`).
                let memory_bytes = spill.as_ref().map_or(u64::MAX, |c| {
                    columns::Columns::hot_budget_bytes(c.max_memory_bytes)
                });
                match saved::load(
                    &to.folder,
                    &to.id,
                    &cfg.extra_roce_ports,
                    analyzer.is_costly(),
                    memory_bytes,
                ) {
                    Ok(Some(loaded)) => {
                        status.index.reused = true;
                        status.saved_bytes = Some(loaded.bytes);
                        return Ok(Self::reopen(
                            (path, file, reader),
                            cfg,
                            analyzer,
                            spill,
                            loaded,
                            status,
                            started,
                        ));
                    }
                    Ok(None) => {}
                    Err(why) => status.index.stale = Some(why),
                }
                save = Some(to);
            }
            kept = Some(status);
        }
        let (backing, file_spill) = if in_memory {
            let spill = match spill {
                Some(c) => {
                    let dir = c.dir.display().to_string();
                    Some(
                        spill::Spill::new(c)
                            .map_err(|source| StoreError::SessionDir { path: dir, source })?,
                    )
                }
                None => None,
            };
            (
                Backing::Memory(RwLock::new(spill::MemBytes::new(spill))),
                None,
            )
        } else {
            let backing = Backing::File {
                file,
                path: path.to_path_buf(),
            };
            (backing, spill.map(spill::Spill::for_file))
        };
        let store = Arc::new(Store::new(
            backing,
            Some(format),
            reader.time_base(),
            bytes_total,
            file_spill,
        ));
        store.set_decode_config(&cfg);
        *store.index_dir.lock().unwrap_or_else(|e| e.into_inner()) = kept;
        let worker = Arc::clone(&store);
        std::thread::Builder::new()
            .name("rocescope-index".into())
            .spawn(move || {
                worker.index_told(reader, cfg, analyzer, index::IndexMode::Rows { save })
            })
            .map_err(|source| CaptureError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(store)
    }

    /// What became of the index kept in `--index-dir`: reused, saved,
    /// stale and rebuilt, or why it was not kept. `None` without one.
    pub fn index_dir_status(&self) -> Option<IndexDirStatus> {
        self.index_dir
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn mark_complete(&self) {
        self.complete.store(true, Ordering::Release);
        let (lock, cv) = &self.done;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }

    /// Append frame bytes to the in-memory backing; returns their offset.
    fn keep(&self, data: &[u8]) -> u64 {
        match &self.backing {
            Backing::Memory(mem) => mem.write().unwrap_or_else(|e| e.into_inner()).append(data),
            Backing::File { .. } => 0,
        }
    }

    /// Feed one frame from a live source (bytes kept in memory). Rows are
    /// published in batches; call [`Store::flush_live`] to publish at once.
    pub fn ingest(&self, ingest: &mut Ingest, frame: &IngestFrame<'_>) {
        // Bytes gather in the ingest's own buffer and reach the store's
        // memory once per batch: no lock per frame.
        if ingest.noted.first_time(frame.port) {
            self.note_link(frame.port, frame.linktype);
        }
        let offset = ingest.keep_bytes(frame.data);
        ingest.push(&IngestFrame {
            file_offset: offset,
            ..*frame
        });
        if ingest.pending() >= BATCH_ROWS {
            self.flush_live(ingest);
        }
    }

    /// [`Store::ingest`] for a frame another thread already ran through
    /// [`decode_onto`] (a live link's socket thread decodes when ingest is
    /// behind, as the file indexer's reader does); `wide` is the list of
    /// the batch it was decoded into, `data` its bytes.
    pub fn ingest_decoded(
        &self,
        ingest: &mut Ingest,
        info: &PacketInfo,
        wide: &[Wide],
        data: &[u8],
        linktype: u32,
    ) {
        if ingest.noted.first_time(info.row.port) {
            self.note_link(info.row.port, linktype);
        }
        let at = ingest.keep_bytes(data);
        ingest.push_decoded(info, wide, at);
        if ingest.pending() >= BATCH_ROWS {
            self.flush_live(ingest);
        }
    }

    /// Feed a block of live frames whose bytes lie back to back in `bytes`
    /// (a live link's batch), each frame's `file_offset` being where its
    /// bytes start in `bytes`: the bytes reach the store in one copy, and
    /// the rows are published at once (as [`Store::flush_live`]).
    pub fn ingest_block<'b>(
        &self,
        ingest: &mut Ingest,
        bytes: &[u8],
        frames: impl IntoIterator<Item = IngestFrame<'b>>,
    ) {
        let base = self.keep_block(ingest, bytes);
        for f in frames {
            if ingest.noted.first_time(f.port) {
                self.note_link(f.port, f.linktype);
            }
            ingest.push(&IngestFrame {
                file_offset: base + f.file_offset,
                ..f
            });
        }
        self.append_pending(ingest);
    }

    /// [`Store::ingest_block`] for frames another thread already ran
    /// through [`decode_onto`] (their `row.file_offset` is where their
    /// bytes start in `bytes`): appended in place, no copy of the rows.
    pub fn ingest_decoded_block(
        &self,
        ingest: &mut Ingest,
        bytes: &[u8],
        decoded: &mut Decoded,
        linktype: u32,
    ) {
        let base = self.keep_block(ingest, bytes);
        for info in decoded.rows.iter_mut() {
            if ingest.noted.first_time(info.row.port) {
                self.note_link(info.row.port, linktype);
            }
            info.row.file_offset += base;
        }
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let Inner {
            cols, convs, stats, ..
        } = &mut *inner;
        ingest.append_in_place(&mut decoded.rows, &decoded.wide, cols, convs, stats);
        drop(inner);
        self.bound();
    }

    /// Publishes what is pending (so that rows stay in order and the
    /// pending offsets are rebased), then appends `bytes` to the in-memory
    /// backing; returns their offset.
    fn keep_block(&self, ingest: &mut Ingest, bytes: &[u8]) -> u64 {
        if ingest.pending() > 0 || !ingest.kept_bytes().is_empty() {
            self.flush_live(ingest);
        }
        self.keep(bytes)
    }

    /// The decode settings the rows were indexed with (a file's as it was
    /// opened; a live store's as its ingest decodes): decode the frames
    /// again with these, never with the defaults.
    pub fn decode_config(&self) -> DecodeConfig {
        self.read().decode.clone()
    }

    fn set_decode_config(&self, cfg: &DecodeConfig) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if inner.decode != *cfg {
            inner.decode = cfg.clone();
        }
    }

    /// Appends the pending rows (their offsets already final).
    fn append_pending(&self, ingest: &mut Ingest) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if inner.decode != *ingest.config() {
            inner.decode = ingest.config().clone();
        }
        let Inner {
            cols, convs, stats, ..
        } = &mut *inner;
        ingest.drain_into(cols, convs, stats);
        drop(inner);
        self.bound();
    }

    /// Publish the rows a live source fed so far.
    pub fn flush_live(&self, ingest: &mut Ingest) {
        if let Backing::Memory(mem) = &self.backing {
            let mut mem = mem.write().unwrap_or_else(|e| e.into_inner());
            if !ingest.kept_bytes().is_empty() {
                let base = mem.append(ingest.kept_bytes());
                ingest.rebase_pending(base);
            }
        }
        self.append_pending(ingest);
    }

    /// Mark a live store complete (the source ended).
    pub fn finish_live(&self, ingest: &mut Ingest) {
        self.flush_live(ingest);
        ingest.finish();
        self.mark_complete();
    }

    /// End a store whose feeding thread failed: the error is told with the
    /// store's status (the first one stays: the append thread's, say), and
    /// the store is complete with the rows it has, so nobody waits for more.
    pub fn end_failed(&self, error: String) {
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(error);
        self.mark_complete();
    }

    /// Block until indexing has finished.
    pub fn wait(&self) {
        let (lock, cv) = &self.done;
        let mut done = lock.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// [`wait`](Self::wait) for at most `timeout`: whether indexing has
    /// finished. For a caller that shows progress meanwhile and must not
    /// sleep past the end (a fixed sleep rounds every run up to a tick).
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> bool {
        let (lock, cv) = &self.done;
        let done = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (done, _) = cv
            .wait_timeout_while(done, timeout, |done| !*done)
            .unwrap_or_else(|e| e.into_inner());
        *done
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Rows stored so far.
    pub fn len(&self) -> u64 {
        self.read().cols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, index: u64) -> Option<Row> {
        self.read().cols.get(index)
    }

    /// Rows in `range` (clipped to what is stored), appended to `out`.
    pub fn rows(&self, range: Range<u64>, out: &mut Vec<Row>) {
        let inner = self.read();
        let end = range.end.min(inner.cols.len());
        inner.cols.extend_rows(range.start..end, out);
    }

    /// Index of the first row at or after `ts_ns` (== len when none is).
    pub fn seek_time(&self, ts_ns: u64) -> u64 {
        self.read().cols.seek(ts_ns)
    }

    /// Rows with `start_ns <= ts < end_ns` (exact on time-sorted captures;
    /// see `seek_time` for the rule on unsorted ones).
    pub fn time_window(&self, start_ns: u64, end_ns: u64) -> Range<u64> {
        let inner = self.read();
        let a = inner.cols.seek(start_ns);
        let b = inner.cols.seek(end_ns).max(a);
        a..b
    }

    /// Whether every timestamp so far is >= the previous one.
    pub fn time_sorted(&self) -> bool {
        self.read().cols.sorted
    }

    pub fn stats(&self) -> StoreStats {
        self.read().stats
    }

    pub fn conversations(&self) -> Vec<Conversation> {
        self.read().convs.list.clone()
    }

    pub fn conversation(&self, id: u32) -> Option<Conversation> {
        self.read().convs.list.get(id as usize).copied()
    }

    /// Heap bytes held by the row index (not the frame bytes).
    /// Memory the index has allocated: its rows in memory and the room
    /// reserved for growth (a chunk's columns grow by doubling).
    pub fn index_bytes(&self) -> u64 {
        self.read().cols.heap_bytes()
    }

    /// Bytes the index's rows take, 24 a row (32 in a wide chunk), without
    /// reserved room: what a capture costs per packet, whatever its size.
    pub fn index_bytes_held(&self) -> u64 {
        self.read().cols.held_bytes()
    }

    pub fn format(&self) -> Option<CaptureFormat> {
        self.format
    }

    pub fn time_base(&self) -> TimeBase {
        *self.time_base.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Add a non-frame record from a live source. A bounded store keeps
    /// the newest within its share of the cap and counts the ones it lets
    /// go ([`SpillStats::records_deleted`]).
    pub fn push_record(&self, record: Record) {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.push_back(record);
        if let Some(spill) = self.spill.as_ref().filter(|s| !s.index_only) {
            let max = spill.cfg.max_records();
            while records.len() > max {
                records.pop_front();
                spill.records_deleted.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Non-frame records seen so far, in source order, that match `keep`.
    pub fn records_where(&self, keep: impl Fn(&Record) -> bool) -> Vec<Record> {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.iter().filter(|r| keep(r)).cloned().collect()
    }

    /// The non-frame records that match `keep` among those after the
    /// first `seen` the store was given, each with its sequence number
    /// (its place among all the store was given), and the sequence numbers
    /// of the oldest record still held and of the next to come: a view
    /// kept up to date takes only what is new, and drops what a bounded
    /// store let go (before `first_seq`).
    pub fn records_after(&self, seen: u64, keep: impl Fn(&Record) -> bool) -> RecordsAfter {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        // Counted under the records' lock, as `push_record` counts them.
        let first_seq = self
            .spill
            .as_ref()
            .map_or(0, |s| s.records_deleted.load(Ordering::Relaxed));
        let next_seq = first_seq + records.len() as u64;
        let from = seen.clamp(first_seq, next_seq);
        let records = records
            .range((from - first_seq) as usize..)
            .zip(from..)
            .filter(|(r, _)| keep(r))
            .map(|(r, seq)| (seq, r.clone()))
            .collect();
        RecordsAfter {
            first_seq,
            next_seq,
            records,
        }
    }

    /// How many non-frame records the store holds.
    pub fn record_count(&self) -> usize {
        self.records.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// An ILA capture's windows, sample clock and frames cut at window
    /// edges, known once indexing completes; `None` for other files.
    pub fn ila(&self) -> Option<crate::wave::ila::IlaSummary> {
        self.ila.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reader warnings (cut file, ...), known once indexing completes.
    pub fn warnings(&self) -> Vec<CaptureWarning> {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The first reader warning and how many there are, without copying
    /// them all (the status line asks every frame).
    pub fn first_warning(&self) -> Option<(CaptureWarning, usize)> {
        let warnings = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        warnings.first().map(|w| (w.clone(), warnings.len()))
    }

    /// Indexing (and the analysis fed by it) is over: nothing more comes.
    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    pub fn progress(&self) -> Progress {
        Progress {
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            bytes_total: self.bytes_total,
            rows: self.len(),
            complete: self.complete.load(Ordering::Acquire),
            error: self.error.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            elapsed_ns: self.elapsed_ns.load(Ordering::Relaxed),
        }
    }

    /// The captured bytes of row `index`, read back from the backing.
    pub fn frame_bytes(&self, index: u64) -> Result<Vec<u8>, StoreError> {
        let row = self.row(index).ok_or_else(|| StoreError::NoRow {
            row: index,
            len: self.len(),
        })?;
        let mut buf = vec![0u8; row.caplen as usize];
        match &self.backing {
            Backing::File { file, path } => {
                read_exact_at(file, &mut buf, row.file_offset).map_err(|source| {
                    StoreError::Read {
                        row: index,
                        offset: row.file_offset,
                        path: path.display().to_string(),
                        source,
                    }
                })?;
            }
            Backing::Memory(mem) => {
                if index < self.first_row() {
                    return Err(StoreError::Deleted { row: index });
                }
                let mem = mem.read().unwrap_or_else(|e| e.into_inner());
                mem.read(row.file_offset, &mut buf)
                    .map_err(|e| self.bytes_error(index, row.file_offset, e))?;
            }
        }
        Ok(buf)
    }
}

impl Store {
    fn bytes_error(&self, row: u64, offset: u64, e: spill::BytesGone) -> StoreError {
        match e {
            spill::BytesGone::Deleted => StoreError::Deleted { row },
            spill::BytesGone::Past => StoreError::Read {
                row,
                offset,
                path: "memory".into(),
                source: std::io::ErrorKind::UnexpectedEof.into(),
            },
            spill::BytesGone::Io(source) => StoreError::Read {
                row,
                offset,
                path: self
                    .spill
                    .as_ref()
                    .map_or("memory".into(), |s| s.cfg.dir.display().to_string()),
                source,
            },
        }
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        let n = file.seek_read(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
    }
    Ok(())
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(buf, offset)
}

#[cfg(not(unix))]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        done += file.seek_write(&buf[done..], offset + done as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A live store's bytes come out as they went in, across windows
    /// faulted in ahead and across the reallocations of the buffer.
    #[test]
    fn prefaulted_bytes_are_the_bytes_appended() {
        let mut mem = Vec::new();
        let mut want = Vec::new();
        let mut k = 0u32;
        while want.len() < 3 * super::prefault::WINDOW_BYTES + 12_345 {
            let n = 1 + (k as usize * 7919) % 70_000;
            let part: Vec<u8> = (0..n).map(|i| (i as u32 ^ k) as u8).collect();
            super::extend_prefaulted(&mut mem, &part);
            want.extend_from_slice(&part);
            k += 1;
        }
        assert_eq!(mem, want);
    }
}
