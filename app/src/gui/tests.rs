//! The desktop workbench driven headless: `egui::Context::run` frames at
//! 1920x1080 (no window, no GPU), asserting on the text and shapes each
//! panel produces and on the model state the input changed.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use eframe::egui;
use egui::{Event, Modifiers, Pos2, RawInput, Rect, Shape, pos2, vec2};
use egui_dock::DockState;
use rocescope_core::{Command, Model, Overlay, UiCommand, View};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::Store;

use super::{PaletteItem, Workbench, command_for_key};

mod partitions;

fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/captures/sample-write-read.pcap")
}

pub(crate) use crate::sample_model;

/// A simulator run at full speed, the views following it.
fn running_sim(scenario: &str) -> Model {
    let sc = rocescope_sim::Scenario::resolve(scenario).unwrap();
    let (store, analysis, handle) =
        rocescope_core::source::spawn_sim(sc, rocescope_core::source::Pace::Fast, None);
    crate::keep_test_progress_apart();
    Model::new(store, analysis, handle)
}

/// A finished simulator run (with profiler probes and slot decisions).
fn sim_model(scenario: &str) -> Model {
    let sc = rocescope_sim::Scenario::resolve(scenario).unwrap();
    let (store, analysis, handle) =
        rocescope_core::source::spawn_sim(sc, rocescope_core::source::Pace::Fast, None);
    while !handle
        .status()
        .finished
        .load(std::sync::atomic::Ordering::Acquire)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    store.wait();
    crate::keep_test_progress_apart();
    let mut m = Model::new(store, analysis, handle);
    m.forget_lesson_progress();
    m.apply(Command::Pause);
    m.apply(Command::JumpToTime(u64::MAX));
    m
}

struct Frame {
    texts: Vec<(String, Pos2)>,
    shapes: usize,
    arrowheads: usize,
}

