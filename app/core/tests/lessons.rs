//! Lessons run on the scenario they were written for: opening one starts
//! that scenario through the source layer (`source::steer`), its steps
//! show what their text describes, and leaving it goes back to the source
//! open before.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rocescope_core::lesson::{AskKind, Lesson, Value, check, progress};
use rocescope_core::source::{Pace, spawn_sim, steer};
use rocescope_core::{Command, Model, View, lesson};
use rocescope_replay::store::{Flags, Row};

fn sample_model() -> Model {
    keep_progress_in_a_temp_dir();
    support::sample_model("sample-write-read.pcap")
}

/// Tick `m` until `done` holds; a guard against hanging, not a timing check.
/// The lesson's last answer was right (the failure shows the verdict).
fn assert_answered_right(m: &Model) {
    let verdict = m.lesson_verdict();
    assert!(verdict.is_some_and(|v| v.right), "{verdict:?}");
}

fn wait_for(m: &mut Model, what: &str, done: impl Fn(&Model) -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !done(m) {
        assert!(Instant::now() < give_up, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
        m.tick(Instant::now());
    }
}

fn selected_row(m: &Model) -> Row {
    m.store().row(m.selected().unwrap()).unwrap()
}

fn lesson_index(title: &str) -> usize {
    lesson::builtin()
        .iter()
        .position(|l| l.title == title)
        .unwrap()
}

const WRITE_LAST: u8 = 0x08;
const ACK: u8 = 0x11;

#[test]
fn opening_a_lesson_starts_its_scenario_and_leaving_goes_back() {
    let _progress = progress_lock();
    let mut m = sample_model();
    m.apply(Command::ShowView(View::Packets));
    m.apply(Command::SelectRow(3));
    m.apply(Command::ShowView(View::Lessons));
    m.apply(Command::OpenSelectedQp);
    assert_eq!(m.outbox(), vec![Command::OpenLesson(0)]);
    steer(&mut m);

    let first = lesson::builtin()[0].clone();
    assert_eq!(m.source().name, format!("sim:{}", first.scenario));
    assert!(m.source().live);
    assert_eq!(m.lesson().as_ref().unwrap().title, first.title);
    assert_eq!(m.previous_source_name(), Some("sample-write-read.pcap"));
    let started = format!("lesson: started {}", first.scenario);
    rocescope_testkit::assert_contains(m.status(), &started);
    let line = rocescope_core::status::status_line(&m);
    assert!(line.message.contains(&first.scenario), "{line:?}");
    // Step 1 at once: its view; its cursor once the paced run has reached
    // its time, with nothing after it shown.
    assert_eq!(Some(m.view()), first.steps[0].view);
    wait_for(&mut m, "step 1's cursor", |m| !m.follow_live());
    let until_ns = (first.steps[0].until_us.unwrap() * 1000.0) as u64;
    let t0 = m.store().stats().first_ts_ns.unwrap();
    let last_shown = m.store().row(m.horizon() - 1).unwrap();
    assert!(last_shown.ts_ns <= t0 + until_ns);

    m.apply(Command::LeaveLesson);
    steer(&mut m);
    assert_eq!(m.source().name, "sample-write-read.pcap");
    assert!(m.lesson().is_none());
    assert_eq!(m.previous_source_name(), None);
    assert_eq!(
        m.view(),
        View::Lessons,
        "the view the lesson was opened from"
    );
    assert_eq!(m.selected(), Some(3), "the selection as it was left");
    assert!(m.filter_text().is_empty());
    rocescope_testkit::assert_contains(m.status(), "back to sample-write-read.pcap");
    m.apply(Command::LeaveLesson);
    assert_eq!(m.status(), "no lesson open");
    assert!(m.outbox().is_empty());
}

#[test]
fn a_second_lesson_still_goes_back_to_the_first_source_and_a_rerun_keeps_the_lesson() {
    let _progress = progress_lock();
    let sc = rocescope_sim::Scenario::builtin("default").unwrap();
    let (store, analysis, handle) = spawn_sim(sc, Pace::RealTime(1e-3), None);
    let mut m = Model::new(store, analysis, handle);
    m.apply(Command::OpenLesson(lesson_index(
        "Anatomy of an RDMA WRITE",
    )));
    steer(&mut m);
    assert_eq!(m.source().name, "sim:write-anatomy");
    m.apply(Command::OpenLesson(lesson_index("READ and its PSN span")));
    steer(&mut m);
    assert_eq!(m.source().name, "sim:read-span");
    assert_eq!(m.filter_text(), "bth.opcode == 0x0c");
    assert_eq!(m.previous_source_name(), Some("sim:default"));
    wait_for(&mut m, "the default run pauses for the lesson", |m| {
        let prev = m.previous().unwrap();
        prev.source().status().paused.load(Ordering::Acquire)
    });

    // A parameter change reruns the lesson's scenario, lesson and all.
    m.apply(Command::SetSimParam {
        key: "window_packets".into(),
        value: "8".into(),
    });
    steer(&mut m);
    assert_eq!(m.source().name, "sim:read-span");
    assert_eq!(m.lesson().as_ref().unwrap().title, "READ and its PSN span");
    assert_eq!(m.filter_text(), "bth.opcode == 0x0c");
    assert_eq!(m.previous_source_name(), Some("sim:default"));

    m.apply(Command::LeaveLesson);
    steer(&mut m);
    assert_eq!(m.source().name, "sim:default");
    // The simulator paused for the lesson runs again.
    wait_for(&mut m, "the default run resumes", |m| {
        !m.source().status().paused.load(Ordering::Acquire)
    });
}

/// A finished, unpaced run of `scenario` with lesson `title` open on it,
/// at its first step.
fn finished_run_with(title: &str) -> Model {
    keep_progress_in_a_temp_dir();
    let l = &lesson::builtin()[lesson_index(title)];
    let sc = check::scenario(l, &Default::default()).unwrap();
    let (store, analysis, handle) = spawn_sim(sc, Pace::Fast, None);
    while !handle.status().finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(5));
    }
    store.wait();
    let mut m = Model::new(store, analysis, handle);
    m.apply(Command::OpenLesson(lesson_index(title)));
    // Played over this run, not a new one: the content is checked here.
    m.take_outbox();
    m.apply(Command::PrevLessonStep);
    m.tick(Instant::now());
    m
}

