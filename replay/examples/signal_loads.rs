//! A waveform's signals loaded in turn as the signals view and `rocescope
//! signals` load them (`SignalFile`: the body read on the first, the others
//! from memory), each load's time on stderr: the whole-process side of
//! BENCHMARKS.md, "Signals at a viewer's speed", against `wellen_body`.
//!
//! `cargo run --release -p rocescope-replay --example signal_loads -- [--streamed] FILE SIGNAL...`
//! (`--streamed`: each signal alone streamed from the file, a pass each, the
//! way every load went before `SignalFile`.)
#![allow(clippy::unwrap_used)]

use rocescope_replay::wave::SignalFile;
use rocescope_replay::wave::signals::{MAX_CHANGES, stream_load};

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let streamed = args.next_if(|a| a == "--streamed").is_some();
    let path = args.next().expect("a waveform file");
    if streamed {
        for name in args {
            let t = std::time::Instant::now();
            let loaded = stream_load(
                std::path::Path::new(&path),
                std::slice::from_ref(&name),
                MAX_CHANGES,
                &Default::default(),
            )
            .unwrap();
            eprintln!(
                "{name}: {:.3} s (streamed), {} changes kept",
                t.elapsed().as_secs_f64(),
                loaded[0].changes.len()
            );
        }
        return;
    }
    let file = SignalFile::open(std::path::Path::new(&path), &Default::default()).unwrap();
    for name in args {
        let (loaded, t) = file
            .load_timed(std::slice::from_ref(&name), MAX_CHANGES)
            .unwrap();
        eprintln!(
            "{name}: {:.3} s (body {:.3} s), {} changes kept, {} counted past the cap",
            t.seconds,
            t.body_seconds,
            loaded[0].changes.len(),
            loaded[0].dropped
        );
    }
}
