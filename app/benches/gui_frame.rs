//! CPU time of one desktop-workbench frame at 1920x1080 with all nine
//! panels open side by side (model tick + panels + egui layout +
//! tessellation; no GPU upload), on a capture with millions of packets.
//!
//! `cargo bench -p rocescope --bench gui_frame [-- PACKETS]` (default 10M;
//! the capture is generated once in target/bench-data/, shared with the
//! tui_frame bench when it made one of that size).

#[allow(dead_code)]
mod common;

use std::time::Instant;

use eframe::egui;
use rocescope::gui::Workbench;
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (n, store, analysis) = common::indexed_store()?;
    let model = Model::new(store, analysis, SourceHandle::file("bench".into()));
    // As `rocescope gui` does before its first frame.
    rocescope::gui::keep_frame_memory();
    let mut wb = Workbench::new(model, Some(common::all_panels()));
    wb.model.apply(Command::ShowView(View::Packets));
    wb.model.apply(Command::SelectRow(n / 2));
    let ctx = egui::Context::default();
    // Warm up: fonts, the analysis report, layout.
    common::gui_frames(&ctx, &mut wb, 5, 0);
    let frames = 200u32;
    for (what, step) in [("still", 0i64), ("selection moving", 1)] {
        let wall = Instant::now();
        let cpu0 = common::cpu_ns();
        let faults0 = minor_faults();
        let prims = common::gui_frames(&ctx, &mut wb, frames, step);
        let cpu = common::cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6;
        let faults = minor_faults().saturating_sub(faults0) as f64 / f64::from(frames);
        let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / f64::from(frames);
        println!(
            "all panels, 1920x1080, {what:<17} {wall_ms:7.3} ms/frame wall, {cpu:7.3} ms/frame CPU, {faults:7.1} page faults/frame ({prims} clipped meshes)"
        );
    }
    Ok(())
}

/// Minor page faults of the drawing thread so far: memory given back to
/// the system and touched again shows here, whatever the machine's load.
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // The name may hold spaces and parentheses; the fields after it do not.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    // Field 10 of stat (minflt): 7 after the name.
    after_name
        .split_whitespace()
        .nth(7)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
