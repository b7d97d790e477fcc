//! Reading rocescope's Parquet back for SQL: a file, or a folder of
//! hive-style partitions, as a polars scan that runs row group by row group.
//!
//! polars' own Parquet scan runs only on its streaming engine, which brings
//! a cloud-storage stack into the build (BENCHMARKS.md, "Build"). This scan
//! decodes with the same page decoders (polars-parquet), reads only the
//! column chunks a query names, filters each row group as it is read (so a
//! selective query holds only what it keeps), skips row groups and whole
//! partitions whose statistics or hive keys rule the filter out, and reads
//! the rest on polars' threads.

use std::any::Any;
use std::cmp::Ordering;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use polars::prelude::*;
use polars_arrow::datatypes::{ArrowSchema, Field as ArrowField};
use polars_buffer::Buffer;
use polars_core::runtime::RAYON;
use polars_parquet::parquet::compression::Compression;
use polars_parquet::parquet::statistics::Statistics;
use polars_parquet::read::{
    BasicDecompressor, ColumnChunkMetadata, FileMetadata, PageReader, RowGroupMetadata,
    column_iter_to_arrays, infer_schema, read_metadata,
};
use rayon::prelude::*;

/// Exported Parquet (a file, or a folder of hive-style partitions) as a
/// table SQL can scan.
#[derive(Clone)]
pub struct ParquetTable {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ParquetTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetTable")
            .field("files", &self.inner.parts.len())
            .field("schema", &self.inner.schema)
            .finish()
    }
}

struct Inner {
    parts: Vec<Part>,
    /// The files' columns, then the hive keys the files do not hold.
    schema: SchemaRef,
    /// The files' columns as Arrow fields (the decoders' input).
    file_fields: Vec<ArrowField>,
    /// Hive keys, in path order, with their types.
    hive_keys: Vec<(PlSmallStr, DataType)>,
    counts: ScanCounts,
}

/// What scans of a table have read and skipped so far.
#[derive(Debug, Default)]
struct ScanCounts {
    row_groups_read: AtomicU64,
    row_groups_skipped: AtomicU64,
    files_skipped: AtomicU64,
}

/// Row groups and partition files read and skipped by a table's scans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanTally {
    pub row_groups_read: u64,
    pub row_groups_skipped: u64,
    /// Partition files skipped on their hive keys alone (not opened).
    pub files_skipped: u64,
}

/// One Parquet file and its hive keys' values (`None`: the default
/// partition, null).
struct Part {
    path: PathBuf,
    hive: Vec<Option<String>>,
}

/// polars' name for a null hive value.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

fn err(path: &Path, what: impl std::fmt::Display) -> PolarsError {
    PolarsError::ComputeError(format!("{}: {what}", path.display()).into())
}

