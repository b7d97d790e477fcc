//! `rocescope open FILE`: index the capture in the background and open the
//! terminal workbench at once.

use std::path::PathBuf;

use rocescope_core::source::{OpenError, SourceSpec, open};
use rocescope_replay::CaptureError;
use rocescope_replay::store::StoreError;

use super::args::{FileArgs, PointArgs};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST,
    /// a Vivado ILA capture as CSV or VCD); or --point, several (the first
    /// point's capture shown, the points' analysis in the Overview).
    #[arg(required_unless_present = "points", conflicts_with = "points")]
    file: Option<PathBuf>,
    #[command(flatten)]
    file_args: FileArgs,
    #[command(flatten)]
    points: PointArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = rocescope_replay::wave::WaveOptions {
        max_held_bytes: args.file_args.memory.max_memory,
        ..args.file_args.wave_args.options()
    };
    let limits = args.file_args.memory.limits();
    if args.points.given()? {
        let opened = crate::cli::capture::OpenedPoints::open(
            &args.points,
            &args.file_args.decode,
            &options,
            &limits,
        )?;
        // A point that could not be read whole was said on stderr; the
        // workbench shows what was read, as for one capture.
        return crate::tui::run(opened.into_model());
    }
    let Some(file) = args.file else {
        anyhow::bail!("give a capture, or two or more --point NAME=FILE");
    };
    let spec = SourceSpec::File {
        path: file.clone(),
        decode: args.file_args.decode.config(),
        wave: options.clone(),
    };
    let mut model = match open(spec, &limits) {
        Ok(m) => m,
        // A file that is not there says so once, without its path twice.
        Err(OpenError::File {
            source: e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_)),
            ..
        }) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    };
    crate::with_wave(
        &mut model,
        &file,
        args.file_args.align.wave.as_deref(),
        &options,
    )?;
    crate::tui::run(model)
}
