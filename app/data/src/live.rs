//! Partitions as a live session goes: each window of capture time of the
//! packets table written as soon as it closes (a frame of a later window
//! has arrived), so that a crash loses at most the window still open.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rocescope_replay::store::Store;

use crate::export::{ExportOptions, Format, Rows, export, partition_capture_name};
use crate::{DataError, Source, Table};

/// Rows read from the store at a time while looking for a window's end.
const SCAN_ROWS: u64 = 4096;

/// Rows per part file of what is left when the session ends (a window
/// closed on time is one file): four row groups.
const END_PART_ROWS: u64 = 1 << 18;

/// The packets table of a growing store, written window by window under
/// `ROOT/packets/capture=NAME/window_start_ns=N/part-TAG-K.parquet` (the
/// layout of `export --partition`).
#[derive(Debug)]
pub struct LivePartitions {
    root: PathBuf,
    capture: String,
    window_ns: u64,
    /// The first row not yet written.
    next_row: u64,
    /// Part files per window so far (a window seen again, times going
    /// back, gets another).
    parts: std::collections::HashMap<u64, u32>,
    /// This writer's mark in its file names, so that a session started
    /// again under the same capture name adds files, never overwrites.
    tag: String,
    /// Stops a write at its next batch (the file being written is
    /// removed): `--duration` ends a session whatever the backlog.
    cancel: Option<Arc<AtomicBool>>,
    /// Rows the store let go (its disk ring) before they were written.
    pub rows_missed: u64,
    pub rows_written: u64,
    pub files_written: u64,
}

impl LivePartitions {
    pub fn new(root: &Path, capture: &str, window_ns: u64) -> LivePartitions {
        LivePartitions {
            root: root.to_path_buf(),
            capture: partition_capture_name(capture),
            window_ns: window_ns.max(1),
            next_row: 0,
            parts: Default::default(),
            tag: format!(
                "{:x}-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis()),
                std::process::id()
            ),
            cancel: None,
            rows_missed: 0,
            rows_written: 0,
            files_written: 0,
        }
    }

    /// Writes stop (with [`DataError::Cancelled`]) once `flag` is set.
    pub fn cancel_on(&mut self, flag: Arc<AtomicBool>) {
        self.cancel = Some(flag);
    }

    /// Rows of `store` not written yet, and the capture time they span.
    pub fn unwritten(&self, store: &Store) -> (u64, Option<(u64, u64)>) {
        let first = self.next_row.max(store.first_row());
        let len = store.len();
        let span = match (
            store.row(first),
            len.checked_sub(1).and_then(|l| store.row(l)),
        ) {
            (Some(a), Some(b)) if first < len => Some((a.ts_ns, b.ts_ns)),
            _ => None,
        };
        (len.saturating_sub(first), span)
    }

    /// Write every window that has closed; with `end`, the open one too.
    /// Returns the files written by this call.
    pub fn flush(&mut self, src: &Source<'_>, end: bool) -> Result<Vec<PathBuf>, DataError> {
        let store = src.store;
        let mut files = Vec::new();
        let first = store.first_row();
        if self.next_row < first {
            self.rows_missed += first - self.next_row;
            self.next_row = first;
        }
        let len = store.len();
        let mut rows = Vec::new();
        while self.next_row < len {
            let Some(row) = store.row(self.next_row) else {
                break;
            };
            let window = row.ts_ns - row.ts_ns % self.window_ns;
            // The window's last row: the first row of another window ends it.
            let mut at = self.next_row + 1;
            let mut closed = false;
            'scan: while at < len {
                rows.clear();
                store.rows(at..(at + SCAN_ROWS).min(len), &mut rows);
                if rows.is_empty() {
                    break;
                }
                for r in &rows {
                    if r.ts_ns - r.ts_ns % self.window_ns != window {
                        closed = true;
                        break 'scan;
                    }
                    at += 1;
                }
            }
            if !closed && !end {
                break;
            }
            // At the end the writer may be stopped by a deadline: the rows
            // left go in parts, so what is written by then is whole files.
            let part_rows = if end { END_PART_ROWS } else { u64::MAX };
            while self.next_row < at {
                let part_end = at.min(self.next_row.saturating_add(part_rows));
                files.push(self.write_window(src, window, self.next_row..part_end)?);
                self.rows_written += part_end - self.next_row;
                self.next_row = part_end;
            }
        }
        Ok(files)
    }

    /// One window's rows to a hidden file, then renamed into place: a
    /// reader never sees a file being written.
    fn write_window(
        &mut self,
        src: &Source<'_>,
        window: u64,
        rows: std::ops::Range<u64>,
    ) -> Result<PathBuf, DataError> {
        let capture_dir = self
            .root
            .join(Table::Packets.name())
            .join(format!("capture={}", self.capture));
        let dir = capture_dir.join(format!("window_start_ns={window}"));
        let part = self.parts.entry(window).or_insert(0);
        let name = format!("part-{}-{part:05}.parquet", self.tag);
        *part += 1;
        let tmp_dir = capture_dir.join(format!(".tmp-live-{}", std::process::id()));
        let mkdir = |d: &PathBuf| {
            std::fs::create_dir_all(d).map_err(|cause| DataError::Io {
                what: "cannot create",
                path: d.clone(),
                cause,
            })
        };
        mkdir(&tmp_dir)?;
        let tmp = tmp_dir.join(&name);
        let opts = ExportOptions {
            format: Some(Format::Parquet),
            rows: Rows::Range(rows),
            cancel: self.cancel.clone(),
            ..ExportOptions::default()
        };
        if let Err(e) = export(src, Table::Packets, &tmp, &opts) {
            // The export removed its partial file; no empty folder either.
            let _ = std::fs::remove_dir(&tmp_dir);
            return Err(e);
        }
        // The window's folder once its file is whole: no empty folders.
        mkdir(&dir)?;
        let path = dir.join(name);
        std::fs::rename(&tmp, &path).map_err(|cause| DataError::Io {
            what: "cannot write",
            path: path.clone(),
            cause,
        })?;
        let _ = std::fs::remove_dir(&tmp_dir);
        self.files_written += 1;
        Ok(path)
    }
}