impl Frame {
    fn has(&self, needle: &str) -> bool {
        self.texts.iter().any(|(t, _)| t.contains(needle))
    }
    /// Fails, naming the frame's texts, unless one holds `needle`.
    #[track_caller]
    fn shows(&self, needle: &str) {
        assert!(self.has(needle), "{needle:?} not in: {}", self.all());
    }
    /// Fails, naming the frame's texts, if one holds `needle`.
    #[track_caller]
    fn hides(&self, needle: &str) {
        assert!(!self.has(needle), "{needle:?} in: {}", self.all());
    }
    fn pos(&self, exact: &str) -> Option<Pos2> {
        self.texts.iter().find(|(t, _)| t == exact).map(|(_, p)| *p)
    }
    fn all(&self) -> String {
        self.texts
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

fn collect(shape: &Shape, f: &mut Frame) {
    f.shapes += 1;
    match shape {
        Shape::Vec(v) => v.iter().for_each(|s| collect(s, f)),
        Shape::Text(t) => f.texts.push((
            t.galley.text().to_owned(),
            t.pos + t.galley.rect.center().to_vec2(),
        )),
        Shape::Path(p) if p.closed && p.points.len() == 3 => f.arrowheads += 1,
        _ => {}
    }
}

/// Run one frame with `events` and return what it drew.
fn frame(ctx: &egui::Context, wb: &mut Workbench, events: Vec<Event>) -> Frame {
    let raw = RawInput {
        screen_rect: Some(Rect::from_min_size(Pos2::ZERO, vec2(1920.0, 1080.0))),
        events,
        ..RawInput::default()
    };
    let out = ctx.run(raw, |ctx| wb.frame(ctx));
    let mut f = Frame {
        texts: Vec::new(),
        shapes: 0,
        arrowheads: 0,
    };
    for c in &out.shapes {
        collect(&c.shape, &mut f);
    }
    f
}

/// A few frames, so that layout settles (egui sizes some widgets on the
/// second frame).
fn settle(ctx: &egui::Context, wb: &mut Workbench) -> Frame {
    frame(ctx, wb, Vec::new());
    frame(ctx, wb, Vec::new());
    frame(ctx, wb, Vec::new())
}

/// A workbench on `m` (with `dock`, else the default layout) and its first
/// settled frame.
fn workbench(m: Model, dock: Option<DockState<View>>) -> (egui::Context, Workbench, Frame) {
    let mut wb = Workbench::new(m, dock);
    let ctx = egui::Context::default();
    let f = settle(&ctx, &mut wb);
    (ctx, wb, f)
}

fn only(view: View) -> Option<DockState<View>> {
    Some(DockState::new(vec![view]))
}

fn click(ctx: &egui::Context, wb: &mut Workbench, at: Pos2) -> Frame {
    frame(ctx, wb, vec![Event::PointerMoved(at)]);
    let button = |pressed| Event::PointerButton {
        pos: at,
        button: egui::PointerButton::Primary,
        pressed,
        modifiers: Modifiers::NONE,
    };
    frame(ctx, wb, vec![button(true)]);
    frame(ctx, wb, vec![button(false)])
}

#[test]
fn each_panel_renders_the_sample() {
    let expect: [(View, &[&str]); 9] = [
        (
            View::Overview,
            &["retransmitted", "packet_seq_err", "QP 0x000012"],
        ),
        (
            View::Packets,
            &[
                "No.",
                "WRITE First",
                "RETX",
                "Frame 6: ",
                "Ethernet II",
                "0000  ",
            ],
        ),
        (View::Qps, &["requester > responder", "0x000012"]),
        (
            View::Ladder,
            &["requester 10.0.0.1", "responder 10.0.0.2", "PSN 101"],
        ),
        (
            View::Retransmissions,
            &["Retransmission episodes: 1", "recovery"],
        ),
        (View::Slots, &["No service-slot records"]),
        (View::Profiler, &["No profiler probes"]),
        (View::Explain, &["Base Transport Header (BTH)"]),
        (View::Lessons, &["Loss and Go-Back-N"]),
    ];
    for (view, needles) in expect {
        let mut m = sample_model();
        m.apply(Command::SelectRow(5));
        let (_ctx, _wb, f) = workbench(m, only(view));
        for n in needles {
            assert!(f.has(n), "{view:?} lacks {n:?}: {}", f.all());
        }
        assert!(
            f.has("sample-write-read.pcap"),
            "status bar missing in {view:?}"
        );
        if view == View::Ladder {
            assert!(
                f.arrowheads >= 10,
                "ladder arrows drawn as lines with heads: {}",
                f.arrowheads
            );
        }
    }
}

#[test]
fn the_default_layout_shows_every_view_as_a_tab() {
    let (_ctx, wb, f) = workbench(sample_model(), None);
    for v in wb.model.views() {
        assert!(f.has(v.title()), "tab {v:?} missing: {}", f.all());
    }
    // No Losses tab without capture points.
    f.hides(View::Losses.title());
    let tabs: Vec<View> = wb.dock.iter_all_tabs().map(|(_, t)| *t).collect();
    assert_eq!(tabs.len(), View::ALL.len() - 1);
}

#[test]
fn profiler_waveform_and_slots_on_a_simulator_run() {
    let m = sim_model("aes");
    let (ctx, mut wb, f) = workbench(m, only(View::Profiler));
    assert!(
        !wb.model.probes().is_empty(),
        "the aes scenario records probes"
    );
    for p in wb.model.probes() {
        assert!(f.has(&p.name), "probe row {} missing: {}", p.name, f.all());
    }
    // Selecting a packet centres the waveform on it.
    let row = wb.model.store().len() / 2;
    let ts = wb.model.store().row(row).unwrap().ts_ns as f64;
    wb.model.apply(Command::SelectRow(row));
    frame(&ctx, &mut wb, Vec::new());
    let w = wb.panels.wave;
    assert!(
        ((w.start_ns + w.end_ns) / 2.0 - ts).abs() < 1.0,
        "waveform centred on the selected packet"
    );
    // Slots: the table lists the decisions.
    let mut wb = Workbench::new(sim_model("aes"), only(View::Slots));
    let f = settle(&ctx, &mut wb);
    f.shows("Service-slot decisions");
}

#[test]
fn waveform_columns_hold_values_and_bound_the_work() {
    use super::panels::profiler::columns;
    use rocescope_core::records::Sample;
    let samples: Vec<Sample> = (0..100_000u64)
        .map(|i| Sample {
            ts_ns: i * 4,
            cycle: i,
            value: (i % 2) as i64,
        })
        .collect();
    // Zoomed out: every column toggles, so min 0 and max 1.
    let c = columns(&samples, 0.0, 400.0, 100);
    assert!(c.iter().all(|x| matches!(x, Some((0, 1, _)))));
    // Deep zoom: one sample per 4 ns, 1 ns per pixel: changes every 4th column.
    let c = columns(&samples, 0.5, 1.0, 16);
    assert_eq!(c.iter().filter(|x| x.is_some()).count(), 4);
}

#[test]
fn keys_come_from_the_one_command_list() {
    for c in UiCommand::ALL {
        assert_eq!(command_for_key(c.key(), 20), Some(c.command(20)), "{c:?}");
    }
    let (ctx, mut wb, _) = workbench(sample_model(), None);
    frame(&ctx, &mut wb, vec![Event::Text("2".into())]);
    assert_eq!(wb.model.view(), View::Packets);
    let sel = wb.model.selected();
    frame(&ctx, &mut wb, vec![key_event(egui::Key::ArrowDown)]);
    assert_eq!(wb.model.selected(), sel.map(|s| s + 1));
    frame(&ctx, &mut wb, vec![Event::Text("r".into())]);
    assert_eq!(wb.model.selected(), Some(5), "next retransmission");
    frame(&ctx, &mut wb, vec![Event::Text("4".into())]);
    assert_eq!(wb.model.view(), View::Ladder);
    // The dock shows the view the keys chose.
    let f = frame(&ctx, &mut wb, Vec::new());
    f.shows("requester 10.0.0.1");
    frame(&ctx, &mut wb, vec![Event::Text("?".into())]);
    assert_eq!(wb.model.overlay(), Overlay::Help);
    let f = settle(&ctx, &mut wb);
    assert!(f.has(UiCommand::StepEvent.description()));
    frame(&ctx, &mut wb, vec![Event::Text("?".into())]);
    assert_eq!(wb.model.overlay(), Overlay::None);
    frame(&ctx, &mut wb, vec![Event::Text("q".into())]);
    assert!(wb.model.quit());
}

#[test]
fn the_palette_lists_every_command_and_runs_them_through_apply() {
    let (ctx, mut wb, _) = workbench(sample_model(), None);
    frame(
        &ctx,
        &mut wb,
        vec![key_with(egui::Key::P, Modifiers::COMMAND)],
    );
    assert!(wb.palette.open);
    let f = frame(&ctx, &mut wb, Vec::new());
    // The list scrolls: its first entries are drawn, all are listed.
    f.shows(UiCommand::NextView.description());
    assert_eq!(PaletteItem::all().len(), UiCommand::ALL.len() + 1);
    // Typing narrows the list; Enter runs the pick.
    frame(
        &ctx,
        &mut wb,
        vec![Event::Text("retransmission episodes".into())],
    );
    let f = frame(&ctx, &mut wb, Vec::new());
    assert!(f.has(UiCommand::Show(View::Retransmissions).description()));
    assert!(!f.has(UiCommand::Quit.description()));
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Enter)]);
    assert!(!wb.palette.open);
    assert_eq!(wb.model.view(), View::Retransmissions);
}

