//! `:whatif set KEY=VALUE` in the workbench core (issue 52, part 5): on a
//! recording of `window-stall` made by the simulator, the what-if runs on
//! its own thread and its runs land in the model (the changed goodput
//! well above the twin's with a larger window), a bad key is told at once
//! naming the key and the valid ones, `whatif clear` takes it out, and a
//! session that is not a capture file says it is not available.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rocescope_core::model::WhatIfState;
use rocescope_core::source::{self, Pace, SourceSpec, spawn_sim_into};
use rocescope_core::{Command, Model};
use rocescope_replay::PcapngWriter;
use rocescope_replay::TimeBase;
use rocescope_replay::store::Store;
use rocescope_sim::Scenario;

/// 2 ms of a shipped scenario, recorded as `rocescope sim --record` does.
fn record(dir: &Path, scenario: &str) -> PathBuf {
    let path = dir.join(format!("{scenario}.pcapng"));
    let mut sc = Scenario::builtin(scenario).unwrap();
    sc.bound_to_ns(2_000_000);
    let file = std::fs::File::create(&path).unwrap();
    let writer = PcapngWriter::new(std::io::BufWriter::new(file)).unwrap();
    let (_store, _analysis, handle) = spawn_sim_into(
        Store::live(TimeBase::Nanoseconds),
        sc,
        Pace::Fast,
        Some(writer),
    );
    let deadline = Instant::now() + Duration::from_secs(300);
    while !handle.status().finished.load(Ordering::Acquire) {
        assert!(Instant::now() < deadline, "the recording did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(handle);
    path
}

fn open(path: &Path) -> Model {
    let spec = SourceSpec::File {
        path: path.to_owned(),
        decode: Default::default(),
        wave: Default::default(),
    };
    let mut m = source::open(spec, &Default::default()).unwrap();
    m.tick(Instant::now());
    m
}

/// Ticks the model until the what-if is no longer running.
fn settle(m: &mut Model) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while matches!(m.whatif(), Some(WhatIfState::Running { .. })) {
        assert!(Instant::now() < deadline, "the what-if did not finish");
        std::thread::sleep(Duration::from_millis(20));
        m.tick(Instant::now());
    }
}

#[test]
fn whatif_set_runs_the_twin_beside_the_capture_and_clear_drops_it() {
    let tmp = rocescope_testkit::temp_dir("whatif-core");
    let cap = record(tmp.path(), "window-stall");
    let mut m = open(&cap);
    assert!(m.whatif().is_none());
    assert!(rocescope_core::query::whatif_lines(&m).is_none());

    m.apply(Command::RunCommandLine(
        "whatif set window_packets=32".into(),
    ));
    // Started, not run on the UI thread: the status line says so.
    assert!(
        matches!(m.whatif(), Some(WhatIfState::Running { .. })),
        "{}",
        m.status()
    );
    rocescope_testkit::assert_contains(m.status(), "running the twin");
    settle(&mut m);
    let Some(WhatIfState::Ready(w)) = m.whatif() else {
        panic!("no what-if: {}", m.status());
    };
    assert!(w.mismatches.is_empty(), "{:?}", w.mismatches);
    assert_eq!(w.changes, ["window_packets=32"]);
    let (c, t, ch) = (&w.capture.qps[0], &w.twin.qps[0], &w.changed.qps[0]);
    assert_eq!((c.src_ip.as_str(), c.dest_qp), ("10.0.0.1", 0x100));
    assert!(
        (t.goodput_gbytes_s / c.goodput_gbytes_s - 1.0).abs() < 0.05,
        "{} {}",
        t.goodput_gbytes_s,
        c.goodput_gbytes_s
    );
    assert!(
        ch.goodput_gbytes_s > 1.6 * t.goodput_gbytes_s,
        "{} {}",
        ch.goodput_gbytes_s,
        t.goodput_gbytes_s
    );
    rocescope_testkit::assert_contains(m.status(), "QP 0x000100 +");
    let (title, lines) = rocescope_core::query::whatif_lines(&m).unwrap();
    assert!(title.contains("window_packets=32"), "{title}");
    assert_eq!(lines[0], "QP 0x000100 10.0.0.1 -> 10.0.0.2");
    assert!(
        lines[1].contains("changed") && lines[1].contains("% against the twin"),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("window_full")), "{lines:?}");

    m.apply(Command::RunCommandLine("whatif clear".into()));
    assert!(m.whatif().is_none());
    assert!(rocescope_core::query::whatif_lines(&m).is_none());
    assert_eq!(m.status(), "whatif closed");
}

