//! `rocescope`: the observability and debugging workbench for RoCE.

mod agent_cmd;
mod annotate;
mod attach_cmd;
mod data_cmd;
mod decode_cmd;
mod info_cmd;
mod lesson_cmd;
mod report_cmd;
mod sim_cmd;
mod stats_cmd;

use rocescope::tui;

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
    /// Decode every frame of a capture (pcap, pcapng, sniffer dump) or of the
    /// AXI4-Stream interfaces of a waveform (VCD, FST), in frame order.
    Decode(DecodeArgs),
    /// Index a capture as the workbench does and summarise it.
    Info(InfoArgs),
    /// RC analysis: per-QP state, retransmission episodes, counters, diagnosis.
    Stats(StatsArgs),
    /// The capture's report: one HTML page with plots (PNG, SVG) beside it.
    Report(report_cmd::ReportArgs),
    /// Open a capture in the terminal workbench.
    Open(OpenArgs),
    /// Run the bundled BALBOA simulator (in the workbench, or --headless).
    Sim(sim_cmd::SimArgs),
    /// Decode the bundled sample capture: a two-minute tour without a terminal UI.
    Tour,
    /// Serve a live source (card sniffer/counters, pcap stream) to attach clients.
    Agent(agent_cmd::AgentArgs),
    /// Attach to an agent, a pcap stream on stdin or a growing file.
    Attach(attach_cmd::AttachArgs),
    /// The desktop workbench (egui): a capture, a live link or the simulator.
    Gui(rocescope::gui::GuiArgs),
    /// Write a table (packets, qps, episodes, ...) to Parquet, CSV or JSON lines.
    Export(data_cmd::ExportArgs),
    /// SQL over a capture's tables (or over Parquet written by export).
    Query(data_cmd::QueryArgs),
    /// The RoCE course: list, open, check (--check) or export a lesson.
    Lesson(lesson_cmd::LessonArgs),
}

#[derive(Debug, clap::Args)]
struct OpenArgs {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST).
    file: PathBuf,
    /// A waveform (VCD, FST) of the same traffic: aligned with the capture
    /// by content at open; the status line shows the offset and matches.
    #[arg(long, value_name = "WAVE")]
    wave: Option<PathBuf>,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    roce_ports: Vec<u16>,
}

#[derive(Debug, clap::Args)]
struct InfoArgs {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST).
    file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    roce_ports: Vec<u16>,
    /// A waveform (VCD, FST) of the same traffic: align it with the capture
    /// by content and show the offset, the frames matched and unmatched.
    #[arg(long, value_name = "WAVE")]
    wave: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct StatsArgs {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST).
    file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    roce_ports: Vec<u16>,
    /// A waveform (VCD, FST) of the same traffic: align it with the capture
    /// by content and show the offset, the frames matched and unmatched.
    #[arg(long, value_name = "WAVE")]
    wave: Option<PathBuf>,
    /// The link rate in Gb/s for the time by state (default: the one a
    /// simulator's recording gives, else the fastest the capture shows).
    #[arg(long, value_name = "GBPS")]
    link_gbps: Option<f64>,
}

#[derive(Debug, clap::Args)]
struct DecodeArgs {
    /// Capture file (classic pcap, pcapng, sniffer dump) or waveform (VCD, FST).
    file: PathBuf,
    /// Output: one summary line per frame, or one JSON object per frame.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the frames as pcapng to this file instead of decoding them
    /// (a waveform's interfaces become its interfaces).
    #[arg(long, value_name = "FILE")]
    to: Option<PathBuf>,
    /// Waveforms: only this AXI4-Stream interface (scope path or its end).
    #[arg(long, value_name = "SCOPE")]
    axis: Option<String>,
    /// Waveforms: the clock of the interfaces (full path or name), instead
    /// of the clk/aclk/ap_clk/aclk_i found in scope.
    #[arg(long, value_name = "SIGNAL")]
    clock: Option<String>,
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
            let wave = rocescope_replay::wave::WaveOptions {
                axis: args.axis,
                clock: args.clock,
            };
            match args.to {
                Some(to) => decode_cmd::to_pcapng(&args.file, &wave, &to),
                None => decode_cmd::run(
                    &args.file,
                    args.format == Format::Jsonl,
                    args.roce_ports,
                    &wave,
                ),
            }
        }
        Some(Command::Info(args)) => {
            info_cmd::run(&args.file, args.json, args.roce_ports, args.wave.as_deref())
        }
        Some(Command::Stats(args)) => stats_cmd::run(
            &args.file,
            args.json,
            args.roce_ports,
            args.wave.as_deref(),
            args.link_gbps,
        ),
        Some(Command::Report(args)) => report_cmd::run(args),
        Some(Command::Open(args)) => open(&args.file, args.roce_ports, args.wave.as_deref()),
        Some(Command::Sim(args)) => sim_cmd::run(args),
        Some(Command::Tour) => decode_cmd::tour(),
        Some(Command::Agent(args)) => agent_cmd::run(args),
        Some(Command::Attach(args)) => attach_cmd::run(args),
        Some(Command::Gui(args)) => rocescope::gui::run(args),
        Some(Command::Export(args)) => data_cmd::run_export(args),
        Some(Command::Query(args)) => data_cmd::run_query(args),
        Some(Command::Lesson(args)) => lesson_cmd::run(args),
        None => default_run(),
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

/// The main job: the workbench on the simulator's default scenario. Without
/// a terminal (a pipe, CI) it prints the tour instead, and says so.
fn default_run() -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!(
            "rocescope: no terminal: printing the tour (run in a terminal for the workbench)"
        );
        return decode_cmd::tour();
    }
    sim_cmd::run(sim_cmd::SimArgs {
        scenario: "default".into(),
        duration: None,
        seed: None,
        set: Vec::new(),
        record: None,
        headless: false,
        json: false,
        pace: None,
        list_params: false,
        experiment: None,
        max_memory: None,
        max_disk: None,
        parts: rocescope::live_parts::PartitionArgs {
            partitions: None,
            window: "1m".into(),
            capture: None,
        },
    })
}

/// `rocescope open FILE`: index the capture in the background and open the
/// workbench at once.
fn open(
    file: &std::path::Path,
    roce_ports: Vec<u16>,
    wave: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use rocescope_core::source::{OpenError, SourceSpec, open};
    use rocescope_replay::CaptureError;
    use rocescope_replay::store::StoreError;
    let spec = SourceSpec::File {
        path: file.to_path_buf(),
        decode: rocescope_decoders::DecodeConfig {
            extra_roce_ports: roce_ports,
        },
    };
    let mut model = match open(spec, &Default::default()) {
        Ok(m) => m,
        // A file that is not there says so once, without its path twice.
        Err(OpenError::File {
            source: e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_)),
            ..
        }) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    };
    rocescope::with_wave(&mut model, file, wave)?;
    tui::run(model)
}

/// `rocescope decode x.pcap | head` must end quietly.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
