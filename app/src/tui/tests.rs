//! The workbench driven headless: commands and keys on ratatui's
//! TestBackend, with snapshots of every view on the bundled sample.

use std::path::Path;
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, Overlay, UiCommand, View};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{RcAnalyzer, Store};

use super::{UiState, command_for_key, draw, handle_event};

use crate::sample_model;

/// A capture cut mid-record says so in the status line (it was silent in
/// the workbench), with the whole frames before the cut listed.
#[test]
fn a_cut_capture_says_so_in_the_status_line() {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/captures/sample-write-read.pcap");
    let bytes = std::fs::read(&sample).unwrap();
    let folder = rocescope_testkit::temp_dir("tui-cut");
    let dir = folder.path().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..5000]).unwrap();
    let analysis = RcAnalyzer::default();
    let store = Store::open(&cut, DecodeConfig::default(), Box::new(analysis.clone())).unwrap();
    store.wait();
    let mut m = Model::new(store, analysis, SourceHandle::file("cut.pcap".into()));
    m.tick(Instant::now());
    let text = render(&m, 200, 30);
    assert_has(&text, "file cut mid-record");
    assert_eq!(m.visible_len(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}

fn render(model: &Model, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut ui = UiState::default();
    t.draw(|f| draw(f, model, &mut ui)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// `text` holds `part` (else the whole text is shown).
#[track_caller]
fn assert_has(text: &str, part: &str) {
    assert!(text.contains(part), "{text}");
}

/// A key pressed in the terminal (default UI state), its commands applied.
fn press(m: &mut Model, k: KeyCode) {
    for c in handle_event(m, &UiState::default(), &key(k)) {
        m.apply(c);
    }
}

fn key(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

#[test]
fn every_view_renders_at_80x24_and_200x50() {
    let mut m = sample_model();
    for v in m.views() {
        m.apply(Command::ShowView(v));
        for (w, h) in [(80, 24), (200, 50)] {
            let text = render(&m, w, h);
            assert!(text.contains("1:Over"), "tabs missing in {v:?} at {w}x{h}");
            assert!(
                text.contains("sample-write-read.pcap"),
                "status bar missing in {v:?}"
            );
        }
    }
}

/// Each view the sample offers, in turn, rendered at `w`x`h` (row 5
/// selected, and the first row in the views of episodes and QPs).
fn each_view(w: u16, h: u16) -> Vec<(View, String)> {
    let mut m = sample_model();
    m.apply(Command::SelectRow(5));
    // A single capture offers every view but the Losses view's.
    assert_eq!(m.views().len(), View::ALL.len() - 1);
    let mut out = Vec::new();
    for v in m.views() {
        m.apply(Command::ShowView(v));
        if v == View::Retransmissions || v == View::Qps {
            m.apply(Command::SelectFirst);
        }
        out.push((v, render(&m, w, h)));
    }
    out
}

#[test]
fn snapshots_of_each_view() {
    for (v, text) in each_view(120, 32) {
        insta::assert_snapshot!(format!("view_{}", v.title().to_lowercase()), text);
    }
}

/// Each view on an 80x24 terminal: whole cells (QP, route, state, times),
/// the legend off the chart, the keys offered.
#[test]
fn snapshots_of_each_view_at_80x24() {
    for (v, text) in each_view(80, 24) {
        match v {
            View::Qps => {
                let row = text.lines().find(|l| l.contains("0x000012 ")).unwrap();
                assert!(row.contains("10.0.0.1 > 10.0.0.2"), "{text}");
                assert!(row.contains(" idle "), "{text}");
            }
            View::Retransmissions => assert!(text.contains("0.000006000"), "{text}"),
            View::Ladder => assert!(text.contains("r next retransmission"), "{text}"),
            View::Overview => assert!(!text.contains("┌───"), "{text}"),
            _ => {}
        }
        insta::assert_snapshot!(format!("view_{}_80x24", v.title().to_lowercase()), text);
    }
}

#[test]
fn packets_view_shows_flags_and_the_detail_tree() {
    let mut m = sample_model();
    m.apply(Command::ShowView(View::Packets));
    m.apply(Command::SelectRow(5));
    let text = render(&m, 160, 40);
    assert_has(&text, "RETX");
    assert_has(&text, "NAK");
    assert_has(&text, "Base Transport Header");
    assert_has(&text, "[infiniband.bth.opcode]");
}

#[test]
fn the_filter_bar_filters_and_shows_errors_inline() {
    let mut m = sample_model();
    press(&mut m, KeyCode::Char('/'));
    assert_eq!(m.overlay(), Overlay::FilterEdit);
    for ch in "retransmission".chars() {
        press(&mut m, KeyCode::Char(ch));
    }
    // The scan runs on its own thread.
    let t0 = Instant::now();
    while m.visible_len() != 3 && t0.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(m.visible_len(), 3);
    assert_eq!(m.visible_row(0), Some(5));
    press(&mut m, KeyCode::Char('&'));
    assert!(m.filter_error().is_some());
    m.apply(Command::ShowView(View::Packets));
    let text = render(&m, 120, 30);
    assert_has(&text, "filter error at column");
    assert_eq!(m.visible_len(), 3, "the last good filter keeps running");
    // An unknown field is refused (it used to match nothing: "Packets 1-0
    // of 0" and no word why), naming the nearest, the last result kept.
    m.apply(Command::SetFilter("bth.pssn == 3".into()));
    let text = render(&m, 120, 30);
    assert_has(&text, "did you mean 'bth.psn'?");
    assert_eq!(m.visible_len(), 3, "the last good filter keeps running");
    press(&mut m, KeyCode::Esc);
    assert_eq!(m.overlay(), Overlay::None);
}

#[test]
fn keys_drive_the_model() {
    let mut m = sample_model();
    press(&mut m, KeyCode::Char('2'));
    assert_eq!(m.view(), View::Packets);
    press(&mut m, KeyCode::Home);
    press(&mut m, KeyCode::Down);
    assert_eq!(m.selected(), Some(1));
    press(&mut m, KeyCode::Char('r'));
    assert_eq!(m.selected(), Some(5), "next retransmission");
    press(&mut m, KeyCode::Tab);
    assert_eq!(m.view(), View::Qps);
    press(&mut m, KeyCode::Enter);
    assert_eq!(m.view(), View::Ladder);
    press(&mut m, KeyCode::Char('?'));
    assert_eq!(m.overlay(), Overlay::Help);
    press(&mut m, KeyCode::Esc);
    assert_eq!(m.overlay(), Overlay::None);
    press(&mut m, KeyCode::Char(' '));
    press(&mut m, KeyCode::Char('q'));
    assert!(m.quit());
}

/// `r` in the ladder, whose title offers it, moves to the next resend of
/// the ladder's QP and stays in the ladder.
#[test]
fn r_in_the_ladder_selects_the_next_resend_there() {
    let mut m = sample_model();
    press(&mut m, KeyCode::Char('4'));
    press(&mut m, KeyCode::Home);
    assert!(render(&m, 120, 32).contains("r next retransmission"));
    for want in [5, 6, 7] {
        press(&mut m, KeyCode::Char('r'));
        assert_eq!(m.view(), View::Ladder, "r keeps the ladder");
        assert_eq!(m.selected(), Some(want), "the next resend");
    }
    press(&mut m, KeyCode::Char('r'));
    assert_eq!(m.selected(), Some(7), "no resend after the last");
    rocescope_testkit::assert_contains(m.status(), "no retransmission of QP 0x000012");
    // From a view that does not show packets, r opens the packet list.
    press(&mut m, KeyCode::Char('3'));
    press(&mut m, KeyCode::Home);
    press(&mut m, KeyCode::Char('r'));
    assert_eq!(m.view(), View::Packets);
}

/// An invalid command line says why and changes nothing: not the clock,
/// not the selection, not the speed.
#[test]
fn an_invalid_command_line_changes_nothing() {
    let mut m = sample_model();
    m.apply(Command::ShowView(View::Packets));
    m.apply(Command::SelectRow(9));
    let before = (
        m.cursor_ns(),
        m.selected(),
        m.clock().state(),
        m.clock().speed(),
    );
    for line in ["goto -5", "goto later", "speed -1", "speed 0"] {
        press(&mut m, KeyCode::Char(':'));
        for ch in line.chars() {
            press(&mut m, KeyCode::Char(ch));
        }
        press(&mut m, KeyCode::Enter);
        m.tick(Instant::now());
        assert!(m.status().contains("usage:"), "{line}: {}", m.status());
        assert_eq!(
            (
                m.cursor_ns(),
                m.selected(),
                m.clock().state(),
                m.clock().speed()
            ),
            before,
            "{line} changed the workbench"
        );
    }
}

#[test]
fn every_binding_maps_to_its_command_and_help_lists_them_all() {
    let mut m = sample_model();
    m.apply(Command::ShowHelp);
    let help = render(&m, 120, 50);
    for c in UiCommand::ALL {
        let code = match c.key() {
            "Tab" => KeyCode::Tab,
            "BackTab" => KeyCode::BackTab,
            "Up" => KeyCode::Up,
            "Down" => KeyCode::Down,
            "PageUp" => KeyCode::PageUp,
            "PageDown" => KeyCode::PageDown,
            "Home" => KeyCode::Home,
            "End" => KeyCode::End,
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Space" => KeyCode::Char(' '),
            k => KeyCode::Char(k.chars().next().unwrap()),
        };
        assert_eq!(
            command_for_key(&KeyEvent::new(code, KeyModifiers::NONE), 10),
            Some(c.command(10)),
            "{c:?}"
        );
        // The Losses view's key only where there are capture points.
        assert_eq!(
            help.contains(c.description()),
            !c.needs_points(),
            "help and {c:?}"
        );
    }
}

#[test]
fn a_lesson_moves_the_cursor_and_shows_its_text() {
    let mut m = sample_model();
    m.apply(Command::ShowView(View::Lessons));
    m.apply(Command::MoveSelection(2));
    m.apply(Command::OpenSelectedQp);
    let lesson = m.lesson().clone().unwrap();
    assert_eq!(lesson.title, "Loss and Go-Back-N");
    let text = render(&m, 120, 40);
    assert_has(&text, "Lesson: Loss and Go-Back-N");
    m.apply(Command::NextLessonStep);
    assert_eq!(m.lesson_step(), 1);
}

#[test]
fn keys_open_a_lesson_on_its_scenario_and_leave_it() {
    let mut m = sample_model();
    // As the terminal's loop does, the source steered after each key.
    let press_steered = |m: &mut Model, k: KeyCode| {
        press(m, k);
        rocescope_core::source::steer(m);
    };
    press_steered(&mut m, KeyCode::Char('9'));
    press_steered(&mut m, KeyCode::Enter);
    let status = status_of(&m);
    assert_has(&status, "sim:write-anatomy");
    assert_has(&status, "lesson: started write-anatomy");
    let text = render(&m, 120, 40);
    assert_has(
        &text,
        "Lesson: Anatomy of an RDMA WRITE — step 1/3 on sim:write-anatomy",
    );
    assert_has(&text, "(n next, p previous, L leave)");
    press_steered(&mut m, KeyCode::Char('L'));
    assert_eq!(m.source().name, "sample-write-read.pcap");
    assert!(m.lesson().is_none());
    let status = status_of(&m);
    assert_has(&status, "lesson left: back to sample-write-read.pcap");
}

#[test]
fn the_command_line_sends_simulator_parameters_and_the_sniffer_filter() {
    let mut m = sample_model();
    let type_in = |m: &mut Model, s: &str| {
        for ch in s.chars() {
            press(m, KeyCode::Char(ch));
        }
        press(m, KeyCode::Enter);
    };
    press(&mut m, KeyCode::Char(':'));
    assert_eq!(m.overlay(), Overlay::CommandLine);
    type_in(&mut m, "set window_packets=32");
    assert_eq!(m.overlay(), Overlay::None);
    assert_eq!(
        m.outbox(),
        vec![Command::SetSimParam {
            key: "window_packets".into(),
            value: "32".into()
        }]
    );
    m.take_outbox();
    m.apply(Command::EditCommandLine);
    type_in(&mut m, "sniffer 0x80000000");
    assert_eq!(m.outbox(), vec![Command::SetSnifferFilter(0x8000_0000)]);
    m.apply(Command::EditCommandLine);
    type_in(&mut m, "bogus 1");
    assert!(m.status().contains("unknown command"), "{}", m.status());
}

#[test]
fn e_opens_the_command_line_for_an_export_of_the_filtered_packets() {
    let mut m = sample_model();
    let folder = rocescope_testkit::temp_dir("tui-export");
    let dir = folder.path().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("retx.csv");
    m.apply(Command::SetFilter("retransmission".into()));
    m.apply(Command::ShowView(View::Packets));
    press(&mut m, KeyCode::Char('E'));
    assert_eq!(m.overlay(), Overlay::CommandLine);
    assert_eq!(m.cmdline(), "export ");
    assert!(render(&m, 160, 30).contains(":export "));
    for ch in path.display().to_string().chars() {
        press(&mut m, KeyCode::Char(ch));
    }
    press(&mut m, KeyCode::Enter);
    assert_eq!(m.overlay(), Overlay::None);
    let t0 = Instant::now();
    while m.exporting() && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        m.tick(Instant::now());
    }
    let text = std::fs::read_to_string(&path).unwrap();
    // The header and the three resends, frames 6 to 8.
    let frames: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(frames, ["6", "7", "8"], "{text}");
    let status = render(&m, 200, 30);
    assert!(
        status.contains("exported 3 rows of packets to"),
        "{}",
        status.lines().last().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bottom line of the workbench drawn at 200 columns.
fn status_of(m: &Model) -> String {
    let text = render(m, 200, 12);
    text.lines().last().unwrap().trim_end().to_owned()
}

#[test]
fn snapshot_of_the_status_line_in_its_states() {
    use rocescope_core::source::{Pace, spawn_sim};
    use rocescope_replay::TimeBase;
    use std::sync::atomic::Ordering;
    let mut lines = Vec::new();
    let say = |what: &str, m: &Model| format!("{what:<12}{}", status_of(m));
    let mask = |line: String| {
        line.split(|c: char| c.is_ascii_digit() || c == '.')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("N")
    };
    // A file: indexed and paused, then replaying when asked.
    let mut m = sample_model();
    lines.push(say("file", &m));
    m.apply(Command::SetSpeed(2.0));
    m.apply(Command::Play);
    lines.push(say("replay", &m));
    // A model of an empty live store read from `source`.
    let live = |source: SourceHandle| {
        crate::keep_test_progress_apart();
        Model::new(
            Store::live(TimeBase::Nanoseconds),
            RcAnalyzer::default(),
            source,
        )
    };
    // A file still being indexed.
    let growing = live(SourceHandle::file("growing.pcapng".into()));
    lines.push(say("indexing", &growing));
    // A simulation that ran to its end.
    let sc = rocescope_sim::Scenario::resolve("teaching-basic").unwrap();
    let (store, analysis, handle) = spawn_sim(sc, Pace::Fast, None);
    while !handle.status().finished.load(Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    store.wait();
    crate::keep_test_progress_apart();
    let mut sim = Model::new(store, analysis, handle);
    sim.forget_lesson_progress();
    sim.tick(Instant::now());
    // The simulator is another crate's: its numbers are not this snapshot's.
    lines.push(mask(say("sim ended", &sim)));
    // A live link: connected, down with drops and reconnects, ended.
    let link = live(SourceHandle::external("attach:tcp://127.0.0.1:4790".into()));
    lines.push(say("link", &link));
    let st = link.source().status();
    st.set_disconnected(Some(
        "connect to 127.0.0.1:4790: Connection refused; retrying in 0.4 s".into(),
    ));
    st.dropped.store(12, Ordering::Relaxed);
    st.reconnects.store(1, Ordering::Relaxed);
    lines.push(say("link down", &link));
    st.set_disconnected(None);
    st.end("source ended");
    lines.push(say("link ended", &link));
    // The command line: its hint, then the words that fit what was typed.
    m.apply(Command::EditCommandLine);
    lines.push(say("cmdline", &m));
    m.apply(Command::SetCommandLine("s".into()));
    lines.push(say("cmdline s", &m));
    insta::assert_snapshot!("status_line_states", lines.join("\n"));
}

#[test]
fn tab_completes_the_command_line_and_enter_runs_it() {
    let mut m = sample_model();
    press(&mut m, KeyCode::Char(':'));
    for ch in "set window_p".chars() {
        press(&mut m, KeyCode::Char(ch));
    }
    press(&mut m, KeyCode::Tab);
    assert_eq!(m.cmdline(), "set window_packets=");
    assert_eq!(m.overlay(), Overlay::CommandLine, "Tab stays in the line");
    press(&mut m, KeyCode::Char('4'));
    press(&mut m, KeyCode::Enter);
    assert_eq!(
        m.outbox(),
        vec![Command::SetSimParam {
            key: "window_packets".into(),
            value: "4".into()
        }]
    );
    // A file does not take simulator parameters: said in the status line.
    rocescope_core::source::steer(&mut m);
    assert!(m.outbox().is_empty());
    rocescope_testkit::assert_contains(&status_of(&m), "does not take SetSimParam");
}

/// A finished run of the first shipped lesson that asks a choice, open at
/// that step (played over this run: the content is what is checked).
fn choice_step() -> (Model, rocescope_core::lesson::Ask) {
    let (mut m, ask) = crate::lesson_at_ask(rocescope_core::lesson::AskKind::Choice, "a choice");
    m.tick(Instant::now());
    (m, ask)
}

/// The lesson box: the lines below the view, above the status line.
fn lesson_box_text(m: &Model) -> String {
    let text = render(m, 100, 40);
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .rposition(|l| l.starts_with("┌ Lesson:"))
        .unwrap();
    lines[top..lines.len() - 1].join("\n")
}

#[test]
fn a_question_step_and_its_right_and_wrong_answers() {
    let (mut m, ask) = choice_step();
    insta::assert_snapshot!("lesson_question", lesson_box_text(&m));
    let right = ask.answer.clone().unwrap();
    let wrong = ask.choices.iter().find(|c| **c != right).unwrap().clone();
    m.apply(Command::AnswerLesson(wrong));
    assert!(!m.lesson_verdict().unwrap().right);
    insta::assert_snapshot!("lesson_question_wrong", lesson_box_text(&m));
    m.apply(Command::LessonHint);
    m.apply(Command::AnswerLesson(right));
    assert!(m.lesson_verdict().unwrap().right);
    insta::assert_snapshot!("lesson_question_right", lesson_box_text(&m));
}

/// Signals beside packets on an Icarus Verilog waveform: chosen from the
/// browser through the command line, translated (opcode, PSN, syndrome),
/// their charts around the cursor, which follows the selected packet.
#[test]
fn signals_beside_packets_on_a_real_waveform() {
    let Some(vcd) = crate::test_wave::vcd_copy("tui-signals") else {
        return;
    };
    let mut m = crate::test_wave::model_with_signals(&vcd);
    assert_eq!(m.store().len(), 3, "the three frames decoded");
    m.apply(Command::ShowView(View::Profiler));
    for line in [
        "signals bth",
        "show #1",
        "show #2",
        "signals u.",
        "show tb.u.aeth_syndrome",
        "show tb.u.tvalid",
    ] {
        m.apply(Command::RunCommandLine(line.into()));
    }
    assert!(m.wait_signals_loaded(std::time::Duration::from_secs(20)));
    m.apply(Command::WaveSpan(240));
    // The NAK: its first beat's time is the cursor.
    m.apply(Command::SelectRow(2));
    m.tick(Instant::now());
    let text = render(&m, 120, 24);
    assert_has(&text, "tb.u.bth_opcode [opcode] = RC Acknowledge");
    assert_has(&text, "tb.u.bth_psn [psn] = 101");
    assert_has(&text, "= NAK (PSN sequence error)");
    assert!(text.contains("▔"), "tvalid drawn as a line: {text}");
    insta::assert_snapshot!("signals_beside_packets", text);
    // Small terminals and a cursor before the first change draw too.
    for (w, h) in [(80, 24), (30, 8), (12, 4)] {
        render(&m, w, h);
    }
    m.apply(Command::WaveCursor(0));
    assert!(render(&m, 120, 24).contains("tb.u.bth_psn [psn] = 0"));
}

/// A waveform whose body would pass its memory budget: the signals still
/// load (from the file, each), and the chart's title says why.
#[test]
fn signals_of_a_body_past_its_budget_say_they_read_the_file() {
    let Some(vcd) = crate::test_wave::wide_vcd_copy("tui-signals-budget") else {
        return;
    };
    let mut m = crate::test_wave::model_with_signals_within(&vcd, Some(1 << 20));
    m.apply(Command::ShowView(View::Profiler));
    m.apply(Command::RunCommandLine("show tb.u.bth_psn".into()));
    assert!(m.wait_signals_loaded(std::time::Duration::from_secs(20)));
    m.apply(Command::SelectRow(2));
    m.tick(Instant::now());
    let text = render(&m, 240, 24);
    assert_has(&text, "tb.u.bth_psn [psn] = 101");
    assert_has(
        &text,
        "each signal read from the file: holding it would take more than the 1.0 MiB it may hold",
    );
    // Under the default budget the same file is held: no such words.
    let mut m = crate::test_wave::model_with_signals(&vcd);
    m.apply(Command::ShowView(View::Profiler));
    m.apply(Command::RunCommandLine("show tb.u.bth_psn".into()));
    assert!(m.wait_signals_loaded(std::time::Duration::from_secs(20)));
    assert!(!render(&m, 240, 24).contains("read from the file"));
}

/// An ILA capture's signals: the ruler marks its triggers (T) and the
/// second window's start (¦), and says what the marks are.
#[test]
fn the_signals_ruler_marks_an_ila_captures_trigger_and_windows() {
    let csv = crate::test_wave::ila_csv("tui-markers");
    let mut m = crate::test_wave::model_with_signals(&csv);
    assert_eq!(m.store().len(), 3, "the three frames decoded");
    m.apply(Command::ShowView(View::Profiler));
    m.apply(Command::RunCommandLine("show u/tvalid".into()));
    assert!(m.wait_signals_loaded(std::time::Duration::from_secs(20)));
    m.apply(Command::WaveSpan(400));
    // The second window's trigger: sample 32 + 4 at 4 ns a sample.
    m.apply(Command::WaveCursor(144));
    m.tick(Instant::now());
    let text = render(&m, 120, 24);
    assert_has(&text, "T trigger, ¦ window start");
    let ruler = text.lines().find(|l| l.contains('▼')).expect("the ruler");
    let (cursor, window) = (ruler.find('▼').unwrap(), ruler.find('¦').expect("¦"));
    assert!(
        window < cursor,
        "the window starts before its trigger: {ruler}"
    );
    assert!(
        ruler.contains('T'),
        "the first window's trigger at 12 ns: {ruler}"
    );
}

/// A session of capture points: the Losses view (key `0`, a tab of its
/// own) lists each loss under its segment with its evidence, and Enter
/// selects the lost frame in the packet list.
#[test]
fn the_losses_view_shows_each_loss_by_segment_and_jumps_to_its_frame() {
    let (mut m, _dir) = crate::test_points::model("tui-losses");
    assert!(m.views().contains(&View::Losses));
    let r = m.points().unwrap().clone();
    let text = render(&m, 160, 40);
    assert_has(&text, " 0:Losses ");
    let ev = handle_event(&m, &UiState::default(), &key(KeyCode::Char('0')));
    for c in ev {
        m.apply(c);
    }
    assert_eq!(m.view(), View::Losses);
    let text = render(&m, 160, 40);
    assert_has(&text, "Losses by segment: a>sw ");
    // The first line is the first loss on a>sw, seen at a only, with the
    // place in words and the receiver's evidence below.
    let first = r
        .losses
        .iter()
        .filter(|l| l.segment == "a>sw")
        .min_by_key(|l| l.ts_ns)
        .unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("│a>sw "))
        .unwrap_or_else(|| panic!("no a>sw line: {text}"));
    assert!(line.contains(&first.psn.to_string()), "{line}");
    assert_has(line, "seen at a");
    assert_has(&text, "lost on the wire between the points of a>sw");
    assert_has(&text, "no response accepted it");
    // A drop in b's receiving stack: its own point saw it, and why.
    let k = m
        .loss_items()
        .iter()
        .position(|&i| rocescope_core::query::loss_segment(&r, i) == "b")
        .expect("lossy-link drops in the receiver's stack");
    m.apply(Command::MoveSelection(k as i64));
    let text = render(&m, 160, 40);
    assert_has(&text, "dropped in b's receiving stack");
    assert_has(
        &text,
        "Evidence: seen at b, its receiver; the receiver NAKed",
    );
    assert_has(&text, "Where it was seen: a frame ");
    m.apply(Command::SelectFirst);
    let row = first.rows.iter().find(|(p, _)| *p == 0).unwrap().1;
    m.apply(Command::OpenSelectedQp);
    assert_eq!(m.view(), View::Packets);
    assert_eq!(m.selected(), Some(row));
    rocescope_testkit::assert_contains(m.status(), &format!("frame {}", row + 1));
    // The packet list's Path column: the lost frame vanished after a;
    // the first frame went past every point.
    let text = render(&m, 160, 40);
    assert_has(&text, " Path ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("│{} ", row + 1)))
        .unwrap_or_else(|| panic!("no line of frame {}: {text}", row + 1));
    assert_has(line, " a x ");
    m.apply(Command::SelectRow(0));
    let text = render(&m, 160, 40);
    let line = text.lines().find(|l| l.starts_with("│1 ")).unwrap();
    assert_has(line, " a sw b ");
    // The ladder: one lane per point; the lost frame's arrow leaves a and
    // ends in an x before sw, a delivered one reaches b.
    m.apply(Command::SelectRow(row));
    m.apply(Command::ShowView(View::Ladder));
    let text = render(&m, 160, 40);
    let head = text.lines().nth(2).unwrap();
    assert!(head.contains("time") && head.contains(" sw "), "{head}");
    let line = text
        .lines()
        .find(|l| l.contains(&format!("PSN {} ", first.psn)))
        .unwrap_or_else(|| panic!("no arrow of PSN {}: {text}", first.psn));
    assert!(line.contains("──x ") && !line.contains('▶'), "{line}");
    assert_has(&text, "──▶|");
}

/// Without capture points the Losses view is not offered: its key says
/// why and the view stays.
#[test]
fn without_points_the_losses_view_is_not_offered() {
    let mut m = sample_model();
    m.apply(Command::ShowView(View::Qps));
    m.apply(Command::ShowView(View::Losses));
    assert_eq!(m.view(), View::Qps);
    rocescope_testkit::assert_contains(m.status(), "needs several capture points");
    let text = render(&m, 200, 40);
    let tabs = text.lines().next().unwrap();
    assert!(!tabs.contains("Losses"), "{tabs}");
    assert_has(&text, "the Losses view needs several capture points");
}

/// A session of capture points: the Overview plots each segment's one-way
/// latency (p99) over the capture beside the throughput, from the points'
/// analysis (lossy-link's links hold no queue: flat near their p99).
#[test]
fn the_overview_plots_each_segments_latency() {
    let (m, _dir) = crate::test_points::model("tui-latency");
    let series = rocescope_core::query::segment_latency_series(&m);
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a>sw", "sw>b", "b>sw", "sw>a"]);
    let r = m.points().unwrap();
    for (name, pts) in &series {
        let p99_us = r.segment(name).unwrap().p99_ns as f64 / 1e3;
        assert!(pts.len() > 10, "{name}: {pts:?}");
        assert!(
            pts.iter()
                .all(|&(x, _, p99)| (0.0..=3.1).contains(&x) && p99 <= p99_us + 0.01),
            "{name}: {pts:?}"
        );
    }
    let text = render(&m, 160, 45);
    assert_has(&text, "One-way latency per segment, p99 µs");
    assert_has(&text, "━━ a>sw  ━━ sw>b");
}

/// `E` in the Losses view writes the `losses` table of the points'
/// analysis (the workbench's exports had no points to give it); a single
/// capture is told it has none.
#[test]
fn the_losses_view_exports_the_losses_table() {
    let (mut m, dir) = crate::test_points::model("tui-losses-export");
    let r = m.points().unwrap().clone();
    m.apply(Command::ShowView(View::Losses));
    let out = rocescope_testkit::temp_dir("losses-export");
    let path = out.path().join("losses.csv");
    m.apply(Command::Export {
        table: None,
        path: path.clone(),
        partition_window_ns: None,
    });
    let t0 = Instant::now();
    while m.last_export().is_none() && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        m.tick(Instant::now());
    }
    let summary = m.last_export().as_ref().unwrap().as_ref().unwrap();
    assert_eq!(summary.table, rocescope_data::Table::Losses);
    assert_eq!(summary.rows, r.losses.len() as u64);
    let csv = std::fs::read_to_string(&path).unwrap();
    assert_eq!(csv.lines().count(), r.losses.len() + 1, "{csv}");
    assert_has(&csv, ",a>sw,");
    let _ = std::fs::remove_file(&path);
    drop(dir);
    let mut single = sample_model();
    single.apply(Command::Export {
        table: Some(rocescope_data::Table::Losses),
        path: path.clone(),
        partition_window_ns: None,
    });
    rocescope_testkit::assert_contains(single.status(), "it needs capture points");
    assert!(!path.exists());
}
