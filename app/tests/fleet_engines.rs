//! The fleet path on real engines: three captures exported into one
//! folder with `rocescope export --partition`, then the same questions
//! answered by Apache Spark (local mode, PySpark), Apache DataFusion
//! (Python) and `rocescope query`, held against each other and against
//! `rocescope stats`; Spark's scans read no row group a time or QP filter
//! excludes. The engines run in one Python script (`fleet/engines.py`, one
//! Spark session). Skips without pyspark, datafusion and java unless
//! ROCESCOPE_REQUIRE_SPARK / ROCESCOPE_REQUIRE_DATAFUSION is set (`.ci/run`
//! installs them).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::rocescope_ok;

/// The README's fleet commands: the `sh` block after its marker.
fn readme_fleet_block() -> String {
    let readme = support::user_docs();
    let (_, after) = readme
        .split_once("<!-- fleet: app/tests/fleet_engines.rs runs this block as printed -->")
        .expect("README has the fleet block's marker");
    let block = after.trim_start().strip_prefix("```sh\n").unwrap();
    block.split("```").next().unwrap().to_owned()
}

fn have_engines() -> bool {
    rocescope_testkit::available(&[
        rocescope_testkit::PYSPARK,
        rocescope_testkit::DATAFUSION,
        rocescope_testkit::JAVA,
    ])
}

/// `sql` over the fleet folder by `rocescope query`, as sorted rows of
/// strings.
fn rocescope_rows(fleet: &Path, sql: &str) -> Vec<Vec<String>> {
    let text = support::query(fleet, sql, "csv");
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    rows.sort();
    rows
}

