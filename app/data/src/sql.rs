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
pub(crate) fn mentions(sql: &str, table: &str) -> bool {
    sql.to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == table)
}

/// Run `sql` over the tables of `src`; the engine's error for bad SQL.
pub fn query(src: &Source<'_>, sql: &str, opts: &QueryOptions) -> Result<DataFrame, DataError> {
    let mut ctx = SQLContext::new();
    let mut _spool = None;
    for table in Table::named_in(sql) {
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
    named_as_written(ctx.execute(sql)?.collect()?, sql)
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
    named_as_written(ctx.execute(sql)?.collect()?, sql)
}

/// The result's computed columns named by their text in the query, as
/// SQLite, DuckDB and Spark name them: polars calls `count(*)` "len" and
/// `max(psn)` "psn". Columns named in the query (or aliased) keep their
/// name; a query with `*` in its select list is left as polars names it.
fn named_as_written(mut df: DataFrame, sql: &str) -> Result<DataFrame, DataError> {
    let Some(names) = computed_column_names(sql) else {
        return Ok(df);
    };
    if names.len() != df.width() {
        return Ok(df);
    }
    let mut taken: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    for (i, name) in names.into_iter().enumerate() {
        // Two columns of one name would be refused: keep polars' then.
        if let Some(name) = name
            && !taken.contains(&name)
        {
            let old = std::mem::replace(&mut taken[i], name.clone());
            df.rename(&old, name.into())?;
        }
    }
    Ok(df)
}

/// Per item of the outermost select list, the name a computed column
/// takes (`None`: a column or an alias, named already); `None` when the
/// list has a wildcard or the query is not one plain SELECT.
fn computed_column_names(sql: &str) -> Option<Vec<Option<String>>> {
    use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};
    let statements =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::GenericDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(Expr::Identifier(_) | Expr::CompoundIdentifier(_)) => {
                Some(None)
            }
            SelectItem::UnnamedExpr(e) => Some(Some(e.to_string())),
            SelectItem::ExprWithAlias { .. } | SelectItem::ExprWithAliases { .. } => Some(None),
            SelectItem::QualifiedWildcard(..) | SelectItem::Wildcard(..) => None,
        })
        .collect()
}

fn scan_parquet(path: &Path) -> Result<LazyFrame, DataError> {
    Ok(ParquetTable::open(path)?.lazy()?)
}
