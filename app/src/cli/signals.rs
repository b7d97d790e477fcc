//! `rocescope signals`: a waveform's signals without a workbench, loaded as
//! the signals view loads them (the body read once, on the first signal;
//! each later one from memory), listed, or written as the `profiler`
//! table's rows.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use rocescope_core::signals::Signals;
use rocescope_data::{ExportOptions, Source, Table, export};
use rocescope_decoders::analysis::Report;
use rocescope_replay::TimeBase;
use rocescope_replay::store::Store;
use rocescope_replay::wave::WaveOptions;
use rocescope_replay::wave::signals::MarkerKind;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A waveform (VCD, FST) or a Vivado ILA capture (CSV, VCD).
    pub file: PathBuf,
    /// Print every signal's path and width in bits, one a line (and an ILA
    /// capture's triggers and window starts on stderr).
    #[arg(long, conflicts_with_all = ["show", "to"])]
    pub list: bool,
    /// With --list: one JSON object a line.
    #[arg(long, requires = "list")]
    pub json: bool,
    /// Signals to load, by the paths --list prints; each one's load time is
    /// told on stderr (the first reads the file's body).
    #[arg(long, num_args = 1.., value_name = "PATH", requires = "to")]
    pub show: Vec<String>,
    /// Write the shown signals' changes as the profiler table's rows:
    /// Parquet, CSV or JSON lines, by the file's extension (SCHEMA.md).
    #[arg(long, value_name = "FILE")]
    pub to: Option<PathBuf>,
    /// ILA captures: the clock the ILA sampled at [default: 250MHz].
    #[arg(long, value_name = "FREQ", value_parser = rocescope_replay::wave::ila::parse_sample_clock)]
    pub sample_clock: Option<u64>,
    /// Memory a VCD's body may take held for the loads, e.g. 512MiB
    /// (default: 2 GiB, or a quarter of the machine's memory where that is
    /// less); past it each signal is read from the file, said on stderr.
    #[arg(long, value_name = "SIZE", value_parser = super::args::size)]
    pub max_memory: Option<u64>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = WaveOptions {
        sample_clock_hz: args.sample_clock,
        max_held_bytes: args.max_memory,
        ..WaveOptions::default()
    };
    let name = args.file.display().to_string();
    if let Some(kind) = rocescope_replay::NotAFile::of(&args.file) {
        anyhow::bail!("{name}: {kind}");
    }
    if rocescope_replay::wave::detect(&args.file).is_none() {
        anyhow::bail!("{name}: not a waveform (VCD, FST) or an ILA capture (CSV, VCD)");
    }
    let started = std::time::Instant::now();
    let (mut signals, warning) = Signals::open(&args.file, 0, &options)
        .map_err(|e| anyhow::anyhow!(e))
        .context("reading its hierarchy")?;
    if let Some(w) = warning {
        eprintln!("rocescope: warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    if args.list || args.show.is_empty() {
        for s in signals.hierarchy() {
            let width = s
                .width_bits
                .map_or_else(|| "real or string".to_owned(), |w| w.to_string());
            if args.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"path": s.path, "width_bits": s.width_bits})
                )?;
            } else {
                writeln!(out, "{} {width}", s.path)?;
            }
        }
        for m in signals.markers() {
            let what = match m.kind {
                MarkerKind::Trigger => "the ILA's trigger",
                MarkerKind::Window => "a capture window starts (the time before it unknown)",
            };
            eprintln!("rocescope: {name}: {} ns: {what}", m.ts_ns);
        }
        eprintln!(
            "rocescope: {name}: {} signals, the hierarchy read in {:.3} s",
            signals.hierarchy().len(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let Some(to) = args.to else {
        anyhow::bail!("--show writes to a file: give --to FILE (.parquet, .csv or .jsonl)");
    };
    let mut cut_file = None;
    for path in &args.show {
        let t = signals
            .show_now(path)
            .map_err(|e| anyhow::anyhow!(e))
            .with_context(|| format!("loading {path}"))?;
        let c = signals
            .chosen()
            .iter()
            .find(|c| c.path == *path)
            .context("the signal shown")?;
        let (kept, dropped, cut) = match &c.trace {
            rocescope_core::signals::Trace::Loaded {
                changes,
                dropped,
                cut,
            } => (changes.len(), *dropped, cut.clone()),
            _ => (0, 0, None),
        };
        let body = if t.body_seconds > 0.0 {
            format!(" (the file's body read in {:.3} s)", t.body_seconds)
        } else {
            String::new()
        };
        let more = if dropped > 0 {
            format!(", {dropped} later changes not kept")
        } else {
            String::new()
        };
        eprintln!(
            "rocescope: {path}: {kept} changes{more}, loaded in {:.3} s{body}",
            t.seconds
        );
        if let Some(cut) = cut {
            cut_file.get_or_insert(cut);
        }
    }
    if let Some(why) = signals.streamed_because() {
        eprintln!(
            "rocescope: warning: {name}: its body could not be held ({why}); each signal read the file again"
        );
    }
    let records = signals.profiler_records();
    let store = Store::live(TimeBase::Nanoseconds);
    let report = Report::default();
    let capture = args
        .file
        .file_stem()
        .map_or_else(|| "wave".into(), |s| s.to_string_lossy().into_owned());
    let source = Source {
        store: &store,
        report: &report,
        capture: &capture,
        extra_profiler: &records,
        points: None,
    };
    let summary = export(&source, Table::Profiler, &to, &ExportOptions::default())
        .with_context(|| format!("writing {}", to.display()))?;
    writeln!(
        out,
        "{} rows of profiler ({} signals) -> {}",
        summary.rows,
        args.show.len(),
        to.display()
    )?;
    // What the file held before its damage was written; the run fails.
    match cut_file {
        Some(cut) => Err(anyhow::anyhow!(
            "{name}: {cut}; the changes before it were written"
        )),
        None => Ok(()),
    }
}
