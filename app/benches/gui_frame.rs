//! CPU time of one desktop-workbench frame at 1920x1080 with all nine
//! panels open side by side (model tick + panels + egui layout +
//! tessellation; no GPU upload), on a capture with millions of packets.
//!
//! `cargo bench -p rocescope --bench gui_frame [-- PACKETS]` (default 10M;
//! the capture is generated once in target/bench-data/, shared with the
//! tui_frame bench when it made one of that size).

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use eframe::egui;
use egui_dock::{DockState, NodeIndex};
use rocescope::gui::Workbench;
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};
use rocescope_decoders::{DecodeConfig, NakCode, Opcode, PacketBuilder, Syndrome};
use rocescope_replay::store::{RcAnalyzer, Store};

/// Header-only RC WRITE traffic on 8 QPs with ACKs and a NAK + resend
/// every 10,000 packets (the same traffic as the tui_frame bench).
fn write_capture(path: &Path, n: u64) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for v in [0xa1b2_3c4du32, 0x0004_0002, 0, 0, 65535, 1] {
        out.write_all(&v.to_le_bytes())?;
    }
    let mut buf = Vec::new();
    let mut psn = [0u32; 8];
    let mut t_ns = 1_764_400_000_000_000_000u64;
    let mut i = 0u64;
    let req = |op, qp: usize, psn| {
        PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], op, 0x200 + qp as u32, psn)
    };
    let ack = |syn: u8, qp: usize, psn| {
        let mut b = PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            Opcode::RC_ACK,
            0x100 + qp as u32,
            psn,
        );
        b.ext.aeth.syndrome = syn;
        b
    };
    while i < n {
        let qp = (i % 8) as usize;
        let mut frames: Vec<(PacketBuilder, usize)> = Vec::new();
        if i % 10_000 == 9_998 {
            frames.push((
                ack(
                    Syndrome::Nak(NakCode::PsnSequenceError).to_u8(),
                    qp,
                    psn[qp],
                ),
                0,
            ));
            frames.push((req(Opcode::RC_WRITE_MIDDLE, qp, psn[qp]), 4096));
        } else if i % 2 == 1 {
            frames.push((ack(Syndrome::Ack { credits: 31 }.to_u8(), qp, psn[qp]), 0));
        } else {
            psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
            frames.push((req(Opcode::RC_WRITE_MIDDLE, qp, psn[qp]), 4096));
        }
        for (b, payload) in frames {
            b.build_headers_into(payload, &mut buf);
            t_ns += 167;
            let origlen = (b.header_len() + payload + 4) as u32;
            for v in [
                (t_ns / 1_000_000_000) as u32,
                (t_ns % 1_000_000_000) as u32,
                buf.len() as u32,
                origlen,
            ] {
                out.write_all(&v.to_le_bytes())?;
            }
            out.write_all(&buf)?;
            i += 1;
        }
    }
    out.flush()
}

fn cpu_ns() -> u64 {
    // Thread CPU time, so that the background indexer does not count.
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let f: Vec<&str> = s
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    ticks * 10_000_000
}

/// All nine panels visible at once: a 3x3 grid of leaves.
fn all_panels() -> DockState<View> {
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("tui-{n}.pcap"));
    if !path.exists() {
        write_capture(&path, n)?;
    }
    let analysis = RcAnalyzer::default();
    let t = Instant::now();
    let store = Store::open(&path, DecodeConfig::default(), Box::new(analysis.clone()))?;
    store.wait();
    println!(
        "indexed {} packets in {:.2} s",
        store.len(),
        t.elapsed().as_secs_f64()
    );
    let model = Model::new(store, analysis, SourceHandle::file("bench".into()));
    let mut wb = Workbench::new(model, Some(all_panels()));
    wb.model.apply(Command::ShowView(View::Packets));
    wb.model.apply(Command::SelectRow(n / 2));
    let ctx = egui::Context::default();
    let raw = || egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(1920.0, 1080.0),
        )),
        ..Default::default()
    };
    // Warm up: fonts, the analysis report, layout.
    for _ in 0..5 {
        let out = ctx.run(raw(), |ctx| wb.frame(ctx));
        let _ = ctx.tessellate(out.shapes, out.pixels_per_point);
    }
    let frames = 200u32;
    for (what, step) in [("still", 0i64), ("selection moving", 1)] {
        let wall = Instant::now();
        let cpu0 = cpu_ns();
        let mut prims = 0;
        for k in 0..frames {
            if step != 0 {
                wb.model.apply(Command::MoveSelection(if k % 2 == 0 {
                    step
                } else {
                    -step
                }));
            }
            let out = ctx.run(raw(), |ctx| wb.frame(ctx));
            prims = ctx.tessellate(out.shapes, out.pixels_per_point).len();
        }
        let cpu = cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6;
        let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / f64::from(frames);
        println!(
            "all panels, 1920x1080, {what:<17} {wall_ms:7.3} ms/frame wall, {cpu:7.3} ms/frame CPU ({prims} clipped meshes)"
        );
    }
    Ok(())
}
