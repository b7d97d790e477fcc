//! Time by state as the real binary gives it (issue 48): for a recording
//! of every shipped scenario, `stats --json` accounts each QP's span to the
//! nanosecond and reads `state_at_end` from the same runs; `stats` prints
//! the shares; `--link-gbps` sets the rate it reckons with and refuses
//! nonsense.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

mod support;
use support::rocescope_outcome as rocescope;

#[test]
fn every_qp_span_is_accounted_to_the_nanosecond() {
    let dir_tmp = rocescope_testkit::temp_dir("tbs");
    let dir = dir_tmp.path();
    // Every shipped scenario.
    let names = rocescope_sim::Scenario::builtin_names();
    assert_eq!(names.len(), 13, "{names:?}");
    let states = [
        "error",
        "waiting_on_timer",
        "rnr_wait",
        "recovering",
        "paused",
        "window_full",
        "sending",
        "sharing",
        "rate_limited",
        "host_limited",
        "idle",
    ];
    for name in names {
        let path = dir.join(format!("{name}.pcapng"));
        support::record_sim(name, "1ms", &path);
        let p = path.to_str().unwrap();
        let (ok, out, err) = rocescope(&["stats", p, "--json"]);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        for q in v["qps"].as_array().unwrap() {
            let by = q["time_by_state_ns"].as_object().unwrap();
            assert_eq!(by.len(), states.len(), "{name}: {q}");
            let sum: u64 = states.iter().map(|s| by[*s].as_u64().unwrap()).sum();
            assert_eq!(sum, q["span_ns"].as_u64().unwrap(), "{name}: {q}");
            if sum > 0 {
                let end = q["state_at_end"].as_str().unwrap();
                assert!(
                    by[end].as_u64().unwrap() > 0,
                    "{name}: {end} never held: {q}"
                );
            }
        }
        let (ok, text, _) = rocescope(&["stats", p]);
        assert!(ok && text.contains("time by state"), "{text}");
    }
    let ws = dir.join("window-stall.pcapng");
    let ws = ws.to_str().unwrap();
    // The qp_states table: the runs, summing to the span stats gives.
    let csv = dir.join("qp_states.csv");
    let (ok, _, err) = rocescope(&[
        "export",
        ws,
        "--table",
        "qp_states",
        "--to",
        csv.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("qp,dest_qp,start_ns,end_ns,state"));
    let runs: Vec<(u64, u64, String)> = lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
                c[4].to_owned(),
            )
        })
        .collect();
    let (ok, out, _) = rocescope(&["stats", ws, "--json"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    let q = &v["qps"][0];
    let window_full: u64 = runs
        .iter()
        .filter(|r| r.2 == "window_full")
        .map(|r| r.1 - r.0)
        .sum();
    assert_eq!(
        window_full,
        q["time_by_state_ns"]["window_full"].as_u64().unwrap()
    );
    assert_eq!(
        runs.iter().map(|r| r.1 - r.0).sum::<u64>(),
        q["span_ns"].as_u64().unwrap()
    );
    assert_eq!(
        runs.last().map(|r| r.2.as_str()),
        q["state_at_end"].as_str()
    );
    // SQL naming a table that reads the time by state gets it (a query or
    // export naming none indexes without it).
    let (ok, out, err) = rocescope(&[
        "query",
        ws,
        "SELECT sum(time_window_full_ns) AS w FROM qps",
        "--format",
        "csv",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        out.lines().nth(1),
        Some(window_full.to_string().as_str()),
        "{out}"
    );
    let (ok, out, _) = rocescope(&["stats", ws, "--json", "--link-gbps", "25"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["link_gbps"], 25.0);
    let (ok, _, err) = rocescope(&["stats", ws, "--link-gbps", "0"]);
    assert!(!ok);
    assert!(
        err.contains("'0' for '--link-gbps") && err.contains("positive number of Gb/s"),
        "{err}"
    );
}