#[test]
fn a_twin_that_does_not_hold_is_shown_as_a_refusal_naming_the_qp_and_why() {
    let tmp = rocescope_testkit::temp_dir("whatif-core-rnr");
    let cap = record(tmp.path(), "rnr");
    let mut m = open(&cap);
    m.apply(Command::WhatIf(vec!["window_packets=32".into()]));
    settle(&mut m);
    let Some(WhatIfState::Ready(w)) = m.whatif() else {
        panic!("no what-if: {}", m.status());
    };
    assert!(!w.mismatches.is_empty());
    let s = m.status();
    assert!(s.contains("no prediction"), "{s}");
    assert!(s.contains("QP 0x000100") && s.contains("rnr_wait"), "{s}");
    let (title, lines) = rocescope_core::query::whatif_lines(&m).unwrap();
    assert!(title.contains("no prediction"), "{title}");
    // No changed run is shown, the refusal is.
    assert!(!lines.iter().any(|l| l.contains("changed")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  QP 0x000100 ") && l.contains("rnr_wait")),
        "{lines:?}"
    );
}

#[test]
fn a_bad_key_names_itself_and_the_valid_keys_and_runs_nothing() {
    let mut m = support::sample_model("sample-write-read.pcap");
    m.apply(Command::RunCommandLine(
        "whatif set windw_packets=32".into(),
    ));
    let s = m.status().to_owned();
    // Checked before anything else: the key is the error.
    assert!(s.contains("unknown key `windw_packets`"), "{s}");
    assert!(
        s.contains("valid keys: ") && s.contains("window_packets"),
        "{s}"
    );
    assert!(m.whatif().is_none());
    m.apply(Command::RunCommandLine("whatif window_packets=32".into()));
    rocescope_testkit::assert_starts_with(m.status(), "usage: whatif set");
}

#[test]
fn a_bad_key_on_a_capture_file_lists_the_valid_keys() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/captures/sample-write-read.pcap");
    let mut m = open(&path);
    m.apply(Command::WhatIf(vec!["windw_packets=32".into()]));
    let s = m.status();
    assert!(s.contains("unknown key `windw_packets`"), "{s}");
    assert!(
        s.contains("valid keys: ") && s.contains("window_packets"),
        "{s}"
    );
    assert!(s.contains("losses"), "{s}");
    assert!(m.whatif().is_none());
}

#[test]
fn a_session_not_from_a_capture_file_says_whatif_is_not_available() {
    // A model made over a store in memory has no file to rerun.
    let mut m = support::sample_model("in-memory");
    m.apply(Command::WhatIf(vec!["window_packets=32".into()]));
    rocescope_testkit::assert_contains(m.status(), "not available");
    assert!(m.whatif().is_none());
    // A live session (the simulator) neither.
    let mut sc = Scenario::builtin("window-stall").unwrap();
    sc.bound_to_ns(100_000);
    let mut live = source::open(
        SourceSpec::Sim {
            scenario: Box::new(sc),
            pace: Pace::Fast,
            record: None,
        },
        &Default::default(),
    )
    .unwrap();
    live.apply(Command::WhatIf(vec!["window_packets=32".into()]));
    rocescope_testkit::assert_contains(live.status(), "not available in a live session");
    assert!(live.whatif().is_none());
}
