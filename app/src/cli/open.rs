//! `rocescope open FILE`: index the capture in the background and open the
//! terminal workbench at once.

use std::path::PathBuf;

use rocescope_core::source::{OpenError, SourceSpec, open};
use rocescope_replay::CaptureError;
use rocescope_replay::store::StoreError;

use super::args::{DecodeOpts, WaveOpts};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (pcap, pcapng, BALBOA sniffer dump) or waveform (VCD, FST).
    file: PathBuf,
    #[command(flatten)]
    wave: WaveOpts,
    #[command(flatten)]
    decode: DecodeOpts,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let spec = SourceSpec::File {
        path: args.file.clone(),
        decode: args.decode.config(),
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
    crate::with_wave(&mut model, &args.file, args.wave.wave.as_deref())?;
    crate::tui::run(model)
}
