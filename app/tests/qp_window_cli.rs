//! The window as the real binary tells it (issue 53): a recording of the
//! `window-stall` scenario reads the window BALBOA keeps (16 packets, not
//! 17; 32 with `--set window_packets=32`), and no shipped scenario ends a QP
//! "window_full" with fewer packets outstanding than its window.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::Value;

mod support;

/// `rocescope ARGS` run to success, what it printed.
fn rocescope(args: &[&str]) -> String {
    support::text(&support::rocescope_ok(args).stdout)
}

fn record(dir: &Path, scenario: &str, set: &[&str]) -> String {
    let path = dir.join(format!("{scenario}{}.pcapng", set.join("")));
    let path = path.to_str().unwrap().to_owned();
    let mut args = vec![
        "sim",
        "--scenario",
        scenario,
        "--record",
        &path,
        "--headless",
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    rocescope(&args);
    path
}

fn qps(path: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(&rocescope(&["stats", path, "--json"])).unwrap();
    v["qps"].as_array().unwrap().clone()
}

#[test]
fn the_window_is_the_one_the_sender_keeps_and_full_only_when_it_is() {
    let dir_tmp = rocescope_testkit::temp_dir("window");
    let dir = dir_tmp.path();

    let ws = record(dir, "window-stall", &[]);
    let text = rocescope(&["stats", &ws]);
    let row = text
        .lines()
        .find(|l| l.starts_with("0x000100 "))
        .unwrap_or_else(|| panic!("no QP row: {text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    // QP, packets, resent, episodes, NAKs, CNPs, capture loss, unACKed at
    // end (the route is on the line below).
    assert_eq!(cols.get(7), Some(&"16"), "outstanding: {row}");
    let q = &qps(&ws)[0];
    assert_eq!(q["window_packets"], 16, "{q}");
    assert_eq!(q["outstanding_packets"], 16, "{q}");
    assert_eq!(q["state_at_end"], "window_full", "{q}");

    let ws32 = record(dir, "window-stall", &["window_packets=32"]);
    let q = &qps(&ws32)[0];
    assert_eq!(q["window_packets"], 32, "{q}");
    assert!(q["outstanding_packets"].as_u64().unwrap() <= 32, "{q}");

    for scenario in [
        "default",
        "lossy-link",
        "incast",
        "line-rate",
        "read-heavy",
        "aes",
        "dpi-drop",
        "teaching-basic",
        "dcqcn",
    ] {
        let path = record(dir, scenario, &[]);
        for q in qps(&path) {
            // Full as the requester counts: the packets on the wire and
            // those whose responses its card has not taken yet.
            if q["state_at_end"] == "window_full" {
                assert!(
                    q["outstanding_counted"].as_u64() >= q["window_packets"].as_u64(),
                    "{scenario}: {q}"
                );
            }
        }
    }
}
