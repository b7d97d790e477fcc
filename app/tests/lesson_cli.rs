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
    assert!(
        said.contains("step 2: episodes.nak_seq_err is 1, the step says 2"),
        "{said}"
    );
    assert!(
        said.contains("step 3: its filter \"bth.psn >= \" does not parse"),
        "{said}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no longer holds"), "{err}");
}

#[test]
fn a_broken_lesson_file_is_refused_with_where() {
    let dir = tmp("broken");
    let file = dir.join("broken.toml");
    std::fs::write(&file, "title = \"x\"\nscenario = 3\n").unwrap();
    let out = rocescope(&["lesson", file.to_str().unwrap(), "--check"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
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
