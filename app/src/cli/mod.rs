//! The command line: one file per command, owning its arguments and its
//! `run`. `args` holds the option groups and value parsers the commands
//! share, `capture` what they share about a capture (opening it, telling
//! what could not be read), `output` the report as JSON; no command owns
//! them.

mod agent;
mod annotate;
mod args;
mod attach;
mod capture;
mod decode;
mod export;
mod gui;
mod info;
mod lesson;
mod open;
mod output;
pub mod partitions;
mod query;
mod report;
mod signals;
mod sim;
mod stats;
mod tour;
mod whatif;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Decode(decode::Args),
    /// Index a capture as the workbench does and summarise it.
    Info(info::Args),
    /// RC analysis: per-QP state, retransmission episodes, counters, diagnosis.
    Stats(stats::Args),
    /// The capture's report: one HTML page with plots (PNG, SVG) beside it.
    Report(report::Args),
    /// Open a capture in the terminal workbench.
    Open(open::Args),
    /// Run the bundled BALBOA simulator (in the workbench, or --headless).
    Sim(sim::Args),
    /// Decode the bundled sample capture: a two-minute tour without a terminal UI.
    Tour,
    /// Serve a live source (card sniffer/counters, pcap stream) to attach clients.
    Agent(agent::Args),
    /// Attach to an agent, a pcap stream on stdin or a growing file.
    Attach(attach::Args),
    /// The desktop workbench (egui): a capture, a live link or the simulator.
    Gui(gui::Args),
    /// Write a table (packets, qps, episodes, ...) to Parquet, CSV or JSON lines.
    Export(export::Args),
    /// SQL over a capture's tables (or over Parquet written by export).
    Query(query::Args),
    /// The RoCE course: list, open, check (--check) or export a lesson.
    Lesson(lesson::Args),
    /// A waveform's signals: list them, or write chosen ones as the
    /// profiler table's rows (loaded as the signals view loads them).
    Signals(signals::Args),
    /// What if: the capture's workload rerun by the simulator as captured
    /// (its twin, checked against it) and with parameters changed.
    Whatif(whatif::Args),
}

/// Parse the command line, run the command, print its error.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Decode(args)) => decode::run(args),
        Some(Command::Info(args)) => info::run(args),
        Some(Command::Stats(args)) => stats::run(args),
        Some(Command::Report(args)) => report::run(args),
        Some(Command::Open(args)) => open::run(args),
        Some(Command::Sim(args)) => sim::run(args),
        Some(Command::Tour) => tour::run(),
        Some(Command::Agent(args)) => agent::run(args),
        Some(Command::Attach(args)) => attach::run(args),
        Some(Command::Gui(args)) => gui::run(args),
        Some(Command::Export(args)) => export::run(args),
        Some(Command::Query(args)) => query::run(args),
        Some(Command::Lesson(args)) => lesson::run(args),
        Some(Command::Signals(args)) => signals::run(args),
        Some(Command::Whatif(args)) => whatif::run(args),
        None => default_run(),
    };
    // A store still held by a thread when the command returns is never
    // dropped: its session folder (a file's index segments) goes here.
    rocescope_core::session::remove_own_session_dirs();
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

/// The main job: `rocescope sim` with its defaults, the workbench on the
/// simulator's default scenario. Without a terminal (a pipe, CI) it prints
/// the tour instead, and says so.
fn default_run() -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!(
            "rocescope: no terminal: printing the tour (run in a terminal for the workbench)"
        );
        return tour::run();
    }
    match Cli::try_parse_from(["rocescope", "sim"])?.command {
        Some(Command::Sim(args)) => sim::run(args),
        _ => anyhow::bail!("the main job is `rocescope sim`"),
    }
}

/// `rocescope decode x.pcap | head` must end quietly.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// clap's own checks of every command and flag (names, groups, defaults).
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Values are parsed by clap: a bad one fails at once, naming its flag,
    /// not later inside the command.
    #[test]
    fn the_workbenches_take_points_instead_of_a_file() {
        let pts = ["--point", "a=a.pcap", "--point", "b=b.pcap"];
        for cmd in ["open", "gui"] {
            let mut args = vec!["rocescope", cmd];
            args.extend(pts);
            assert!(Cli::try_parse_from(&args).is_ok(), "{args:?}");
            args.insert(2, "f.pcap");
            assert!(Cli::try_parse_from(&args).is_err(), "{args:?}");
        }
        let mut args = vec!["rocescope", "gui", "--sim", "default"];
        args.extend(pts);
        assert!(Cli::try_parse_from(&args).is_err(), "{args:?}");
        // `open` needs a capture or the points.
        assert!(Cli::try_parse_from(["rocescope", "open"]).is_err());
    }

    #[test]
    fn bad_values_name_their_flag() {
        for (args, flag) in [
            (
                &["rocescope", "sim", "--duration", "soon"][..],
                "--duration",
            ),
            (
                &["rocescope", "sim", "--max-memory", "lots"],
                "--max-memory",
            ),
            (
                &["rocescope", "attach", "-", "--duration", "5 parsecs"],
                "--duration",
            ),
            (
                &[
                    "rocescope",
                    "attach",
                    "-",
                    "--partitions",
                    "d",
                    "--window",
                    "x",
                ],
                "--window",
            ),
            (
                &[
                    "rocescope",
                    "export",
                    "f.pcap",
                    "--to",
                    "o",
                    "--window",
                    "1 fortnight",
                ],
                "--window",
            ),
            (
                &[
                    "rocescope",
                    "agent",
                    "--sim",
                    "default",
                    "--sim-duration",
                    "1",
                ],
                "--sim-duration",
            ),
            (&["rocescope", "gui", "--max-disk", "big"], "--max-disk"),
        ] {
            let e = Cli::try_parse_from(args).unwrap_err();
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{args:?}"
            );
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
        // The option groups flatten into each command alike.
        for cmd in [
            "info", "stats", "open", "report", "export", "query", "decode",
        ] {
            let mut args = vec!["rocescope", cmd, "f.pcap", "--roce-port", "4792"];
            match cmd {
                "report" => args.extend(["-o", "out"]),
                "export" => args.extend(["--to", "out.csv"]),
                "query" => args.insert(3, "SELECT 1"),
                _ => {}
            }
            assert!(Cli::try_parse_from(&args).is_ok(), "{args:?}");
        }
    }
}