#[test]
fn clicking_a_packet_selects_it_and_the_filter_shows_errors_inline() {
    let (ctx, mut wb, f) = workbench(sample_model(), only(View::Packets));
    // Row "8" in the No. column.
    let at = f.pos("8").expect("row 8 drawn");
    click(&ctx, &mut wb, at);
    assert_eq!(wb.model.selected(), Some(7));
    wb.model.apply(Command::SetFilter("bth.psn >= ".into()));
    let f = settle(&ctx, &mut wb);
    f.shows("filter error");
    wb.model
        .apply(Command::SetFilter("rocescope.retransmission".into()));
    while wb.model.filter_progress().0 < wb.model.store().len() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let f = settle(&ctx, &mut wb);
    f.hides("WRITE First PSN");
    assert_eq!(wb.model.visible_len(), 3);
}

#[test]
fn dropping_a_capture_opens_it() {
    let (ctx, mut wb, _) = workbench(running_sim("teaching-basic"), None);
    assert!(wb.model.source().name.starts_with("sim:"));
    let raw = RawInput {
        screen_rect: Some(Rect::from_min_size(Pos2::ZERO, vec2(1920.0, 1080.0))),
        dropped_files: vec![egui::DroppedFile {
            path: Some(sample_path()),
            ..Default::default()
        }],
        ..RawInput::default()
    };
    let _ = ctx.run(raw, |ctx| wb.frame(ctx));
    assert!(wb.model.source().name.ends_with("sample-write-read.pcap"));
    wb.model.store().wait();
    let f = settle(&ctx, &mut wb);
    assert!(f.has("sample-write-read.pcap"));
    assert!(wb.open_error.is_none());
    // A file that is not a capture: an error in the status bar, model kept.
    let raw = RawInput {
        dropped_files: vec![egui::DroppedFile {
            path: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")),
            ..Default::default()
        }],
        ..RawInput::default()
    };
    let _ = ctx.run(raw, |ctx| wb.frame(ctx));
    assert!(wb.open_error.is_some());
    assert!(wb.model.source().name.ends_with("sample-write-read.pcap"));
}

#[test]
fn a_click_on_the_throughput_plot_moves_the_time_cursor() {
    let (ctx, mut wb, _) = workbench(sample_model(), only(View::Overview));
    let before = wb.model.cursor_ns();
    // The plot fills the top of the panel; click a quarter of the way in.
    click(&ctx, &mut wb, pos2(500.0, 200.0));
    assert!(wb.model.cursor_ns() < before, "cursor moved back");
    assert!(wb.model.horizon() < wb.model.store().len());
}

