//! wellen's own body pass over a waveform, as Surfer does before it shows a
//! signal (`viewers::read_header_from_file`, `read_body` on its thread pool):
//! the baseline `signal_loads` is compared with (BENCHMARKS.md, "Signals at
//! a viewer's speed").
//!
//! `cargo run --release -p rocescope-replay --example wellen_body -- FILE`
#![allow(clippy::unwrap_used)]

fn main() {
    let path = std::env::args().nth(1).expect("a waveform file");
    let t = std::time::Instant::now();
    let opts = wellen::LoadOptions {
        multi_thread: true,
        remove_scopes_with_empty_name: false,
    };
    let h = wellen::viewers::read_header_from_file(&path, &opts).unwrap();
    let body = wellen::viewers::read_body(h.body, &h.hierarchy, None).unwrap();
    eprintln!(
        "body pass: {:.3} s, {} time steps",
        t.elapsed().as_secs_f64(),
        body.time_table.len()
    );
}