/// An engine's rows (JSON arrays) as sorted rows of strings.
fn engine_rows(v: &Value) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn spark_datafusion_and_rocescope_agree_over_a_fleet_folder() {
    if !have_engines() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fleet");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The README's fleet block, as printed, from a folder that has the
    // repository's assets: captures named as engines would mistype them
    // (a year, a date) and the sample, exported into one folder.
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets"),
        dir.join("assets"),
    )
    .unwrap();
    // The README's fleet block.
    let out = rocescope_testkit::run_ok(
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &readme_fleet_block()])
            .current_dir(&dir)
            .env("PATH", support::path_with_rocescope()),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    rocescope_testkit::assert_contains(&said, "c_1999                 256            391");
    let year = dir.join("fleet-demo/1999.pcapng");
    let date = dir.join("fleet-demo/2025-06-01.pcapng");
    let sample = dir.join("assets/captures/sample-write-read.pcap");
    let fleet = dir.join("fleet-demo/fleet");
    let window_ns = 500_000u64;
    // The year's capture again, with another window and then the same one:
    // each re-export replaces its partitions, never adds to them.
    for window in ["100us", "500us"] {
        rocescope_ok(&[
            "export",
            year.to_str().unwrap(),
            "--to",
            fleet.to_str().unwrap(),
            "--partition",
            "--window",
            window,
        ]);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fleet/engines.py");
    let out = rocescope_testkit::run_ok(
        Command::new("python3")
            .arg(&script)
            .arg(&fleet)
            .arg(window_ns.to_string()),
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();

    // The same questions, in the same words (engines.py's QUESTIONS).
    let questions = [
        (
            "rows_per_capture",
            "SELECT capture, count(*) AS n FROM packets GROUP BY capture",
        ),
        (
            "rows_per_window",
            "SELECT capture, window_start_ns, count(*) AS n FROM packets GROUP BY capture, window_start_ns",
        ),
        (
            "retx_per_qp_packets",
            "SELECT capture, dest_qp, count(*) AS n FROM packets WHERE retransmission AND NOT response GROUP BY capture, dest_qp",
        ),
        (
            "retx_per_qp_qps",
            "SELECT capture, dest_qp, retransmitted_packets AS n FROM qps",
        ),
        (
            "retx_per_capture",
            "SELECT capture, sum(retransmitted_packets) AS n FROM qps GROUP BY capture",
        ),
        (
            "episodes_by_cause",
            "SELECT capture, cause, count(*) AS n, sum(packets_resent) AS resent FROM episodes GROUP BY capture, cause",
        ),
    ];
    for (name, sql) in questions {
        let ours = rocescope_rows(&fleet, sql);
        assert!(!ours.is_empty(), "{name}: no rows");
        assert_eq!(engine_rows(&got["spark"][name]), ours, "{name}: Spark");
        assert_eq!(
            engine_rows(&got["datafusion"][name]),
            ours,
            "{name}: DataFusion"
        );
    }

    // And `rocescope stats` of each capture tells the same.
    let rows = rocescope_rows(&fleet, questions[0].1);
    let retx = rocescope_rows(&fleet, questions[2].1);
    let episodes = rocescope_rows(&fleet, questions[5].1);
    for (cap, key) in [
        (&year, "c_1999"),
        (&date, "c_2025-06-01"),
        (&sample, "sample-write-read"),
    ] {
        let out = rocescope_ok(&["stats", cap.to_str().unwrap(), "--json"]);
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        let qps = stats["qps"].as_array().unwrap();
        let packets: u64 = qps.iter().map(|q| q["packets"].as_u64().unwrap()).sum();
        let of = |rows: &[Vec<String>]| -> Vec<Vec<String>> {
            rows.iter()
                .filter(|r| r[0] == key)
                .map(|r| r[1..].to_vec())
                .collect()
        };
        // Every frame of these captures is RoCE, in a QP.
        assert_eq!(of(&rows), [[packets.to_string()]], "{key}: rows");
        let mut want_retx: Vec<Vec<String>> = qps
            .iter()
            .filter(|q| q["retransmitted_packets"].as_u64().unwrap() > 0)
            .map(|q| {
                vec![
                    q["dest_qp"].to_string(),
                    q["retransmitted_packets"].to_string(),
                ]
            })
            .collect();
        want_retx.sort();
        assert_eq!(of(&retx), want_retx, "{key}: retransmissions per QP");
        let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
        for q in qps {
            for (cause, n) in q["episodes_by_cause"].as_object().unwrap() {
                *by_cause.entry(cause.clone()).or_default() += n.as_u64().unwrap();
            }
        }
        let got_causes: BTreeMap<String, u64> = of(&episodes)
            .into_iter()
            .map(|r| (r[0].clone(), r[1].parse().unwrap()))
            .collect();
        assert_eq!(got_causes, by_cause, "{key}: episodes by cause");
    }

    // Spark sees the types the SCHEMA promises: signed, the capture a
    // string even when it reads as a year or a date.
    let types = &got["spark"]["types"];
    for (col, ty) in [
        ("ts_ns", "bigint"),
        ("frame", "bigint"),
        ("dest_qp", "int"),
        ("psn", "int"),
        ("opcode", "smallint"),
        ("retransmission", "boolean"),
        ("src_ip", "string"),
        ("capture", "string"),
        ("window_start_ns", "bigint"),
    ] {
        assert_eq!(types[col], ty, "Spark's type of {col}");
    }
    assert_eq!(got["datafusion"]["types"]["ts_ns"], "int64");

    // Spark skips the row groups a filter excludes: nothing read for a
    // time before the first frame, a QP or a PSN that no frame has; only
    // the window's rows for a filter on one window (of several).
    let scan = &got["spark_scan"];
    for q in ["before_first", "no_such_qp", "no_such_psn"] {
        assert_eq!(scan[q]["result"], 0, "{q}: {scan}");
        assert_eq!(scan[q]["rows_read"], 0, "{q}: Spark read rows: {scan}");
    }
    let total = scan["total_rows"].as_u64().unwrap();
    let in_window = scan["window"]["rows"].as_u64().unwrap();
    assert_eq!(scan["in_window"]["result"], in_window, "{scan}");
    assert_eq!(scan["in_window"]["rows_read"], in_window, "{scan}");
    assert!(in_window < total, "{scan}");
}