/// Click the Export window's button (in frame `f`) and draw frames until
/// the export has finished.
fn export_and_wait(ctx: &egui::Context, wb: &mut Workbench, f: &Frame) -> Frame {
    let at = f.pos("Export").expect("the Export button");
    click(ctx, wb, at);
    let t0 = Instant::now();
    while wb.model.exporting() && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        frame(ctx, wb, Vec::new());
    }
    settle(ctx, wb)
}

#[test]
fn the_export_window_writes_the_filtered_packets_and_shows_the_outcome() {
    let folder = rocescope_testkit::temp_dir("gui-export");
    let dir = folder.path().to_path_buf();
    let path = dir.join("retx.csv");
    let mut m = sample_model();
    m.apply(Command::SetFilter("retransmission".into()));
    m.apply(Command::ShowView(View::Packets));
    let (ctx, mut wb, _) = workbench(m, only(View::Packets));
    frame(&ctx, &mut wb, vec![Event::Text("E".into())]);
    assert!(wb.export.open);
    let f = settle(&ctx, &mut wb);
    f.shows("this view (packets)");
    assert_eq!(wb.export.path, "packets.parquet");
    // A name without a known extension: told, and nothing to send.
    wb.export.path = dir.join("retx.txt").display().to_string();
    let f = settle(&ctx, &mut wb);
    f.shows("name the file .parquet, .csv or .jsonl");
    wb.export.path = path.display().to_string();
    let f = settle(&ctx, &mut wb);
    let f = export_and_wait(&ctx, &mut wb, &f);
    f.shows("exported 3 rows of packets to");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    // Partitions: a folder of hive-style Parquet files, by time window.
    wb.export.partition = true;
    wb.export.window = "soon".into();
    let f = settle(&ctx, &mut wb);
    f.shows("expected a number and a unit");
    wb.export.window = "2us".into();
    let f = settle(&ctx, &mut wb);
    f.shows("partitions are Parquet: name a folder");
    let parts = dir.join("parts");
    wb.export.path = parts.display().to_string();
    let f = settle(&ctx, &mut wb);
    f.shows("packets as Parquet partitions by capture and time window");
    let f = export_and_wait(&ctx, &mut wb, &f);
    f.shows("exported 3 rows of packets to");
    assert!(
        parts.join("packets/capture=sample-write-read").is_dir(),
        "{}",
        f.all()
    );
    // Esc closes the window; keys reach the views again.
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Escape)]);
    assert!(!wb.export.open);
    let _ = std::fs::remove_dir_all(&dir);
}

fn key_event(key: egui::Key) -> Event {
    key_with(key, Modifiers::NONE)
}

fn key_with(key: egui::Key, modifiers: Modifiers) -> Event {
    Event::Key {
        key,
        physical_key: None,
        pressed: true,
        repeat: false,
        modifiers,
    }
}

/// Runs `line` from the command line: `:`, the text, Enter.
fn command_line(ctx: &egui::Context, wb: &mut Workbench, line: &str) {
    frame(ctx, wb, vec![Event::Text(":".into())]);
    frame(ctx, wb, vec![Event::Text(line.into())]);
    frame(ctx, wb, vec![key_event(egui::Key::Enter)]);
}

#[test]
fn the_command_line_takes_the_keys_completes_and_reruns_the_simulator() {
    let before = rocescope_sim::Scenario::resolve("teaching-basic")
        .unwrap()
        .params
        .window_packets;
    let (ctx, mut wb, _) = workbench(running_sim("teaching-basic"), None);
    let view = wb.model.view();
    frame(&ctx, &mut wb, vec![Event::Text(":".into())]);
    assert_eq!(wb.model.overlay(), Overlay::CommandLine);
    let f = frame(&ctx, &mut wb, Vec::new());
    f.shows("Tab completes, Enter runs, Esc closes");
    // Keys go to the line, not to shortcuts (`2` would show Packets, `q` quit).
    frame(&ctx, &mut wb, vec![Event::Text("set window_p".into())]);
    assert_eq!(wb.model.cmdline(), "set window_p");
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Tab)]);
    assert_eq!(wb.model.cmdline(), "set window_packets=");
    frame(&ctx, &mut wb, vec![Event::Text("4".into())]);
    assert_eq!(wb.model.cmdline(), "set window_packets=4");
    assert_eq!(wb.model.view(), view, "4 typed, not the Ladder shortcut");
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Enter)]);
    assert_eq!(wb.model.overlay(), Overlay::None);
    // The model runs the line: the simulator reruns with the new window.
    let params = &wb.model.source().scenario().unwrap().params;
    assert_eq!(params.window_packets, 4);
    assert_ne!(before, 4);
    let f = settle(&ctx, &mut wb);
    f.shows("restarted with window_packets=4");
    // An error is told in the status bar; Esc closes an open line.
    command_line(&ctx, &mut wb, "set window_packets=0");
    let f = settle(&ctx, &mut wb);
    f.shows("window_packets");
    assert_eq!(
        wb.model.source().scenario().unwrap().params.window_packets,
        4
    );
    frame(&ctx, &mut wb, vec![Event::Text(":".into())]);
    frame(&ctx, &mut wb, vec![Event::Text("q".into())]);
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Escape)]);
    assert_eq!(wb.model.overlay(), Overlay::None);
    assert!(!wb.model.quit(), "q went to the line");
}