/// Rows the filter shows once its scan has read the whole store.
fn filtered(m: &mut Model) -> u64 {
    wait_for(m, "the filter scan", |m| {
        let (scanned, len) = m.filter_progress();
        scanned >= len
    });
    m.visible_len()
}

#[test]
fn each_step_of_the_go_back_n_lesson_shows_what_it_describes() {
    let _progress = progress_lock();
    let mut m = finished_run_with("Loss and Go-Back-N");
    assert_eq!(selected_row(&m).opcode, WRITE_LAST);
    assert!(!selected_row(&m).flags.contains(Flags::RETRANSMISSION));
    m.apply(Command::NextLessonStep);
    m.tick(Instant::now());
    // The step asks for the NAK: the cursor stops just after it, and the
    // student selects it; the lesson does not.
    assert_eq!(m.selected(), None, "the asked-for packet is not selected");
    let last = m.store().row(m.horizon() - 1).unwrap();
    assert!(last.flags.contains(Flags::NAK));
    m.apply(Command::NextLessonStep);
    m.tick(Instant::now());
    assert_eq!(m.filter_text(), "rocescope.retransmission");
    assert_eq!(filtered(&mut m), 2, "the two resent packets");
    assert!(selected_row(&m).flags.contains(Flags::RETRANSMISSION));
    m.apply(Command::NextLessonStep);
    m.tick(Instant::now());
    assert_eq!(m.view(), View::Retransmissions);
    assert_eq!(selected_row(&m).opcode, ACK);
    assert_eq!(m.report().episodes.len(), 1);
}

