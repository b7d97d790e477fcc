//! Limits of a live session: how much memory its store may hold and how
//! much disk its segments may take, and where they go. Every live source
//! (the simulator, an agent, a followed file) takes its store from here, so
//! that a session left open for hours stays within a fixed memory.

use std::path::PathBuf;
use std::sync::Arc;

use rocescope_replay::TimeBase;
use rocescope_replay::store::{SpillConfig, Store, StoreError};

pub use rocescope_replay::store::default_max_memory_bytes;

/// The default disk cap of a live session's segments: the smaller of
/// 8 GiB and a tenth of the free space where they go. Without one, a
/// simulated card at line rate filled 3.6 GB in 43 s.
pub fn default_max_disk_bytes(dir: &std::path::Path) -> u64 {
    const EIGHT_GIB: u64 = 8 << 30;
    free_bytes(dir).map_or(EIGHT_GIB, |free| EIGHT_GIB.min(free / 10))
}

/// Free space (for an unprivileged user) on the file system holding `dir`,
/// or its nearest existing ancestor.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    let existing = dir.ancestors().find(|a| a.exists())?;
    let st = rustix::fs::statvfs(existing).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Memory the process needs besides the store and the link queue: the
/// binary, the analysis, batches in flight, the allocator's slack, the
/// views. Measured: a 10 min line-rate session at a 512 MiB cap held
/// 284 MiB outside the store (BENCHMARKS.md, "Long live sessions").
pub const PROCESS_BASELINE_BYTES: u64 = 112 << 20;

/// The smallest share a store gets, however small the cap.
const STORE_MIN_BYTES: u64 = 8 << 20;

/// The smallest index share a capture file gets.
const FILE_INDEX_MIN_BYTES: u64 = 1 << 20;

/// What the user asked of a live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// The whole process's memory cap (`--max-memory`).
    pub max_memory_bytes: u64,
    /// Disk the session's segments may take (`--max-disk`); past it the
    /// oldest are deleted and counted. `None`: [`default_max_disk_bytes`].
    pub max_disk_bytes: Option<u64>,
    /// Where the segments go (default: a new folder under the user's cache
    /// directory, removed when the session ends).
    pub dir: Option<PathBuf>,
    /// Where a capture file's index is kept between opens (`--index-dir`),
    /// one folder per capture; `None`: indexed at each open.
    pub index_dir: Option<PathBuf>,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits::with_max_memory(None)
    }
}

impl SessionLimits {
    /// The defaults with this memory cap (`--max-memory`), else
    /// [`default_max_memory_bytes`].
    pub fn with_max_memory(max_memory_bytes: Option<u64>) -> SessionLimits {
        SessionLimits {
            max_memory_bytes: max_memory_bytes.unwrap_or_else(default_max_memory_bytes),
            max_disk_bytes: None,
            dir: None,
            index_dir: None,
        }
    }

    /// The link queue's size within the cap: at most an eighth of it.
    pub fn queue_bytes(&self, asked_bytes: u64) -> u64 {
        asked_bytes.min(self.max_memory_bytes / 8).max(1 << 20)
    }

    /// The store's part of the cap, when `other_bytes` (a link queue) is
    /// also held.
    pub fn spill_config(&self, other_bytes: u64) -> SpillConfig {
        let store = self
            .max_memory_bytes
            .saturating_sub(other_bytes + PROCESS_BASELINE_BYTES)
            .max(STORE_MIN_BYTES);
        let dir = self.dir.clone().unwrap_or_else(new_session_dir);
        SpillConfig {
            max_disk_bytes: Some(
                self.max_disk_bytes
                    .unwrap_or_else(|| default_max_disk_bytes(&dir)),
            ),
            dir,
            max_memory_bytes: store,
            remove_on_drop: true,
        }
    }

