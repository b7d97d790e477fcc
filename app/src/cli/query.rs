//! `rocescope query`: SQL over a capture's tables, or over Parquet written
//! by `rocescope export`.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use rocescope_data::{OutputFormat, QueryOptions, Table, query, query_parquet, write_frame};

use super::args::{DecodeOpts, MemoryArgs};
use super::capture::Opened;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrintFormat {
    Table,
    Csv,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A capture file, or Parquet written by `rocescope export` (a file, or
    /// a folder holding one sub-folder per table).
    pub file: PathBuf,
    /// The query; tables: packets, qps, episodes, findings, profiler, slots,
    /// qp_states (and losses, paths exported from a session of capture
    /// points; schema: app/data/SCHEMA.md). Naming none of qps, qp_states,
    /// findings, the capture is indexed without the QPs' time by state.
    pub sql: String,
    /// How to print the result (json: an array of row objects).
    #[arg(long, value_enum, default_value_t = PrintFormat::Table)]
    pub format: PrintFormat,
    /// With --format table: rows to print at most.
    #[arg(long, default_value_t = 200)]
    pub max_rows: usize,
    #[command(flatten)]
    pub decode: DecodeOpts,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let parquet = args.file.is_dir()
        || args
            .file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
    let mut failed = None;
    let mut df = if parquet {
        query_exported(&args.file, &args.sql)?
    } else {
        let states = Table::named_in(&args.sql).any(Table::reads_time_by_state);
        let opened = Opened::open(&args.file, &args.decode, &args.memory.limits(), states)?;
        failed = opened.failed.clone();
        query(&opened.source(), &args.sql, &QueryOptions::default())?
    };
    let format = match args.format {
        PrintFormat::Table => OutputFormat::Table {
            max_rows: args.max_rows,
        },
        PrintFormat::Csv => OutputFormat::Csv,
        PrintFormat::Json => OutputFormat::Json,
    };
    let mut out = std::io::stdout().lock();
    write_frame(&mut df, format, &mut out)?;
    failed.map_or(Ok(()), |e| Err(anyhow::anyhow!(e)))
}

/// SQL over exported Parquet: a folder's table sub-folders, or one file as
/// the table its name starts with (packets by default).
fn query_exported(path: &Path, sql: &str) -> anyhow::Result<rocescope_data::DataFrame> {
    if path.is_dir() {
        let tables: Vec<(&str, PathBuf)> = Table::ALL
            .iter()
            .map(|t| (t.name(), path.join(t.name())))
            .filter(|(_, p)| has_partitions(p))
            .collect();
        anyhow::ensure!(
            !tables.is_empty(),
            "{}: no table folders (packets/, qps/, ...) from `rocescope export --partition`",
            path.display()
        );
        return Ok(rocescope_data::query_parquet_tables(&tables, sql)?);
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let table = Table::ALL
        .iter()
        .find(|t| stem.starts_with(t.name()))
        .map_or("packets", |t| t.name());
    Ok(query_parquet(path, table, sql)?)
}

/// A table folder holding some capture's partitions (a table with no rows
/// in any capture has none, and is not a table to query).
fn has_partitions(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("capture="))
    })
}
