//! `rocescope agent`: serve a live source to `rocescope attach` clients
//! (device-link/PROTOCOL.md).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use rocescope_device_link::agent::{AgentConfig, read_token_file};
use rocescope_device_link::{
    Agent, CaptureSource, CardControl, CounterSource, SimSource, Source, SourceStatus,
};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on; anything but loopback needs --token-file.
    #[arg(long, default_value = "127.0.0.1:4790", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Serve a pcap/pcapng stream read from standard input. Reading waits
    /// for the first client (standard input cannot be read twice).
    #[arg(long, group = "source")]
    pub pcap_stdin: bool,
    /// Serve a capture file, following it as it grows.
    #[arg(long, group = "source", value_name = "FILE")]
    pub follow: Option<PathBuf>,
    /// Serve the BALBOA sniffer's dump (text or raw slots, or its pcap),
    /// following it as the card's host tool writes it.
    #[arg(long, group = "source", value_name = "PATH")]
    pub sniffer_dump: Option<PathBuf>,
    /// Serve the bundled simulator running SCENARIO (a shipped name or a
    /// TOML file) until stopped (or for the scenario's duration_ns, where it
    /// gives one); it waits while no client is attached.
    #[arg(long, group = "source", value_name = "SCENARIO")]
    pub sim: Option<String>,
    /// With --sim: simulated seconds per wall second, or `max` for as fast
    /// as the link takes it (default: 1, real time).
    #[arg(long, value_name = "X", default_value = "1", value_parser = parse_pace)]
    pub sim_pace: Pace,
    /// With --sim: end the simulated run after this much simulated time,
    /// e.g. 10ms, 2s (default: until the agent is stopped).
    #[arg(long, value_name = "D", value_parser = super::args::duration)]
    pub sim_duration: Option<std::time::Duration>,
    /// Poll the card driver's counter file into profiler samples.
    #[arg(long, value_name = "PATH")]
    pub counters: Option<PathBuf>,
    /// Counter polling interval.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub counters_interval_ms: u64,
    /// The card's control program, run as `CMD start|stop|filter 0xHEX`.
    #[arg(long, value_name = "CMD")]
    pub control_cmd: Option<String>,
    /// File holding the token clients must present (16-256 printable
    /// ASCII characters).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Start reading the source only once a client is attached.
    #[arg(long)]
    pub wait_for_client: bool,
    /// Per-client queue limit in MiB; a client that reads slower loses
    /// whole batches (counted and reported to it).
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub client_queue_mb: usize,
    /// What the agent logs on stderr: error, warn, info (clients coming and
    /// going, control commands, drops, its source), debug (every request),
    /// trace, or off.
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    pub log_level: tracing_subscriber::filter::LevelFilter,
}

/// The agent's events, one line each on stderr with the time (UTC) and
/// the level.
fn init_log(level: tracing_subscriber::filter::LevelFilter) {
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

/// Simulated seconds per wall second; `None`: as fast as possible.
#[derive(Debug, Clone, Copy)]
pub struct Pace(Option<f64>);

fn parse_pace(s: &str) -> Result<Pace, String> {
    if s.eq_ignore_ascii_case("max") {
        return Ok(Pace(None));
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(Pace(Some(x))),
        _ => Err(format!(
            "{s:?}: expected simulated seconds per wall second (> 0, e.g. 1 or 0.001) or max"
        )),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    init_log(args.log_level);
    let mut cfg = AgentConfig::new(args.listen);
    if let Some(p) = &args.token_file {
        cfg.token = Some(read_token_file(p)?);
    }
    // A finite stream published to nobody would be gone: wait for a client.
    cfg.wait_for_client = args.wait_for_client || args.pcap_stdin;
    cfg.client_queue_bytes = args.client_queue_mb.max(1) << 20;
    if let Some(cmd) = &args.control_cmd {
        cfg.control = Some(CardControl::new(cmd).context("--control-cmd is empty")?);
    }
    let counters = args.counters.as_ref().map(|p| {
        Box::new(CounterSource::new(
            p,
            Duration::from_millis(args.counters_interval_ms.max(10)),
        )) as Box<dyn Source>
    });
    let main: Option<Box<dyn Source>> = if args.pcap_stdin {
        Some(Box::new(CaptureSource::stdin()))
    } else if let Some(p) = args.follow.as_ref().or(args.sniffer_dump.as_ref()) {
        Some(Box::new(CaptureSource::follow(p)?))
    } else if let Some(s) = &args.sim {
        let mut scenario =
            rocescope_sim::Scenario::resolve(s).map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(d) = &args.sim_duration {
            scenario.bound_to_ns(super::args::ns(*d));
        }
        Some(Box::new(SimSource::new(scenario, args.sim_pace.0)))
    } else {
        None
    };
    let (main, side) = match (main, counters) {
        (Some(m), c) => (m, c.into_iter().collect()),
        (None, Some(c)) => (c, Vec::new()),
        (None, None) => bail!(
            "no source: give --pcap-stdin, --follow FILE, --sniffer-dump PATH or --counters PATH"
        ),
    };
    let agent = Agent::bind(cfg)?;
    let addr = agent.local_addr()?;
    tracing::info!("listening on {addr}, serving {}", main.describe());
    let stats = agent.stats();
    let status = agent.run(main, side)?;
    use std::sync::atomic::Ordering::Relaxed;
    let clients = stats.clients_accepted.load(Relaxed);
    tracing::info!(
        "{}; {} frames published, {} sent, {} dropped for slow clients; {} client{} served",
        match status {
            SourceStatus::End => "the source ended (clients were told END)",
            SourceStatus::Stopped => "stopped",
        },
        stats.frames_published.load(Relaxed),
        stats.frames_sent.load(Relaxed),
        stats.frames_dropped.load(Relaxed),
        clients,
        if clients == 1 { "" } else { "s" },
    );
    Ok(())
}
