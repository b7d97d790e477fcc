//! `rocescope gui [FILE | --attach URL | --sim SCENARIO | --point ...]`:
//! the desktop workbench on a capture, a live link, the simulator, or
//! several capture points (files, or agents `NAME=tcp://HOST:PORT` live).

use std::path::PathBuf;

use rocescope_core::source;

use super::args::{DecodeOpts, PointArgs, SessionArgs, WaveArgs};
use super::partitions::PartitionArgs;
use crate::gui::{open_file, sim_model_within};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file to open (pcap, pcapng, BALBOA sniffer dump); or
    /// --point, several (the first point's capture shown, the points'
    /// analysis in the Overview).
    #[arg(conflicts_with = "points")]
    pub file: Option<PathBuf>,
    /// Attach to a live source: tcp://HOST:PORT, - (stdin) or file:PATH[?follow].
    #[arg(long, value_name = "URL", conflicts_with_all = ["file", "sim", "points"])]
    pub attach: Option<String>,
    /// Run a simulator scenario (default when no file is given: `default`).
    #[arg(long, value_name = "SCENARIO", conflicts_with_all = ["file", "points"])]
    pub sim: Option<String>,
    #[command(flatten)]
    pub decode: DecodeOpts,
    /// A waveform (VCD, FST) of the same traffic as the capture: aligned by
    /// content, its signals shown beside the packets.
    #[arg(long, value_name = "WAVE", requires = "file")]
    pub wave: Option<PathBuf>,
    #[command(flatten)]
    pub wave_args: WaveArgs,
    #[command(flatten)]
    pub points: PointArgs,
    #[command(flatten)]
    pub session: SessionArgs,
    /// Keep the capture file's index in DIR (one folder per capture, about
    /// 24 bytes a packet), with its RC analysis, and read them back at the
    /// next open of the unchanged file instead of indexing it; a stale one
    /// (the file's size or modification time changed, other --roce-port or
    /// analysis settings, another version) is said and rebuilt.
    #[arg(long, value_name = "DIR", requires = "file")]
    pub index_dir: Option<PathBuf>,
    #[command(flatten)]
    pub parts: PartitionArgs,
    /// Close the window after this many seconds (smoke tests, demos).
    #[arg(long, value_name = "SECONDS", hide = true)]
    pub exit_after: Option<f64>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let limits = rocescope_core::session::SessionLimits {
        index_dir: args.index_dir.clone(),
        ..args.session.limits()
    };
    let model = if let Some(url) = &args.attach {
        let url = rocescope_device_link::AttachUrl::parse(url)?;
        source::open(
            source::SourceSpec::Attach(Box::new(rocescope_device_link::ClientConfig::new(url))),
            &limits,
        )?
    } else if args.points.given()? && super::attach::points_are_links(&args.points.points)? {
        // Agents, one per point: a live session.
        let live = super::attach::start_points(
            &args.points.points,
            args.points.link_gbps(),
            &limits,
            |url| Ok(rocescope_device_link::ClientConfig::new(url)),
        )?;
        rocescope_core::live_points::attach_points_model(live)
    } else if args.points.given()? {
        crate::cli::capture::OpenedPoints::open(
            &args.points,
            &args.decode,
            &args.wave_args.options(),
            &limits,
        )?
        .into_model()
    } else if let Some(file) = &args.file {
        let options = rocescope_replay::wave::WaveOptions {
            max_held_bytes: args.session.max_memory,
            ..args.wave_args.options()
        };
        let mut m = open_file(file, args.decode.roce_ports.clone(), &options, &limits)?;
        crate::with_wave(&mut m, file, args.wave.as_deref(), &options)?;
        m
    } else {
        sim_model_within(args.sim.as_deref().unwrap_or("default"), &limits)?
    };
    crate::gui::run(args.parts.start(model)?, args.exit_after)
}
