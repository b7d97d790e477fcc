//! What the frame benches share: the synthetic capture and thread CPU time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use egui_dock::{DockState, NodeIndex};
use rocescope_core::View;
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{RcAnalyzer, Store};
use rocescope_replay::synth::SynthPcap;

use rocescope_decoders::{NakCode, Opcode, PacketBuilder, Syndrome};

/// The bench capture of `n` packets (from the command line, default 10M),
/// indexed with the RC analysis on, as the workbench opens it.
pub fn indexed_store() -> Result<(u64, Arc<Store>, RcAnalyzer), Box<dyn std::error::Error>> {
    let n = rocescope_testkit::number_arg(10_000_000);
    let path = capture(n)?;
    let analysis = RcAnalyzer::default();
    let t = Instant::now();
    let store = Store::open(&path, DecodeConfig::default(), Box::new(analysis.clone()))?;
    store.wait();
    println!(
        "indexed {} packets in {:.2} s",
        store.len(),
        t.elapsed().as_secs_f64()
    );
    Ok((n, store, analysis))
}

/// `target/bench-data/tui-N.pcap`, written on first use.
pub fn capture(n: u64) -> std::io::Result<PathBuf> {
    let dir = rocescope_testkit::bench_data();
    let path = dir.join(format!("tui-{n}.pcap"));
    if !path.exists() {
        write_capture(&path, n)?;
    }
    Ok(path)
}

/// Header-only RC WRITE traffic on 8 QPs with ACKs and, every 10,000
/// packets, a loss: NAK and Go-Back-N resend.
pub fn write_capture(path: &Path, n: u64) -> std::io::Result<()> {
    let mut out = SynthPcap::create(path)?;
    let mut psn = [0u32; 8];
    let mut t_ns = 1_764_400_000_000_000_000u64;
    let mut i = 0u64;
    // An ACK (or NAK) of `psn` from the responder, a 4 KiB WRITE Middle
    // from the requester.
    let ack = |qp: usize, psn: u32, syndrome: Syndrome| {
        let mut b = PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            Opcode::RC_ACK,
            0x100 + qp as u32,
            psn,
        );
        b.ext.aeth.syndrome = syndrome.to_u8();
        (b, 0)
    };
    let write = |qp: usize, psn: u32| {
        let b = PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            Opcode::RC_WRITE_MIDDLE,
            0x200 + qp as u32,
            psn,
        );
        (b, 4096)
    };
    while i < n {
        let qp = (i % 8) as usize;
        let mut frames: Vec<(PacketBuilder, usize)> = Vec::new();
        if i % 10_000 == 9_998 {
            frames.push(ack(qp, psn[qp], Syndrome::Nak(NakCode::PsnSequenceError)));
            frames.push(write(qp, psn[qp]));
        } else if i % 2 == 1 {
            frames.push(ack(qp, psn[qp], Syndrome::Ack { credits: 31 }));
        } else {
            psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
            frames.push(write(qp, psn[qp]));
        }
        for (b, payload) in frames {
            t_ns += 167;
            out.write(t_ns, &b, payload)?;
            i += 1;
        }
    }
    out.finish()
}

pub fn cpu_ns() -> u64 {
    // Thread CPU time, so that the background indexer does not count.
    let (user, system) = rocescope_testkit::proc_cpu_ticks("/proc/thread-self/stat");
    (user + system) * 10_000_000
}

/// All nine panels of the desktop workbench visible at once: a 3x3 grid
/// of leaves.
pub fn all_panels() -> DockState<View> {
    let mut dock = DockState::new(vec![View::Overview]);
    let s = dock.main_surface_mut();
    let [a, rest] = s.split_right(NodeIndex::root(), 0.33, vec![View::Packets]);
    let [b, c] = s.split_right(rest, 0.5, vec![View::Ladder]);
    let [_, a2] = s.split_below(a, 0.33, vec![View::Qps]);
    s.split_below(a2, 0.5, vec![View::Retransmissions]);
    let [_, b2] = s.split_below(b, 0.33, vec![View::Explain]);
    s.split_below(b2, 0.5, vec![View::Slots]);
    let [_, c2] = s.split_below(c, 0.33, vec![View::Profiler]);
    s.split_below(c2, 0.5, vec![View::Lessons]);
    dock
}

/// One frame's input to the desktop workbench: a 1920x1080 screen.
pub fn full_hd() -> eframe::egui::RawInput {
    eframe::egui::RawInput {
        screen_rect: Some(eframe::egui::Rect::from_min_size(
            eframe::egui::Pos2::ZERO,
            eframe::egui::vec2(1920.0, 1080.0),
        )),
        ..Default::default()
    }
}

/// `frames` frames of the desktop workbench (model tick, panels, egui
/// layout and tessellation; no GPU upload), the selection moving back and
/// forth by `step` rows each frame (still where 0); the last frame's
/// clipped meshes.
pub fn gui_frames(
    ctx: &eframe::egui::Context,
    wb: &mut rocescope::gui::Workbench,
    frames: u32,
    step: i64,
) -> usize {
    let mut prims = 0;
    for k in 0..frames {
        if step != 0 {
            let by = if k % 2 == 0 { step } else { -step };
            wb.model.apply(rocescope_core::Command::MoveSelection(by));
        }
        let out = ctx.run(full_hd(), |ctx| wb.frame(ctx));
        prims = ctx.tessellate(out.shapes, out.pixels_per_point).len();
    }
    prims
}

/// `frames` frames of the terminal workbench's view, the selection moving
/// back and forth by a row each frame.
pub fn tui_frames(
    model: &mut rocescope_core::Model,
    terminal: &mut ratatui::Terminal<ratatui::backend::TestBackend>,
    ui: &mut rocescope::tui::UiState,
    frames: u32,
) -> std::io::Result<()> {
    for k in 0..frames {
        let by = if k % 2 == 0 { 1 } else { -1 };
        model.apply(rocescope_core::Command::MoveSelection(by));
        model.tick(Instant::now());
        terminal.draw(|f| rocescope::tui::draw(f, model, ui))?;
    }
    Ok(())
}

/// `view` at row `row`, warmed by a frame (the first also builds the
/// analysis report), then [`tui_frames`]: wall and CPU ms a frame.
pub fn tui_view_frames(
    model: &mut rocescope_core::Model,
    terminal: &mut ratatui::Terminal<ratatui::backend::TestBackend>,
    ui: &mut rocescope::tui::UiState,
    (view, row): (View, u64),
    frames: u32,
) -> std::io::Result<(f64, f64)> {
    model.apply(rocescope_core::Command::ShowView(view));
    model.apply(rocescope_core::Command::SelectRow(row));
    model.tick(Instant::now());
    terminal.draw(|f| rocescope::tui::draw(f, model, ui))?;
    let wall = Instant::now();
    let cpu0 = cpu_ns();
    tui_frames(model, terminal, ui, frames)?;
    let cpu_ms = cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6;
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / f64::from(frames);
    Ok((wall_ms, cpu_ms))
}
