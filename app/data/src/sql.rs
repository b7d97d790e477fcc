//! SQL over a capture's tables (polars SQL).

use std::path::{Path, PathBuf};

use polars::prelude::*;
use polars::sql::SQLContext;

use crate::export::{ExportOptions, Format, export};
use crate::scan::ParquetTable;
use crate::{DataError, Source, Table};

/// How a query runs.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// Above this many packets, the packets table is spooled to a
    /// temporary Parquet file and scanned row group by row group (only the
    /// columns the query names, each group filtered as it is read) instead
    /// of being built in memory whole.
    pub in_memory_rows: u64,
    /// Where the spool goes (default: the system's temporary folder).
    pub spool_dir: Option<PathBuf>,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            in_memory_rows: 1 << 20,
            spool_dir: None,
        }
    }
}

/// A spooled packets table, removed when dropped.
struct Spool(PathBuf);

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Does the query name `table`? (A cheap word test: a table that is only
/// mentioned in a string literal is built for nothing, never missed.)
fn mentions(sql: &str, table: &str) -> bool {
    sql.to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == table)
}

/// Run `sql` over the tables of `src`; the engine's error for bad SQL.
pub fn query(src: &Source<'_>, sql: &str, opts: &QueryOptions) -> Result<DataFrame, DataError> {
    let mut ctx = SQLContext::new();
    let mut _spool = None;
    for table in Table::ALL {
        if !mentions(sql, table.name()) {
            continue;
        }
        let lf = if table == Table::Packets && src.store.len() > opts.in_memory_rows {
            let dir = opts.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
            let path = dir.join(format!(
                "rocescope-query-{}-{}.parquet",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            ));
            let spool = Spool(path);
            export(
                src,
                Table::Packets,
                &spool.0,
                &ExportOptions {
                    format: Some(Format::Parquet),
                    ..ExportOptions::default()
                },
            )?;
            let lf = scan_parquet(&spool.0)?;
            _spool = Some(spool);
            lf
        } else {
            src.small_table(table)?.lazy()
        };
        ctx.register(table.name(), lf);
    }
    Ok(ctx.execute(sql)?.collect()?)
}

/// Run `sql` over Parquet written by `rocescope export` (a file, or a
/// folder of hive-style partitions), registered as `table`.
pub fn query_parquet(path: &Path, table: &str, sql: &str) -> Result<DataFrame, DataError> {
    query_parquet_tables(&[(table, path.to_path_buf())], sql)
}

/// Run `sql` over several exported tables, each a Parquet file or a folder
/// of hive-style partitions (whose keys become columns: `capture`,
/// `window_start_ns`).
pub fn query_parquet_tables(tables: &[(&str, PathBuf)], sql: &str) -> Result<DataFrame, DataError> {
    let mut ctx = SQLContext::new();
    for (name, path) in tables {
        ctx.register(name, scan_parquet(path)?);
    }
    Ok(ctx.execute(sql)?.collect()?)
}

fn scan_parquet(path: &Path) -> Result<LazyFrame, DataError> {
    Ok(ParquetTable::open(path)?.lazy()?)
}
