//! Streaming export to Parquet, CSV or JSON lines, optionally as hive-style
//! Parquet partitions (`TABLE/capture=NAME/window_start_ns=N/part-K.parquet`),
//! a capture's partitions of a table replaced whole on each export.

use std::fs::File;
use std::io::BufWriter;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use polars::prelude::*;

use crate::packets::{PacketBatch, Recycler};
use crate::parquet::{ColumnLayout, EncodedGroup, ParquetOut};
use crate::rows::{RowFormat, RowWriter};
use crate::{DataError, PacketBatches, Source, Table};

/// Rows per batch of the packets table: large enough for good Parquet row
/// groups, small enough that memory stays flat.
pub const BATCH_ROWS: usize = 128 * 1024;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl Format {
    /// The format a path's extension names.
    pub fn from_path(path: &Path) -> Result<Format, DataError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("parquet" | "pq") => Ok(Format::Parquet),
            Some("csv") => Ok(Format::Csv),
            Some("jsonl" | "ndjson") => Ok(Format::Jsonl),
            _ => Err(DataError::UnknownFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// Which rows of the packets table to export (other tables go whole).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Rows {
    #[default]
    All,
    /// A range of row indices.
    Range(Range<u64>),
    /// These row indices, ascending (e.g. what a display filter matched).
    Indices(Vec<u64>),
}

/// How to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The format; by default, from the output's extension.
    pub format: Option<Format>,
    /// Write Parquet partitions of this many ns of capture time under the
    /// output folder.
    pub partition_window_ns: Option<u64>,
    /// The packets to export.
    pub rows: Rows,
    /// Rows per batch of the packets table, which is a Parquet row group
    /// (default [`BATCH_ROWS`]).
    pub batch_rows: Option<usize>,
    /// Set to stop the export at its next batch ([`DataError::Cancelled`]);
    /// the file being written is removed, so only whole files remain.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl ExportOptions {
    fn check_cancel(&self) -> Result<(), DataError> {
        match &self.cancel {
            Some(c) if c.load(Ordering::Acquire) => Err(DataError::Cancelled),
            _ => Ok(()),
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone)]
pub struct ExportSummary {
    pub table: Table,
    pub rows: u64,
    pub files: Vec<PathBuf>,
    pub elapsed: Duration,
}

/// Export one table of `src` to `out`.
pub fn export(
    src: &Source<'_>,
    table: Table,
    out: &Path,
    opts: &ExportOptions,
) -> Result<ExportSummary, DataError> {
    let start = Instant::now();
    let recycler = Recycler::default();
    let (rows, files) = match opts.partition_window_ns {
        Some(window_ns) => {
            if !matches!(opts.format, None | Some(Format::Parquet))
                || matches!(Format::from_path(out), Ok(Format::Csv | Format::Jsonl))
            {
                return Err(DataError::PartitionNeedsParquet {
                    path: out.to_path_buf(),
                });
            }
            let mut parts = Partitions::new(out, table, src.capture, window_ns.max(1))?;
            let rows = write_table(src, table, opts, &recycler, None, &mut |b| {
                parts.write(b.into_frame()?)
            })?;
            (rows, parts.finish()?)
        }
        None => {
            let format = match opts.format {
                Some(f) => f,
                None => Format::from_path(out)?,
            };
            let mut file = OutFile::create(out, format)?;
            // The packets table's row groups are encoded by the threads
            // that build them, while their data is in cache; the writer
            // only appends them in order.
            let encoder = if table == Table::Packets && format == Format::Parquet {
                file.open(
                    &crate::packets_schema(src.store)?,
                    &PacketBatch::parquet_layout(),
                )?;
                match &file.writer {
                    Some(Writer::Parquet(w)) => Some(w.encoder()),
                    _ => None,
                }
            } else {
                None
            };
            let encode = |b: PacketBatch| -> Result<Batch, DataError> {
                let Some(encoder) = &encoder else {
                    return Ok(Batch::Packets(b));
                };
                let rows = b.len();
                let arrays = b.into_parquet_arrays()?;
                let group = encoder.encode(rows, &arrays, 1)?;
                recycler.reclaim(arrays);
                Ok(Batch::Encoded(group))
            };
            let rows = write_table(src, table, opts, &recycler, Some(&encode), &mut |b| {
                file.write_batch(b, &recycler)
            })?;
            if file.writer.is_none() {
                // No rows at all: still a valid file with the schema.
                file.write(empty_table(src, table)?)?;
            }
            (rows, vec![file.finish()?])
        }
    };
    Ok(ExportSummary {
        table,
        rows,
        files,
        elapsed: start.elapsed(),
    })
}

/// The table with its columns and no rows.
fn empty_table(src: &Source<'_>, table: Table) -> Result<DataFrame, DataError> {
    match table {
        Table::Packets => Ok(DataFrame::empty_with_schema(&crate::packets_schema(
            src.store,
        )?)),
        t => Ok(src.small_table(t)?.clear()),
    }
}

/// A batch on its way to a file.
enum Batch {
    Frame(DataFrame),
    Packets(PacketBatch),
    /// A packets batch already encoded as a Parquet row group.
    Encoded(EncodedGroup),
}

impl Batch {
    fn into_frame(self) -> Result<DataFrame, DataError> {
        match self {
            Batch::Frame(df) => Ok(df),
            Batch::Packets(b) => b.into_frame(),
            // Only a Parquet file of the packets table is sent these.
            Batch::Encoded(_) => Err(DataError::Polars(PolarsError::ComputeError(
                "an encoded Parquet row group cannot be written as a frame".into(),
            ))),
        }
    }
}

/// Feed `sink` the table in batches; returns the row count. The packets
/// table's batches are built on one thread per core (batch `k` on thread
/// `k % n`), each made ready there by `prepare` (encoded, say), while
/// `sink` writes them, in order.
fn write_table(
    src: &Source<'_>,
    table: Table,
    opts: &ExportOptions,
    recycler: &Recycler,
    prepare: Option<&(dyn Fn(PacketBatch) -> Result<Batch, DataError> + Sync)>,
    sink: &mut dyn FnMut(Batch) -> Result<(), DataError>,
) -> Result<u64, DataError> {
    // Each batch is a point where a cancel stops the export.
    let mut sink = |b: Batch| {
        opts.check_cancel()?;
        sink(b)
    };
    if table != Table::Packets {
        let df = src.small_table(table)?;
        let n = df.height() as u64;
        if n > 0 {
            sink(Batch::Frame(df))?;
        }
        return Ok(n);
    }
    let rows = &opts.rows;
    let batch = opts.batch_rows.unwrap_or(BATCH_ROWS).max(1);
    let store = src.store;
    let n_batches = match rows {
        Rows::All => store.len().div_ceil(batch as u64),
        Rows::Range(r) => (r.end.saturating_sub(r.start)).div_ceil(batch as u64),
        Rows::Indices(ix) => ix.len().div_ceil(batch) as u64,
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(n_batches.max(1) as usize);
    std::thread::scope(|s| {
        let mut queues = Vec::with_capacity(threads);
        let mut builders = Vec::with_capacity(threads);
        for first in 0..threads {
            // A builder hands its batch over when the writer takes it (a
            // batch waiting in a queue is megabytes more memory in flight).
            let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(0);
            let builder = std::thread::Builder::new()
                .name("rocescope-export".into())
                .spawn_scoped(s, move || {
                    // Its panic comes back as its words, for the error below.
                    rocescope_replay::contain::contain(move || -> Result<u64, DataError> {
                        let mut b = PacketBatches::new(store, batch).with_recycler(recycler);
                        let mut built = 0;
                        for k in (first as u64..n_batches).step_by(threads) {
                            built += b.for_each_arrow_batch(&batch_rows(rows, k, batch), |b| {
                                let b = match prepare {
                                    Some(prepare) => prepare(b)?,
                                    None => Batch::Packets(b),
                                };
                                tx.send(b).map_err(|_| DataError::WriterStopped)
                            })?;
                        }
                        Ok(built)
                    })
                    .unwrap_or_else(|why| Err(DataError::BuilderFailed(why)))
                })
                .map_err(|cause| DataError::Io {
                    what: "cannot start a thread for",
                    path: PathBuf::from("the export"),
                    cause,
                })?;
            queues.push(rx);
            builders.push(builder);
        }
        let mut written = Ok(());
        for k in 0..n_batches {
            let Some(Ok(batch)) = queues.get(k as usize % threads).map(|q| q.recv()) else {
                // A builder stopped early: its error is below.
                break;
            };
            if let Err(e) = sink(batch) {
                written = Err(e);
                break;
            }
        }
        // Dropping the queues stops builders still waiting to send.
        drop(queues);
        let mut total = 0;
        let mut built = Ok(());
        for b in builders {
            let joined = b
                .join()
                .unwrap_or_else(|_| Err(DataError::BuilderFailed("its thread stopped".into())));
            match joined {
                Ok(n) => total += n,
                Err(e) => {
                    // A builder's own failure before the stops it caused
                    // in the others.
                    if matches!(built, Ok(()) | Err(DataError::WriterStopped)) {
                        built = Err(e);
                    }
                }
            }
        }
        written?;
        built?;
        Ok(total)
    })
}

/// The rows of the packets table's batch `k`, of `batch` rows each.
fn batch_rows(rows: &Rows, k: u64, batch: usize) -> Rows {
    let b = batch as u64;
    match rows {
        Rows::All => Rows::Range(k * b..(k + 1) * b),
        Rows::Range(r) => Rows::Range(r.start + k * b..(r.start + (k + 1) * b).min(r.end)),
        Rows::Indices(ix) => Rows::Indices(
            ix.chunks(batch)
                .nth(k as usize)
                .unwrap_or_default()
                .to_vec(),
        ),
    }
}

enum Writer {
    Parquet(Box<ParquetOut<BufWriter<File>>>),
    Rows(RowWriter<BufWriter<File>>),
}

/// One output file, written to `NAME.partial` and renamed when complete so
/// that a failed export never leaves a file that looks whole; one that
/// does not complete (an error, a cancel) removes its partial file.
struct OutFile {
    path: PathBuf,
    partial: PathBuf,
    format: Format,
    file: Option<File>,
    writer: Option<Writer>,
    renamed: bool,
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DataError + 'a {
    move |cause| DataError::Io {
        what,
        path: path.to_path_buf(),
        cause,
    }
}

impl OutFile {
    fn create(path: &Path, format: Format) -> Result<OutFile, DataError> {
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = File::create(&partial).map_err(io_err("cannot create", path))?;
        Ok(OutFile {
            path: path.to_path_buf(),
            partial,
            format,
            file: Some(file),
            writer: None,
            renamed: false,
        })
    }

    /// Write a batch; the packets table's column memory goes back to
    /// `recycler` once written.
    fn write_batch(&mut self, batch: Batch, recycler: &Recycler) -> Result<(), DataError> {
        match (batch, self.format) {
            (Batch::Encoded(group), Format::Parquet) => {
                if let Some(Writer::Parquet(w)) = &mut self.writer {
                    w.write_encoded(group)?;
                }
                Ok(())
            }
            (Batch::Packets(b), Format::Parquet) => {
                if self.writer.is_none() {
                    let schema = b.schema()?;
                    self.open(&schema, &PacketBatch::parquet_layout())?;
                }
                if let Some(Writer::Parquet(w)) = &mut self.writer {
                    let rows = b.len();
                    let arrays = b.into_parquet_arrays()?;
                    w.write_arrays(rows, &arrays)?;
                    recycler.reclaim(arrays);
                }
                Ok(())
            }
            (batch, _) => self.write(batch.into_frame()?),
        }
    }

    fn open(&mut self, schema: &Schema, layout: &[ColumnLayout]) -> Result<(), DataError> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let file = BufWriter::with_capacity(1 << 20, file);
        self.writer = Some(match self.format {
            Format::Parquet => Writer::Parquet(Box::new(ParquetOut::new(file, schema, layout)?)),
            Format::Csv => Writer::Rows(RowWriter::new(file, RowFormat::Csv, schema)?),
            Format::Jsonl => Writer::Rows(RowWriter::new(file, RowFormat::Jsonl, schema)?),
        });
        Ok(())
    }

    fn write(&mut self, df: DataFrame) -> Result<(), DataError> {
        self.write_laid_out(df, &[])
    }

    /// Write a frame, the file's columns laid out as `layout` says.
    fn write_laid_out(
        &mut self,
        mut df: DataFrame,
        layout: &[ColumnLayout],
    ) -> Result<(), DataError> {
        if self.writer.is_none() {
            self.open(&df.schema().clone(), layout)?;
        }
        // The writers take whole chunks; one batch is one chunk.
        df.rechunk_mut();
        match &mut self.writer {
            Some(Writer::Parquet(w)) => w.write_frame(&df)?,
            Some(Writer::Rows(w)) => w.write_frame(&df)?,
            None => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Result<PathBuf, DataError> {
        match self.writer.take() {
            Some(Writer::Parquet(w)) => {
                w.finish()?;
            }
            Some(Writer::Rows(w)) => {
                w.finish().map_err(io_err("cannot write", &self.path))?;
            }
            None => {}
        }
        std::fs::rename(&self.partial, &self.path).map_err(io_err("cannot write", &self.path))?;
        self.renamed = true;
        Ok(self.path.clone())
    }
}

/// The `capture=` value for a capture's name: characters other than ASCII
/// letters, digits and `-_.` become `_`, and a name that does not start
/// with a letter, or is a word engines read as a value (`true`, `false`,
/// `null`, `nan`, `infinity`), gets the prefix `c_`. Spark infers a
/// partition value's type from the folder name (`1999` an integer,
/// `2025-06-01` a date, `1e3` a number); a value that starts with a letter
/// stays a string in Spark, DataFusion and polars.
pub fn partition_capture_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let word = ["true", "false", "null", "nan", "infinity"]
        .iter()
        .any(|w| clean.eq_ignore_ascii_case(w));
    if word || !clean.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("c_{clean}")
    } else {
        clean
    }
}

/// One table's hive-style Parquet partitions of one capture, one file open
/// at a time: rows come in capture order, so a window's rows arrive
/// together; a window seen again (a capture whose times go back) gets
/// another part file.
///
/// Files are written under a hidden folder beside the capture's
/// (`TABLE/.tmp-capture=NAME-PID`: Spark, DataFusion and polars skip names
/// starting with `.`), which `finish` swaps with `TABLE/capture=NAME` in
/// one rename: a reader sees the old partitions or the new ones, never
/// both, never a file being written. Dropped unfinished, it removes its
/// folder.
struct Partitions {
    table: Table,
    /// `TABLE/capture=NAME`.
    target: PathBuf,
    /// The hidden folder being written.
    tmp: PathBuf,
    window_ns: u64,
    layout: Vec<ColumnLayout>,
    open: Option<(Option<i64>, OutFile)>,
    parts: std::collections::HashMap<Option<i64>, u32>,
    /// Files written, relative to the capture's folder.
    files: Vec<PathBuf>,
    finished: bool,
}

impl Partitions {
    fn new(root: &Path, table: Table, capture: &str, window_ns: u64) -> Result<Self, DataError> {
        let dir = root.join(table.name());
        let key = format!("capture={}", partition_capture_name(capture));
        let tmp = dir.join(format!(".tmp-{key}-{}", std::process::id()));
        if tmp.exists() {
            // Left by a crashed export of this process id.
            std::fs::remove_dir_all(&tmp).map_err(io_err("cannot remove", &tmp))?;
        }
        std::fs::create_dir_all(&tmp).map_err(io_err("cannot create", &tmp))?;
        Ok(Partitions {
            table,
            target: dir.join(key),
            tmp,
            window_ns,
            layout: if table == Table::Packets {
                PacketBatch::parquet_layout()
            } else {
                Vec::new()
            },
            open: None,
            parts: Default::default(),
            files: Vec::new(),
            finished: false,
        })
    }

    fn write(&mut self, df: DataFrame) -> Result<(), DataError> {
        let ts = match self.table {
            Table::Packets | Table::Profiler | Table::Slots | Table::Losses => Some("ts_ns"),
            Table::Episodes | Table::Findings | Table::QpStates => Some("start_ns"),
            // A frame's path has no time of its own here (its row's is
            // the packets table's).
            Table::Qps | Table::Paths => None,
        };
        let Some(ts) = ts else {
            return self.write_window(None, df);
        };
        let ts_col = df.column(ts)?.i64()?.clone();
        let window_ns = i64::try_from(self.window_ns).unwrap_or(i64::MAX);
        // Split the batch where the window changes, keeping row order.
        let mut start = 0usize;
        let mut current: Option<i64> = None;
        for (i, t) in ts_col.iter().enumerate() {
            let w = t.map(|t| t - t.rem_euclid(window_ns));
            if i > 0 && w != current {
                self.write_window(current, df.slice(start as i64, i - start))?;
                start = i;
            }
            current = w;
        }
        if start < df.height() {
            self.write_window(current, df.slice(start as i64, df.height() - start))?;
        }
        Ok(())
    }

    fn write_window(&mut self, window: Option<i64>, df: DataFrame) -> Result<(), DataError> {
        if self.open.as_ref().is_none_or(|(w, _)| *w != window) {
            self.close()?;
            let mut rel = PathBuf::new();
            if let Some(w) = window {
                rel.push(format!("window_start_ns={w}"));
            }
            let dir = self.tmp.join(&rel);
            std::fs::create_dir_all(&dir).map_err(io_err("cannot create", &dir))?;
            let part = self.parts.entry(window).or_insert(0);
            rel.push(format!("part-{part:05}.parquet"));
            *part += 1;
            self.open = Some((
                window,
                OutFile::create(&self.tmp.join(rel), Format::Parquet)?,
            ));
        }
        if let Some((_, f)) = &mut self.open {
            f.write_laid_out(df, &self.layout)?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), DataError> {
        if let Some((_, f)) = self.open.take() {
            let path = f.finish()?;
            let rel = path.strip_prefix(&self.tmp).unwrap_or(&path).to_path_buf();
            self.files.push(rel);
        }
        Ok(())
    }

    /// Close the last file and put the capture's new partitions in place
    /// of its old ones; returns the files, as they are named now. A table
    /// with no rows leaves the capture no folder.
    fn finish(mut self) -> Result<Vec<PathBuf>, DataError> {
        self.close()?;
        self.finished = true;
        let (tmp, target) = (self.tmp.clone(), self.target.clone());
        if self.files.is_empty() {
            std::fs::remove_dir_all(&tmp).map_err(io_err("cannot remove", &tmp))?;
            if target.exists() {
                std::fs::remove_dir_all(&target).map_err(io_err("cannot remove", &target))?;
            }
            // No capture has rows in this table: no folder for it (an
            // engine would find no schema there). Only an empty one goes.
            if let Some(dir) = target.parent() {
                let _ = std::fs::remove_dir(dir);
            }
            return Ok(Vec::new());
        }
        if target.exists() {
            swap_dirs(&tmp, &target)?;
            // `tmp` now holds the old partitions, out of readers' sight.
            std::fs::remove_dir_all(&tmp).map_err(io_err("cannot remove", &tmp))?;
        } else {
            std::fs::rename(&tmp, &target).map_err(io_err("cannot write", &target))?;
        }
        Ok(self.files.iter().map(|f| target.join(f)).collect())
    }
}

impl Drop for Partitions {
    fn drop(&mut self) {
        if !self.finished {
            self.open = None;
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Exchange two folders in one step (Linux's `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn swap_dirs(a: &Path, b: &Path) -> Result<(), DataError> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)
        .map_err(|e| io_err("cannot replace", b)(e.into()))
}

/// Elsewhere: the old folder moved aside, then the new one in (a reader in
/// between sees the capture missing, never doubled).
#[cfg(not(target_os = "linux"))]
fn swap_dirs(a: &Path, b: &Path) -> Result<(), DataError> {
    let mut aside = a.as_os_str().to_owned();
    aside.push("-old");
    let aside = PathBuf::from(aside);
    std::fs::rename(b, &aside).map_err(io_err("cannot replace", b))?;
    std::fs::rename(a, b).map_err(io_err("cannot write", b))?;
    std::fs::rename(&aside, a).map_err(io_err("cannot replace", b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread building the packets table that panics fails the export
    /// with its words, never taken for the writer's stop.
    #[test]
    fn a_builder_that_fails_says_so() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/captures/sample-write-read.pcap");
        let store = rocescope_replay::store::Store::open(
            &path,
            rocescope_decoders::DecodeConfig::default(),
            Box::new(rocescope_replay::store::NoAnalysis),
        )
        .expect("the sample opens");
        store.wait();
        let report = rocescope_decoders::analysis::Report::default();
        let src = Source {
            store: &store,
            report: &report,
            capture: "sample",
            extra_profiler: &[],
            points: None,
        };
        let opts = ExportOptions {
            batch_rows: Some(2),
            ..ExportOptions::default()
        };
        let panics = |_: PacketBatch| -> Result<Batch, DataError> {
            panic!("a builder's failure, for the test")
        };
        let got = write_table(
            &src,
            Table::Packets,
            &opts,
            &Recycler::default(),
            Some(&panics),
            &mut |_| Ok(()),
        );
        match got {
            Err(DataError::BuilderFailed(why)) => {
                assert!(why.contains("a builder's failure, for the test"), "{why}");
            }
            other => panic!("not the builder's failure: {other:?}"),
        }
    }
}
