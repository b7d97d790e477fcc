//! The real binary in tmux: the workbench starts on the `teaching-basic`
//! scenario, shows its packets, exports them with `E`, switches views on
//! keys, and `q` quits with status 0. Skipped where tmux is missing, unless ROCESCOPE_REQUIRE_TMUX is
//! set (as in .ci/run).
#![allow(clippy::unwrap_used)]

mod support;

use support::{tmux, wait_for};

#[test]
fn workbench_in_tmux() {
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let session = format!("rocescope-smoke-{}", std::process::id());
    let folder = rocescope_testkit::temp_dir("smoke");
    let status_file = folder.path().join("status");
    let _ = std::fs::remove_file(&status_file);
    let args = "sim --scenario teaching-basic";
    support::rocescope_in_tmux(&session, 100, 30, args, &status_file);
    let screen = wait_for(&session, "19 pkts", 20);
    assert!(screen.contains("1:Over"), "{screen}");
    assert!(screen.contains("sim:teaching-basic"), "{screen}");
    assert!(
        screen.contains("19 pkts"),
        "the run should finish within 20 s: {screen}"
    );
    // Not LIVE once the simulation has run out.
    let ended = wait_for(&session, "ended: simulation ended at", 20);
    assert!(ended.contains("ended: simulation ended at"), "{ended}");

    tmux(&["send-keys", "-t", &session, "2"]);
    let packets = wait_for(&session, "RETX", 20);
    assert!(packets.contains("RC WRITE First"), "{packets}");
    assert!(packets.contains("RETX"), "{packets}");

    // `E` exports the packet list: the file is written and read back.
    let csv = folder.path().join("packets.csv");
    let _ = std::fs::remove_file(&csv);
    tmux(&["send-keys", "-t", &session, "E"]);
    tmux(&[
        "send-keys",
        "-t",
        &session,
        "-l",
        &csv.display().to_string(),
    ]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    // (The status line is cut at the pane's width.)
    let exported = wait_for(&session, "exported 19 rows", 20);
    assert!(exported.contains("exported 19 rows"), "{exported}");
    let text = std::fs::read_to_string(&csv).unwrap_or_default();
    assert_eq!(text.lines().count(), 20, "header and 19 rows: {text}");
    assert!(
        text.lines()
            .next()
            .unwrap_or("")
            .starts_with("frame,ts_ns,")
    );
    let _ = std::fs::remove_file(&csv);

    tmux(&["send-keys", "-t", &session, "4"]);
    let ladder = wait_for(&session, "[NAK]", 20);
    assert!(ladder.contains("▶|"), "{ladder}");
    assert!(ladder.contains("[NAK]"), "{ladder}");

    tmux(&["send-keys", "-t", &session, "?"]);
    let help = wait_for(&session, "play / pause", 20);
    assert!(help.contains("play / pause"), "{help}");
    tmux(&["send-keys", "-t", &session, "Escape"]);
    // A simulator parameter from the command line reruns the model.
    support::tmux_command_line(&session, "set window_packets=2");
    let rerun = wait_for(&session, "restarted with window", 20);
    assert!(rerun.contains("restarted with window"), "{rerun}");
    tmux(&["send-keys", "-t", &session, "q"]);
    let status = support::exit_status(&session, &status_file, 10);
    assert_eq!(status, "0", "q must quit with status 0");
}
