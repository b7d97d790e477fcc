//! One scenario, three ways in (issue 16): run in-process, served by the
//! agent and attached to, and recorded then reopened as a file. Each gives
//! the same findings and episodes: every record kind, the simulator's
//! evidence included, reaches the analysis the same way.
#![allow(clippy::unwrap_used)]

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::rocescope_json as run_json;

/// What the diagnosis told: (cause, QP, count) of each finding and the
/// causes of the episodes, in order.
fn told(analysis: &Value) -> (Vec<(String, u64, u64)>, Vec<String>) {
    let findings = analysis["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["cause"].as_str().unwrap().to_owned(),
                f["qp"].as_u64().unwrap_or(u64::MAX),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let episodes = analysis["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cause"].as_str().unwrap().to_owned())
        .collect();
    (findings, episodes)
}

#[test]
fn a_scenario_gives_the_same_findings_in_process_through_the_agent_and_from_a_recording() {
    let dir_tmp = rocescope_testkit::temp_dir("same");
    let dir = dir_tmp.path();
    let rec = dir.join("dpi-drop.pcapng");
    let rec_s = rec.to_str().unwrap();

    let in_process = run_json(&[
        "sim",
        "--scenario",
        "dpi-drop",
        "--headless",
        "--json",
        "--record",
        rec_s,
    ]);
    let reopened = run_json(&["stats", rec_s, "--json"]);

    // The agent serves the same finite run, slowly enough that a debug
    // build's client takes every frame.
    let (mut cmd, listen) = support::sim_agent("dpi-drop");
    let mut agent = cmd
        .args(["--sim-duration", "200us", "--sim-pace", "0.0002"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("tcp://{listen}");
    let t0 = Instant::now();
    let attached = loop {
        let out = support::bin()
            .args(["attach", &url, "--headless", "--json", "--duration", "60s"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if v["frames_received"].as_u64().unwrap_or(0) > 0 || t0.elapsed() > Duration::from_secs(30)
        {
            break v;
        }
        // The agent was not listening yet.
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(attached["frames_dropped"].as_u64(), Some(0), "{attached}");
    assert_eq!(
        attached["frames_received"].as_u64(),
        in_process["frames"].as_u64(),
        "{attached}"
    );

    let want = told(&in_process["analysis"]);
    assert!(
        want.0.iter().any(|(cause, _, _)| cause == "fatal_nak"),
        "dpi-drop's rejected WRITE is told: {want:?}"
    );
    assert_eq!(told(&reopened), want, "reopened from the recording");
    assert_eq!(told(&attached["analysis"]), want, "through the agent");
    let evidence = |v: &Value| v["counters"].clone();
    assert_eq!(evidence(&reopened), evidence(&in_process["analysis"]));
}
