//! The workbench drawn headless on fixed data: a recording of the
//! `lossy-link` scenario and the bundled sample capture. Each panel (and
//! the whole window) must draw no text over other text, no character the
//! fonts lack, and match its committed image in golden/ within a
//! tolerance. Accept an intended change with app/scripts/accept-golden.sh
//! (`ROCESCOPE_ACCEPT_GOLDEN=1 cargo test -p rocescope --lib gui::golden`).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use eframe::egui;
use egui_dock::DockState;
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{RcAnalyzer, Store};
use rocescope_sim::{Scenario, Simulator};

use super::Workbench;
use super::headless::{Headless, check_golden, overlaps};
use super::layout::{self, THROUGHPUT_PLOT_ID};

const W: f32 = 960.0;
const H: f32 = 600.0;

/// `lossy-link` recorded once per test process (deterministic: the
/// scenario has a seed), as `rocescope sim --scenario lossy-link --record`,
/// to target/golden/lossy-link.pcapng (under 1 MB; replaced, not left
/// behind; written aside and renamed, so that another test run reading it
/// keeps its file).
fn lossy_recording() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let app = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = app.parent().unwrap_or(app).join("target/golden");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lossy-link.pcapng");
        let part = dir.join(format!("lossy-link.pcapng.{}", std::process::id()));
        let sc = Scenario::builtin("lossy-link").unwrap();
        Simulator::new(sc).record_to(&part).unwrap();
        std::fs::rename(&part, &path).unwrap();
        path
    })
    .clone()
}

/// A capture opened as `rocescope gui FILE` opens it, indexed to the end,
/// paused (no wall-clock replay), packet `select` selected.
fn file_model(path: &std::path::Path, select: u64) -> Model {
    let analysis = RcAnalyzer::default();
    let store = Store::open(path, DecodeConfig::default(), Box::new(analysis.clone())).unwrap();
    store.wait();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    crate::keep_test_progress_apart();
    let mut m = Model::new(store, analysis, SourceHandle::file(name));
    // The picture does not depend on what lessons the machine has seen.
    m.forget_lesson_progress();
    m.tick(std::time::Instant::now());
    m.apply(Command::Pause);
    m.apply(Command::SelectRow(select));
    m
}

fn lossy_model() -> Model {
    file_model(&lossy_recording(), 5)
}

fn sample_model() -> Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/captures/sample-write-read.pcap");
    file_model(&path, 5)
}

/// Draw `wb` until it settles; check its text and its image `name`.
fn check(name: &str, wb: &mut Workbench) -> Vec<String> {
    check_at(name, wb, W, H)
}

/// [`check`] in a window of `w` x `h`.
fn check_at(name: &str, wb: &mut Workbench, w: f32, h: f32) -> Vec<String> {
    let mut h = Headless::new(w, h);
    let out = h.settle(wb);
    let texts = h.texts(&out);
    let mut problems: Vec<String> = overlaps(&texts, 1.0)
        .into_iter()
        .map(|o| format!("{name}: text over text: {o}"))
        .collect();
    for t in &texts {
        if !t.missing.is_empty() {
            problems.push(format!(
                "{name}: no glyph for {:?} in {:?}",
                t.missing, t.text
            ));
        }
    }
    if let Err(e) = check_golden(name, &h.render(&out)) {
        problems.push(e);
    }
    problems
}

fn panel(view: View, model: Model) -> Workbench {
    let mut m = model;
    m.apply(Command::ShowView(view));
    Workbench::new(m, Some(DockState::new(vec![view])))
}

const PANELS: [(View, &str); 9] = [
    (View::Overview, "overview"),
    (View::Packets, "packets"),
    (View::Qps, "qps"),
    (View::Ladder, "ladder"),
    (View::Retransmissions, "retransmissions"),
    (View::Slots, "slots"),
    (View::Profiler, "profiler"),
    (View::Explain, "explain"),
    (View::Lessons, "lessons"),
];

