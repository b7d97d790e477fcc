//! `rocescope export` and `rocescope query`: the capture's tables out to
//! Parquet/CSV/JSON lines, and SQL over them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::ValueEnum;
use rocescope_data::{
    ExportOptions, Format, OutputFormat, QueryOptions, Source, Table, export, query, query_parquet,
    write_frame,
};
use rocescope_decoders::analysis::Report;
use rocescope_replay::store::Store;

use crate::sim_cmd::parse_duration_ns;
use crate::stats_cmd::open_analysed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableArg {
    Packets,
    Qps,
    Episodes,
    Findings,
    Profiler,
    Slots,
    #[value(name = "qp_states")]
    QpStates,
}

impl From<TableArg> for Table {
    fn from(t: TableArg) -> Table {
        match t {
            TableArg::Packets => Table::Packets,
            TableArg::Qps => Table::Qps,
            TableArg::Episodes => Table::Episodes,
            TableArg::Findings => Table::Findings,
            TableArg::Profiler => Table::Profiler,
            TableArg::Slots => Table::Slots,
            TableArg::QpStates => Table::QpStates,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FileFormat {
    Parquet,
    Csv,
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump).
    pub file: PathBuf,
    /// The table to write (default: packets; with --partition, every
    /// table). Repeatable with --partition.
    #[arg(long, value_enum)]
    pub table: Vec<TableArg>,
    /// Output file (.parquet, .csv, .jsonl), or a folder with --partition.
    #[arg(long, value_name = "OUT")]
    pub to: PathBuf,
    /// Output format (default: from OUT's extension).
    #[arg(long, value_enum)]
    pub format: Option<FileFormat>,
    /// Write hive-style Parquet partitions under the OUT folder:
    /// TABLE/capture=NAME/window_start_ns=N/part-K.parquet, replacing the
    /// capture's earlier partitions of each table written.
    #[arg(long)]
    pub partition: bool,
    /// Capture time per partition with --partition, e.g. 1s, 100ms.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub window: String,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    pub roce_ports: Vec<u16>,
    /// Write the capture itself to OUT.pcapng, each analysed packet's
    /// verdict (retransmission and its episode, NAK kind, out of sequence,
    /// capture loss, ICRC) as its packet comment, for Wireshark:
    /// `frame.comment contains "Retransmission"`.
    #[arg(long, conflicts_with_all = ["partition", "format"])]
    pub annotate: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrintFormat {
    Table,
    Csv,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// A capture file, or Parquet written by `rocescope export` (a file, or
    /// a folder holding one sub-folder per table).
    pub file: PathBuf,
    /// The query; tables: packets, qps, episodes, findings, profiler, slots
    /// (schema: app/data/SCHEMA.md).
    pub sql: String,
    /// How to print the result (json: an array of row objects).
    #[arg(long, value_enum, default_value_t = PrintFormat::Table)]
    pub format: PrintFormat,
    /// With --format table: rows to print at most.
    #[arg(long, default_value_t = 200)]
    pub max_rows: usize,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    pub roce_ports: Vec<u16>,
}

/// A capture opened with the RC analysis, as the workbench opens it.
struct Opened {
    store: Arc<Store>,
    report: Report,
    name: String,
}

impl Opened {
    fn open(file: &Path, roce_ports: Vec<u16>) -> anyhow::Result<Opened> {
        let (store, report) = open_analysed(file, roce_ports)?;
        let name = file
            .file_stem()
            .map_or_else(|| "capture".into(), |s| s.to_string_lossy().into_owned());
        Ok(Opened {
            store,
            report,
            name,
        })
    }

    fn source(&self) -> Source<'_> {
        Source {
            store: &self.store,
            report: &self.report,
            capture: &self.name,
            extra_profiler: &[],
        }
    }
}

pub fn run_export(args: ExportArgs) -> anyhow::Result<()> {
    if args.annotate {
        if !args
            .to
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("pcapng"))
        {
            anyhow::bail!(
                "--annotate writes a pcapng capture: give --to a .pcapng path (not {})",
                args.to.display()
            );
        }
        let opened = Opened::open(&args.file, args.roce_ports.clone())?;
        let started = std::time::Instant::now();
        let (frames, annotated) = crate::annotate::write(&opened.store, &opened.report, &args.to)?;
        writeln!(
            std::io::stdout().lock(),
            "{frames} frames, {annotated} with a verdict, in {:.3} s -> {}",
            started.elapsed().as_secs_f64(),
            args.to.display()
        )?;
        return Ok(());
    }
    let tables: Vec<Table> = match (args.table.as_slice(), args.partition) {
        ([], false) => vec![Table::Packets],
        ([], true) => Table::ALL.to_vec(),
        ([one], _) => vec![Table::from(*one)],
        (many, true) => many.iter().map(|&t| Table::from(t)).collect(),
        (_, false) => {
            anyhow::bail!("one --table per file: give --partition to write several tables")
        }
    };
    let opened = Opened::open(&args.file, args.roce_ports.clone())?;
    let opts = ExportOptions {
        format: args.format.map(|f| match f {
            FileFormat::Parquet => Format::Parquet,
            FileFormat::Csv => Format::Csv,
            FileFormat::Jsonl => Format::Jsonl,
        }),
        partition_window_ns: if args.partition {
            Some(parse_duration_ns(&args.window)?)
        } else {
            None
        },
        ..ExportOptions::default()
    };
    let mut out = std::io::stdout().lock();
    for table in tables {
        let summary = export(&opened.source(), table, &args.to, &opts)
            .with_context(|| format!("exporting {table} to {}", args.to.display()))?;
        let rate = summary.rows as f64 / summary.elapsed.as_secs_f64().max(1e-9);
        let to = match summary.files.as_slice() {
            [one] if !args.partition => one.display().to_string(),
            files => format!(
                "{} files under {}",
                files.len(),
                args.to.join(table.name()).display()
            ),
        };
        writeln!(
            out,
            "{} rows of {} in {:.3} s ({:.2} M rows/s) -> {to}",
            summary.rows,
            summary.table,
            summary.elapsed.as_secs_f64(),
            rate / 1e6,
        )?;
    }
    Ok(())
}

pub fn run_query(args: QueryArgs) -> anyhow::Result<()> {
    let parquet = args.file.is_dir()
        || args
            .file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
    let mut df = if parquet {
        query_exported(&args.file, &args.sql)?
    } else {
        let opened = Opened::open(&args.file, args.roce_ports)?;
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
    Ok(())
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
