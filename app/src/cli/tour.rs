//! `rocescope tour`: the bundled sample decoded, without a terminal UI.

use std::io::{self, BufWriter, Write};

use anyhow::Context;
use rocescope_decoders::DecodeConfig;
use rocescope_replay::CaptureReader;

use super::decode::{analyse, decode_stream};

/// A small RC WRITE/READ exchange with one loss and its Go-Back-N recovery,
/// made by rocescope's own builders (see assets/captures/README.md).
const SAMPLE: &[u8] = include_bytes!("../../../assets/captures/sample-write-read.pcap");

/// What `cargo run --release` shows until the workbench lands: the bundled
/// sample decoded, and how to go on.
pub fn run() -> anyhow::Result<()> {
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    writeln!(
        out,
        "rocescope {} - decoding the bundled sample capture (RC WRITE + READ, one lost packet):\n",
        env!("CARGO_PKG_VERSION")
    )?;
    let cfg = DecodeConfig::default();
    let first = CaptureReader::new(SAMPLE).context("bundled sample capture")?;
    let verdicts = analyse(first, &cfg)?;
    let reader = CaptureReader::new(SAMPLE).context("bundled sample capture")?;
    decode_stream(reader, "bundled sample", false, &cfg, &verdicts, &mut out)?;
    writeln!(
        out,
        "\nNext: rocescope decode FILE [--format jsonl]   (rocescope --help for more)"
    )?;
    out.flush()?;
    Ok(())
}