impl ParquetTable {
    /// Open `path`: a Parquet file, or a folder whose `KEY=VALUE` folders
    /// hold Parquet files (hidden and `_` entries are skipped, as engines
    /// do). The schema is the first file's; every file is checked against
    /// it when read.
    pub fn open(path: &Path) -> PolarsResult<ParquetTable> {
        let found = if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &[], &mut found)?;
            found.sort_by(|a, b| a.0.cmp(&b.0));
            if found.is_empty() {
                return Err(err(path, "no Parquet files in this folder"));
            }
            found
        } else {
            vec![(path.to_path_buf(), Vec::new())]
        };
        let key_names = hive_key_names(&found)?;
        let (_, arrow) = read_footer(&found[0].0)?;
        let file_fields: Vec<ArrowField> = arrow.iter_values().cloned().collect();
        let mut schema = Schema::from_arrow_schema(&arrow);
        let mut hive_keys = Vec::new();
        for (k, name) in key_names.iter().enumerate() {
            if schema.contains(name) {
                continue;
            }
            // A key is a number if every partition's value reads as one
            // (rocescope writes `window_start_ns` so), a string otherwise.
            let int = found.iter().all(|(_, keys)| {
                keys[k]
                    .1
                    .as_deref()
                    .is_none_or(|v| v.parse::<i64>().is_ok())
            });
            let dtype = if int {
                DataType::Int64
            } else {
                DataType::String
            };
            schema.with_column(name.clone(), dtype.clone());
            hive_keys.push((name.clone(), dtype));
        }
        // Keys the files hold themselves are read from the files.
        let parts = found
            .into_iter()
            .map(|(path, keys)| Part {
                hive: keys
                    .into_iter()
                    .filter(|(n, _)| hive_keys.iter().any(|(k, _)| k == n))
                    .map(|(_, v)| v)
                    .collect(),
                path,
            })
            .collect();
        Ok(ParquetTable {
            inner: Arc::new(Inner {
                parts,
                schema: Arc::new(schema),
                file_fields,
                hive_keys,
                counts: ScanCounts::default(),
            }),
        })
    }

    /// The table as a lazy frame (projections and filters pushed down).
    pub fn lazy(&self) -> PolarsResult<LazyFrame> {
        LazyFrame::anonymous_scan(
            Arc::new(self.clone()),
            ScanArgsAnonymous {
                schema: Some(self.inner.schema.clone()),
                name: "rocescope parquet",
                ..ScanArgsAnonymous::default()
            },
        )
    }

    /// What this table's scans have read and skipped so far.
    pub fn tally(&self) -> ScanTally {
        let c = &self.inner.counts;
        ScanTally {
            row_groups_read: c.row_groups_read.load(AtomicOrdering::Relaxed),
            row_groups_skipped: c.row_groups_skipped.load(AtomicOrdering::Relaxed),
            files_skipped: c.files_skipped.load(AtomicOrdering::Relaxed),
        }
    }
}

/// A key's name and value, from a `KEY=VALUE` folder (`None`: the
/// default partition, null).
type HiveValue = (PlSmallStr, Option<String>);

/// Every `.parquet` file under `dir`, with the `KEY=VALUE` folders above
/// it (`keys`: those above `dir`).
fn walk(
    dir: &Path,
    keys: &[HiveValue],
    found: &mut Vec<(PathBuf, Vec<HiveValue>)>,
) -> PolarsResult<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| err(dir, format!("cannot read: {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| err(dir, format!("cannot read: {e}")))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            let mut keys = keys.to_vec();
            if let Some((k, v)) = name.split_once('=') {
                keys.push((k.into(), (v != HIVE_NULL).then(|| v.to_owned())));
            }
            walk(&path, &keys, found)?;
        } else if name.ends_with(".parquet") {
            found.push((path, keys.to_vec()));
        }
    }
    Ok(())
}

/// The hive keys' names, the same at every file (else an error naming the
/// file that differs).
fn hive_key_names(found: &[(PathBuf, Vec<HiveValue>)]) -> PolarsResult<Vec<PlSmallStr>> {
    let names =
        |keys: &[HiveValue]| -> Vec<PlSmallStr> { keys.iter().map(|(k, _)| k.clone()).collect() };
    let first = found
        .first()
        .map(|(_, keys)| names(keys))
        .unwrap_or_default();
    for (path, keys) in found {
        if names(keys) != first {
            return Err(err(
                path,
                format!(
                    "partition keys differ from {}'s ({})",
                    found[0].0.display(),
                    first.join(", ")
                ),
            ));
        }
    }
    Ok(first)
}

fn read_footer(path: &Path) -> PolarsResult<(FileMetadata, ArrowSchema)> {
    let mut file = File::open(path).map_err(|e| err(path, format!("cannot open: {e}")))?;
    let md = read_metadata(&mut file).map_err(|e| err(path, format!("not Parquet: {e}")))?;
    let arrow = infer_schema(&md).map_err(|e| err(path, e))?;
    Ok((md, arrow))
}

impl AnonymousScan for ParquetTable {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self, _infer_schema_length: Option<usize>) -> PolarsResult<SchemaRef> {
        Ok(self.inner.schema.clone())
    }

    fn allows_predicate_pushdown(&self) -> bool {
        true
    }

    fn allows_projection_pushdown(&self) -> bool {
        true
    }

    fn scan(&self, args: AnonymousScanArgs) -> PolarsResult<DataFrame> {
        self.inner.scan(&args)
    }
}

