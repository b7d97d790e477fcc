//! `rocescope sim`: run the bundled BALBOA simulator through the whole
//! pipeline (simulate, decode, analyse, store), in the workbench or headless.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rocescope_core::source::{self, Pace, SourceSpec, spawn_sim_into};
use rocescope_replay::PcapngWriter;
use rocescope_sim::{Params, Scenario, experiments};
use serde_json::json;

use super::args::SessionArgs;
use super::output::report_json;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A shipped scenario (default, lossy-link, incast, window-stall,
    /// read-heavy, aes, dpi-drop, teaching-basic, line-rate, dcqcn) or a
    /// scenario TOML file.
    #[arg(long, default_value = "default")]
    pub scenario: String,
    /// Simulated time to run, e.g. 10ms, 500us, 2s (default: the scenario's).
    #[arg(long, value_parser = super::args::duration)]
    pub duration: Option<std::time::Duration>,
    /// Seed of every random choice (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a model parameter, e.g. --set hbm_fetch_ns=3464; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Write every record (frames, profiler, slots, QP state, ground truth) as pcapng.
    #[arg(long, value_name = "OUT.pcapng")]
    pub record: Option<PathBuf>,
    /// Run the pipeline without drawing and print a summary.
    #[arg(long)]
    pub headless: bool,
    /// With --headless (or --experiment): print JSON.
    #[arg(long)]
    pub json: bool,
    /// Simulated seconds per wall second in the workbench (default: real
    /// time, slowed down for runs shorter than 1 ms so they can be watched).
    #[arg(long)]
    pub pace: Option<f64>,
    /// List every model parameter with its default and unit.
    #[arg(long)]
    pub list_params: bool,
    /// Reproduce a measurement of the paper: throughput, fairness, retransmission.
    #[arg(long)]
    pub experiment: Option<String>,
    /// Capture points, in path order: a,sw,b (the first QP's requester, the
    /// switch's mirror, its responder), or node names, or NAME=TAP
    /// (alice=balboa0,mirror=switch,bob=balboa1). Each has its own clock
    /// (an offset within 2 ms, a drift within ±60 ppm, from the seed). With
    /// --out, each point's capture is written there with the truth.
    #[arg(long, value_name = "LIST")]
    pub points: Option<String>,
    /// A point's clock or capture loss: NAME.offset_ns=N,
    /// NAME.drift_ppm=X, NAME.capture_loss=P; repeatable.
    #[arg(long = "point-set", value_name = "NAME.KEY=VALUE")]
    pub point_set: Vec<String>,
    /// With --points: write each point's capture to DIR/NAME.pcapng and
    /// what happened to every lost frame to DIR/truth.json (the finite
    /// run, headless).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub parts: crate::cli::partitions::PartitionArgs,
}

/// The scenario with the command line's overrides applied.
pub fn scenario(args: &Args) -> anyhow::Result<Scenario> {
    let mut sc = Scenario::resolve(&args.scenario).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(d) = args.duration {
        sc.bound_to_ns(super::args::ns(d));
    }
    if let Some(seed) = args.seed {
        sc.seed = seed;
    }
    for kv in &args.set {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--set {kv:?}: expected KEY=VALUE (see rocescope sim --list-params)");
        };
        sc.set(k.trim(), v.trim())
            .map_err(|e| anyhow::anyhow!("--set {kv}: {e}"))?;
    }
    if let Some(list) = &args.points {
        sc.set_points(list)
            .map_err(|e| anyhow::anyhow!("--points {list}: {e}"))?;
    }
    for kv in &args.point_set {
        sc.set_point(kv)
            .map_err(|e| anyhow::anyhow!("--point-set {e}"))?;
    }
    Ok(sc)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.list_params {
        for p in Params::list() {
            let value = format!("{} {}", p.default, p.unit);
            writeln!(out, "{:<28} {:<18} {}", p.name, value.trim(), p.doc)?;
        }
        return Ok(());
    }
    if let Some(name) = &args.experiment {
        let sc = scenario(&args)?;
        let text = experiments::run_json(name, &sc.params).map_err(|e| anyhow::anyhow!("{e}"))?;
        if args.json {
            writeln!(out, "{text}")?;
        } else {
            let v: serde_json::Value = serde_json::from_str(&text)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
        return Ok(());
    }
    let sc = scenario(&args)?;
    if let Some(dir) = &args.out {
        return write_points(sc, dir, args.json);
    }
    let limits = args.session.limits();
    if args.headless && args.parts.partitions.is_some() {
        bail!(
            "--partitions writes from the workbench; headless, use `rocescope sim --headless --record X.pcapng` then `rocescope export X.pcapng --partition`"
        );
    }
    if args.headless {
        let record = match &args.record {
            Some(p) => {
                let file = std::fs::File::create(p)
                    .with_context(|| format!("cannot create {}", p.display()))?;
                Some(
                    PcapngWriter::new(std::io::BufWriter::with_capacity(1 << 20, file))
                        .with_context(|| format!("writing {}", p.display()))?,
                )
            }
            None => None,
        };
        return headless(sc, record, args.json, &limits);
    }
    if !std::io::stdout().is_terminal() {
        bail!(
            "the workbench needs a terminal; for scripts use `rocescope sim --headless [--json]`"
        );
    }
    let pace = args
        .pace
        .map_or_else(|| Pace::for_duration(sc.duration_ns), Pace::RealTime);
    // The source layer keeps the limits for reruns after a parameter change.
    let spec = SourceSpec::Sim {
        scenario: Box::new(sc),
        pace,
        record: args.record.clone(),
    };
    let model = source::open(spec, &limits)?;
    crate::tui::run(args.parts.start(model)?)
}

