//! Signals at a viewer's speed: the bench VCD (`common/axis_vcd.rs`, at
//! least 1,100 MB by default, written to `target/bench-data/`) loaded as the
//! signals view and `rocescope signals` load it, against wellen's own body
//! pass (what Surfer does before it shows any signal).
//!
//! 1. wellen alone: `viewers::read_header_from_file` and `read_body` on its
//!    thread pool, the time and the memory its compressed signals hold;
//! 2. `SignalFile`: the hierarchy, then the first signal (`tvalid`: the body
//!    read once), then the others one by one (`tdata`, `tlast`, `tkeep`,
//!    `tready`, `clk`), each timed, and the memory held at the end;
//! 3. with `--streamed`, the way every load went before: each signal alone
//!    streamed from the file (`signals::stream_load`).
//!
//! `cargo bench -p rocescope-replay --bench signals [-- MEGABYTES] [--streamed] [--keep]`
//! (`--keep` leaves the VCD for the next run and for whole-process runs of
//! `rocescope signals`.)
#![allow(clippy::unwrap_used)]

#[path = "common/axis_vcd.rs"]
mod axis_vcd;

use std::time::Instant;

use rocescope_replay::wave::SignalFile;
use rocescope_replay::wave::signals::{self, MAX_CHANGES};

/// Anonymous resident memory (kB): what the process holds itself, not the
/// file's pages it mapped.
fn rss_anon_kb() -> u64 {
    rocescope_testkit::proc_status_kib("RssAnon:")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mb: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(1100);
    let streamed = args.iter().any(|a| a == "--streamed");
    let keep = args.iter().any(|a| a == "--keep");
    let dir = rocescope_testkit::bench_data();
    let path = dir.join(format!("axis-{mb}MB.vcd"));
    if !path.exists() || std::fs::metadata(&path).unwrap().len() < mb * 1_000_000 {
        let t = Instant::now();
        let frames = axis_vcd::write_vcd(&path, mb * 1_000_000);
        println!(
            "waveform: {} ({frames} frames, written in {:.1} s)",
            path.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let size = std::fs::metadata(&path).unwrap().len();
    println!("waveform: {:.2} GB of VCD", size as f64 / 1e9);

    // 1. wellen's own body pass.
    {
        let before = rss_anon_kb();
        let t = Instant::now();
        let opts = wellen::LoadOptions {
            multi_thread: true,
            remove_scopes_with_empty_name: false,
        };
        let h = wellen::viewers::read_header_from_file(&path, &opts).unwrap();
        let header_s = t.elapsed().as_secs_f64();
        let body = wellen::viewers::read_body(h.body, &h.hierarchy, None).unwrap();
        let body_s = t.elapsed().as_secs_f64() - header_s;
        println!(
            "wellen: header {:.3} s, body pass {body_s:.2} s, {} time steps; memory held +{:.0} MB",
            header_s,
            body.time_table.len(),
            rss_anon_kb().saturating_sub(before) as f64 / 1e3
        );
    }

    // 2. The held body: the first signal, then every other from memory.
    let before = rss_anon_kb();
    let t = Instant::now();
    let file = SignalFile::open(&path, &Default::default()).unwrap();
    println!(
        "hierarchy: {:.1} ms ({} signals)",
        t.elapsed().as_secs_f64() * 1e3,
        file.hierarchy().signals.len()
    );
    for name in [
        "tb.rx.tvalid",
        "tb.rx.tdata",
        "tb.rx.tlast",
        "tb.rx.tkeep",
        "tb.rx.tready",
        "tb.clk",
    ] {
        let (loaded, timing) = file.load_timed(&[name.to_owned()], MAX_CHANGES).unwrap();
        let s = &loaded[0];
        let what = if timing.body_seconds > 0.0 {
            format!(
                "first signal, the body read in {:.2} s",
                timing.body_seconds
            )
        } else {
            "from memory".into()
        };
        println!(
            "{name} ({} bits): {:.3} s ({what}), {} changes kept, {} past the cap counted",
            s.width_bits,
            timing.seconds,
            s.changes.len(),
            s.dropped
        );
    }
    println!(
        "memory held by the body and the loaded signals: +{:.0} MB",
        rss_anon_kb().saturating_sub(before) as f64 / 1e3
    );
    drop(file);

    // 3. Before: each signal alone, a pass over the file each.
    if streamed {
        for name in ["tb.rx.tvalid", "tb.rx.tdata"] {
            let t = Instant::now();
            let loaded =
                signals::stream_load(&path, &[name.to_owned()], MAX_CHANGES, &Default::default())
                    .unwrap();
            println!(
                "streamed {name}: {:.2} s ({} changes kept)",
                t.elapsed().as_secs_f64(),
                loaded[0].changes.len()
            );
        }
    }
    if !keep {
        std::fs::remove_file(&path).unwrap();
    }
}