/// A step's filter shows what its text points at: some rows of its run.
#[test]
fn every_filter_of_the_course_matches_its_run() {
    let _progress = progress_lock();
    for l in lesson::builtin() {
        let mut m = finished_run_with(&l.title);
        for (step, s) in l.steps.iter().enumerate() {
            if step > 0 {
                m.apply(Command::NextLessonStep);
            }
            let predicted = l.steps[..step]
                .iter()
                .any(|s| s.ask.as_ref().is_some_and(|a| !a.params.is_empty()));
            match &s.filter {
                Some(f) if !f.is_empty() && !predicted => {
                    assert_eq!(m.filter_text(), f);
                    assert!(filtered(&mut m) > 0, "{} step {}: {f}", l.title, step + 1);
                }
                _ => {}
            }
        }
    }
}

/// The first shipped lesson step asking a `kind` question (a prediction,
/// with parameters, or not): (lesson, step).
fn first_ask(kind: AskKind, prediction: bool) -> (usize, usize, Lesson) {
    for (i, l) in lesson::builtin().iter().enumerate() {
        let step = l.steps.iter().position(|s| {
            s.ask
                .as_ref()
                .is_some_and(|a| a.kind == kind && a.params.is_empty() != prediction)
        });
        if let Some(s) = step {
            return (i, s, l.clone());
        }
    }
    panic!("no shipped lesson asks a {kind:?} question (prediction: {prediction})");
}

/// Every test here saves lesson progress to the one file of this process
/// (`paths::use_state_dir` is set once): each holds this lock for its whole
/// run, so no test reads back a file another has just overwritten.
fn progress_lock() -> std::sync::MutexGuard<'static, ()> {
    static PROGRESS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    PROGRESS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The progress of this run's lessons, in a folder of the test build's,
/// emptied once a run.
fn keep_progress_in_a_temp_dir() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lesson-progress");
        let _ = std::fs::remove_dir_all(&d);
        d
    });
    rocescope_core::paths::use_state_dir(dir.clone());
    dir.clone()
}

/// The number a question's fact has on a headless run with `params`.
fn fact_of(l: &Lesson, params: &check::Params, fact: &str) -> f64 {
    let facts = check::run(check::scenario(l, params).unwrap()).unwrap();
    match facts.get(fact) {
        Some(Value::Number(n)) => *n,
        other => panic!("{fact}: {other:?}"),
    }
}

#[test]
fn a_number_question_is_judged_on_the_run_wrong_then_right_and_kept() {
    let _progress = progress_lock();
    let dir = keep_progress_in_a_temp_dir();
    let (i, step, l) = first_ask(AskKind::Number, false);
    let mut m = finished_run_at_step(&l.title, step);
    let ask = l.steps[step].ask.clone().unwrap();
    // The live run and the headless check's run are the same run.
    let want = fact_of(&l, &Default::default(), ask.fact.as_deref().unwrap());
    let wrong = want * (1.0 + ask.tolerance_pct / 100.0) + 1000.0;
    m.apply(Command::AnswerLesson(format!("{wrong}")));
    let v = m.lesson_verdict().cloned().unwrap();
    assert!(!v.right, "{v:?}");
    rocescope_testkit::assert_starts_with(&v.text, "Not quite: the answer is");
    assert!(v.text.ends_with(&ask.explain), "{}", v.text);
    m.apply(Command::AnswerLesson(format!("{want}")));
    assert_answered_right(&m);
    assert_eq!(m.status(), m.lesson_verdict().unwrap().text);
    // Kept between runs: the file says so, and a new session reads it.
    // Wrong, then right, is kept as wrong at the first answer.
    let kept = std::fs::read_to_string(dir.join("lessons.json")).unwrap();
    let p: progress::Progress = serde_json::from_str(&kept).unwrap();
    assert_eq!(
        p.lessons[&l.title].answers.get(&(step + 1)),
        Some(&false),
        "{kept}"
    );
    assert!(
        p.lessons[&l.title].right_later.contains(&(step + 1)),
        "{kept}"
    );
    let again = finished_run_with(&l.title);
    let shown = again.lesson_progress(&lesson::builtin()[i]);
    assert!(shown.contains(" 0/"), "{shown}");
    assert!(shown.contains("right first time, 1 more later"), "{shown}");
    // The hint is there on request.
    m.apply(Command::LessonHint);
    assert!(m.lesson_hint_shown());
    assert_eq!(m.status(), format!("hint: {}", ask.hint));
}