    /// Where a capture file's index goes past its share of the cap: the
    /// cap less the process's baseline (at least a megabyte: below the
    /// baseline only the chunk being filled stays in memory), a session
    /// folder removed at exit, no disk cap (a file's rows are never
    /// deleted).
    pub fn file_spill_config(&self) -> SpillConfig {
        SpillConfig {
            dir: self.dir.clone().unwrap_or_else(new_session_dir),
            max_memory_bytes: self
                .max_memory_bytes
                .saturating_sub(PROCESS_BASELINE_BYTES)
                .max(FILE_INDEX_MIN_BYTES),
            max_disk_bytes: None,
            remove_on_drop: true,
        }
    }

    /// Open a capture file and index it in the background, its index
    /// within these limits ([`Self::file_spill_config`]); with an
    /// `index_dir`, the index saved there by an earlier open is read back
    /// instead when it is still the file's (`Store::open_kept`).
    pub fn open_file(
        &self,
        path: &std::path::Path,
        decode: rocescope_decoders::DecodeConfig,
        analyzer: Box<dyn rocescope_replay::store::Analyzer>,
        wave: &rocescope_replay::wave::WaveOptions,
    ) -> Result<Arc<Store>, StoreError> {
        Store::open_kept(
            path,
            decode,
            analyzer,
            wave,
            Some(self.file_spill_config()),
            self.index_dir.as_deref(),
        )
    }

    /// A live store within these limits.
    pub fn live_store(&self, other_bytes: u64) -> Result<Arc<Store>, StoreError> {
        Store::live_bounded(TimeBase::Nanoseconds, self.spill_config(other_bytes))
    }
}

/// A new folder for one session's segments: `$XDG_CACHE_HOME/rocescope/
/// sessions/<time>-<pid>-<n>` (or `~/.cache/...`, else the temp
/// directory). `n` counts the folders this process made: two stores alive
/// at once (a lesson and the session it replaced, a rerun and the run it
/// replaces) must not share one, or each would overwrite and delete the
/// other's segments.
pub fn new_session_dir() -> PathBuf {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    crate::paths::sessions_dir().join(format!("{secs}-{}-{n}", std::process::id()))
}

/// Remove the session folders this process made ([`new_session_dir`]'s
/// `<time>-<pid>-<n>`), at its exit: segments are removed when their store
/// is dropped, but a store a thread still holds at exit never is. A folder
/// the user named (`--session-dir`) is not one of them.
pub fn remove_own_session_dirs() {
    let pid = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir(crate::paths::sessions_dir()) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.split('-').nth(1) == Some(pid.as_str()) && name.split('-').count() == 3 {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The process's peak resident memory so far (VmHWM), where the system
/// tells it.
pub fn peak_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_store_gets_the_cap_less_the_queue_and_the_process() {
        let l = SessionLimits {
            max_memory_bytes: 512 << 20,
            max_disk_bytes: Some(1 << 30),
            dir: Some(PathBuf::from("/tmp/x")),
            index_dir: None,
        };
        let q = l.queue_bytes(256 << 20);
        assert_eq!(q, 64 << 20);
        let c = l.spill_config(q);
        assert_eq!(c.max_memory_bytes, (512 - 64 - 112) << 20);
        assert_eq!(c.max_disk_bytes, Some(1 << 30));
        let tiny = SessionLimits {
            max_memory_bytes: 16 << 20,
            max_disk_bytes: None,
            ..l.clone()
        };
        // No cap given: the default, never unbounded.
        let d = tiny.spill_config(0).max_disk_bytes.unwrap();
        assert!(d > 0 && d <= 8 << 30, "{d}");
        assert!(default_max_disk_bytes(Path::new("/nonexistent/deeper")) <= 8 << 30);
        assert_eq!(tiny.spill_config(0).max_memory_bytes, STORE_MIN_BYTES);
        assert!(default_max_memory_bytes() <= 2 << 30);
        // A file's index: the cap less the process, never a disk ring.
        let f = l.file_spill_config();
        assert_eq!(f.max_memory_bytes, (512 - 112) << 20);
        assert_eq!(f.max_disk_bytes, None);
        assert_eq!(tiny.file_spill_config().max_memory_bytes, 1 << 20);
        let (a, b) = (new_session_dir(), new_session_dir());
        assert_ne!(a, b, "one folder per store");
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.contains(&format!("-{}-", std::process::id())),
            "{name}"
        );
    }
}