fn headless(
    sc: Scenario,
    record: Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
    json_out: bool,
    limits: &rocescope_core::session::SessionLimits,
) -> anyhow::Result<()> {
    let name = sc.name.clone();
    let start = Instant::now();
    let (store, analysis, handle) = spawn_sim_into(limits.live_store(0)?, sc, Pace::Fast, record);
    while !handle.status().finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let wall_s = start.elapsed().as_secs_f64();
    store.wait();
    let status = handle.status();
    let sim_time_ns = status.sim_time_ns.load(Ordering::Relaxed);
    if let Some(e) = status.error.lock().ok().and_then(|e| e.clone()) {
        bail!("{e}");
    }
    let report = analysis.finish_report();
    let stats = store.stats();
    let spill = store.spill_stats().unwrap_or_default();
    let mut out = std::io::stdout().lock();
    if json_out {
        let v = json!({
            "scenario": name,
            "sim_time_ns": sim_time_ns,
            "frames": status.frames.load(Ordering::Relaxed),
            "records": status.records.load(Ordering::Relaxed),
            "roce_packets": stats.roce_packets,
            "wall_s": wall_s,
            "sim_seconds_per_wall_second": sim_time_ns as f64 / 1e9 / wall_s.max(1e-9),
            "memory_bytes": spill.memory_bytes,
            "disk_bytes": spill.disk_bytes,
            "disk_written_bytes": spill.disk_written_bytes,
            "rows_on_disk": spill.rows_on_disk,
            "rows_deleted": spill.rows_deleted,
            "records_deleted": spill.records_deleted,
            "peak_rss_bytes": rocescope_core::session::peak_rss_bytes(),
            "analysis": report_json(&report),
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(
            out,
            "scenario {name}: {:.3} ms simulated in {wall_s:.3} s ({:.2}x real time)",
            sim_time_ns as f64 / 1e6,
            sim_time_ns as f64 / 1e9 / wall_s.max(1e-9)
        )?;
        writeln!(
            out,
            "frames {}, other records {}",
            status.frames.load(Ordering::Relaxed),
            status.records.load(Ordering::Relaxed)
        )?;
        writeln!(
            out,
            "QPs {}, retransmitted packets {}, episodes {}, NAKs {}, CNPs {}",
            report.qps.len(),
            report.counters.retransmitted_packets,
            report.episodes.len(),
            report.counters.packet_seq_err,
            report.counters.np_cnp_sent
        )?;
        for f in &report.findings {
            writeln!(out, "  {}", f.text)?;
        }
    }
    Ok(())
}

/// `sim --points a,sw,b --out DIR`: the finite run, each point's capture
/// and the truth written.
fn write_points(sc: Scenario, dir: &std::path::Path, json_out: bool) -> anyhow::Result<()> {
    if sc.points.is_empty() {
        bail!(
            "--out writes the capture points' files: give --points a,sw,b (or a scenario with [[point]]s)"
        );
    }
    let name = sc.name.clone();
    let started = Instant::now();
    let run = rocescope_sim::points::write_points(sc, dir)
        .with_context(|| format!("writing the points to {}", dir.display()))?;
    let mut out = std::io::stdout().lock();
    if json_out {
        let v = json!({
            "scenario": name,
            "sim_time_ns": run.sim_time_ns,
            "files": run.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
            "truth": run.truth_file.display().to_string(),
            "frames": run.truth.frames,
            "drops": run.truth.drops.len(),
            "capture_drops": run.truth.capture_drops.len(),
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    writeln!(
        out,
        "scenario {name}: {:.3} ms simulated in {:.3} s; {} lost on their way, {} missed by a point",
        run.sim_time_ns as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        run.truth.drops.len(),
        run.truth.capture_drops.len()
    )?;
    for (f, n) in run.files.iter().zip(&run.truth.frames) {
        writeln!(out, "  {} ({n} frames)", f.display())?;
    }
    writeln!(
        out,
        "  {} (where each frame was lost)",
        run.truth_file.display()
    )?;
    Ok(())
}
