//! `:whatif set window_packets=32` in the terminal workbench: the real
//! binary in tmux on a recording of `window-stall` shows the capture, its
//! twin and the changed run per QP above the Overview and the QPs, and
//! `:whatif clear` takes them out. Skipped where tmux is missing, unless
//! ROCESCOPE_REQUIRE_TMUX is set (as in .ci/run).
#![allow(clippy::unwrap_used)]

mod support;

use support::{tmux, wait_for};

#[test]
fn whatif_typed_in_the_workbench_shows_the_runs_beside_the_capture() {
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let tmp = rocescope_testkit::temp_dir("whatif-tui");
    // The guide's recording line, as printed (docs/workbench.md).
    let line = "rocescope sim --scenario window-stall --duration 2ms --headless --record window-stall.pcapng";
    assert!(
        support::user_docs().contains(line),
        "the guide lacks {line:?}"
    );
    let cap = tmp.path().join("window-stall.pcapng");
    let mut args: Vec<&str> = line.split(' ').skip(1).collect();
    args.pop();
    args.push(cap.to_str().unwrap());
    support::rocescope_ok(&args);
    let args = format!("open {}", cap.display());
    let (session, status_file) =
        support::rocescope_in_tmux_named("whatif", tmp.path(), (160, 40), &args);
    let screen = wait_for(&session, "1:Over", 20);
    assert!(screen.contains("1:Over"), "{screen}");
    assert!(!screen.contains("what if"), "{screen}");

    support::tmux_command_line(&session, "whatif set window_packets=32");
    let ab = wait_for(&session, "against the twin", 120);
    rocescope_testkit::assert_contains(
        &ab,
        "what if window_packets=32: A capture and its twin, B changed",
    );
    assert!(ab.contains("QP 0x000100 10.0.0.1 -> 10.0.0.2"), "{ab}");
    assert!(ab.contains("goodput        capture "), "{ab}");
    assert!(ab.contains("time by state  capture window_full"), "{ab}");
    assert!(ab.contains("                 changed "), "{ab}");
    // The QPs view shows them too, above its table.
    tmux(&["send-keys", "-t", &session, "3"]);
    let qps = wait_for(&session, "QP conversations", 20);
    assert!(qps.contains("against the twin"), "{qps}");
    // A bad key is told with the valid keys; the runs stay.
    support::tmux_command_line(&session, "whatif set windw=1");
    let bad = wait_for(&session, "unknown key `windw`", 20);
    assert!(bad.contains("valid keys"), "{bad}");
    assert!(bad.contains("against the twin"), "{bad}");
    support::tmux_command_line(&session, "whatif clear");
    let cleared = wait_for(&session, "whatif closed", 20);
    assert!(!cleared.contains("against the twin"), "{cleared}");

    tmux(&["send-keys", "-t", &session, "q"]);
    let status = support::exit_status(&session, &status_file, 10);
    assert_eq!(status, "0", "q must quit with status 0");
}