#[test]
fn the_status_bar_shows_the_core_status_line() {
    let (_ctx, wb, f) = workbench(sample_model(), only(View::Overview));
    let line = rocescope_core::status_line(&wb.model);
    for part in line.parts() {
        assert!(f.has(&part.text), "{:?} missing: {}", part.text, f.all());
    }
    assert!(f.has("paused"));
}

#[test]
fn a_lesson_opens_on_its_scenario_and_leaving_it_goes_back() {
    let (ctx, mut wb, _) = workbench(sample_model(), None);
    frame(&ctx, &mut wb, vec![Event::Text("9".into())]);
    assert_eq!(wb.model.view(), View::Lessons);
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Enter)]);
    assert_eq!(wb.model.source().name, "sim:write-anatomy");
    let f = settle(&ctx, &mut wb);
    f.shows("lesson: started write-anatomy");
    f.shows("sim:write-anatomy");
    f.shows("Lesson: Anatomy of an RDMA WRITE");
    f.shows("leave (L), back to sample-write-read.pcap");
    frame(&ctx, &mut wb, vec![Event::Text("L".into())]);
    assert_eq!(wb.model.source().name, "sample-write-read.pcap");
    let f = settle(&ctx, &mut wb);
    f.shows("lesson left: back to sample-write-read.pcap");
    f.hides("Lesson: Anatomy");
}

/// The same question step as the terminal's snapshot: the choices are
/// buttons; a click answers, the hint button shows the hint, and the
/// verdict is drawn in the lesson box.
#[test]
fn a_question_step_is_answered_by_its_buttons() {
    let (m, ask) = crate::lesson_at_ask(rocescope_core::lesson::AskKind::Choice, "a choice");
    let (ctx, mut wb, f) = workbench(m, only(View::Packets));
    f.shows(&format!("Question: {}", ask.question));
    let right = ask.answer.clone().unwrap();
    let wrong = ask.choices.iter().find(|c| **c != right).unwrap().clone();
    let at = f.pos(&wrong).unwrap();
    click(&ctx, &mut wb, at);
    let f = settle(&ctx, &mut wb);
    f.shows("Not quite: the answer is");
    let at = f.pos("hint (h)").unwrap();
    click(&ctx, &mut wb, at);
    let f = settle(&ctx, &mut wb);
    f.shows(&format!("Hint: {}", ask.hint));
    let at = f.pos(&right).unwrap();
    click(&ctx, &mut wb, at);
    let f = settle(&ctx, &mut wb);
    f.shows(&format!("Right. {}", ask.explain));
    assert!(wb.model.lesson_verdict().unwrap().right);
}

/// Signals beside packets in the profiler panel on an Icarus Verilog
/// waveform: a signal chosen by clicking it in the browser, its value at
/// the selected packet translated, its format switched, and a click in its
/// chart moving the cursor and selecting the packet at or before it.
/// A waveform whose body would pass its memory budget: the panel says each
/// signal is read from the file, and why; the signal still loads.
#[test]
fn signals_panel_says_a_body_past_its_budget_is_not_held() {
    let Some(vcd) = crate::test_wave::wide_vcd_copy("gui-signals-budget") else {
        return;
    };
    let mut m = crate::test_wave::model_with_signals_within(&vcd, Some(1 << 20));
    m.apply(Command::AddSignal("tb.u.bth_psn".into()));
    assert!(m.wait_signals_loaded(std::time::Duration::from_secs(20)));
    m.apply(Command::SelectRow(2));
    let (_ctx, _wb, f) = workbench(m, only(View::Profiler));
    f.shows("= 101");
    f.shows(
        "Each signal is read from the file: holding it would take more than the 1.0 MiB it may hold",
    );
}