/// [`finished_run_with`] the lesson titled `title`, moved on to `step`.
fn finished_run_at_step(title: &str, step: usize) -> Model {
    let mut m = finished_run_with(title);
    next_steps(&mut m, step);
    m
}

/// Moves the open lesson on `steps` steps.
fn next_steps(m: &mut Model, steps: usize) {
    for _ in 0..steps {
        m.apply(Command::NextLessonStep);
    }
}

/// The first lesson step that asks for a packet, its run finished, with
/// the progress kept apart while the guard lives.
fn at_first_packet_question() -> (std::sync::MutexGuard<'static, ()>, Lesson, usize, Model) {
    let progress = progress_lock();
    keep_progress_in_a_temp_dir();
    let (_, step, l) = first_ask(AskKind::Packet, false);
    let m = finished_run_at_step(&l.title, step);
    (progress, l, step, m)
}

#[test]
fn a_packet_question_takes_the_selected_packet() {
    let (_progress, l, step, mut m) = at_first_packet_question();
    let ask = l.steps[step].ask.clone().unwrap();
    let frame = fact_of(&l, &Default::default(), ask.fact.as_deref().unwrap()) as u64;
    m.apply(Command::SelectRow(frame)); // not it: the row after
    m.apply(Command::AnswerLesson(String::new()));
    assert!(!m.lesson_verdict().unwrap().right);
    m.apply(Command::SelectRow(frame - 1));
    m.apply(Command::AnswerLesson(String::new()));
    assert_answered_right(&m);
}

/// The packet a question asks for is the student's to find: not selected
/// by the step, and `a` with nothing picked answers nothing.
#[test]
fn a_packet_question_waits_for_the_student_to_pick_the_packet() {
    let (_progress, _, _, mut m) = at_first_packet_question();
    for _ in 0..3 {
        m.tick(Instant::now());
    }
    assert_eq!(m.selected(), None, "nothing picked for the student");
    m.apply(Command::AnswerLesson(String::new()));
    assert!(m.lesson_verdict().is_none());
    rocescope_testkit::assert_starts_with(m.status(), "select the packet first");
    // Once answered, the selection is the student's again.
    m.apply(Command::SelectRow(0));
    m.apply(Command::AnswerLesson(String::new()));
    assert!(m.lesson_verdict().is_some());
}

/// The sample model with lesson `i` open (its run steered) and moved on to
/// `step`.
fn lesson_at_step(i: usize, step: usize) -> Model {
    let mut m = sample_model();
    m.apply(Command::OpenLesson(i));
    steer(&mut m);
    next_steps(&mut m, step);
    m
}

