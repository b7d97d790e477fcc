//! Exports from the workbench: the table of the current view, or a named
//! one, written by `rocescope-data` exactly as `rocescope export` writes it,
//! on a thread of its own (a large capture takes seconds), with the outcome
//! reported back through the model's status line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

use rocescope_data::{DataError, ExportOptions, ExportSummary, Rows, Source, Table, export};
use rocescope_replay::store::{RcAnalyzer, Store};

use crate::command::View;
use crate::scan::Matches;

/// The table a view exports when none is named.
pub fn view_table(view: View) -> Table {
    match view {
        View::Overview => Table::Findings,
        View::Qps => Table::Qps,
        View::Retransmissions => Table::Episodes,
        View::Slots => Table::Slots,
        View::Profiler => Table::Profiler,
        View::Losses => Table::Losses,
        View::Packets | View::Ladder | View::Explain | View::Lessons => Table::Packets,
    }
}

/// Why an export from the workbench failed; every message names the path.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("export of {table} to {path} failed: {cause}")]
    Data {
        table: Table,
        path: PathBuf,
        cause: DataError,
    },
    #[error(
        "export of {table} to {path} stopped: the display filter changed before its scan finished"
    )]
    FilterChanged { table: Table, path: PathBuf },
    #[error("export of {table} to {path} stopped: the display filter scan made no progress")]
    FilterStalled { table: Table, path: PathBuf },
    #[error("export of {table} to {path} failed: cannot start its thread: {cause}")]
    Spawn {
        table: Table,
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("export of {table} to {path} failed: its thread stopped without a result")]
    Lost { table: Table, path: PathBuf },
}

/// Which packets an export takes: what the view shows at the moment of
/// the command (rows below `horizon`, the replay clock's edge).
#[derive(Debug)]
pub(crate) enum PacketRows {
    /// Every row below the horizon.
    All { horizon: u64 },
    /// The display filter's matches below the horizon; the scan may still
    /// be running, so the export thread waits until it has passed it.
    Matches { matches: Arc<Matches>, horizon: u64 },
    /// The rows of these conversations below the horizon (the ladder's QP).
    Conversations { convs: Vec<u32>, horizon: u64 },
}

/// Everything an export thread needs, owned.
#[derive(Debug)]
pub(crate) struct ExportRequest {
    pub store: Arc<Store>,
    pub analysis: RcAnalyzer,
    /// The capture's name (the partition key of partitioned exports).
    pub capture: String,
    pub table: Table,
    pub path: PathBuf,
    pub rows: PacketRows,
    /// Hive-style Parquet partitions of this many ns (a folder at `path`).
    pub partition_window_ns: Option<u64>,
    /// Profiler rows beside the store's: the waveform's chosen signals.
    pub extra_profiler: Vec<rocescope_replay::Record>,
    /// The capture points' analysis (the `losses` and `paths` tables).
    pub points: Option<Arc<rocescope_replay::points::PointsReport>>,
}

/// An export running on its own thread.
#[derive(Debug)]
pub(crate) struct ExportJob {
    pub table: Table,
    pub path: PathBuf,
    done: Receiver<Result<ExportSummary, ExportError>>,
}

impl ExportJob {
    /// Start `req` on a thread.
    pub fn spawn(req: ExportRequest) -> Result<ExportJob, ExportError> {
        let (tx, done) = channel();
        let (table, path) = (req.table, req.path.clone());
        std::thread::Builder::new()
            .name("rocescope-export".into())
            .spawn(move || {
                // The receiver may be gone (the model was replaced): nothing to tell.
                let _ = tx.send(run(req));
            })
            .map_err(|cause| ExportError::Spawn {
                table,
                path: path.clone(),
                cause,
            })?;
        Ok(ExportJob { table, path, done })
    }

    /// The outcome, once the thread has one.
    pub fn poll(&self) -> Option<Result<ExportSummary, ExportError>> {
        match self.done.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(ExportError::Lost {
                table: self.table,
                path: self.path.clone(),
            })),
        }
    }
}

/// How long the export waits for a filter scan that stopped advancing.
const SCAN_STALL: Duration = Duration::from_secs(30);

fn run(req: ExportRequest) -> Result<ExportSummary, ExportError> {
    let (table, path) = (req.table, req.path.clone());
    let rows = match req.rows {
        PacketRows::All { horizon } => Rows::Range(0..horizon),
        PacketRows::Matches { matches, horizon } => {
            let mut last = (matches.scanned.load(Ordering::Relaxed), Instant::now());
            loop {
                let scanned = matches.scanned.load(Ordering::Relaxed);
                if scanned >= horizon {
                    break;
                }
                if matches.cancel.load(Ordering::Relaxed) {
                    return Err(ExportError::FilterChanged { table, path });
                }
                if scanned != last.0 {
                    last = (scanned, Instant::now());
                } else if last.1.elapsed() > SCAN_STALL {
                    return Err(ExportError::FilterStalled { table, path });
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let found = matches.rows.read().unwrap_or_else(|e| e.into_inner());
            let n = found.partition_point(|r| *r < horizon);
            Rows::Indices(found[..n].to_vec())
        }
        PacketRows::Conversations { convs, horizon } => {
            Rows::Indices(rows_of(&req.store, &convs, horizon))
        }
    };
    let report = req
        .analysis
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .report();
    let src = Source {
        store: &req.store,
        report: &report,
        capture: &req.capture,
        extra_profiler: &req.extra_profiler,
        points: req.points.as_deref(),
    };
    let opts = ExportOptions {
        rows,
        partition_window_ns: req.partition_window_ns,
        ..ExportOptions::default()
    };
    export(&src, table, &req.path, &opts).map_err(|cause| ExportError::Data { table, path, cause })
}

/// Rows below `horizon` whose conversation is one of `convs`.
fn rows_of(store: &Store, convs: &[u32], horizon: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(8192);
    let mut start = 0;
    while start < horizon {
        let end = (start + 8192).min(horizon);
        buf.clear();
        store.rows(start..end, &mut buf);
        out.extend(
            (start..)
                .zip(&buf)
                .filter(|(_, r)| convs.contains(&r.conversation))
                .map(|(i, _)| i),
        );
        start = end;
    }
    out
}

/// The capture's name as `rocescope export` names it: the file's stem, or
/// the source's name (`sim:default`).
pub(crate) fn capture_name(source_name: &str) -> String {
    Path::new(source_name).file_stem().map_or_else(
        || source_name.to_owned(),
        |s| s.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_has_a_table() {
        assert_eq!(view_table(View::Packets), Table::Packets);
        assert_eq!(view_table(View::Qps), Table::Qps);
        assert_eq!(view_table(View::Retransmissions), Table::Episodes);
        assert_eq!(view_table(View::Overview), Table::Findings);
        assert_eq!(view_table(View::Profiler), Table::Profiler);
        assert_eq!(view_table(View::Slots), Table::Slots);
    }

    #[test]
    fn capture_names_are_file_stems() {
        assert_eq!(capture_name("/tmp/x/trace.pcapng"), "trace");
        assert_eq!(capture_name("sim:default"), "sim:default");
    }
}
