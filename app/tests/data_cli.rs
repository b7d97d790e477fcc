//! `rocescope export` and `rocescope query` as a user runs them.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Command;
use support::{out_dir, query, rocescope, rocescope_fails, rocescope_ok, sample, text};

/// `rocescope export CAP --to TO MORE...` run to success, what it printed.
fn export(cap: &Path, to: &Path, more: &[&str]) -> String {
    let (cap, to) = (cap.to_str().unwrap(), to.to_str().unwrap());
    let mut args = vec!["export", cap, "--to", to];
    args.extend_from_slice(more);
    text(&rocescope_ok(&args).stdout)
}

#[test]
fn query_prints_json_rows_that_match_the_stats() {
    let s = sample();
    let rows = query(
        &s,
        "SELECT dest_qp, count(*) AS n FROM packets WHERE retransmission GROUP BY dest_qp",
        "json",
    );
    let rows: serde_json::Value = serde_json::from_str(&rows).unwrap();
    let stats = rocescope(&["stats", s.to_str().unwrap(), "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let qp = &stats["qps"][0];
    assert_eq!(rows[0]["dest_qp"], qp["dest_qp"]);
    assert_eq!(rows[0]["n"], qp["retransmitted_packets"]);
    assert_eq!(rows.as_array().unwrap().len(), 1);
}

#[test]
fn query_prints_an_aligned_table_and_says_how_many_rows() {
    let s = sample();
    let out = rocescope_ok(&[
        "query",
        s.to_str().unwrap(),
        "SELECT frame, opcode_name, psn FROM packets",
        "--max-rows",
        "4",
    ]);
    let t = text(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("frame"), "{t}");
    assert!(lines[1].starts_with("-----"), "{t}");
    assert_eq!(lines.len(), 2 + 4 + 1, "{t}");
    assert!(
        lines[6].contains("15 rows; 11 not shown"),
        "the cut is said: {t}"
    );
}

#[test]
fn bad_sql_is_one_line_on_stderr_and_a_failure() {
    let s = sample();
    for sql in [
        "SELEC 1",
        "SELECT nope FROM packets",
        "SELECT * FROM nowhere",
    ] {
        let out = rocescope(&["query", s.to_str().unwrap(), sql]);
        assert!(!out.status.success(), "{sql}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{sql}: {err}");
        assert!(err.starts_with("rocescope: "), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The export's line counts rows and files in the number they take and a
/// small table's rate in rows/s, not `0.00 M rows/s`.
#[test]
fn an_export_says_its_rows_and_rate_in_words() {
    let dir = out_dir("data-cli", "words");
    let s = sample();
    let line = export(&s, &dir.join("qps.csv"), &["--table", "qps"]);
    assert!(line.starts_with("1 row of qps in "), "{line}");
    assert!(!line.contains("M rows/s"), "{line}");
    assert!(line.contains(" rows/s) -> "), "{line}");
    let line = export(&s, &dir.join("parts"), &["--table", "qps", "--partition"]);
    assert!(line.contains(" -> 1 file under "), "{line}");
}

/// Per capture in a partitions folder: its packets and their windows.
const PER_CAPTURE: &str = "SELECT capture, count(*) AS n, count(DISTINCT window_start_ns) AS windows FROM packets GROUP BY capture";

#[test]
fn export_then_query_the_parquet_partitions() {
    let dir = out_dir("data-cli", "partitions");
    let said = export(&sample(), &dir, &["--partition", "--window", "5us"]);
    assert!(said.starts_with("15 rows of packets"), "{said}");
    let t = query(&dir, PER_CAPTURE, "csv");
    let mut lines = t.lines();
    assert_eq!(lines.next(), Some("capture,n,windows"));
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(row[0], "sample-write-read");
    assert_eq!(row[1], "15");
    assert!(row[2].parse::<u32>().unwrap() > 1, "{t}");
}

#[test]
fn export_refuses_what_it_cannot_write() {
    let dir = out_dir("data-cli", "refuse");
    let s = sample();
    rocescope_fails(
        &[
            "export",
            s.to_str().unwrap(),
            "--to",
            dir.join("x.xlsx").to_str().unwrap(),
        ],
        ".parquet, .csv or .jsonl",
    );
    rocescope_fails(
        &["export", "/nonexistent.pcap", "--to", "x.csv"],
        "/nonexistent.pcap",
    );
}

fn tshark_available() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::TSHARK])
}

/// `export --annotate` writes the capture with each verdict as a packet
/// comment; Wireshark's own reader filters on them, and the counts agree
/// with `stats`.
#[test]
fn annotated_pcapng_carries_the_verdicts_into_wireshark() {
    if !tshark_available() {
        return;
    }
    let dir = out_dir("data-cli", "annotate");
    let lossy = dir.join("lossy.pcapng");
    support::record_sim("lossy-link", "2ms", &lossy);
    // The sample holds a NAK and its Go-Back-N resends; the lossy link,
    // dozens of episodes.
    for cap in [sample(), lossy] {
        let annotated = dir.join("annotated.pcapng");
        let said = export(&cap, &annotated, &["--annotate"]);
        assert!(said.contains("with a verdict"), "{said}");
        let stats = rocescope(&["stats", cap.to_str().unwrap(), "--json"]);
        let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
        let retx = stats["counters"]["retransmitted_packets"].as_u64().unwrap();
        let naks = stats["counters"]["packet_seq_err"].as_u64().unwrap();
        let episodes = stats["episodes"].as_array().unwrap().len() as u64;
        assert!(retx > 0, "{} resends", cap.display());
        let tshark = |args: &[&str]| {
            let o = Command::new("tshark")
                .arg("-r")
                .arg(&annotated)
                .args(args)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", text(&o.stderr));
            text(&o.stdout)
        };
        let count = |filter: &str| {
            tshark(&["-Y", filter, "-T", "fields", "-e", "frame.number"])
                .lines()
                .count() as u64
        };
        assert_eq!(count(r#"frame.comment contains "Retransmission""#), retx);
        assert_eq!(
            count(r#"frame.comment contains "NAK (PSN sequence error)""#),
            naks
        );
        let named: std::collections::BTreeSet<String> =
            tshark(&["-T", "fields", "-e", "frame.comment"])
                .lines()
                .filter_map(|l| l.split("(episode ").nth(1))
                .filter_map(|l| l.split(':').next())
                .map(str::to_owned)
                .collect();
        assert_eq!(
            named.len() as u64,
            episodes,
            "every episode named: {named:?}"
        );
        // Every frame is there, with its lengths (a recording's other
        // records are custom blocks, which tshark lists too).
        let frames = |path: &Path| {
            let o = Command::new("tshark")
                .arg("-r")
                .arg(path)
                .args([
                    "-Y",
                    "eth",
                    "-T",
                    "fields",
                    "-e",
                    "frame.len",
                    "-e",
                    "frame.cap_len",
                ])
                .output()
                .unwrap();
            text(&o.stdout)
        };
        let (a, b) = (frames(&annotated), frames(&cap));
        assert!(
            a == b,
            "{} frames against {}",
            a.lines().count(),
            b.lines().count()
        );
    }

    // Not a pcapng path: a clear error.
    rocescope_fails(
        &[
            "export",
            sample().to_str().unwrap(),
            "--to",
            dir.join("x.parquet").to_str().unwrap(),
            "--annotate",
        ],
        "--annotate writes a pcapng capture",
    );
}

#[test]
fn a_re_export_replaces_the_captures_partitions_and_names_stay_strings() {
    let dir = out_dir("data-cli", "re-export");
    // A capture named as a year: its `capture=` value gets a prefix.
    let cap = dir.join("1999.pcap");
    std::fs::copy(sample(), &cap).unwrap();
    let fleet = dir.join("fleet");
    for window in ["2us", "5us"] {
        let said = export(&cap, &fleet, &["--partition", "--window", window]);
        // Every table, each replaced.
        for table in [
            "packets", "qps", "episodes", "findings", "profiler", "slots",
        ] {
            assert!(
                said.contains(&format!("rows of {table} "))
                    || said.contains(&format!("1 row of {table} ")),
                "{said}"
            );
        }
    }
    let packets: Vec<String> = std::fs::read_dir(fleet.join("packets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // No hidden folder left, one capture folder.
    assert_eq!(packets, ["capture=c_1999"]);
    // 15 frames, in 5 us windows only: the 2 us export is gone.
    let t = query(&fleet, PER_CAPTURE, "csv");
    let w = query(
        &sample(),
        "SELECT count(DISTINCT ts_ns - ts_ns % 5000) AS w FROM packets",
        "csv",
    );
    let w = w.lines().nth(1).unwrap();
    assert_eq!(
        t.lines().nth(1),
        Some(format!("c_1999,15,{w}").as_str()),
        "{t}"
    );
    // A table with a folder of its own per capture.
    let t = query(
        &fleet,
        "SELECT capture, dest_qp, retransmitted_packets FROM qps",
        "csv",
    );
    assert_eq!(t.lines().nth(1), Some("c_1999,18,3"));
}