#[test]
fn each_panel_is_drawn_right_on_lossy_link() {
    let mut problems = Vec::new();
    for (view, name) in PANELS {
        let mut wb = panel(view, lossy_model());
        problems.extend(check(&format!("lossy-{name}"), &mut wb));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// A session of capture points (lossy-link at a, sw, b): the panels that
/// show the points, each glyph drawable and the image its golden.
#[test]
fn the_capture_points_panels_are_drawn_right_on_lossy_link() {
    let mut problems = Vec::new();
    for (view, name) in [
        (View::Losses, "losses"),
        (View::Ladder, "ladder"),
        (View::Overview, "overview"),
    ] {
        let (mut m, _dir) = crate::test_points::model(&format!("golden-points-{name}"));
        if view == View::Ladder {
            // The first loss, its arrow ending between a and sw.
            m.apply(Command::ShowView(View::Losses));
            m.apply(Command::OpenSelectedQp);
        }
        let mut wb = panel(view, m);
        problems.extend(check(&format!("points-{name}"), &mut wb));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_packets_panel_and_the_window_are_drawn_right_on_the_sample() {
    let mut problems = check("sample-packets", &mut panel(View::Packets, sample_model()));
    problems.extend(check(
        "sample-window",
        &mut Workbench::new(sample_model(), None),
    ));
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_whole_window_is_drawn_right_on_lossy_link() {
    let problems = check("lossy-window", &mut Workbench::new(lossy_model(), None));
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The bug: on lossy-link the y axis reached 600 GB/s on a 12.5 GB/s
/// link (the findings' shading, up to the top, grew the auto bounds).
#[test]
fn the_throughput_axis_is_scaled_to_the_data_under_the_link_rate() {
    let sc = Scenario::builtin("lossy-link").unwrap();
    let link = sc.params.link_gbps / 8.0;
    let mut wb = panel(View::Overview, lossy_model());
    let report = wb.model.report();
    assert!(!report.findings.is_empty(), "lossy-link has drops");
    let data_max = report
        .qps
        .iter()
        .map(|q| layout::series_max_gbytes_s(&q.series))
        .fold(0.0, f64::max);
    assert!(data_max > 0.0);
    let mut h = Headless::new(W, H);
    for _ in 0..60 {
        h.frame(&mut wb, Vec::new());
    }
    let mem = egui_plot::PlotMemory::load(&h.ctx, egui::Id::new(THROUGHPUT_PLOT_ID)).unwrap();
    let top = mem.bounds().max()[1];
    assert!(
        top <= link * 1.1 && top >= data_max,
        "y axis to {top} GB/s: data up to {data_max}, link {link}"
    );
}

/// The bug: the frame summary wrapped onto a second line that the detail
/// tree's first rows were drawn under; it is one line above the tree.
#[test]
fn the_frame_summary_is_one_line_above_the_detail_tree() {
    let mut wb = panel(View::Packets, sample_model());
    let mut h = Headless::new(W, H);
    let out = h.settle(&mut wb);
    let texts = h.texts(&out);
    let summary = texts
        .iter()
        .find(|t| t.text.starts_with("Frame 6: "))
        .unwrap();
    assert_eq!(summary.rows.len(), 1, "{:?}", summary.rows);
    let bottom = summary.rows[0].bottom();
    let field = texts
        .iter()
        .filter(|t| t.text.contains("Destination:") || t.text.contains("Source:"))
        .map(|t| t.rows[0].top())
        .fold(f32::INFINITY, f32::min);
    assert!(
        field >= bottom,
        "tree row at {field}, summary ends at {bottom}"
    );
}

/// A character the bundled fonts lack (egui draws a box for it) is found.
#[test]
fn a_missing_glyph_is_caught() {
    let ctx = egui::Context::default();
    let out = ctx.run(egui::RawInput::default(), |ctx| {
        egui::CentralPanel::default().show(ctx, |ui| ui.label("10.0.0.1 → 10.0.0.2"));
    });
    let h = Headless::new(W, H);
    let texts = h.texts_in(&ctx, &out);
    assert!(texts.iter().any(|t| t.missing.contains(&'→')), "{texts:?}");
}

/// A smaller screen: 1024x768, the default layout.
const SMALL: (f32, f32) = (1024.0, 768.0);

#[test]
fn the_whole_window_is_drawn_right_at_1024x768() {
    let mut problems = check_at(
        "lossy-window-1024x768",
        &mut Workbench::new(lossy_model(), None),
        SMALL.0,
        SMALL.1,
    );
    problems.extend(check_at(
        "sample-window-1024x768",
        &mut Workbench::new(sample_model(), None),
        SMALL.0,
        SMALL.1,
    ));
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Every shape of `out`, flattened.
fn shapes(out: &egui::FullOutput) -> Vec<egui::Shape> {
    fn walk(s: &egui::Shape, v: &mut Vec<egui::Shape>) {
        match s {
            egui::Shape::Vec(inner) => inner.iter().for_each(|s| walk(s, v)),
            s => v.push(s.clone()),
        }
    }
    let mut v = Vec::new();
    for c in &out.shapes {
        walk(&c.shape, &mut v);
    }
    v
}

/// The default layout at 1024x768 on lossy-link: the packet list keeps
/// QP, PSN, Len and Analysis (dropping whole columns it has no room for),
/// the hex view does not wrap, the first finding is whole, the probes'
/// names end before the waveform, the legend is off the plot and the
/// episodes leave the series readable.
#[test]
fn the_default_layout_at_1024x768_keeps_its_parts_whole() {
    let mut wb = Workbench::new(lossy_model(), None);
    let mut h = Headless::new(SMALL.0, SMALL.1);
    let out = h.settle(&mut wb);
    let texts = h.texts(&out);
    let mut problems = Vec::new();
    let drawn = |t: &'static str| texts.iter().filter(move |d| d.text == t);
    for heading in ["No.", "Opcode", "QP", "PSN", "Len", "Analysis"] {
        match drawn(heading).next() {
            Some(d) if !d.clipped => {}
            Some(_) => problems.push(format!("the packet list's {heading:?} is cut")),
            None => problems.push(format!("the packet list lost {heading:?}")),
        }
    }
    for d in texts.iter().filter(|d| d.text.starts_with("0000  ")) {
        if d.rows.len() > 1 || d.clipped {
            problems.push(format!("a hex line wraps or is cut: {:?}", d.text));
        }
    }
    let finding = &wb.model.report().findings[0].text;
    match texts.iter().find(|d| d.text == *finding) {
        Some(d) if !d.clipped => {}
        _ => problems.push(format!("the diagnosis is cut: {finding}")),
    }
    let name_w = wb.panels.wave.name_w;
    for p in wb.model.probes() {
        let Some(d) = texts.iter().find(|d| {
            d.text == p.name
                || (d.text.ends_with('…') && p.name.starts_with(d.text.trim_end_matches('…')))
        }) else {
            // Below the panel's last row.
            continue;
        };
        // Names start 4 px into the panel; the waveform `name_w` in.
        let r = d.rows[0];
        if r.right() > r.left() - 4.0 + name_w {
            problems.push(format!("probe {} runs into the waveform", p.name));
        }
    }
    let mem = egui_plot::PlotMemory::load(&h.ctx, egui::Id::new(THROUGHPUT_PLOT_ID)).unwrap();
    let frame = *mem.transform().frame();
    for t in ["time cursor", "retransmission episodes", "QP 0x000100"] {
        for d in drawn(t) {
            if d.rows.iter().any(|r| r.intersects(frame)) {
                problems.push(format!("the legend's {t:?} is over the plot"));
            }
        }
    }
    let mark = super::panels::EPISODE_MARK;
    let tall = shapes(&out).iter().any(|s| {
        let (color, rect) = match s {
            egui::Shape::LineSegment { points, stroke } => {
                (stroke.color, egui::Rect::from_two_pos(points[0], points[1]))
            }
            egui::Shape::Path(p) => match &p.stroke.color {
                egui::epaint::ColorMode::Solid(c) => (*c, egui::Rect::from_points(&p.points)),
                _ => return false,
            },
            _ => return false,
        };
        // The episodes' colour (and the one they were drawn in before),
        // inside the plot, a tenth of it high or more.
        [mark, mark.gamma_multiply(0.7)].contains(&color)
            && frame.expand(1.0).contains_rect(rect)
            && rect.height() >= frame.height() * 0.1
    });
    if tall {
        problems.push("episodes drawn over the series' height".into());
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The Export window at 1024x768, asked for partitions: its window field
/// is inside the window, not cut at its edge.
#[test]
fn the_export_window_at_1024x768_shows_its_window_field() {
    let mut m = sample_model();
    m.apply(Command::ShowView(View::Packets));
    let mut wb = Workbench::new(m, None);
    wb.export.show(&wb.model);
    wb.export.partition = true;
    wb.export.window = "100ms".into();
    // A window over the panels: its text lies over theirs by design, so
    // only its image is compared.
    let mut h = Headless::new(SMALL.0, SMALL.1);
    let out = h.settle(&mut wb);
    let texts = h.texts(&out);
    let field = texts.iter().find(|d| d.text == "100ms");
    assert!(
        field.is_some_and(|d| !d.clipped),
        "the window field is cut: {field:?}"
    );
    if let Err(e) = check_golden("export-window-1024x768", &h.render(&out)) {
        panic!("{e}");
    }
}