#[test]
fn signals_panel_on_a_real_waveform() {
    let Some(vcd) = crate::test_wave::vcd_copy("gui-signals") else {
        return;
    };
    let mut m = crate::test_wave::model_with_signals(&vcd);
    m.apply(Command::AddSignal("tb.u.bth_opcode".into()));
    m.apply(Command::WaveSpan(240));
    let (ctx, mut wb, f) = workbench(m, only(View::Profiler));
    f.shows("9 of 9 signals");
    // Click the PSN in the browser: it is chosen and loaded on a thread.
    let at = f
        .pos("tb.u.bth_psn  24")
        .expect("the browser lists bth_psn");
    click(&ctx, &mut wb, at);
    assert!(
        wb.model
            .wait_signals_loaded(std::time::Duration::from_secs(20))
    );
    let shown: Vec<&str> = wb
        .model
        .signals()
        .unwrap()
        .chosen()
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(shown, ["tb.u.bth_opcode", "tb.u.bth_psn"]);
    wb.model.apply(Command::SelectRow(2));
    let f = settle(&ctx, &mut wb);
    f.shows("= RC Acknowledge");
    f.shows("= 101");
    // The bus segments carry their values where they fit.
    f.shows("RC RDMA WRITE Only");
    wb.model.apply(Command::SignalFormat {
        path: "tb.u.bth_psn".into(),
        radix: rocescope_core::signals::Radix::Hex,
    });
    let f = settle(&ctx, &mut wb);
    f.shows("= 0x000065");
    // A click near the chart's left end: the cursor moves there, and the
    // packet at or before it (the first WRITE) is selected.
    let label = f.pos("tb.u.bth_psn [hex]").expect("the PSN's label");
    click(&ctx, &mut wb, pos2(label.x, label.y + 24.0));
    let t = wb.model.wave_cursor_ns().unwrap();
    let first = wb.model.store().row(0).unwrap().ts_ns;
    let second = wb.model.store().row(1).unwrap().ts_ns;
    assert!(
        t >= first && t < second,
        "cursor {t} ns between {first} and {second}"
    );
    assert_eq!(wb.model.selected(), Some(0));
}

/// The packet question's button does not name the answer: the step selects
/// nothing, so the button asks the student to pick; after a pick it names
/// the student's packet.
#[test]
fn a_packet_question_waits_for_the_students_pick() {
    let (m, _) = crate::lesson_at_ask(rocescope_core::lesson::AskKind::Packet, "for a packet");
    let (ctx, mut wb, f) = workbench(m, only(View::Ladder));
    f.shows("select a packet");
    assert!(
        !f.has("answer: frame"),
        "the answer given away: {}",
        f.all()
    );
    wb.model.apply(Command::SelectRow(1));
    let f = settle(&ctx, &mut wb);
    f.shows("answer: frame 2 (a)");
}

/// `r` in the ladder stays in the ladder; `:goto -5` changes nothing.
#[test]
fn r_in_the_ladder_and_an_invalid_goto_in_the_gui() {
    let (ctx, mut wb, _) = workbench(sample_model(), None);
    frame(&ctx, &mut wb, vec![Event::Text("4".into())]);
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Home)]);
    frame(&ctx, &mut wb, vec![Event::Text("r".into())]);
    assert_eq!(wb.model.view(), View::Ladder);
    assert_eq!(wb.model.selected(), Some(5));
    let cursor = wb.model.cursor_ns();
    command_line(&ctx, &mut wb, "goto -5");
    let f = settle(&ctx, &mut wb);
    f.shows("usage: goto");
    assert_eq!(wb.model.cursor_ns(), cursor);
    assert_eq!(wb.model.selected(), Some(5));
}

/// An ILA capture's signals: the charts mark its trigger and the second
/// window's start, with their legend.
#[test]
fn the_signals_panel_marks_an_ila_captures_trigger() {
    let csv = crate::test_wave::ila_csv("gui-markers");
    let mut m = crate::test_wave::model_with_signals(&csv);
    m.apply(Command::AddSignal("u/tvalid".into()));
    assert!(m.wait_signals_loaded(std::time::Duration::from_secs(20)));
    m.apply(Command::WaveSpan(400));
    m.apply(Command::WaveCursor(144));
    let (ctx, mut wb, f) = workbench(m, only(View::Profiler));
    f.shows("| trigger");
    f.shows("| a capture window starts");
    // Far from both, no legend.
    wb.model.apply(Command::WaveSpan(40));
    wb.model.apply(Command::WaveCursor(300));
    let f = settle(&ctx, &mut wb);
    f.hides("| trigger");
}

/// `gui --point`: the Overview of the first point's capture shows the
/// points' summary beside its own counters and diagnosis.
#[test]
fn the_overview_shows_the_capture_points_summary() {
    let (m, _dir) = crate::test_points::model("gui-points");
    let (_ctx, _wb, f) = workbench(m, only(View::Overview));
    for n in [
        "Capture points a > sw > b",
        "losses: a>sw ",
        "clock sw: ",
        "packet_seq_err",
        "One-way latency per segment, p99",
    ] {
        assert!(f.has(n), "the Overview lacks {n:?}: {}", f.all());
    }
    for seg in ["a>sw", "sw>b", "b>sw", "sw>a"] {
        // In the latency plot's legend.
        assert!(f.pos(seg).is_some(), "{seg}: {}", f.all());
        assert!(
            f.texts
                .iter()
                .any(|(t, _)| t.starts_with(&format!("{seg} "))),
            "{seg}: {}",
            f.all()
        );
    }
}

