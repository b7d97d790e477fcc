//! `rocescope report FILE -o DIR`: the capture's report as one HTML page
//! with its plots (PNG and SVG) beside it, for someone who was not at the
//! keyboard.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use rocescope_replay::store::RcAnalyzer;

use super::args::DecodeOpts;
use crate::cli::capture::{open_store, warn_store};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump).
    file: PathBuf,
    /// Directory to write index.html and the plots into (created if missing).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    decode: DecodeOpts,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let analysis = RcAnalyzer::default();
    let store = open_store(&args.file, args.decode.config(), Box::new(analysis.clone()))?;
    let report = analysis.finish_report();
    // The page lists them too, under the summary.
    warn_store(&args.file, &store);
    let name = args.file.display().to_string();
    let input = rocescope_report::Input {
        name: &name,
        store: &store,
        report: &report,
    };
    let written = rocescope_report::write(&input, &args.out)
        .with_context(|| format!("writing the report into {}", args.out.display()))?;
    writeln!(std::io::stdout().lock(), "{}", written.index_html.display())?;
    // The report is of what was read; a source that stopped early fails.
    match crate::cli::capture::indexing_error(&args.file, &store) {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}
