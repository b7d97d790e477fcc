//! `rocescope export`: a capture's tables out to Parquet, CSV or JSON
//! lines (or hive-style partitions), or the capture again annotated.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::ValueEnum;
use rocescope_data::{ExportOptions, Format, Table, export};
use rocescope_replay::text::{counted, rows_rate_text};

use super::args::{DecodeOpts, MemoryArgs};
use super::capture::Opened;

/// `--table`: the data crate's tables, by their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableArg(pub Table);

impl ValueEnum for TableArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [TableArg; Table::ALL.len()] = {
            let mut all = [TableArg(Table::Packets); Table::ALL.len()];
            let mut i = 0;
            while i < all.len() {
                all[i] = TableArg(Table::ALL[i]);
                i += 1;
            }
            all
        };
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.0.name());
        Some(match self.0 {
            Table::Losses => {
                value.help("With --point: each frame lost between the points and its segment")
            }
            Table::Paths => {
                value.help("With --point: each point's frames and the points that saw them")
            }
            _ => value,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FileFormat {
    Parquet,
    Csv,
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump); or --point, several
    /// (the first point's tables, and the points' own: losses, paths).
    #[arg(required_unless_present = "points", conflicts_with = "points")]
    pub file: Option<PathBuf>,
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
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = super::args::duration)]
    pub window: std::time::Duration,
    #[command(flatten)]
    pub decode: DecodeOpts,
    /// Write the capture itself to OUT.pcapng, each analysed packet's
    /// verdict (retransmission and its episode, NAK kind, out of sequence,
    /// capture loss, ICRC) as its packet comment, for Wireshark:
    /// `frame.comment contains "Retransmission"`.
    #[arg(long, conflicts_with_all = ["partition", "format", "points"])]
    pub annotate: bool,
    #[command(flatten)]
    pub points: super::args::PointArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let points = args.points.given()?;
    let file = match (&args.file, points) {
        (Some(f), _) => f.clone(),
        (None, true) => PathBuf::new(),
        (None, false) => anyhow::bail!("give a capture, or two or more --point NAME=FILE"),
    };
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
        // The verdicts it writes are the analysis', not its time by state.
        let opened = Opened::open(&file, &args.decode, &args.memory.limits(), false)?;
        let started = std::time::Instant::now();
        let (frames, annotated) =
            crate::cli::annotate::write(&opened.store, &opened.report, &args.to)?;
        writeln!(
            std::io::stdout().lock(),
            "{frames} frames, {annotated} with a verdict, in {:.3} s -> {}",
            started.elapsed().as_secs_f64(),
            args.to.display()
        )?;
        return opened.finished();
    }
    let tables: Vec<Table> = match (args.table.as_slice(), args.partition) {
        ([], false) => vec![Table::Packets],
        ([], true) => Table::ALL
            .into_iter()
            .filter(|t| points || !t.of_points())
            .collect(),
        ([one], _) => vec![one.0],
        (many, true) => many.iter().map(|t| t.0).collect(),
        (_, false) => {
            anyhow::bail!("one --table per file: give --partition to write several tables")
        }
    };
    if !points && tables.iter().any(|t| t.of_points()) {
        anyhow::bail!(
            "the losses and paths tables are a session of capture points': give --point NAME=FILE twice or more"
        );
    }
    let (single, several) = if points {
        let o = crate::cli::capture::OpenedPoints::open_finished(
            &args.points,
            &args.decode,
            &args.memory.limits(),
        )?;
        (None, Some(o))
    } else {
        (
            Some(Opened::open(
                &file,
                &args.decode,
                &args.memory.limits(),
                tables.iter().any(|t| t.reads_time_by_state()),
            )?),
            None,
        )
    };
    let source = match (&single, &several) {
        (Some(o), _) => o.source(),
        (_, Some(o)) => o.source(),
        _ => anyhow::bail!("nothing opened"),
    };
    let opts = ExportOptions {
        format: args.format.map(|f| match f {
            FileFormat::Parquet => Format::Parquet,
            FileFormat::Csv => Format::Csv,
            FileFormat::Jsonl => Format::Jsonl,
        }),
        partition_window_ns: if args.partition {
            Some(super::args::ns(args.window))
        } else {
            None
        },
        ..ExportOptions::default()
    };
    let mut out = std::io::stdout().lock();
    for table in tables {
        let summary = export(&source, table, &args.to, &opts)
            .with_context(|| format!("exporting {table} to {}", args.to.display()))?;
        let to = match summary.files.as_slice() {
            [one] if !args.partition => one.display().to_string(),
            files => format!(
                "{} under {}",
                counted(files.len() as u64, "file", "files"),
                args.to.join(table.name()).display()
            ),
        };
        writeln!(
            out,
            "{} of {} in {:.3} s ({}) -> {to}",
            counted(summary.rows, "row", "rows"),
            summary.table,
            summary.elapsed.as_secs_f64(),
            rows_rate_text(summary.rows, summary.elapsed.as_secs_f64()),
        )?;
    }
    match (&single, &several) {
        (Some(o), _) => o.finished(),
        (_, Some(o)) => o.finished(),
        _ => Ok(()),
    }
}
