//! CPU time of one workbench frame (model tick + queries + layout + render)
//! at 200x50 with millions of packets indexed.
//!
//! `cargo bench -p rocescope --bench tui_frame [-- PACKETS]` (default 10M;
//! the capture is generated once in target/bench-data/).

#[allow(dead_code)]
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
    for view in model.views() {
        let (wall_ms, cpu) =
            common::tui_view_frames(&mut model, &mut terminal, &mut ui, (view, n / 2), frames)?;
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
    // End over the whole file, unfiltered, then a filter's scan of every
    // row to its end and End among its matches.
    model.apply(Command::SetFilter(String::new()));
    let end = |model: &mut Model,
               terminal: &mut Terminal<TestBackend>,
               ui: &mut UiState|
     -> Result<f64, Box<dyn std::error::Error>> {
        let t = Instant::now();
        model.apply(Command::SelectLast);
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, model, ui))?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    println!(
        "End              {:7.3} ms (select the last of {n} rows, one frame)",
        end(&mut model, &mut terminal, &mut ui)?
    );
    let t = Instant::now();
    model.apply(Command::SetFilter("rocescope.retransmission".into()));
    loop {
        model.tick(Instant::now());
        let (scanned, stored) = model.filter_progress();
        if scanned >= stored {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    println!(
        "filter scan      {:7.1} ms (rocescope.retransmission over every row: {} matches)",
        t.elapsed().as_secs_f64() * 1e3,
        model.visible_len()
    );
    println!(
        "End, filtered    {:7.3} ms (the last match, one frame)",
        end(&mut model, &mut terminal, &mut ui)?
    );
    let cpu0 = common::cpu_ns();
    for k in 0..frames {
        model.apply(Command::MoveSelection(if k % 2 == 0 { -1 } else { 1 }));
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
    }
    println!(
        "Packets filtered {:7.3} ms/frame CPU",
        common::cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6
    );
    Ok(())
}
