//! Several capture points as one session through the real binary:
//! `sim --points a,sw,b --out DIR` writes each point's capture and the
//! truth; `stats`, `export` and `report` with `--point NAME=FILE` read them
//! back, and what they say is held to the truth.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Command;
use support::{bin, out_dir, rocescope, rocescope_fails, text};

use serde_json::Value;

/// The points of a simulated run written to `dir`, and its truth.
fn simulate(dir: &Path, scenario: &str, extra: &[&str]) -> Value {
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "sim",
        "--scenario",
        scenario,
        "--duration",
        "3ms",
        "--points",
        "a,sw,b",
        "--out",
        d,
    ];
    args.extend(extra);
    let out = rocescope(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    rocescope_testkit::assert_contains(&text(&out.stdout), "truth.json");
    serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap()
}

fn point_args(dir: &Path) -> Vec<String> {
    ["a", "sw", "b"]
        .iter()
        .flat_map(|p| {
            [
                "--point".to_owned(),
                format!("{p}={}", dir.join(format!("{p}.pcapng")).display()),
            ]
        })
        .collect()
}

fn stats_json(dir: &Path, extra: &[String]) -> Value {
    let mut args = vec!["stats".to_owned(), "--json".to_owned()];
    args.extend(point_args(dir));
    args.extend(extra.iter().cloned());
    let out = bin().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Point `p`'s clock at true time `t` (the simulator's definition).
fn clock(truth: &Value, p: usize, t: f64) -> f64 {
    let pt = &truth["points"][p];
    pt["offset_ns"].as_f64().unwrap() + t + t * pt["drift_ppm"].as_f64().unwrap() * 1e-6
}

