//! CPU time of one workbench frame (model tick + queries + layout + render)
//! at 200x50 with millions of packets indexed.
//!
//! `cargo bench -p rocescope --bench tui_frame [-- PACKETS]` (default 10M;
//! the capture is generated once in target/bench-data/).

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rocescope::tui::{UiState, draw};
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};
use rocescope_decoders::{DecodeConfig, NakCode, Opcode, PacketBuilder, Syndrome};
use rocescope_replay::store::{RcAnalyzer, Store};

/// Header-only RC WRITE traffic on 8 QPs with ACKs and, every 10,000
/// packets, a loss: NAK and Go-Back-N resend.
fn write_capture(path: &Path, n: u64) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for v in [0xa1b2_3c4du32, 0x0004_0002, 0, 0, 65535, 1] {
        out.write_all(&v.to_le_bytes())?;
    }
    let mut buf = Vec::new();
    let mut psn = [0u32; 8];
    let mut t_ns = 1_764_400_000_000_000_000u64;
    let mut i = 0u64;
    while i < n {
        let qp = (i % 8) as usize;
        let mut frames: Vec<(PacketBuilder, usize)> = Vec::new();
        if i % 10_000 == 9_998 {
            let mut nak = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 2],
                [10, 0, 0, 1],
                Opcode::RC_ACK,
                0x100 + qp as u32,
                psn[qp],
            );
            nak.ext.aeth.syndrome = Syndrome::Nak(NakCode::PsnSequenceError).to_u8();
            frames.push((nak, 0));
            frames.push((
                PacketBuilder::rocev2_ipv4(
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    Opcode::RC_WRITE_MIDDLE,
                    0x200 + qp as u32,
                    psn[qp],
                ),
                4096,
            ));
        } else if i % 2 == 1 {
            let mut b = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 2],
                [10, 0, 0, 1],
                Opcode::RC_ACK,
                0x100 + qp as u32,
                psn[qp],
            );
            b.ext.aeth.syndrome = Syndrome::Ack { credits: 31 }.to_u8();
            frames.push((b, 0));
        } else {
            psn[qp] = (psn[qp] + 1) & 0xFF_FFFF;
            frames.push((
                PacketBuilder::rocev2_ipv4(
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    Opcode::RC_WRITE_MIDDLE,
                    0x200 + qp as u32,
                    psn[qp],
                ),
                4096,
            ));
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
    let mut model = Model::new(store, analysis, SourceHandle::file("bench".into()));
    let mut terminal = Terminal::new(TestBackend::new(200, 50))?;
    let mut ui = UiState::default();
    let frames = 200u32;
    for view in View::ALL {
        model.apply(Command::ShowView(view));
        model.apply(Command::SelectRow(n / 2));
        // Warm up (the first frame also builds the analysis report).
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
        let wall = Instant::now();
        let cpu0 = cpu_ns();
        for k in 0..frames {
            model.apply(Command::MoveSelection(if k % 2 == 0 { 1 } else { -1 }));
            model.tick(Instant::now());
            terminal.draw(|f| draw(f, &model, &mut ui))?;
        }
        let cpu = cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6;
        let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / f64::from(frames);
        println!(
            "{:<16} {wall_ms:7.3} ms/frame wall, {cpu:7.3} ms/frame CPU",
            view.title()
        );
    }
    // Typing in the filter bar: one keystroke = SetFilter + a frame.
    model.apply(Command::ShowView(View::Packets));
    let wall = Instant::now();
    let text = "bth.psn >= 100 && rocescope.retransmission";
    for k in 1..=text.len() {
        model.apply(Command::SetFilter(text[..k].to_owned()));
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
    }
    println!(
        "filter keystroke  {:7.3} ms (parse, restart the scan, one frame)",
        wall.elapsed().as_secs_f64() * 1e3 / text.len() as f64
    );
    Ok(())
}
