//! `open --point`: the real binary in tmux opens three capture points the
//! simulator wrote, shows the first point's capture with its own analysis
//! and the points' summary in the Overview (one-way latency per segment,
//! losses by segment, each clock), the Losses view (key `0`) with each
//! loss's segment and evidence, Enter on one selects its frame in the
//! packet list (its Path column), the ladder has a lane per point and the
//! lost frame's arrow ends where it vanished, and `q` quits with status 0. Skipped
//! where tmux is missing, unless ROCESCOPE_REQUIRE_TMUX is set (as in
//! .ci/run).
#![allow(clippy::unwrap_used)]

mod support;

use support::{tmux, tmux_session, wait_for};

use std::path::Path;
use std::process::Command;

#[test]
fn the_workbench_shows_where_frames_were_lost_between_points() {
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_rocescope");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("points-tui");
    let _ = std::fs::remove_dir_all(&dir);
    rocescope_testkit::run_ok(
        Command::new(bin)
            .args(["sim", "--scenario", "lossy-link", "--duration", "3ms"])
            .args(["--points", "a,sw,b", "--out"])
            .arg(&dir),
    );
    let session = format!("rocescope-points-{}", std::process::id());
    let status_file = dir.join("status");
    let cmd = format!(
        "{}; echo $? > {}",
        open_points(bin, &dir),
        status_file.display()
    );
    tmux_session(&session, 160, 45, &cmd);
    let screen = wait_for(&session, "Capture points a > sw > b", 30);
    // The Losses view: key 0, each loss under its segment with its
    // evidence; Enter shows the frame in the packet list.
    tmux(&["send-keys", "-t", &session, "0"]);
    let losses = wait_for(&session, "Losses by segment: a>sw ", 10);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let packets = wait_for(&session, "(the lost frame)", 10);
    // The ladder: one lane per point, the lost frame's arrow ends in an x.
    tmux(&["send-keys", "-t", &session, "4"]);
    let ladder = wait_for(&session, "──x ", 10);
    tmux(&["send-keys", "-t", &session, "q"]);
    let status = support::exit_status(&session, &status_file, 10);
    // Each segment's latency, in path order and back.
    let rows: Vec<&str> = ["a>sw", "sw>b", "b>sw", "sw>a"]
        .into_iter()
        .filter(|s| screen.contains(&format!("│{s} ")))
        .collect();
    assert_eq!(rows.len(), 4, "{screen}");
    for says in [
        "Capture points a > sw > b",
        // lossy-link loses requests on the wire before the switch.
        "losses: a>sw ",
        "clock sw: ",
        // Each segment's one-way latency over the capture, beside the
        // throughput.
        "One-way latency per segment, p99 µs",
        // The first point's own analysis stays whole beside them.
        "QPs            1",
    ] {
        assert!(screen.contains(says), "{says}: {screen}");
    }
    for says in [
        " 0:Losses ",
        "lost on the wire between the points of a>sw",
        "Evidence: seen at a",
    ] {
        assert!(losses.contains(says), "{says}: {losses}");
    }
    let line = line_with(&losses, "│a>sw ");
    assert!(line.contains("seen at a"), "{line}");
    // The packet list's Path column: the lost frame vanished after a.
    assert!(packets.contains(" Path "), "{packets}");
    let lost = line_with(&packets, " a x ");
    assert!(lost.contains("RC WRITE"), "{lost}");
    assert!(packets.contains(" a sw b "), "{packets}");
    let lanes = ladder.lines().find(|l| l.contains("  time ")).unwrap();
    assert!(lanes.contains(" a ") && lanes.contains(" sw "), "{ladder}");
    assert!(ladder.contains("──▶|"), "{ladder}");
    assert_eq!(status, "0", "{screen}");
}

/// A response lost before it reached the first point (an ACK lost in the
/// switch's queue toward alice, on `sw>a`) has no row in the first point's
/// capture; the ladder still draws it, from b's lane past sw, ending in an
/// `x` before a's.
#[test]
fn the_ladder_shows_a_response_lost_on_its_way_back() {
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_rocescope");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("points-tui-ack");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The core's ladder test's scenario: its 20th frame toward alice is
    // lost in the switch's queue.
    let scenario = include_str!("../core/tests/ack-lost-toward-alice.toml");
    std::fs::write(dir.join("ack.toml"), scenario).unwrap();
    rocescope_testkit::run_ok(
        Command::new(bin)
            .args(["sim", "--scenario", "ack.toml", "--out", "."])
            .current_dir(&dir),
    );
    let session = format!("rocescope-points-ack-{}", std::process::id());
    tmux_session(&session, 160, 45, &open_points(bin, &dir));
    wait_for(&session, "Capture points a > sw > b", 30);
    // Near the loss in the packet list, then the ladder.
    tmux(&["send-keys", "-t", &session, "2"]);
    for _ in 0..40 {
        tmux(&["send-keys", "-t", &session, "Down"]);
    }
    tmux(&["send-keys", "-t", &session, "4"]);
    let ladder = wait_for(&session, "x───", 10);
    tmux(&["kill-session", "-t", &session]);
    // An arrow that ends in an x.
    let line = line_with(&ladder, "x───");
    assert!(line.contains("RC ACK PSN "), "{line}");
    // From b's lane (the right), through sw's, vanished before a's.
    assert!(line.contains("┼"), "{line}");
    assert!(line.trim_end_matches([' ', '│']).ends_with('|'), "{line}");
}

/// `BIN open` with the points a, sw and b the simulator wrote in `dir`.
fn open_points(bin: &str, dir: &Path) -> String {
    let point = |n: &str| format!("--point {n}={}", dir.join(format!("{n}.pcapng")).display());
    format!("{bin} open {} {} {}", point("a"), point("sw"), point("b"))
}

/// The first line of `screen` holding `needle`; the test fails, showing
/// the screen, where none does.
fn line_with<'a>(screen: &'a str, needle: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line holds {needle:?}: {screen}"))
}
