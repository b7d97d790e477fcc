//! `rocescope report FILE -o DIR`: the capture's report as one HTML page
//! with its plots (PNG and SVG) beside it, for someone who was not at the
//! keyboard.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use rocescope_replay::store::RcAnalyzer;

use super::args::{DecodeOpts, MemoryArgs};
use crate::cli::capture::{open_store, warn_store};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump); or --point, several
    /// (the first point's report, with a section for the points).
    #[arg(required_unless_present = "points", conflicts_with = "points")]
    file: Option<PathBuf>,
    /// Directory to write index.html and the plots into (created if missing).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    decode: DecodeOpts,
    #[command(flatten)]
    points: super::args::PointArgs,
    #[command(flatten)]
    memory: MemoryArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.points.given()? {
        let o = crate::cli::capture::OpenedPoints::open_finished(
            &args.points,
            &args.decode,
            &args.memory.limits(),
        )?;
        let name = o
            .points
            .iter()
            .zip(&o.files)
            .map(|(p, f)| format!("{}={}", p.name, f.display()))
            .collect::<Vec<_>>()
            .join(" ");
        let input = rocescope_report::Input {
            name: &name,
            store: &o.points[0].store,
            report: &o.first,
            points: Some(&o.report),
        };
        let written = rocescope_report::write(&input, &args.out)
            .with_context(|| format!("writing the report into {}", args.out.display()))?;
        writeln!(std::io::stdout().lock(), "{}", written.index_html.display())?;
        return o.finished();
    }
    let Some(file) = args.file.clone() else {
        anyhow::bail!("give a capture, or two or more --point NAME=FILE");
    };
    let analysis = RcAnalyzer::default();
    let store = open_store(
        &file,
        args.decode.config(),
        Box::new(analysis.clone()),
        &args.memory.limits(),
    )?;
    let report = analysis.finish_report();
    // The page lists them too, under the summary.
    warn_store(&file, &store);
    let name = file.display().to_string();
    let input = rocescope_report::Input {
        name: &name,
        store: &store,
        report: &report,
        points: None,
    };
    let written = rocescope_report::write(&input, &args.out)
        .with_context(|| format!("writing the report into {}", args.out.display()))?;
    writeln!(std::io::stdout().lock(), "{}", written.index_html.display())?;
    // The report is of what was read; a source that stopped early fails.
    match crate::cli::capture::indexing_error(&file, &store) {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}
