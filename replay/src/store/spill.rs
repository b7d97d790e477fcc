//! A live store bounded in memory: the recent part of a session in memory,
//! older frame bytes and index chunks in disk segments read back by offset
//! (as a capture file is), and, with a disk cap, a ring that deletes the
//! oldest segments and counts what it deleted.
//!
//! Frame bytes live in segments of up to 16 MiB; index rows in the
//! store's chunks of 65,536 rows (2 MiB). Both keep their place numbers
//! (byte offsets, row numbers) for the whole session, so every query of a
//! row or a span works whether its data is in memory or on disk. Rows the
//! ring deleted keep their numbers too and read back as placeholders
//! ([`super::Store::first_row`] says where the kept rows start).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per frame-bytes segment at most: large sequential writes. A small
/// cap takes smaller segments (a quarter of the bytes' share), so that the
/// segment being filled and the spare never hold more than the cap.
const SEGMENT_BYTES_MAX: usize = 16 << 20;
const SEGMENT_BYTES_MIN: usize = 256 << 10;

/// Where a bounded live store keeps what does not fit in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillConfig {
    /// The session folder (created if missing); segment files go in it.
    pub dir: PathBuf,
    /// Memory the store's frame bytes and index rows may hold.
    pub max_memory_bytes: u64,
    /// Disk the segments may take; past it the oldest are deleted (a ring).
    pub max_disk_bytes: Option<u64>,
    /// Delete the folder's segments when the store is dropped (a session
    /// cache, not a recording the user asked to keep).
    pub remove_on_drop: bool,
}

impl SpillConfig {
    /// Memory for hot index chunks: a third of what the records leave (a
    /// header-only frame is 24 bytes of row and about 64 of bytes).
    pub(crate) fn index_memory_bytes(&self) -> u64 {
        (self.max_memory_bytes - self.records_memory_bytes()) / 3
    }

    pub(crate) fn bytes_memory_bytes(&self) -> u64 {
        self.max_memory_bytes - self.records_memory_bytes() - self.index_memory_bytes()
    }

    /// Non-frame records (profiler samples, slot decisions) get a tenth.
    fn records_memory_bytes(&self) -> u64 {
        self.max_memory_bytes / 10
    }

    /// Records kept in memory at most (about 128 bytes each, with the
    /// allocator's share).
    pub(crate) fn max_records(&self) -> usize {
        usize::try_from(self.records_memory_bytes() / 128)
            .unwrap_or(usize::MAX)
            .max(1024)
    }

    fn segment_bytes(&self) -> usize {
        usize::try_from(self.bytes_memory_bytes() / 4)
            .unwrap_or(usize::MAX)
            .clamp(SEGMENT_BYTES_MIN, SEGMENT_BYTES_MAX)
    }
}

/// What a bounded store holds where, and what its ring deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// Frame bytes and index rows held in memory now.
    pub memory_bytes: u64,
    /// Segment bytes on disk now.
    pub disk_bytes: u64,
    /// Segment bytes written to disk in all.
    pub disk_written_bytes: u64,
    /// Rows whose index lies on disk (still queryable).
    pub rows_on_disk: u64,
    /// Rows the disk ring deleted (counted, shown, never silent).
    pub rows_deleted: u64,
    /// Frame bytes the disk ring deleted.
    pub bytes_deleted: u64,
    /// Segment files the ring deleted.
    pub segments_deleted: u64,
    /// Non-frame records let go past their share of memory (the oldest).
    pub records_deleted: u64,
    /// The disk ring's cap (`SpillConfig::max_disk_bytes`).
    pub max_disk_bytes: Option<u64>,
}

/// Counters and file naming shared by the bytes and the index of one store.
#[derive(Debug)]
pub(crate) struct Spill {
    pub(crate) cfg: SpillConfig,
    /// Names this store's files apart from another's in the same folder (a
    /// rerun's store opens before the one it replaces is dropped).
    token: String,
    next_file: AtomicU64,
    bytes_memory: AtomicU64,
    index_memory: AtomicU64,
    pub(crate) disk_bytes: AtomicU64,
    pub(crate) disk_written_bytes: AtomicU64,
    pub(crate) rows_on_disk: AtomicU64,
    pub(crate) rows_deleted: AtomicU64,
    pub(crate) bytes_deleted: AtomicU64,
    pub(crate) segments_deleted: AtomicU64,
    pub(crate) records_deleted: AtomicU64,
    /// The first write error: spilling then stops (memory grows past the
    /// cap rather than losing rows) and the error is shown.
    pub(crate) error: std::sync::Mutex<Option<String>>,
    /// A capture file's index: the frame bytes stay in the file, so the
    /// index takes the whole cap, and records are all kept (a file's are
    /// few, and none may be lost).
    pub(crate) index_only: bool,
}

