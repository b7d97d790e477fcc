//! `rocescope open FILE`: index the capture in the background and open the
//! terminal workbench at once.

use std::path::PathBuf;

use rocescope_core::source::{OpenError, SourceSpec, open};
use rocescope_replay::CaptureError;
use rocescope_replay::store::StoreError;

use super::args::{AlignArgs, DecodeOpts, WaveArgs};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST,
    /// a Vivado ILA capture as CSV or VCD).
    file: PathBuf,
    #[command(flatten)]
    align: AlignArgs,
    #[command(flatten)]
    decode: DecodeOpts,
    #[command(flatten)]
    wave_args: WaveArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = args.wave_args.options();
    let spec = SourceSpec::File {
        path: args.file.clone(),
        decode: args.decode.config(),
        wave: options.clone(),
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
    crate::with_wave(&mut model, &args.file, args.align.wave.as_deref(), &options)?;
    crate::tui::run(model)
}