impl Inner {
    fn scan(&self, args: &AnonymousScanArgs) -> PolarsResult<DataFrame> {
        let out_schema: SchemaRef = match (&args.output_schema, &args.with_columns) {
            (Some(s), _) => s.clone(),
            (None, Some(cols)) => Arc::new(
                cols.iter()
                    .map(|n| Ok((n.clone(), self.schema.try_get(n)?.clone())))
                    .collect::<PolarsResult<Schema>>()?,
            ),
            (None, None) => self.schema.clone(),
        };
        let out_names: Vec<PlSmallStr> = out_schema.iter_names().cloned().collect();
        let predicate = args.predicate.as_ref().and_then(applicable);
        // Read what the output and the filter name.
        let mut needed = out_names.clone();
        if let Some(p) = &predicate {
            for e in p.into_iter() {
                if let Expr::Column(name) = e
                    && !needed.contains(name)
                {
                    needed.push(name.clone());
                }
            }
        }
        let file_cols: Vec<usize> = (0..self.file_fields.len())
            .filter(|&i| needed.iter().any(|n| *n == self.file_fields[i].name))
            .collect();
        // Which files and row groups can hold rows the filter keeps: the
        // footers are read here, one file after another.
        let mut footers = Vec::new();
        let mut tasks = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            let hive_bound = |name: &str| self.hive_bounds(part, name);
            if let Some(p) = &predicate
                && may_match(p, &hive_bound) == Some(false)
            {
                self.counts
                    .files_skipped
                    .fetch_add(1, AtomicOrdering::Relaxed);
                continue;
            }
            let (md, arrow) = read_footer(&part.path)?;
            if arrow.iter_values().ne(self.file_fields.iter()) {
                return Err(err(
                    &part.path,
                    format!("columns differ from {}'s", self.parts[0].path.display()),
                ));
            }
            for (g, rg) in md.row_groups.iter().enumerate() {
                if let Some(p) = &predicate {
                    let bound =
                        |name: &str| hive_bound(name).or_else(|| self.stats_bounds(rg, &md, name));
                    if may_match(p, &bound) == Some(false) {
                        self.counts
                            .row_groups_skipped
                            .fetch_add(1, AtomicOrdering::Relaxed);
                        continue;
                    }
                }
                tasks.push((footers.len(), g));
            }
            footers.push((i, md));
        }
        // Each row group read, filtered and cut to the output's columns.
        let read = |&(f, g): &(usize, usize)| -> PolarsResult<DataFrame> {
            let (i, md) = &footers[f];
            let part = &self.parts[*i];
            self.counts
                .row_groups_read
                .fetch_add(1, AtomicOrdering::Relaxed);
            let mut df = self.read_row_group(&part.path, &md.row_groups[g], &file_cols)?;
            self.add_hive_columns(&mut df, part, &needed)?;
            if let Some(p) = &predicate {
                df = df.lazy().filter(p.clone()).collect()?;
            }
            df.select(out_names.iter().cloned())
        };
        let mut frames = match args.n_rows {
            // All of them, on polars' threads, in order.
            None => {
                RAYON.install(|| tasks.par_iter().map(read).collect::<PolarsResult<Vec<_>>>())?
            }
            // A limit: one group after another until it is reached.
            Some(limit) => {
                let mut frames = Vec::new();
                let mut rows = 0;
                for task in &tasks {
                    if rows >= limit {
                        break;
                    }
                    let df = read(task)?;
                    let df = df.slice(0, limit - rows);
                    rows += df.height();
                    frames.push(df);
                }
                frames
            }
        };
        if frames.is_empty() {
            return Ok(DataFrame::empty_with_arc_schema(out_schema));
        }
        // A hive key with one value in every file read (one capture, or a
        // filter on it) stays one scalar column: stacked, it would become a
        // column of as many strings as rows, and grouping on it a hash of
        // each.
        let mut uniform = Vec::new();
        for (k, (name, _)) in self.hive_keys.iter().enumerate() {
            let Some(at) = out_names.iter().position(|n| n == name) else {
                continue;
            };
            let mut values = tasks
                .iter()
                .map(|&(f, _)| &self.parts[footers[f].0].hive[k]);
            if let Some(first) = values.next()
                && values.all(|v| v == first)
            {
                uniform.push((at, name.clone(), self.hive_scalar(k, first)));
            }
        }
        let height: usize = frames.iter().map(DataFrame::height).sum();
        let mut df = if uniform.len() == out_names.len() {
            DataFrame::new(height, Vec::new())?
        } else {
            for df in &mut frames {
                for (_, name, _) in &uniform {
                    df.drop_in_place(name)?;
                }
            }
            polars_core::utils::accumulate_dataframes_vertical(frames)?
        };
        for (at, name, scalar) in uniform {
            df.insert_column(at, Column::new_scalar(name, scalar, height))?;
        }
        Ok(df)
    }

    /// A hive key's value in `part` as bounds (exact), if `name` is a key.
    fn hive_bounds(&self, part: &Part, name: &str) -> Option<Bounds> {
        let k = self.hive_keys.iter().position(|(n, _)| n == name)?;
        let v = part.hive[k].as_deref()?;
        let b = match &self.hive_keys[k].1 {
            DataType::Int64 => Value::Int(i128::from(v.parse::<i64>().ok()?)),
            _ => Value::Str(v.as_bytes().to_vec()),
        };
        Some(Bounds {
            min: b.clone(),
            max: b,
        })
    }

    /// One row group's `cols` (indices into the files' columns).
    fn read_row_group(
        &self,
        path: &Path,
        rg: &RowGroupMetadata,
        cols: &[usize],
    ) -> PolarsResult<DataFrame> {
        let mut file = File::open(path).map_err(|e| err(path, format!("cannot open: {e}")))?;
        let size = file.metadata().map_or(0, |m| m.len());
        let mut columns = Vec::with_capacity(cols.len());
        for &i in cols {
            let field = &self.file_fields[i];
            let chunks: Vec<&ColumnChunkMetadata> = rg
                .columns_under_root_iter(&field.name)
                .map(|it| it.collect())
                .unwrap_or_default();
            if chunks.is_empty() {
                return Err(err(path, format!("no column chunk for {}", field.name)));
            }
            let mut pages = Vec::with_capacity(chunks.len());
            let mut types = Vec::with_capacity(chunks.len());
            for meta in chunks {
                // Snappy and none are what rocescope writes (and the only
                // codecs compiled in: the others are C libraries to build).
                let codec = meta.compression();
                if !matches!(codec, Compression::Uncompressed | Compression::Snappy) {
                    return Err(err(
                        path,
                        format!(
                            "column {} is compressed with {codec:?}; rocescope reads Parquet \
                             compressed with Snappy or not at all, as it writes it",
                            field.name
                        ),
                    ));
                }
                let bytes = read_range(&mut file, path, size, meta.byte_range())?;
                let max_page = bytes.len();
                let reader =
                    PageReader::new(Cursor::new(Buffer::from_vec(bytes)), meta, vec![], max_page);
                pages.push(BasicDecompressor::new(reader, vec![]));
                types.push(&meta.descriptor().descriptor.primitive_type);
            }
            let (arrays, _) = column_iter_to_arrays(pages, types, field.clone(), None)
                .map_err(|e| err(path, format!("column {}: {e}", field.name)))?;
            columns.push(Series::try_from((field, arrays))?.into_column());
        }
        DataFrame::new(rg.num_rows(), columns)
    }

    /// The hive keys `needed` names, as constant columns.
    fn add_hive_columns(
        &self,
        df: &mut DataFrame,
        part: &Part,
        needed: &[PlSmallStr],
    ) -> PolarsResult<()> {
        for (k, (name, _)) in self.hive_keys.iter().enumerate() {
            if !needed.contains(name) {
                continue;
            }
            let height = df.height();
            let scalar = self.hive_scalar(k, &part.hive[k]);
            df.with_column(Column::new_scalar(name.clone(), scalar, height))?;
        }
        Ok(())
    }

    /// Hive key `k`'s value as its column's scalar.
    fn hive_scalar(&self, k: usize, value: &Option<String>) -> Scalar {
        let dtype = &self.hive_keys[k].1;
        let value = match (value, dtype) {
            (None, _) => AnyValue::Null,
            (Some(v), DataType::Int64) => AnyValue::Int64(v.parse().unwrap_or_default()),
            (Some(v), _) => AnyValue::StringOwned(v.as_str().into()),
        };
        Scalar::new(dtype.clone(), value)
    }

    /// A file column's min and max in one row group, from its statistics.
    fn stats_bounds(&self, rg: &RowGroupMetadata, md: &FileMetadata, name: &str) -> Option<Bounds> {
        let mut chunks = rg.columns_under_root_iter(name)?;
        if chunks.len() != 1 {
            return None;
        }
        let stats = chunks.next()?.statistics(&md.footer_buf)?.ok()?;
        let (min, max) = match stats {
            Statistics::Int32(s) => (
                Value::Int(i128::from(s.min_value?)),
                Value::Int(i128::from(s.max_value?)),
            ),
            Statistics::Int64(s) => (
                Value::Int(i128::from(s.min_value?)),
                Value::Int(i128::from(s.max_value?)),
            ),
            Statistics::Binary(s) => (Value::Str(s.min_value?), Value::Str(s.max_value?)),
            _ => return None,
        };
        Some(Bounds { min, max })
    }
}