impl Spill {
    pub(crate) fn new(cfg: SpillConfig) -> std::io::Result<Arc<Spill>> {
        std::fs::create_dir_all(&cfg.dir)?;
        Ok(Arc::new(Spill::unmade(cfg, false)))
    }

    /// The spill of a capture file's index. Its folder is made at the
    /// first segment: a file that fits the cap leaves nothing behind, and
    /// a folder that cannot be made is the spill's error (shown, the index
    /// then kept in memory), not a file that will not open.
    pub(crate) fn for_file(cfg: SpillConfig) -> Arc<Spill> {
        Arc::new(Spill::unmade(cfg, true))
    }

    fn unmade(cfg: SpillConfig, index_only: bool) -> Spill {
        static STORES: AtomicU64 = AtomicU64::new(0);
        let token = format!(
            "{}.{}",
            std::process::id(),
            STORES.fetch_add(1, Ordering::Relaxed)
        );
        Spill {
            cfg,
            token,
            next_file: AtomicU64::new(0),
            bytes_memory: AtomicU64::new(0),
            index_memory: AtomicU64::new(0),
            disk_bytes: AtomicU64::new(0),
            disk_written_bytes: AtomicU64::new(0),
            rows_on_disk: AtomicU64::new(0),
            rows_deleted: AtomicU64::new(0),
            bytes_deleted: AtomicU64::new(0),
            segments_deleted: AtomicU64::new(0),
            records_deleted: AtomicU64::new(0),
            error: std::sync::Mutex::new(None),
            index_only,
        }
    }

    /// Memory the index's chunks may hold.
    pub(crate) fn index_budget_bytes(&self) -> u64 {
        if self.index_only {
            self.cfg.max_memory_bytes
        } else {
            self.cfg.index_memory_bytes()
        }
    }