/// `gui --point`: the Losses tab sits beside the retransmissions; key `0`
/// shows it, each loss under its segment with its evidence; a click
/// selects one (its evidence below), Enter selects its frame in the
/// packet list.
#[test]
fn the_losses_panel_lists_losses_by_segment_and_jumps_to_the_frame() {
    let (m, _dir) = crate::test_points::model("gui-losses");
    let r = m.points().unwrap().clone();
    let items = m.loss_items().to_vec();
    let mut wb = Workbench::new(m, None);
    assert!(wb.dock.find_tab(&View::Losses).is_some());
    let ctx = egui::Context::default();
    settle(&ctx, &mut wb);
    frame(&ctx, &mut wb, vec![Event::Text("0".into())]);
    assert_eq!(wb.model.view(), View::Losses);
    let f = settle(&ctx, &mut wb);
    f.shows("Losses by segment: a>sw ");
    f.shows("seen at a, never at sw");
    // The second line: a loss on a>sw, as the core orders them.
    let rocescope_core::query::LossItem::Placed(i) = items[1] else {
        panic!("{items:?}")
    };
    let l = &r.losses[i];
    assert_eq!(l.segment, "a>sw");
    // The PSN's cell on the line of a>sw (the packet list shows PSNs too).
    let psn = l.psn.to_string();
    let at = f
        .texts
        .iter()
        .filter(|(t, _)| *t == psn)
        .map(|(_, p)| *p)
        .find(|p| {
            f.texts
                .iter()
                .any(|(t, q)| t == "a>sw" && (q.y - p.y).abs() < 2.0)
        })
        .unwrap_or_else(|| panic!("no line of PSN {psn}: {}", f.all()));
    click(&ctx, &mut wb, at);
    let f = settle(&ctx, &mut wb);
    assert_eq!(wb.model.list_index(), 1);
    f.shows("A request lost on the wire between the points of a>sw.");
    let row = l.rows.iter().find(|(p, _)| *p == 0).unwrap().1;
    f.shows(&format!("a frame {}", row + 1));
    frame(&ctx, &mut wb, vec![key_event(egui::Key::Enter)]);
    assert_eq!(wb.model.view(), View::Packets);
    assert_eq!(wb.model.selected(), Some(row));
    // The packet list's Path column: the lost frame vanished after a.
    let f = settle(&ctx, &mut wb);
    f.shows("Path");
    let no = f
        .pos(&(row + 1).to_string())
        .expect("the lost frame's line");
    assert!(
        f.texts
            .iter()
            .any(|(t, p)| t == "a x" && (p.y - no.y).abs() < 2.0),
        "{}",
        f.all()
    );
    f.shows("a sw b");
    // The ladder: one lane per point; the lost frame's arrow ends in a
    // mark between a and sw, under its label.
    wb.model.apply(Command::ShowView(View::Ladder));
    let f = settle(&ctx, &mut wb);
    for n in ["point a", "point sw", "point b"] {
        assert!(f.has(n), "{n}: {}", f.all());
    }
    let arrow = format!("RC WRITE Middle PSN {}", l.psn);
    let labels: Vec<Pos2> = f
        .texts
        .iter()
        .filter(|(t, _)| t.starts_with(&arrow))
        .map(|(_, p)| *p)
        .collect();
    let (a, sw) = (f.pos("point a").unwrap(), f.pos("point sw").unwrap());
    assert!(
        f.texts.iter().any(|(t, p)| t == super::panels::LOST_MARK
            && p.x > a.x
            && p.x < sw.x
            && labels.iter().any(|q| (p.y - q.y).abs() < 24.0)),
        "no mark between a and sw by {arrow}: {}",
        f.all()
    );
}

