//! A capture whose index is past the memory cap, opened as `rocescope open
//! FILE --max-memory CAP` opens it (the RC analysis on, the index bounded):
//! time to the first screen (a 200x50 frame with rows), time to the full
//! index, the process's RSS every 100 ms against the cap + 20%, then the
//! workbench over the whole file: End, a filter scanned over every row,
//! frame times at the end of the file, then each terminal view's and the
//! desktop's nine panels' CPU a frame in the middle of it.
//!
//! `cargo bench -p rocescope --bench file_memory -- [PACKETS] [CAP] [keep]`
//! (defaults: 25,000,000 packets, 1.9 GB of header-only capture with a NAK
//! and Go-Back-N resend every 10,000 packets; 256MiB). The capture is
//! written to target/bench-data/ and removed at the end unless `keep`; the
//! index segments go to target/tmp/ and are removed with the store.

#[allow(dead_code)]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rocescope::tui::{UiState, draw};
use rocescope_core::session::SessionLimits;
use rocescope_core::source::{SourceSpec, open};
use rocescope_core::{Command, Model, View};

fn rss_bytes() -> u64 {
    rocescope_testkit::proc_status_kib("VmRSS:") * 1024
}

fn mib(b: u64) -> f64 {
    b as f64 / 1048576.0
}

/// Frames until the filter's scan covered every row.
fn scan(model: &mut Model, terminal: &mut Terminal<TestBackend>, ui: &mut UiState) {
    loop {
        model.tick(Instant::now());
        let _ = terminal.draw(|f| draw(f, model, ui));
        let (scanned, len) = model.filter_progress();
        if scanned >= len {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = rocescope_testkit::bench_args();
    let n: u64 = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(25_000_000);
    let cap = args
        .iter()
        .find(|a| a.ends_with('B'))
        .cloned()
        .unwrap_or_else(|| "256MiB".into());
    let cap_bytes = rocescope_decoders::units::parse_size_bytes(&cap)?;
    let keep = args.iter().any(|a| a == "keep");
    let data = rocescope_testkit::bench_data();
    let path = data.join(format!("file-memory-{n}.pcap"));
    if !path.exists() {
        let t = Instant::now();
        common::write_capture(&path, n)?;
        println!(
            "wrote {} in {:.1} s",
            path.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let file_bytes = std::fs::metadata(&path)?.len();

    // RSS every 100 ms from before the open to the end.
    let done = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !done.load(Ordering::Relaxed) {
                samples.push((t0.elapsed().as_secs_f64(), rss_bytes()));
                std::thread::sleep(Duration::from_millis(100));
            }
            samples
        })
    };
    let limits = SessionLimits {
        max_memory_bytes: cap_bytes,
        max_disk_bytes: None,
        dir: Some(
            rocescope_testkit::build_tmp().join(format!("file-memory-{}", std::process::id())),
        ),
        index_dir: None,
    };
    let spec = SourceSpec::File {
        path: path.clone(),
        decode: Default::default(),
        wave: Default::default(),
    };
    let mut model = open(spec, &limits)?;
    let mut terminal = Terminal::new(TestBackend::new(200, 50))?;
    let mut ui = UiState::default();
    loop {
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
        if model.visible_len() > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let first_screen_s = t0.elapsed().as_secs_f64();
    // The workbench's frames go on while the file is indexed.
    while !model.store().wait_timeout(Duration::from_millis(50)) {
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
    }
    let indexed_s = t0.elapsed().as_secs_f64();
    model.tick(Instant::now());
    let spill = model.store().spill_stats().unwrap_or_default();
    let rows = model.store().len();
    let index_bytes = model.store().index_bytes();

    // The whole file in the workbench: End, then a filter over every row.
    model.apply(Command::ShowView(View::Packets));
    let t = Instant::now();
    model.apply(Command::SelectLast);
    model.tick(Instant::now());
    terminal.draw(|f| draw(f, &model, &mut ui))?;
    let end_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    model.apply(Command::SetFilter("nak".into()));
    scan(&mut model, &mut terminal, &mut ui);
    let filter_s = t.elapsed().as_secs_f64();
    let matched = model.visible_len();
    model.apply(Command::SetFilter(String::new()));
    model.apply(Command::SelectLast);
    let frames = 100u32;
    let t = Instant::now();
    for k in 0..frames {
        model.apply(Command::MoveSelection(if k % 2 == 0 { -1 } else { 1 }));
        model.tick(Instant::now());
        terminal.draw(|f| draw(f, &model, &mut ui))?;
    }
    let frame_ms = t.elapsed().as_secs_f64() * 1e3 / f64::from(frames);

    // Each terminal view at the middle of the file, the index past the cap
    // (rows read back from disk segments where they are).
    let mut views = Vec::new();
    for view in model.views() {
        let (_, cpu_ms) =
            common::tui_view_frames(&mut model, &mut terminal, &mut ui, (view, rows / 2), frames)?;
        views.push(format!("{} {cpu_ms:.2}", view.title()));
    }
    // The desktop workbench's nine panels at 1920x1080 on the same model,
    // its allocator set as `rocescope gui` sets it before its first frame.
    rocescope::gui::keep_frame_memory();
    let mut wb = rocescope::gui::Workbench::new(model, Some(common::all_panels()));
    wb.model.apply(Command::ShowView(View::Packets));
    wb.model.apply(Command::SelectRow(rows / 2));
    let ctx = eframe::egui::Context::default();
    common::gui_frames(&ctx, &mut wb, 5, 0);
    let mut gui = Vec::new();
    for (what, step) in [("still", 0i64), ("selection moving", 1)] {
        let cpu0 = common::cpu_ns();
        common::gui_frames(&ctx, &mut wb, frames, step);
        let cpu_ms = common::cpu_ns().saturating_sub(cpu0) as f64 / f64::from(frames) / 1e6;
        gui.push(format!("{what} {cpu_ms:.2}"));
    }
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap_or_default();
    let peak = samples.iter().map(|s| s.1).max().unwrap_or(0);

    println!(
        "{rows} packets ({:.2} GB) under --max-memory {cap}: first screen {:.0} ms, full index {indexed_s:.2} s ({:.1} Mpackets/s)",
        file_bytes as f64 / 1e9,
        first_screen_s * 1e3,
        rows as f64 / indexed_s / 1e6,
    );
    println!(
        "index: {} rows on disk ({:.1} MiB of segments), {:.1} MiB in memory",
        spill.rows_on_disk,
        mib(spill.disk_bytes),
        mib(spill.memory_bytes.max(index_bytes)),
    );
    println!(
        "RSS: peak {:.1} MiB, cap + 20% {:.1} MiB: {}",
        mib(peak),
        mib(cap_bytes) * 1.2,
        if peak as f64 <= cap_bytes as f64 * 1.2 {
            "within"
        } else {
            "OVER"
        }
    );
    let step = (samples.len() / 12).max(1);
    let over_time: Vec<String> = samples
        .iter()
        .step_by(step)
        .map(|(t, b)| format!("{t:.1}s {:.0}", mib(*b)))
        .collect();
    println!("RSS over time (MiB): {}", over_time.join(", "));
    println!(
        "End {end_ms:.1} ms; filter `nak` over every row {filter_s:.2} s ({matched} rows); frame at the end {frame_ms:.2} ms"
    );
    println!("terminal views, ms CPU a frame: {}", views.join(", "));
    println!("desktop, nine panels, ms CPU a frame: {}", gui.join(", "));
    drop(wb);
    if !keep {
        std::fs::remove_file(&path)?;
    }
    Ok(())
}