    pub(crate) fn stats(&self) -> SpillStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SpillStats {
            memory_bytes: get(&self.bytes_memory) + get(&self.index_memory),
            disk_bytes: get(&self.disk_bytes),
            disk_written_bytes: get(&self.disk_written_bytes),
            rows_on_disk: get(&self.rows_on_disk),
            rows_deleted: get(&self.rows_deleted),
            bytes_deleted: get(&self.bytes_deleted),
            segments_deleted: get(&self.segments_deleted),
            records_deleted: get(&self.records_deleted),
            max_disk_bytes: self.cfg.max_disk_bytes,
        }
    }

    /// True while the disk segments exceed the ring's cap.
    pub(crate) fn over_disk(&self) -> bool {
        self.cfg
            .max_disk_bytes
            .is_some_and(|max| self.disk_bytes.load(Ordering::Relaxed) > max)
    }

    /// Record the memory the index's hot chunks hold.
    pub(crate) fn set_index_memory(&self, n: u64) {
        self.index_memory.store(n, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self) -> bool {
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    pub(crate) fn fail(&self, what: &str, path: &Path, e: &std::io::Error) {
        let kept = if self.index_only {
            "the index"
        } else {
            "the session"
        };
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| {
                format!("{what} {}: {e}; keeping {kept} in memory", path.display())
            });
    }

    /// Write `bytes` to a new segment file named for `kind`; the file is
    /// kept open for reading back.
    pub(crate) fn write_segment(&self, kind: &str, bytes: &[u8]) -> Option<(File, PathBuf)> {
        self.write_segment_with(kind, |w| w.write_all(bytes))
    }

    /// A new segment file named for `kind`, written by `write` through a
    /// small buffer (no copy of the whole segment in memory).
    pub(crate) fn write_segment_with(
        &self,
        kind: &str,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Option<(File, PathBuf)> {
        let id = self.next_file.fetch_add(1, Ordering::Relaxed);
        let path = self
            .cfg
            .dir
            .join(format!("{kind}-{}-{id:08}.seg", self.token));
        let result = (|| {
            if self.index_only {
                std::fs::create_dir_all(&self.cfg.dir)?;
            }
            let f = std::fs::OpenOptions::new()
                .create_new(true)
                .read(true)
                .write(true)
                .open(&path)?;
            let mut w = std::io::BufWriter::with_capacity(64 << 10, f);
            write(&mut w)?;
            let f = w.into_inner().map_err(|e| e.into_error())?;
            let n = f.metadata()?.len();
            Ok::<_, std::io::Error>((f, n))
        })();
        match result {
            Ok((f, n)) => {
                self.disk_bytes.fetch_add(n, Ordering::Relaxed);
                self.disk_written_bytes.fetch_add(n, Ordering::Relaxed);
                Some((f, path))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                self.fail("cannot write the segment", &path, &e);
                None
            }
        }
    }

    /// Delete a segment file of `len` bytes (the ring).
    pub(crate) fn delete_segment(&self, path: &Path, len: u64) {
        let _ = std::fs::remove_file(path);
        self.disk_bytes.fetch_sub(len, Ordering::Relaxed);
        self.segments_deleted.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        if self.cfg.remove_on_drop {
            // Only this store's segments: another store may share the folder.
            let mine = format!("-{}-", self.token);
            if let Ok(dir) = std::fs::read_dir(&self.cfg.dir) {
                for e in dir.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    if name.ends_with(".seg") && name.contains(&mine) {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
            // Removed once empty (the last store of the folder).
            let _ = std::fs::remove_dir(&self.cfg.dir);
        }
    }
}

/// One segment of frame bytes in memory.
struct HotSegment {
    start: u64,
    bytes: Vec<u8>,
}

/// One segment of frame bytes on disk.
struct ColdSegment {
    start: u64,
    len: u64,
    file: File,
    path: PathBuf,
}

/// Why a span of frame bytes cannot be read.
#[derive(Debug)]
pub(crate) enum BytesGone {
    /// The disk ring deleted them.
    Deleted,
    /// Past what was stored.
    Past,
    Io(std::io::Error),
}

/// The frame bytes of a live store: one growing buffer, or, bounded,
/// segments in memory and on disk.
pub(crate) struct MemBytes {
    hot: VecDeque<HotSegment>,
    cold: VecDeque<ColdSegment>,
    /// Bytes below this offset were deleted by the ring.
    deleted_below: u64,
    spill: Option<Arc<Spill>>,
    /// A written segment's buffer, kept to be filled again: its pages are
    /// already in, and memory stays flat.
    spare: Option<Vec<u8>>,
}

impl MemBytes {
    pub(crate) fn new(spill: Option<Arc<Spill>>) -> MemBytes {
        MemBytes {
            hot: VecDeque::new(),
            cold: VecDeque::new(),
            deleted_below: 0,
            spill,
            spare: None,
        }
    }

    pub(crate) fn spill(&self) -> Option<Arc<Spill>> {
        self.spill.clone()
    }

    /// The offset the next byte will have.
    pub(crate) fn len(&self) -> u64 {
        match self.hot.back() {
            Some(s) => s.start + s.bytes.len() as u64,
            None => self.cold.back().map_or(0, |c| c.start + c.len),
        }
    }

    /// Append `data` in one piece (never split across segments); returns
    /// its offset.
    pub(crate) fn append(&mut self, data: &[u8]) -> u64 {
        let offset = self.len();
        let segment = self.spill.as_ref().map(|s| s.cfg.segment_bytes());
        let fits = self.hot.back().is_some_and(|s| {
            segment.is_none_or(|seg| s.bytes.len() + data.len() <= s.bytes.capacity().max(seg))
        });
        if !fits {
            let mut bytes = self.spare.take().unwrap_or_default();
            bytes.clear();
            if let Some(seg) = segment {
                bytes.reserve_exact(seg.max(data.len()));
            }
            self.hot.push_back(HotSegment {
                start: offset,
                bytes,
            });
        }
        if let Some(seg) = self.hot.back_mut() {
            super::extend_prefaulted(&mut seg.bytes, data);
        }
        if self.spill.is_some() {
            self.bound();
        }
        offset
    }

    /// Memory the bytes hold: the segments in memory and the spare.
    fn hot_bytes(&self) -> u64 {
        let spare = self.spare.as_ref().map_or(0, |s| s.capacity() as u64);
        self.hot
            .iter()
            .map(|s| s.bytes.capacity() as u64)
            .sum::<u64>()
            + spare
    }

    /// Spill the oldest full segments while memory is over its share, then
    /// delete the oldest on disk while the disk is over its cap.
    fn bound(&mut self) {
        let Some(spill) = self.spill.clone() else {
            return;
        };
        let budget = spill.cfg.bytes_memory_bytes();
        while self.hot.len() > 1 && self.hot_bytes() > budget && !spill.failed() {
            let Some(seg) = self.hot.pop_front() else {
                break;
            };
            match spill.write_segment("bytes", &seg.bytes) {
                Some((file, path)) => {
                    self.cold.push_back(ColdSegment {
                        start: seg.start,
                        len: seg.bytes.len() as u64,
                        file,
                        path,
                    });
                    self.spare = Some(seg.bytes);
                }
                None => {
                    self.hot.push_front(seg);
                    break;
                }
            }
        }
        while spill.over_disk() {
            let Some(c) = self.cold.pop_front() else {
                break;
            };
            spill.delete_segment(&c.path, c.len);
            spill.bytes_deleted.fetch_add(c.len, Ordering::Relaxed);
            self.deleted_below = c.start + c.len;
        }
        spill
            .bytes_memory
            .store(self.hot_bytes(), Ordering::Relaxed);
    }

    /// Delete the segments wholly below `offset` (their rows were deleted).
    pub(crate) fn delete_below(&mut self, offset: u64) {
        let Some(spill) = self.spill.clone() else {
            return;
        };
        while self.cold.front().is_some_and(|c| c.start + c.len <= offset) {
            if let Some(c) = self.cold.pop_front() {
                spill.delete_segment(&c.path, c.len);
                spill.bytes_deleted.fetch_add(c.len, Ordering::Relaxed);
                self.deleted_below = c.start + c.len;
            }
        }
    }

    /// The bytes `lo..lo + buf.len()`, from memory or disk, possibly across
    /// segments.
    pub(crate) fn read(&self, lo: u64, buf: &mut [u8]) -> Result<(), BytesGone> {
        if buf.is_empty() {
            return Ok(());
        }
        if lo < self.deleted_below {
            return Err(BytesGone::Deleted);
        }
        let hi = lo + buf.len() as u64;
        if hi > self.len() {
            return Err(BytesGone::Past);
        }
        let mut at = lo;
        while at < hi {
            let done = (at - lo) as usize;
            let n = if let Some(s) = self
                .hot
                .iter()
                .find(|s| contains(s.start, s.bytes.len() as u64, at))
            {
                let i = (at - s.start) as usize;
                let n = (s.bytes.len() - i).min(buf.len() - done);
                buf[done..done + n].copy_from_slice(&s.bytes[i..i + n]);
                n
            } else {
                let k = self.cold.partition_point(|c| c.start + c.len <= at);
                let Some(c) = self.cold.get(k).filter(|c| contains(c.start, c.len, at)) else {
                    return Err(BytesGone::Deleted);
                };
                let i = at - c.start;
                let n = ((c.len - i) as usize).min(buf.len() - done);
                super::read_exact_at(&c.file, &mut buf[done..done + n], i)
                    .map_err(BytesGone::Io)?;
                n
            };
            at += n as u64;
        }
        Ok(())
    }

    /// The bytes `lo..hi` in place, when one in-memory segment holds them.
    pub(crate) fn slice(&self, lo: u64, hi: u64) -> Option<&[u8]> {
        let s = self
            .hot
            .iter()
            .find(|s| contains(s.start, s.bytes.len() as u64, lo))?;
        s.bytes
            .get((lo - s.start) as usize..usize::try_from(hi - s.start).ok()?)
    }
}

fn contains(start: u64, len: u64, at: u64) -> bool {
    at >= start && at < start + len
}
