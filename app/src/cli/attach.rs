//! `rocescope attach URL`: attach to an agent, a pcap stream on stdin or a
//! followed file, feed the live store, optionally record, report counts.
//! `attach --point NAME=URL ...`: one agent per capture point, the points
//! analysis running as frames arrive (`rocescope_core::live_points`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rocescope_core::partitions::{self, LiveWriter};
use rocescope_decoders::units::{duration_text, size_text};

use super::args::SessionArgs;
use rocescope_device_link::client::LinkEvent;
use rocescope_device_link::protocol::Request;
use rocescope_device_link::{AttachUrl, Client, ClientConfig};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// tcp://HOST:PORT (an agent), - (pcap/pcapng on stdin) or file:PATH[?follow].
    #[arg(required_unless_present = "points", conflicts_with = "points")]
    pub url: Option<String>,
    /// A capture point: NAME=URL, one agent per point (both cards' hosts,
    /// a switch's mirror), in path order from one host to the other;
    /// NAME=URL@OFFSET fixes its clock's offset against the first point.
    /// Repeatable: two or more, in place of URL; the points analysis runs
    /// as frames arrive.
    #[arg(long = "point", value_name = "NAME=URL[@OFFSET]", value_parser = super::args::point_spec)]
    pub points: Vec<super::args::PointSpec>,
    /// With --point: the links' rate in Gb/s, each frame's serialisation
    /// in the clock alignment (default 100).
    #[arg(long, value_name = "GBPS", value_parser = super::args::rate_gbps, requires = "points")]
    pub link_gbps: Option<f64>,
    /// Write everything received to this pcapng file (flushed every second).
    #[arg(long, value_name = "OUT.pcapng", conflicts_with = "points")]
    pub record: Option<PathBuf>,
    /// File holding the agent's token.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// No user interface: run for --duration or until the source ends
    /// (a file, stdin: the agent says END), then print a summary.
    #[arg(long)]
    pub headless: bool,
    /// How long to stay attached, e.g. 30s, 500ms, 2m, 12h (default: until
    /// the source ends or Ctrl-C).
    #[arg(long, value_name = "D", value_parser = super::args::long_duration)]
    pub duration: Option<Duration>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Stop when the agent's source ends instead of waiting for a new one
    /// (always so with --headless).
    #[arg(long)]
    pub exit_on_end: bool,
    /// Profiler probes to receive: all, none or ID,ID,...
    #[arg(long, default_value = "all", value_name = "SET")]
    pub probes: String,
    /// Queue between socket and ingest, MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub queue_mb: usize,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub parts: crate::cli::partitions::PartitionArgs,
    /// Throttle ingest to N frames/s (to test drop accounting).
    #[arg(long, hide = true, value_name = "N")]
    pub max_ingest_pps: Option<u64>,
}

