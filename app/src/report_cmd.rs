//! `rocescope report FILE -o DIR`: the capture's report as one HTML page
//! with its plots (PNG and SVG) beside it, for someone who was not at the
//! keyboard.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::RcAnalyzer;

use crate::info_cmd::open_store;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump).
    file: PathBuf,
    /// Directory to write index.html and the plots into (created if missing).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    out: PathBuf,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    roce_ports: Vec<u16>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let analysis = RcAnalyzer::default();
    let cfg = DecodeConfig {
        extra_roce_ports: args.roce_ports,
    };
    let store = open_store(&args.file, cfg, Box::new(analysis.clone()))?;
    let report = analysis.finish_report();
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
    match crate::info_cmd::indexing_error(&args.file, &store) {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}