/// A prediction cannot be skipped: the steps after it are about the run
/// with its parameters. Back before it, the lesson reruns without them.
#[test]
fn a_prediction_is_answered_before_the_lesson_goes_on_and_each_step_is_on_its_run() {
    let _progress = progress_lock();
    keep_progress_in_a_temp_dir();
    let (i, step, l) = first_ask(AskKind::Number, true);
    let ask = l.steps[step].ask.clone().unwrap();
    let (key, value) = ask.params.iter().next().unwrap();
    let base = check::scenario(&l, &Default::default()).unwrap();
    let before = base.params.get(key).unwrap();
    assert_ne!(before, *value);
    let mut m = lesson_at_step(i, step);
    assert_eq!(m.lesson_step(), step);
    m.apply(Command::NextLessonStep);
    assert_eq!(m.lesson_step(), step, "the prediction is not skipped");
    rocescope_testkit::assert_starts_with(m.status(), "predict first");
    assert!(m.outbox().is_empty(), "{:?}", m.outbox());
    // Answered: rerun with its parameters, then the lesson goes on there.
    let want = fact_of(&l, &ask.params, ask.fact.as_deref().unwrap());
    m.apply(Command::AnswerLesson(format!("{want}")));
    steer(&mut m);
    wait_for(&mut m, "the rerun's verdict", |m| {
        m.lesson_verdict().is_some()
    });
    m.apply(Command::NextLessonStep);
    assert_eq!(m.lesson_step(), step + 1);
    assert!(
        m.outbox().is_empty(),
        "already on its run: {:?}",
        m.outbox()
    );
    let param = |m: &Model| m.source().scenario().unwrap().params.get(key).unwrap();
    assert_eq!(param(&m), *value);
    // Back before the prediction: the run that step describes again.
    for _ in 0..2 {
        m.apply(Command::PrevLessonStep);
        steer(&mut m);
    }
    assert_eq!(m.lesson_step(), step - 1);
    assert_eq!(param(&m), before, "{}", m.status());
    // Forward to the answered prediction: its run, its verdict.
    m.apply(Command::NextLessonStep);
    steer(&mut m);
    assert_eq!(param(&m), *value);
    assert!(m.lesson_verdict().is_some());
}

#[test]
fn a_prediction_reruns_the_scenario_with_its_parameters_and_is_judged_there() {
    let _progress = progress_lock();
    keep_progress_in_a_temp_dir();
    let (i, step, l) = first_ask(AskKind::Number, true);
    let mut m = lesson_at_step(i, step);
    let ask = l.steps[step].ask.clone().unwrap();
    let want = fact_of(&l, &ask.params, ask.fact.as_deref().unwrap());
    m.apply(Command::AnswerLesson(format!("{want}")));
    let (key, value) = ask.params.iter().next().unwrap();
    assert!(
        m.outbox().contains(&Command::SetSimParam {
            key: key.clone(),
            value: value.to_string()
        }),
        "{:?}",
        m.outbox()
    );
    assert!(m.lesson_answer_pending());
    steer(&mut m);
    rocescope_testkit::assert_starts_with(m.status(), "restarted with");
    assert_eq!(
        m.lesson_step(),
        step,
        "the rerun keeps the lesson at its step"
    );
    wait_for(&mut m, "the rerun's verdict", |m| {
        m.lesson_verdict().is_some()
    });
    assert_answered_right(&m);
}

/// The capture points lesson opens on its scenario's run at its points:
/// the first point's capture with the points' analysis (its Losses view
/// offered), and its steps show the losses they name.
#[test]
fn the_capture_points_lesson_opens_with_its_points() {
    let _progress = progress_lock();
    let mut m = sample_model();
    let index = lesson::builtin()
        .iter()
        .position(|l| l.scenario == "three-points")
        .expect("a lesson on capture points");
    m.apply(Command::ShowView(View::Lessons));
    m.apply(Command::OpenLesson(index));
    steer(&mut m);
    m.tick(Instant::now());
    assert_eq!(m.source().name, "lesson:three-points");
    let r = m.points().expect("the points' analysis").clone();
    let names: Vec<&str> = r.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "sw", "b"]);
    let segments: Vec<&str> = r.losses.iter().map(|l| l.segment.as_str()).collect();
    for s in ["sw>b", "b", "a>sw or sw>b"] {
        assert!(segments.contains(&s), "{segments:?}");
    }
    assert!(r.points[1].capture_loss > 0);
    assert!(m.views().contains(&View::Losses));
    // Step 3 shows the Losses view, its lines the losses placed.
    m.apply(Command::NextLessonStep);
    m.apply(Command::NextLessonStep);
    m.tick(Instant::now());
    assert_eq!(m.view(), View::Losses);
    assert!(m.loss_items().len() >= 3, "{:?}", m.loss_items());
}
