//! `rocescope report` as a user runs it: the page's path on stdout, and a
//! one-line error with a failing exit code for what is not a capture.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::{rocescope, rocescope_ok, sample};

/// `rocescope report CAPTURE -o OUT`.
fn report(capture: &Path, out_dir: &Path) -> Output {
    rocescope(&[
        "report",
        capture.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ])
}

/// A fresh folder for one test's report.
fn tmp(name: &str) -> PathBuf {
    support::out_dir("report-cli", name)
}

#[test]
fn report_writes_the_page_and_prints_its_path() {
    let sample = sample();
    let out_dir = tmp("sample").join("nested");
    let out = rocescope_ok(&[
        "report",
        sample.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    let printed = String::from_utf8(out.stdout).unwrap();
    let index = out_dir.join("index.html");
    assert_eq!(printed.trim(), index.display().to_string());
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.contains("QP 0x000012"), "{html}");
    // The time by state section: the QP's bar and its shares in words.
    rocescope_testkit::assert_contains(&html, "<h2 id=\"time\">Time by state</h2>");
    let section = &html[html.find("id=\"time\"").unwrap()..html.find("id=\"findings\"").unwrap()];
    rocescope_testkit::assert_contains(section, "<div class=\"bar\"><span style=\"width:");
    assert!(section.contains("idle "), "{section}");
    for plot in ["throughput", "episodes", "rtt", "window", "ladder"] {
        for ext in ["png", "svg"] {
            let f = out_dir.join(format!("{plot}.{ext}"));
            assert!(f.metadata().unwrap().len() > 1_000, "{}", f.display());
        }
    }
}

#[test]
fn report_of_a_file_that_is_not_a_capture_fails_in_one_line() {
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "not packets\n").unwrap();
    let out_dir = dir.join("out");
    let out = report(&notes, &out_dir);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("rocescope: ") && err.contains("not a capture"),
        "{err}"
    );
    assert!(!out_dir.join("index.html").exists());

    // An output path that is a file, not a directory.
    let sample = sample();
    let out = report(&sample, &notes);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("notes.txt"), "{err}");
}