/// The client's settings for `url`, from the command line.
fn client_config(args: &Args, url: AttachUrl) -> anyhow::Result<ClientConfig> {
    let mut cfg = ClientConfig::new(url);
    if let Some(p) = &args.token_file {
        let t = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
        cfg.token = Some(t.trim().to_owned());
    }
    cfg.probes = match Request::parse(format!("SUBSCRIBE probes={}", args.probes).as_bytes()) {
        Ok(Request::Subscribe(p)) => p,
        _ => bail!(
            "--probes {:?}: expected all, none or ID,ID,...",
            args.probes
        ),
    };
    cfg.record = args.record.clone();
    cfg.queue_bytes = args.queue_mb.max(1) << 20;
    cfg.exit_on_end = args.exit_on_end || args.headless;
    cfg.max_ingest_pps = args.max_ingest_pps;
    Ok(cfg)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.points.is_empty() {
        return run_points(args);
    }
    let Some(url) = &args.url else {
        bail!("attach: give a URL or two or more --point NAME=URL");
    };
    let url = AttachUrl::parse(url)?;
    let mut cfg = client_config(&args, url.clone())?;
    let limits = args.session.limits();
    if !args.headless && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        // The workbench: the source layer bounds the store and keeps the
        // link's state in the status line; the core writes the partitions.
        let spec = rocescope_core::source::SourceSpec::Attach(Box::new(cfg));
        let model = rocescope_core::source::open(spec, &limits)?;
        return crate::tui::run(args.parts.start(model)?);
    }
    let queue_bytes = limits.queue_bytes(cfg.queue_bytes as u64);
    cfg.queue_bytes = queue_bytes as usize;
    cfg.spill = Some(limits.spill_config(queue_bytes));
    let window_ns = args.parts.window_ns();
    let client = Client::start(cfg)?;
    // The packets table window by window on a thread of its own, so that
    // a writer behind the source never holds the session past --duration.
    let mut writer = match &args.parts.partitions {
        Some(dir) => Some(
            LiveWriter::start(
                Arc::clone(client.store()),
                client.analysis().clone(),
                partitions::spec(dir, window_ns, args.parts.capture.as_deref()),
            )
            .with_context(|| format!("starting the partition writer for {}", dir.display()))?,
        ),
        None => None,
    };
    let start = Instant::now();
    let deadline = args.duration.map(|d| start + d);
    let mut fatal = None;
    let mut last_status = Instant::now();
    loop {
        while let Ok(ev) = client.events().try_recv() {
            match ev {
                LinkEvent::Connected { to, agent } => {
                    eprintln!(
                        "rocescope attach: connected to {to}{}",
                        if agent.is_empty() {
                            String::new()
                        } else {
                            format!(" ({agent})")
                        }
                    )
                }
                LinkEvent::Disconnected { reason, retry_in } => eprintln!(
                    "rocescope attach: connection lost: {reason}{}",
                    retry_in
                        .map(|d| format!("; retrying in {:.1} s", d.as_secs_f64()))
                        .unwrap_or_default()
                ),
                LinkEvent::AgentError { code, text } => {
                    eprintln!("rocescope attach: agent says ERR {code} {text}")
                }
                LinkEvent::End(end) => eprintln!("rocescope attach: {end}; stopping"),
                // Told once, as the command's error, after the summary.
                LinkEvent::Fatal(why) => fatal = Some(why),
            }
        }
        if client.is_finished() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if !args.headless && last_status.elapsed() >= Duration::from_secs(1) {
            last_status = Instant::now();
            let s = client.stats();
            eprintln!(
                "rocescope attach: {} frames, {} dropped, {} reconnects, {}",
                s.frames_received,
                s.frames_dropped,
                s.reconnects,
                s.state().as_str()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let store = Arc::clone(client.store());
    let analysis = client.analysis().clone();
    let s = client.stop();
    let parts = writer.as_mut().map(|w| {
        w.finish_by(Instant::now() + WRITER_GRACE);
        written(w)
    });
    let elapsed = start.elapsed().as_secs_f64();
    let st = store.stats();
    let spill = store.spill_stats().unwrap_or_default();
    let peak_rss = rocescope_core::session::peak_rss_bytes();
    if args.json {
        let v = serde_json::json!({
            "url": url.to_string(),
            "frames_received": s.frames_received,
            "frames_dropped": s.frames_dropped,
            "frames_dropped_agent": s.frames_dropped_agent,
            "frames_dropped_client": s.frames_dropped_client,
            "frames_dropped_at_stop": s.frames_dropped_at_stop,
            "frames_read": s.frames_read,
            "frames_recorded": s.frames_recorded,
            "reconnects": s.reconnects,
            "connections": s.connections,
            "records_received": s.records_received,
            "records_dropped": s.records_dropped_client,
            "bytes_received": s.bytes_received,
            "evidence_records": s.evidence_received,
            "state": s.state().as_str(),
            "source_ended": s.source_ended,
            "store_rows": store.len(),
            "roce_packets": st.roce_packets,
            "duration_s": elapsed,
            "memory_bytes": spill.memory_bytes,
            "disk_bytes": spill.disk_bytes,
            "disk_written_bytes": spill.disk_written_bytes,
            "max_disk_bytes": spill.max_disk_bytes,
            "rows_on_disk": spill.rows_on_disk,
            "rows_deleted": spill.rows_deleted,
            "records_deleted": spill.records_deleted,
            "bytes_deleted": spill.bytes_deleted,
            "segments_deleted": spill.segments_deleted,
            "peak_rss_bytes": peak_rss,
            "spill_error": store.spill_error(),
            "analysis": super::output::report_json(
                &analysis.0.lock().unwrap_or_else(|e| e.into_inner()).report()
            ),
            "partitions": parts.as_ref().map(|p| p.json()),
            "error": fatal,
        });
        println!("{v}");
    } else {
        println!(
            "{} frames received, {} dropped ({} by the agent, {} here), {} records, {} bytes, {} reconnects in {:.1} s",
            s.frames_received,
            s.frames_dropped,
            s.frames_dropped_agent,
            s.frames_dropped_client,
            s.records_received,
            s.bytes_received,
            s.reconnects,
            elapsed
        );
        println!(
            "store: {} in memory, {} on disk ({} rows), {} written{}{}",
            size_text(spill.memory_bytes),
            size_text(spill.disk_bytes),
            spill.rows_on_disk,
            size_text(spill.disk_written_bytes),
            if spill.rows_deleted > 0 {
                format!(
                    "; the disk ring deleted {} rows ({} segments)",
                    spill.rows_deleted, spill.segments_deleted
                )
            } else {
                String::new()
            },
            peak_rss
                .map(|b| format!("; peak RSS {}", size_text(b)))
                .unwrap_or_default()
        );
        if let Some(e) = store.spill_error() {
            println!("store: {e}");
        }
    }
    if let Some(p) = &parts {
        eprintln!("rocescope attach: {}", p.text());
        if let Some(e) = &p.error {
            bail!("{e}");
        }
    }
    if let Some(why) = fatal {
        bail!("{why}");
    }
    Ok(())
}

/// `attach --point NAME=URL ...`: a client per point, the points analysed
/// as frames arrive; the workbench on a terminal, else (`--headless`) a
/// summary of each point's link and the analysis of all they received.
fn run_points(args: Args) -> anyhow::Result<()> {
    if args.points.len() < 2 {
        bail!(
            "one --point alone: give two or more, in path order (--point a=tcp://HOST:PORT --point b=tcp://HOST:PORT)"
        );
    }
    if args.parts.partitions.is_some() {
        bail!("--partitions writes one link's packets: not with --point");
    }
    let link_gbps = args.link_gbps.unwrap_or(100.0);
    let limits = args.session.limits();
    let live = start_points(&args.points, link_gbps, &limits, |url| {
        client_config(&args, url)
    })?;
    if !args.headless && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        let model = rocescope_core::live_points::attach_points_model(live);
        return crate::tui::run(args.parts.start(model)?);
    }
    let start = Instant::now();
    let deadline = args.duration.map(|d| start + d);
    loop {
        for line in live.take_log() {
            eprintln!("rocescope attach: {line}");
        }
        if live.all_ended() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let links = live.links();
    let (snaps, report) = live.stop();
    let elapsed = start.elapsed().as_secs_f64();
    let sources: Vec<PathBuf> = links.iter().map(|l| PathBuf::from(&l.url)).collect();
    let error = report.as_ref().err().map(|e| e.to_string());
    if args.json {
        let points: Vec<serde_json::Value> = links
            .iter()
            .zip(&snaps)
            .map(|(l, s)| {
                serde_json::json!({
                    "name": l.name,
                    "url": l.url,
                    "frames_received": s.frames_received,
                    "frames_dropped": s.frames_dropped,
                    "frames_dropped_agent": s.frames_dropped_agent,
                    "frames_dropped_client": s.frames_dropped_client,
                    "frames_dropped_at_stop": s.frames_dropped_at_stop,
                    "reconnects": s.reconnects,
                    "connections": s.connections,
                    "source_ended": s.source_ended,
                    "state": l.state,
                    "error": l.error,
                })
            })
            .collect();
        let v = serde_json::json!({
            "links": points,
            "duration_s": elapsed,
            "multipoint": report.as_ref().ok().map(|r| super::output::multipoint_json(r, &sources)),
            "error": error,
        });
        println!("{v}");
    } else {
        for (l, s) in links.iter().zip(&snaps) {
            println!(
                "point {} {}: {} frames received, {} dropped ({} by the agent, {} here), {} reconnects; {}",
                l.name,
                l.url,
                s.frames_received,
                s.frames_dropped,
                s.frames_dropped_agent,
                s.frames_dropped_client,
                s.reconnects,
                l.state
            );
        }
        println!();
        if let Ok(r) = &report {
            super::stats::points_text(&mut std::io::stdout().lock(), r, &sources, link_gbps)?;
        }
    }
    if let Some(e) = error {
        bail!("{e}");
    }
    Ok(())
}

/// Whether `--point`'s are agents (`NAME=tcp://HOST:PORT`, a live session)
/// rather than files; an error for a mix.
pub(crate) fn points_are_links(points: &[super::args::PointSpec]) -> anyhow::Result<bool> {
    let is_link = |p: &super::args::PointSpec| p.file.to_string_lossy().starts_with("tcp://");
    let links = points.iter().filter(|p| is_link(p)).count();
    if links > 0 && links < points.len() {
        bail!(
            "--point: give every point as a file or every point as an agent (NAME=tcp://HOST:PORT), not a mix"
        );
    }
    Ok(links > 0)
}

/// A client per point (`config` makes each one's settings), the points
/// analysed as frames arrive.
pub(crate) fn start_points(
    points: &[super::args::PointSpec],
    link_gbps: f64,
    limits: &rocescope_core::session::SessionLimits,
    config: impl Fn(AttachUrl) -> anyhow::Result<ClientConfig>,
) -> anyhow::Result<rocescope_core::live_points::LivePoints> {
    use rocescope_core::live_points::{LivePointSpec, LivePoints};
    let mut specs = Vec::new();
    for p in points {
        let url = AttachUrl::parse(&p.file.to_string_lossy())
            .with_context(|| format!("--point {}", p.name))?;
        specs.push(LivePointSpec {
            name: p.name.clone(),
            cfg: config(url)?,
            fixed_offset_ns: p.offset_ns,
        });
    }
    let cfg = rocescope_replay::points::PointsConfig {
        link_gbps,
        ..Default::default()
    };
    Ok(LivePoints::start(specs, cfg, limits)?)
}

/// How long the partition writer may go on writing once the session has
/// ended (the client stopped): what it has not written then is counted and
/// told, and only whole files remain.
const WRITER_GRACE: Duration = Duration::from_secs(2);

/// What the partition writer wrote of the session.
struct Written {
    dir: PathBuf,
    capture: String,
    files: u64,
    rows: u64,
    missed: u64,
    unwritten: u64,
    unwritten_span_ns: Option<(u64, u64)>,
    error: Option<String>,
}

fn written(w: &LiveWriter) -> Written {
    let st = w.status();
    Written {
        dir: w.spec.dir.clone(),
        capture: rocescope_data::partition_capture_name(&w.spec.capture_name()),
        files: st.files_written.load(Ordering::Relaxed),
        rows: st.rows_written.load(Ordering::Relaxed),
        missed: st.rows_missed.load(Ordering::Relaxed),
        unwritten: st.rows_unwritten.load(Ordering::Relaxed),
        unwritten_span_ns: *st
            .unwritten_span_ns
            .lock()
            .unwrap_or_else(|e| e.into_inner()),
        error: w.error(),
    }
}

impl Written {
    fn text(&self) -> String {
        let mut t = format!(
            "{} packets in {} files under {} (capture={})",
            self.rows,
            self.files,
            self.dir.join("packets").display(),
            self.capture
        );
        if self.missed > 0 {
            t.push_str(&format!(
                "; {} rows deleted by the disk ring before written",
                self.missed
            ));
        }
        if self.unwritten > 0 {
            let span = self.unwritten_span_ns.map_or_else(String::new, |(a, b)| {
                format!(
                    " (capture time {} to {})",
                    duration_text(a),
                    duration_text(b)
                )
            });
            t.push_str(&format!(
                "; {} rows{span} NOT written: the writer was behind when the session ended",
                self.unwritten
            ));
        }
        t
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "dir": self.dir.display().to_string(),
            "capture": self.capture,
            "files_written": self.files,
            "rows_written": self.rows,
            "rows_missed": self.missed,
            "rows_unwritten": self.unwritten,
            "error": self.error,
        })
    }
}
