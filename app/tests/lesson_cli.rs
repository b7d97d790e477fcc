//! `rocescope lesson` as a student and a teacher run it: the course
//! listed, every lesson checked on its scenario, a lesson whose claim no
//! longer holds failing with its step named, and a lesson exported for a
//! Wireshark assignment.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        // The workbench's progress is not this test's business.
        .env("ROCESCOPE_STATE_DIR", tmp("state"))
        .output()
        .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("lesson-cli")
        .join(name);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// The stderr of a run that must fail.
fn failure(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn the_course_lists_at_least_fifteen_lessons_with_scenario_and_topic() {
    let text = stdout(&rocescope(&["lesson", "--list"]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 15, "{text}");
    for l in &lines {
        assert!(l.contains(" scenario "), "{l}");
        assert!(
            l.contains(" 1 question: ") || l.contains(" questions: "),
            "{l}"
        );
    }
    // Every lesson asks something; one question is not "1 questions".
    assert!(!text.contains(" 0 questions"), "{text}");
    assert!(!text.contains(" 1 questions"), "{text}");
    assert!(!text.contains(" 1 steps"), "{text}");
}

#[test]
fn every_lesson_holds_on_its_scenario() {
    let text = stdout(&rocescope(&["lesson", "--check", "--all"]));
    let lessons = text.lines().filter(|l| l.contains(": ok (")).count();
    assert!(lessons >= 15, "{text}");
}

#[test]
fn a_claim_that_no_longer_holds_fails_naming_its_step() {
    let dir = tmp("untrue");
    let file = dir.join("untrue.toml");
    std::fs::write(
        &file,
        r#"
title = "Untrue"
scenario = "teaching-basic"
topic = "a claim the run does not bear out"
summary = "One loss, claimed as two."

[[step]]
text = "Nothing to claim yet."

[[step]]
text = "Two episodes."
[[step.check]]
fact = "episodes.nak_seq_err"
equals = 2

[[step]]
text = "A filter with a typo."
filter = "bth.psn >= "
"#,
    )
    .unwrap();
    let out = rocescope(&["lesson", file.to_str().unwrap(), "--check"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    rocescope_testkit::assert_contains(&said, "step 2: episodes.nak_seq_err is 1, the step says 2");
    rocescope_testkit::assert_contains(&said, "step 3: its filter \"bth.psn >= \" does not parse");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no longer holds"), "{err}");
}

#[test]
fn a_broken_lesson_file_is_refused_with_where() {
    let dir = tmp("broken");
    let file = dir.join("broken.toml");
    std::fs::write(&file, "title = \"x\"\nscenario = 3\n").unwrap();
    let out = rocescope(&["lesson", file.to_str().unwrap(), "--check"]);
    let err = failure(&out);
    assert!(err.contains("broken.toml"), "{err}");
    assert!(err.contains("line 2"), "{err}");
    let out = rocescope(&["lesson", "no-such-lesson"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rocescope lesson --list"), "{err}");
}

#[test]
fn a_lesson_exports_its_run_as_pcapng_wireshark_reads_and_its_report() {
    let dir = tmp("export");
    let text = stdout(&rocescope(&[
        "lesson",
        "go-back-n",
        "--export",
        dir.to_str().unwrap(),
    ]));
    let mut lines = text.lines();
    let pcapng = PathBuf::from(lines.next().unwrap());
    let index = PathBuf::from(lines.next().unwrap());
    assert!(index.ends_with("report/index.html"), "{text}");
    assert!(
        std::fs::read_to_string(&index)
            .unwrap()
            .contains("Retransmission")
    );
    let stats = stdout(&rocescope(&["stats", pcapng.to_str().unwrap(), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(v["counters"]["packet_seq_err"], 1, "{stats}");
    if !tshark_available() {
        return;
    }
    let out = Command::new("tshark")
        .args([
            "-r",
            pcapng.to_str().unwrap(),
            "-Y",
            "infiniband.bth",
            "-T",
            "fields",
            "-e",
            "infiniband.bth.psn",
        ])
        .output()
        .unwrap();
    let psns = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(psns.lines().count() > 5, "tshark decoded: {psns}");
}

fn tshark_available() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::TSHARK])
}

/// The README's lesson commands, as printed (the workbench one, without a
/// terminal, says what it needs).
#[test]
fn the_readme_lesson_commands_work_as_printed() {
    let readme = support::user_docs();
    let lines: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("rocescope lesson "))
        // Those reading the README's trace.pcapng run where it is made
        // (readme_files).
        .filter(|l| !l.contains(" trace.pcapng "))
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert!(lines.len() >= 4, "{lines:?}");
    let cwd = tmp("readme");
    for line in lines {
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(&args)
            .current_dir(&cwd)
            .env("ROCESCOPE_STATE_DIR", tmp("state"))
            .output()
            .unwrap();
        if args.len() == 2 && !args[1].starts_with('-') {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("needs a terminal"), "{line}: {err}");
        } else {
            assert!(
                out.status.success(),
                "{line}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert!(cwd.join("out/report/index.html").is_file());
}

/// `rocescope lesson NAME --capture FILE --answer A...`, and the answers
/// after those read from `stdin`.
fn on_capture(lesson: &str, cap: &Path, answers: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut args = vec!["lesson", lesson, "--capture", cap.to_str().unwrap()];
    for a in answers {
        args.extend(["--answer", a]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(&args)
        .env("ROCESCOPE_STATE_DIR", tmp("state"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `rocescope sim ARGS --headless --record DIR/NAME`.
fn record(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let cap = dir.join(name);
    let mut all = vec!["sim"];
    all.extend(args);
    all.extend(["--headless", "--record", cap.to_str().unwrap()]);
    stdout(&rocescope(&all));
    cap
}

/// The shipped `scenario` for 2 ms, recorded as `DIR/SCENARIO.pcapng`.
fn recorded(dir: &Path, scenario: &str) -> PathBuf {
    let name = format!("{scenario}.pcapng");
    record(dir, &name, &["--scenario", scenario, "--duration", "2ms"])
}

/// The number after `lead` in `text`, up to the next space (a trailing `.`
/// or `,` left out).
fn number_after(text: &str, lead: &str) -> f64 {
    let at = text
        .find(lead)
        .unwrap_or_else(|| panic!("{lead:?} in {text}"));
    let word = text[at + lead.len()..].split_whitespace().next().unwrap();
    word.trim_end_matches(['.', ',']).parse().unwrap()
}

/// Lesson 13's prediction (window 32: what throughput?) asked about a
/// capture that is not its scenario: window-bdp's workload on cables half
/// as long, so its rate is twice the lesson's. The answer is judged on the
/// capture's twin run with the window doubled, not on the lesson's run.
#[test]
fn a_prediction_is_judged_on_the_twin_of_the_user_s_capture_with_its_change() {
    let dir = tmp("own-capture");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/lessons/scenarios/window-bdp.toml")
        .canonicalize()
        .unwrap();
    let cap = record(
        &dir,
        "half.pcapng",
        &[
            "--scenario",
            scenario.to_str().unwrap(),
            "--set",
            "link_prop_ns=5000",
        ],
    );
    // The lesson's own answer on its scenario, about 3.5 GB/s.
    let text = stdout(&on_capture("window", &cap, &["3.5"], ""));
    rocescope_testkit::assert_contains(&text, "qp1 = QP 0x100 10.0.0.1 -> 10.0.0.2");
    rocescope_testkit::assert_contains(
        &text,
        "Not asked: step(s) 1, 2, 4 are about scenario window-bdp",
    );
    rocescope_testkit::assert_contains(
        &text,
        "About qp1, the capture's QP 0x100 10.0.0.1 -> 10.0.0.2.",
    );
    let captured = number_after(&text, "On your capture, qp1.throughput_gbytes_s is ");
    let changed = number_after(&text, "window_packets=32: qp1.throughput_gbytes_s is ");
    rocescope_testkit::assert_contains(&text, "> 3.5\n  Not quite: the answer is ");
    assert_eq!(
        number_after(&text, "Not quite: the answer is "),
        changed,
        "{text}"
    );
    // A window-limited link: twice the window, nearly twice the rate, and
    // far from the lesson's scenario's.
    assert!(changed > 1.6 * captured, "{captured} -> {changed}");
    assert!(changed > 3.5 * 1.3, "{changed}");
    assert!(text.contains("0 of 1 prediction(s)"), "{text}");
    // Typed: a hint asked for, a word refused, then the changed run's rate
    // within the question's 15%.
    let typed = format!("hint\nlots\n{:.2}\n", changed * 1.1);
    let text = stdout(&on_capture("13", &cap, &[], &typed));
    assert!(text.contains("hint: Throughput = window"), "{text}");
    assert!(text.contains("\"lots\" is not a number"), "{text}");
    assert!(text.contains("  Right.\n"), "{text}");
    assert!(text.contains("1 of 1 prediction(s)"), "{text}");
    // Input that ends before the answer fails, naming the step.
    let out = on_capture("13", &cap, &[], "");
    let err = failure(&out);
    assert!(err.contains("step 3: no answer"), "{err}");
}

/// A twin that does not hold is refused in whatif's words, before any
/// question; a lesson without a prediction names the lessons that have.
#[test]
fn a_capture_whose_twin_does_not_hold_and_a_lesson_without_predictions_are_refused() {
    let dir = tmp("own-capture-refused");
    let cap = recorded(&dir, "rnr");
    let out = on_capture("18", &cap, &["1"], "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("Step "), "no question asked: {said}");
    let err = failure(&out);
    assert!(
        err.contains("the twin does not hold") && err.contains("so no prediction"),
        "{err}"
    );
    assert!(err.contains("QP 0x100 10.0.0.1 -> 10.0.0.2: "), "{err}");
    assert!(err.contains("rnr_wait"), "{err}");
    let out = on_capture("01-write", &cap, &[], "");
    let err = failure(&out);
    assert!(
        err.contains("lesson 01-write asks no prediction") && err.contains("13-window"),
        "{err}"
    );
}

/// Lesson 15's prediction (DCQCN off: what throughput?) on a capture of
/// the shipped dcqcn scenario: its CNPs, from a queue the capture does not
/// show, are replayed as seen, so the twin holds, and without DCQCN the QP
/// no longer slows.
#[test]
fn a_capture_s_cnps_replayed_let_a_dcqcn_prediction_run_on_it() {
    let dir = tmp("own-capture-dcqcn");
    let cap = recorded(&dir, "dcqcn");
    let text = stdout(&on_capture("15", &cap, &["1"], ""));
    let captured = number_after(&text, "On your capture, qp1.throughput_gbytes_s is ");
    let changed = number_after(&text, "dcqcn_enabled=0: qp1.throughput_gbytes_s is ");
    assert!(changed > 1.2 * captured, "{captured} -> {changed}: {text}");
    assert!(text.contains("Not quite: the answer is "), "{text}");
}

/// Lesson 16's prediction (PFC on: how many retransmission episodes?) on a
/// capture of the shipped pfc scenario: its pauses, from other hosts'
/// traffic the capture does not show, are replayed as seen, so the twin
/// holds and the question is asked on it.
#[test]
fn a_capture_s_pauses_replayed_let_a_pfc_prediction_run_on_it() {
    let dir = tmp("own-capture-pfc");
    let cap = recorded(&dir, "pfc");
    let out = on_capture("16", &cap, &["0"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = stdout(&out);
    assert!(text.contains("On your capture, episodes is 0."), "{text}");
    assert!(text.contains("Right."), "{text}");
    assert!(text.contains("1 of 1 prediction(s)"), "{text}");
}