/// `gui --point NAME=tcp://...`: an agent per point (in this process,
/// each serving its point's capture), the Overview shows each point's
/// link and the points' analysis as frames arrive, the Losses tab is
/// offered once losses are placed, and a point whose agent stopped is
/// said.
#[test]
fn a_live_session_of_points_shows_each_link_and_one_going_away() {
    use rocescope_core::live_points::{LivePointSpec, LivePoints, attach_points_model};
    use rocescope_device_link::agent::AgentConfig;
    use rocescope_device_link::{Agent, AttachUrl, CaptureSource, ClientConfig};
    let tmp = rocescope_testkit::temp_dir("gui-live-points");
    let dir = tmp.path();
    let mut sc = rocescope_sim::Scenario::resolve("lossy-link").unwrap();
    sc.bound_to_ns(3_000_000);
    sc.set_points("a,sw,b").unwrap();
    rocescope_sim::points::write_points(sc, dir).unwrap();
    let mut stops = Vec::new();
    let mut agents = Vec::new();
    let specs: Vec<LivePointSpec> = ["a", "sw", "b"]
        .iter()
        .map(|n| {
            let mut cfg = AgentConfig::new("127.0.0.1:0".parse().unwrap());
            cfg.wait_for_client = true;
            let agent = Agent::bind(cfg).unwrap();
            let addr = agent.local_addr().unwrap();
            stops.push(agent.stop_flag());
            let source = CaptureSource::follow(&dir.join(format!("{n}.pcapng"))).unwrap();
            agents.push(std::thread::spawn(move || {
                let _ = agent.run(Box::new(source), Vec::new());
            }));
            LivePointSpec {
                name: (*n).to_owned(),
                cfg: ClientConfig::new(AttachUrl::parse(&format!("tcp://{addr}")).unwrap()),
                fixed_offset_ns: None,
            }
        })
        .collect();
    let limits = rocescope_core::session::SessionLimits {
        max_memory_bytes: 256 << 20,
        max_disk_bytes: None,
        dir: Some(dir.join("session")),
        index_dir: None,
    };
    let live = LivePoints::start(specs, Default::default(), &limits).unwrap();
    crate::keep_test_progress_apart();
    let mut m = attach_points_model(live);
    m.forget_lesson_progress();
    let mut wb = Workbench::new(m, only(View::Overview));
    let ctx = egui::Context::default();
    let until = |wb: &mut Workbench, what: &str| {
        let t0 = Instant::now();
        loop {
            wb.model.tick(Instant::now());
            let f = settle(&ctx, wb);
            if f.has(what) {
                return f;
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(30),
                "no {what:?}: {}",
                f.all()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    let f = until(&mut wb, "losses: a>sw ");
    for n in ["a", "sw", "b"] {
        f.shows(&format!("link {n}: connected, "));
    }
    f.shows("Capture points a > sw > b");
    assert!(wb.model.views().contains(&View::Losses));
    stops[2].store(true, std::sync::atomic::Ordering::Relaxed);
    let f = until(&mut wb, "link b: connection lost");
    // The analysis of what b sent stays.
    f.shows("losses: a>sw ");
    drop(wb);
    for s in &stops {
        s.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    for a in agents {
        let _ = a.join();
    }
}

/// `:whatif set window_packets=32` typed in the desktop workbench's
/// command line on a recording of `window-stall`: the QPs panel shows the
/// capture, its twin and the changed run per QP, the change in %, and
/// time by state of each; `:whatif clear` takes them out again.
#[test]
fn whatif_typed_in_the_command_line_shows_the_runs_beside_the_capture() {
    let tmp = rocescope_testkit::temp_dir("gui-whatif");
    let path = tmp.path().join("window-stall.pcapng");
    let mut sc = rocescope_sim::Scenario::builtin("window-stall").unwrap();
    sc.bound_to_ns(2_000_000);
    let writer = rocescope_replay::PcapngWriter::new(std::io::BufWriter::new(
        std::fs::File::create(&path).unwrap(),
    ))
    .unwrap();
    let (_s, _a, handle) = rocescope_core::source::spawn_sim_into(
        Store::live(rocescope_replay::TimeBase::Nanoseconds),
        sc,
        rocescope_core::source::Pace::Fast,
        Some(writer),
    );
    while !handle
        .status()
        .finished
        .load(std::sync::atomic::Ordering::Acquire)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(handle);
    let spec = rocescope_core::source::SourceSpec::File {
        path: path.clone(),
        decode: DecodeConfig::default(),
        wave: Default::default(),
    };
    crate::keep_test_progress_apart();
    let mut m = rocescope_core::source::open(spec, &Default::default()).unwrap();
    m.forget_lesson_progress();
    m.apply(Command::ShowView(View::Qps));
    let (ctx, mut wb, before) = workbench(m, only(View::Qps));
    before.hides("what if");
    command_line(&ctx, &mut wb, "whatif set window_packets=32");
    let deadline = Instant::now() + std::time::Duration::from_secs(600);
    let f = loop {
        let f = settle(&ctx, &mut wb);
        if f.has("against the twin") {
            break f;
        }
        assert!(Instant::now() < deadline, "no A/B: {}", f.all());
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    f.shows("what if window_packets=32: A capture and its twin, B changed");
    f.shows("QP 0x000100 10.0.0.1 -> 10.0.0.2");
    f.shows("                 changed ");
    // The status bar tells the change in goodput.
    f.shows("goodput against the twin: QP 0x000100 +");
    // The QPs panel itself is still there below.
    f.shows("QP conversations");
    command_line(&ctx, &mut wb, "whatif clear");
    let f = settle(&ctx, &mut wb);
    f.hides("against the twin");
    f.shows("whatif closed");
}
