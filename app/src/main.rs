//! `rocescope`: the observability and debugging workbench for RoCE.

mod decode_cmd;
mod info_cmd;
mod stats_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "rocescope", version, about = "See inside RDMA over Converged Ethernet", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode every frame of a capture (classic pcap or pcapng), in frame order.
    Decode(DecodeArgs),
    /// Index a capture as the workbench does and summarise it.
    Info(InfoArgs),
    /// RC analysis: per-QP state, retransmission episodes, counters, diagnosis.
    Stats(InfoArgs),
}

#[derive(Debug, clap::Args)]
struct InfoArgs {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump).
    file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    roce_ports: Vec<u16>,
}

#[derive(Debug, clap::Args)]
struct DecodeArgs {
    /// Capture file: classic pcap (µs or ns, either byte order) or pcapng.
    file: PathBuf,
    /// Output: one summary line per frame, or one JSON object per frame.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Extra UDP destination port to decode as RoCEv2 (4791 always is); repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    roce_ports: Vec<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Jsonl,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Decode(args)) => {
            decode_cmd::run(&args.file, args.format == Format::Jsonl, args.roce_ports)
        }
        Some(Command::Info(args)) => info_cmd::run(&args.file, args.json, args.roce_ports),
        Some(Command::Stats(args)) => stats_cmd::run(&args.file, args.json, args.roce_ports),
        None => decode_cmd::tour(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("rocescope: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `rocescope decode x.pcap | head` must end quietly.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
