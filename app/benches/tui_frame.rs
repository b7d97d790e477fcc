//! CPU time of one workbench frame (model tick + queries + layout + render)
//! at 200x50 with millions of packets indexed.
//!
//! `cargo bench -p rocescope --bench tui_frame [-- PACKETS]` (default 10M;
//! the capture is generated once in target/bench-data/).

mod common;

use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rocescope::tui::{UiState, draw};
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (n, store, analysis) = common::indexed_store()?;
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
        let cpu0 = common::cpu_ns();
        for k in 0..frames {
            model.apply(Command::MoveSelection(if k % 2 == 0 { 1 } else { -1 }));
            model.tick(Instant::now());
            terminal.draw(|f| draw(f, &model, &mut ui))?;
        }
        let cpu = common::cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6;
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