#[test]
fn stats_of_three_points_agrees_with_the_simulators_truth() {
    let dir = out_dir("points-cli", "truth");
    let truth = simulate(&dir, "lossy-link", &[]);
    let v = stats_json(&dir, &[]);
    let m = &v["multipoint"];
    // The contract's keys.
    for (list, keys) in [
        (
            "points",
            &["name", "offset_ns", "drift_ppm", "frames", "capture_loss"][..],
        ),
        (
            "losses",
            &["src", "dst", "dest_qp", "psn", "opcode", "segment", "ts_ns"],
        ),
        ("segments", &["segment", "frames", "p50_ns", "p99_ns"]),
        (
            "episodes",
            &["dest_qp", "psn", "nak_generation_ns", "nak_reaction_ns"],
        ),
    ] {
        let items = m[list].as_array().unwrap();
        assert!(!items.is_empty(), "{list}");
        for it in items {
            for k in keys {
                assert!(it.get(*k).is_some(), "{list} lacks {k}: {it}");
            }
        }
    }
    let segs: Vec<&str> = m["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["segment"].as_str().unwrap())
        .collect();
    assert_eq!(segs, ["a>sw", "sw>b", "b>sw", "sw>a"]);
    // Clocks: t_point = t_first + offset + (t_first - t0) * drift / 1e6,
    // within 1 µs of the truth over the run.
    let t0 = m["t0_ns"].as_f64().unwrap();
    for p in 1..3 {
        let pt = &m["points"][p];
        let (off, drift) = (
            pt["offset_ns"].as_f64().unwrap(),
            pt["drift_ppm"].as_f64().unwrap(),
        );
        for k in 0..=10 {
            let t = 3e6 * f64::from(k) / 10.0;
            let first = clock(&truth, 0, t);
            let est = first + off + (first - t0) * drift * 1e-6;
            let err = (est - clock(&truth, p, t)).abs();
            assert!(err < 1000.0, "point {p} off by {err} ns at {t}");
        }
    }
    // Every request the wire or a stack lost, placed on its segment.
    let end = m["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["last_ns"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let losses = m["losses"].as_array().unwrap();
    let mut placed = 0;
    for d in truth["drops"].as_array().unwrap() {
        if d["opcode"].as_u64().unwrap() > 0x0C || d["behind_loss"].as_bool().unwrap() {
            continue;
        }
        let ts = clock(&truth, 0, d["ts_ns"].as_f64().unwrap());
        if ts + 300_000.0 > end {
            continue;
        }
        let l = losses
            .iter()
            .find(|l| {
                l["psn"] == d["psn"]
                    && l["dest_qp"] == d["dest_qp"]
                    && (l["ts_ns"].as_f64().unwrap() - ts).abs() < 100_000.0
            })
            .unwrap_or_else(|| panic!("{d} not placed"));
        assert_eq!(l["segment"], d["segment"], "{l}");
        placed += 1;
    }
    assert!(placed > 20, "{placed}");
    assert_eq!(m["points"][1]["capture_loss"], 0);
}

#[test]
fn the_points_tables_and_the_report_section() {
    let dir = out_dir("points-cli", "tables");
    simulate(&dir, "lossy-link", &["--point-set", "sw.capture_loss=0.01"]);
    let v = stats_json(&dir, &[]);
    let m = &v["multipoint"];
    assert!(m["points"][1]["capture_loss"].as_u64().unwrap() > 10);
    let pts = point_args(&dir);
    // `export --point ... --table TABLE --to TO`, to success.
    let export = |table: &str, to: &Path| {
        rocescope_testkit::run_ok(
            bin()
                .arg("export")
                .args(&pts)
                .args(["--table", table, "--to"])
                .arg(to),
        );
    };
    let losses = dir.join("losses.parquet");
    export("losses", &losses);
    let rows: Value = serde_json::from_str(&support::query(
        &losses,
        "SELECT count(*) AS n, sum(CASE WHEN kind = 'either' THEN 1 ELSE 0 END) AS open FROM losses",
        "json",
    ))
    .unwrap();
    let json_losses = m["losses"].as_array().unwrap();
    assert_eq!(rows[0]["n"].as_u64().unwrap(), json_losses.len() as u64);
    assert_eq!(
        rows[0]["open"].as_u64().unwrap(),
        json_losses.iter().filter(|l| l["kind"] == "either").count() as u64
    );
    // One row per frame of each point.
    let paths = dir.join("paths.csv");
    export("paths", &paths);
    let csv = std::fs::read_to_string(&paths).unwrap();
    let frames: u64 = m["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["frames"].as_u64().unwrap())
        .sum();
    assert_eq!(csv.lines().count() as u64, frames + 1);
    assert!(
        csv.lines().any(|l| l.ends_with(",lost")),
        "a lost frame's row"
    );
    // The report's section and its plot.
    let rep = dir.join("report");
    let mut args = vec!["report".to_owned()];
    args.extend(pts.iter().cloned());
    args.extend(["-o".into(), rep.display().to_string()]);
    let out = bin().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    assert!(html.contains("<h2 id=\"points\">Capture points</h2>"));
    assert!(html.contains("capture loss there, not wire loss"));
    assert!(rep.join("segment_latency.png").exists());
    // The single-capture table list is unchanged.
    let out = rocescope(&[
        "export",
        dir.join("a.pcapng").to_str().unwrap(),
        "--table",
        "losses",
        "--to",
        dir.join("x.csv").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("give --point NAME=FILE twice or more"));
}

#[test]
fn points_of_two_exchanges_are_named_with_their_files() {
    let one = out_dir("points-cli", "one");
    let two = out_dir("points-cli", "two");
    simulate(&one, "lossy-link", &[]);
    simulate(&two, "lossy-link", &["--seed", "77"]);
    let a = format!("a={}", one.join("a.pcapng").display());
    let b = format!("b={}", two.join("b.pcapng").display());
    let out = rocescope(&["stats", "--point", &a, "--point", &b]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    rocescope_testkit::assert_contains(
        &err,
        &format!(
            "a ({}) and b ({}) share no traffic: not the same exchange?",
            one.join("a.pcapng").display(),
            two.join("b.pcapng").display()
        ),
    );
    // One point alone, a bad offset, a bad name: said at once.
    rocescope_fails(&["stats", "--point", &a], "one --point alone");
    rocescope_fails(
        &["stats", "--point", "a=x.pcap@soon", "--point", &b],
        "--point",
    );
    rocescope_fails(
        &["stats", "--point", "a b=x.pcap", "--point", &b],
        "a point's name",
    );
    rocescope_fails(
        &["sim", "--points", "a,router,b", "--out", "x"],
        "`router` is no place to capture",
    );
}

#[test]
fn an_offset_given_by_hand_is_the_points_clock() {
    let dir = out_dir("points-cli", "by-hand");
    simulate(&dir, "teaching-basic", &[]);
    let mut args = point_args(&dir);
    let last = args.len() - 1;
    args[last] = format!("{}@-12.5us", args[last]);
    let mut full = vec!["stats".to_owned(), "--json".to_owned()];
    full.extend(args);
    let out = bin().args(&full).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = &v["multipoint"]["points"][2];
    assert_eq!(b["offset_ns"], -12_500);
    assert_eq!(b["fixed"], true);
    assert_eq!(b["drift_ppm"], 0.0);
    // One link rate for the points' alignment and the first point's time
    // by state.
    let v = stats_json(&dir, &["--link-gbps".to_owned(), "25".to_owned()]);
    assert_eq!(v["link_gbps"], 25.0);
    assert!(v["multipoint"]["points"][2]["offset_ns"].is_number());
}

/// Whether python3 has pyspark and datafusion and java runs (testkit says
/// what is missing, and fails where CI requires it).
fn have_engines() -> bool {
    rocescope_testkit::available(&[
        rocescope_testkit::PYSPARK,
        rocescope_testkit::DATAFUSION,
        rocescope_testkit::JAVA,
    ])
}

/// Spark's and DataFusion's types of the two tables, and their rows.
const ENGINES: &str = r#"
import json, sys
from pyspark.sql import SparkSession
import datafusion
out = {}
spark = SparkSession.builder.master("local[1]").appName("points").config("spark.ui.enabled", "false").getOrCreate()
ctx = datafusion.SessionContext()
for name, path in (("losses", sys.argv[1]), ("paths", sys.argv[2])):
    df = spark.read.parquet(path)
    out["spark_" + name] = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    out["spark_" + name + "_rows"] = df.count()
    ctx.register_parquet(name, path)
    t = ctx.sql("SELECT * FROM " + name)
    out["datafusion_" + name] = {f.name: str(f.type) for f in t.schema()}
    out["datafusion_" + name + "_rows"] = ctx.sql("SELECT count(*) AS n FROM " + name).to_pylist()[0]["n"]
spark.stop()
print(json.dumps(out))
"#;

#[test]
fn the_points_tables_have_the_schemas_types_in_spark_and_datafusion() {
    if !have_engines() {
        return;
    }
    let dir = out_dir("points-cli", "engines");
    simulate(&dir, "lossy-link", &[]);
    let pts = point_args(&dir);
    let mut files = Vec::new();
    for table in ["losses", "paths"] {
        let path = dir.join(format!("{table}.parquet"));
        let mut args = vec!["export".to_owned()];
        args.extend(pts.iter().cloned());
        args.extend([
            "--table".into(),
            table.into(),
            "--to".into(),
            path.display().to_string(),
        ]);
        let out = bin().args(&args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        files.push(path);
    }
    let out = Command::new("python3")
        .args(["-c", ENGINES])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let last = text(&out.stdout).lines().last().unwrap_or("").to_owned();
    let got: Value = serde_json::from_str(&last).unwrap();
    let losses: &[(&str, &str, &str)] = &[
        ("ts_ns", "bigint", "int64"),
        ("dest_qp", "int", "int32"),
        ("psn", "int", "int32"),
        ("opcode", "smallint", "int16"),
        ("request", "boolean", "bool"),
        ("segment", "string", "string_view"),
    ];
    let paths: &[(&str, &str, &str)] = &[
        ("frame", "bigint", "int64"),
        ("dest_qp", "int", "int32"),
        ("path", "string", "string_view"),
        ("fate", "string", "string_view"),
    ];
    for (table, columns) in [("losses", losses), ("paths", paths)] {
        for &(col, spark, df) in columns {
            let (spark_got, df_got) = (
                &got[format!("spark_{table}")][col],
                &got[format!("datafusion_{table}")][col],
            );
            assert_eq!(spark_got, spark, "Spark's {table}.{col}: {got}");
            assert_eq!(df_got, df, "DataFusion's {table}.{col}: {got}");
        }
    }
    assert_eq!(got["spark_losses_rows"], got["datafusion_losses_rows"]);
    assert!(got["spark_paths_rows"].as_u64().unwrap() > 1000);
}