/// A column chunk's bytes, checked against the file's `size` first (a
/// damaged footer must not make a huge allocation).
fn read_range(
    file: &mut File,
    path: &Path,
    size: u64,
    range: std::ops::Range<u64>,
) -> PolarsResult<Vec<u8>> {
    let len = usize::try_from(range.end.saturating_sub(range.start))
        .map_err(|_| err(path, "column chunk too large"))?;
    if range.end > size {
        return Err(err(
            path,
            format!(
                "column chunk at {}..{} past the end ({size} bytes)",
                range.start, range.end
            ),
        ));
    }
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(range.start))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(|e| err(path, format!("cannot read: {e}")))?;
    Ok(bytes)
}

/// A value statistics or hive keys compare: integers of any width, or
/// strings compared as bytes (as Parquet orders them).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Int(i128),
    Str(Vec<u8>),
}

impl Value {
    fn cmp(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// The least and greatest non-null value a column has in a row group.
#[derive(Debug, Clone)]
struct Bounds {
    min: Value,
    max: Value,
}

/// A literal as a `Value` (through casts of a literal).
fn literal(e: &Expr) -> Option<Value> {
    match e {
        Expr::Literal(lv) => match lv.to_any_value()? {
            AnyValue::String(s) => Some(Value::Str(s.as_bytes().to_vec())),
            AnyValue::StringOwned(s) => Some(Value::Str(s.as_bytes().to_vec())),
            v if v.is_integer() => v.extract::<i128>().map(Value::Int),
            _ => None,
        },
        Expr::Cast { expr, .. } => literal(expr),
        _ => None,
    }
}

/// Can any row whose columns lie within `bounds` satisfy `e`? `Some(false)`
/// only when certainly not; `None` where the expression is beyond this
/// reasoning (the row group is read and filtered).
fn may_match(e: &Expr, bounds: &dyn Fn(&str) -> Option<Bounds>) -> Option<bool> {
    let Expr::BinaryExpr { left, op, right } = e else {
        return None;
    };
    match op {
        Operator::And | Operator::LogicalAnd => {
            match (may_match(left, bounds), may_match(right, bounds)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }
        }
        Operator::Or | Operator::LogicalOr => {
            match (may_match(left, bounds), may_match(right, bounds)) {
                (Some(false), Some(false)) => Some(false),
                _ => None,
            }
        }
        Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => {
            // Column on the left; a literal on the left mirrors the test.
            let (name, v, op) = match (&**left, &**right) {
                (Expr::Column(n), r) => (n, literal(r)?, *op),
                (l, Expr::Column(n)) => (n, literal(l)?, mirror(*op)),
                _ => return None,
            };
            let b = bounds(name)?;
            let lo = b.min.cmp(&v)?;
            let hi = b.max.cmp(&v)?;
            Some(match op {
                Operator::Eq => lo != Ordering::Greater && hi != Ordering::Less,
                Operator::Lt => lo == Ordering::Less,
                Operator::LtEq => lo != Ordering::Greater,
                Operator::Gt => hi == Ordering::Greater,
                _ => hi != Ordering::Less,
            })
        }
        _ => None,
    }
}

/// The filter without the conjuncts polars cannot take back: a top-k's
/// dynamic bound comes through as `Expr::Display`, which polars refuses to
/// plan again (it panics). That bound only narrows rows for the sort and
/// limit above the scan, whose answer stands without it; pushed-down
/// filters never hold aggregations, the other thing shown so.
fn applicable(e: &Expr) -> Option<Expr> {
    match e {
        Expr::BinaryExpr {
            left,
            op: op @ (Operator::And | Operator::LogicalAnd),
            right,
        } => match (applicable(left), applicable(right)) {
            (Some(l), Some(r)) => Some(Expr::BinaryExpr {
                left: Arc::new(l),
                op: *op,
                right: Arc::new(r),
            }),
            (one, None) | (None, one) => one,
        },
        e if e.into_iter().any(|n| matches!(n, Expr::Display { .. })) => None,
        e => Some(e.clone()),
    }
}

/// `lit OP col` as `col OP' lit`.
fn mirror(op: Operator) -> Operator {
    match op {
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        other => other,
    }
}

/// Read a whole exported Parquet file (or partition folder) into a frame.
pub fn read_parquet(path: &Path) -> Result<DataFrame, crate::DataError> {
    Ok(ParquetTable::open(path)?.lazy()?.collect()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(name: &str) -> Option<Bounds> {
        (name == "ts_ns").then_some(Bounds {
            min: Value::Int(100),
            max: Value::Int(200),
        })
    }

    #[test]
    fn a_filter_outside_a_row_groups_range_rules_it_out() {
        let cases = [
            (col("ts_ns").gt(lit(200i64)), Some(false)),
            (col("ts_ns").gt_eq(lit(200i64)), Some(true)),
            (col("ts_ns").lt(lit(100i64)), Some(false)),
            (lit(50i64).gt(col("ts_ns")), Some(false)),
            (col("ts_ns").eq(lit(150i64)), Some(true)),
            (col("ts_ns").eq(lit(250i64)), Some(false)),
            (
                col("ts_ns")
                    .gt(lit(250i64))
                    .and(col("ts_ns").lt(lit(120i64))),
                Some(false),
            ),
            // Each side alone may hold in the range: read (the bounds are
            // per conjunct, not an interval).
            (
                col("ts_ns")
                    .gt(lit(150i64))
                    .and(col("ts_ns").lt(lit(120i64))),
                Some(true),
            ),
            (
                col("ts_ns")
                    .gt(lit(300i64))
                    .or(col("ts_ns").lt(lit(120i64))),
                None,
            ),
            (
                col("ts_ns").gt(lit(300i64)).or(col("ts_ns").lt(lit(50i64))),
                Some(false),
            ),
            // Unknown columns and non-literal sides are read.
            (col("qpn").gt(lit(1i64)), None),
            (col("ts_ns").gt(col("frame")), None),
        ];
        for (e, want) in cases {
            assert_eq!(may_match(&e, &bounds), want, "{e:?}");
        }
    }

    #[test]
    fn a_missing_or_foreign_file_is_an_error_naming_it() {
        let e = ParquetTable::open(Path::new("/nonexistent/x.parquet"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/x.parquet"), "{e}");
        let folder = rocescope_testkit::temp_dir("scan");
        let dir = folder.path().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.parquet");
        std::fs::write(&bad, b"not a parquet file at all").unwrap();
        let e = ParquetTable::open(&bad).err().unwrap();
        assert!(
            e.to_string().contains("bad.parquet") && e.to_string().contains("not Parquet"),
            "{e}"
        );
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let e = ParquetTable::open(&empty).err().unwrap();
        assert!(e.to_string().contains("no Parquet files"), "{e}");
        // Files at different depths of partition folders.
        std::fs::create_dir_all(empty.join("capture=x")).unwrap();
        std::fs::write(empty.join("capture=x/p.parquet"), b"").unwrap();
        std::fs::write(empty.join("q.parquet"), b"").unwrap();
        let e = ParquetTable::open(&empty).err().unwrap();
        assert!(
            e.to_string().contains("q.parquet: partition keys differ"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
