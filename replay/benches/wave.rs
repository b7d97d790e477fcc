//! Decoding frames out of a large VCD: a 512-bit AXI4-Stream (tkeep,
//! tready, a 250 MHz clock, data changing at the edges as a simulator dumps
//! it) carrying RoCE WRITEs and ACKs, written to `target/bench-data/` (at
//! least 1 GB by default, deleted afterwards). Reports the time to the
//! hierarchy (the interfaces found: the first screen), to the first frame,
//! and the frames per second decoded; then the time to read the hierarchy
//! for the signal browser and to load one chosen signal (`tvalid`, and the
//! 512-bit `tdata`) as the workbench's signals view does, with the memory
//! the loaded signal holds.
//!
//! `cargo bench -p rocescope-replay --bench wave [-- MEGABYTES]`
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Instant;

use rocescope_replay::CaptureReader;

#[path = "common/axis_vcd.rs"]
mod axis_vcd;
use axis_vcd::write_vcd;

fn main() {
    let mb = rocescope_testkit::number_arg(1100);
    let dir = rocescope_testkit::bench_data();
    let path = dir.join(format!("axis-{mb}MB.vcd"));
    let t = Instant::now();
    let frames = write_vcd(&path, mb * 1_000_000);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "waveform: {} ({:.2} GB of VCD, {frames} frames, written in {:.1} s)",
        path.display(),
        size as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let mut r = CaptureReader::open(&path).unwrap();
    let hierarchy_s = t.elapsed().as_secs_f64();
    let w = r.wave().unwrap();
    println!(
        "hierarchy and interfaces (first screen): {:.1} ms ({} interface: {})",
        hierarchy_s * 1e3,
        w.interfaces().len(),
        w.interfaces()[0].name
    );
    let mut n = 0u64;
    let mut bytes = 0u64;
    let mut first_s = 0.0;
    while let Some(f) = r.next_frame().unwrap() {
        if n == 0 {
            first_s = t.elapsed().as_secs_f64();
        }
        n += 1;
        bytes += f.data.len() as u64;
    }
    let total_s = t.elapsed().as_secs_f64();
    assert_eq!(n, frames, "every frame decoded");
    println!("first frame: {:.1} ms", first_s * 1e3);
    println!(
        "decoded {n} frames ({:.1} MB) in {total_s:.2} s: {:.2} M frames/s, {:.0} MB/s of VCD",
        bytes as f64 / 1e6,
        n as f64 / total_s / 1e6,
        size as f64 / total_s / 1e6
    );
    signals(&path);
    std::fs::remove_file(&path).unwrap();
}

/// The process's resident memory (kB), from /proc.
fn rss_kb() -> u64 {
    rocescope_testkit::proc_status_kib("VmRSS:")
}

/// The signals view's costs: the browser's hierarchy, one signal loaded.
fn signals(path: &Path) {
    use rocescope_replay::wave::signals;
    let t = Instant::now();
    let h = signals::hierarchy(path).unwrap();
    println!(
        "signal browser's hierarchy: {:.1} ms ({} signals)",
        t.elapsed().as_secs_f64() * 1e3,
        h.signals.len()
    );
    for name in ["tb.rx.tvalid", "tb.rx.tdata"] {
        let before = rss_kb();
        let t = Instant::now();
        // The streamed load: that signal alone, a pass over the file
        // (`benches/signals.rs` measures the held body).
        let loaded = signals::stream_load(
            path,
            &[name.to_owned()],
            signals::MAX_CHANGES,
            &Default::default(),
        )
        .unwrap();
        let s = &loaded[0];
        let secs = t.elapsed().as_secs_f64();
        let held = (s.changes.capacity() * std::mem::size_of::<signals::Change>()) as f64 / 1e6;
        println!(
            "loaded {name} ({} bits): {secs:.2} s, {} changes kept, {} past the cap counted, \
             {held:.1} MB held ({} bytes a change; RSS +{:.1} MB)",
            s.width_bits,
            s.changes.len(),
            s.dropped,
            std::mem::size_of::<signals::Change>(),
            rss_kb().saturating_sub(before) as f64 / 1e3
        );
    }
}
