//! Exports from the workbench model: the view's table, the display filter's
//! rows exactly, errors that name the path.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rocescope_core::{Command, Model, Table, View};

fn sample_model() -> Model {
    support::sample_model("sample-write-read.pcap")
}

fn out_dir(name: &str) -> PathBuf {
    rocescope_testkit::out_dir("core-export", name)
}

/// `line` typed on the workbench's command line and run.
fn run_line(m: &mut Model, line: impl Into<String>) {
    m.apply(Command::RunCommandLine(line.into()));
}

/// Exports the view's table to `path` (the format from its extension).
fn export_view(m: &mut Model, path: impl AsRef<Path>) {
    m.apply(Command::Export {
        table: None,
        path: path.as_ref().to_path_buf(),
        partition_window_ns: None,
    });
}

/// Tick until the running exports have finished.
fn finish(m: &mut Model) {
    let t0 = Instant::now();
    while m.exporting() {
        assert!(t0.elapsed() < Duration::from_secs(60), "export hangs");
        std::thread::sleep(Duration::from_millis(5));
        m.tick(Instant::now());
    }
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_packet_list_exports_exactly_the_rows_the_filter_matches() {
    let mut m = sample_model();
    let dir = out_dir("filter");
    m.apply(Command::ShowView(View::Packets));
    m.apply(Command::SetFilter("retransmission || nak".into()));
    // At once, while the scan may still run: the export waits for it.
    let path = dir.join("retx.jsonl");
    export_view(&mut m, &path);
    rocescope_testkit::assert_starts_with(m.status(), "exporting packets matching");
    finish(&mut m);
    let shown: Vec<u64> = (0..m.visible_len())
        .map(|p| m.visible_row(p).unwrap())
        .collect();
    assert_eq!(shown.len(), 4, "3 resends and 1 NAK in the sample");
    let rows = jsonl(&path);
    let frames: Vec<u64> = rows.iter().map(|r| r["frame"].as_u64().unwrap()).collect();
    assert_eq!(frames, shown.iter().map(|i| i + 1).collect::<Vec<_>>());
    assert!(
        rows.iter()
            .all(|r| r["retransmission"] == true || r["nak"] == true)
    );
    let summary = m.last_export().as_ref().unwrap().as_ref().unwrap();
    assert_eq!(summary.rows, 4);
    assert_eq!(summary.table, Table::Packets);
    assert_eq!(
        m.status(),
        format!(
            "exported 4 rows of packets to {} in {:.2} s",
            path.display(),
            summary.elapsed.as_secs_f64()
        )
    );
    // No filter: every row; CSV with a header line.
    m.apply(Command::SetFilter(String::new()));
    let csv = dir.join("all.csv");
    export_view(&mut m, &csv);
    finish(&mut m);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count() as u64, m.store().len() + 1);
    assert!(text.starts_with("frame,ts_ns,"), "{}", &text[..40]);
}

#[test]
fn each_view_exports_its_own_table() {
    let mut m = sample_model();
    let dir = out_dir("views");
    let qps = m.report().qps.len();
    let episodes = m.report().episodes.len();
    assert!(qps > 0 && episodes > 0);
    for (view, table, rows) in [
        (View::Qps, Table::Qps, qps),
        (View::Retransmissions, Table::Episodes, episodes),
    ] {
        m.apply(Command::ShowView(view));
        assert_eq!(m.export_table(), table);
        let path = dir.join(format!("{table}.jsonl"));
        export_view(&mut m, &path);
        finish(&mut m);
        assert_eq!(jsonl(&path).len(), rows, "{view:?}");
        rocescope_testkit::assert_contains(m.status(), &format!("rows of {table} to"));
    }
    // The ladder: the packets of its QP, both directions.
    m.apply(Command::ShowView(View::Ladder));
    let path = dir.join("ladder.jsonl");
    export_view(&mut m, &path);
    rocescope_testkit::assert_contains(m.status(), "of QP 0x000012");
    finish(&mut m);
    let rows = jsonl(&path);
    let qps: Vec<u64> = rows
        .iter()
        .map(|r| r["dest_qp"].as_u64().unwrap())
        .collect();
    assert!(!qps.is_empty(), "{qps:?}");
    assert!(qps.iter().all(|q| [0x11, 0x12].contains(q)), "{qps:?}");
    // A named table wins over the view's.
    m.apply(Command::Export {
        table: Some(Table::Findings),
        path: dir.join("findings.csv"),
        partition_window_ns: None,
    });
    finish(&mut m);
    rocescope_testkit::assert_contains(m.status(), "rows of findings");
}

#[test]
fn bad_paths_say_what_went_wrong_and_where() {
    let mut m = sample_model();
    let dir = out_dir("bad");
    export_view(&mut m, dir.join("out.txt"));
    assert!(!m.exporting());
    rocescope_testkit::assert_contains(m.status(), "out.txt");
    rocescope_testkit::assert_contains(m.status(), ".parquet, .csv or .jsonl");
    let missing = dir.join("no/such/folder/out.csv");
    export_view(&mut m, &missing);
    finish(&mut m);
    assert!(matches!(m.last_export(), Some(Err(_))));
    rocescope_testkit::assert_contains(m.status(), &missing.display().to_string());
    rocescope_testkit::assert_starts_with(m.status(), "export of findings to");
}

#[test]
fn the_command_line_parses_export_path_and_table() {
    let mut m = sample_model();
    let dir = out_dir("cmdline");
    m.apply(Command::EditExport);
    assert_eq!(m.cmdline(), "export ");
    let path = dir.join("q.csv");
    run_line(&mut m, format!("export {} qps", path.display()));
    finish(&mut m);
    rocescope_testkit::assert_contains(m.status(), "rows of qps");
    assert!(path.exists());
    run_line(&mut m, "export");
    rocescope_testkit::assert_starts_with(m.status(), "usage: export PATH");
    run_line(
        &mut m,
        format!("export {} bogus", dir.join("x.csv").display()),
    );
    // "bogus" is no table: it is part of the path, whose extension is wrong.
    rocescope_testkit::assert_contains(m.status(), "x.csv bogus");

    // Paths keep their spaces as typed; quotes keep a last word that names
    // a table in the path.
    let spaced = dir.join("two  spaces.csv");
    run_line(&mut m, format!("export {} qps", spaced.display()));
    finish(&mut m);
    assert!(spaced.exists(), "{}", m.status());
    let quoted = dir.join("a qps");
    run_line(&mut m, format!("export \"{}\"", quoted.display()));
    rocescope_testkit::assert_contains(m.status(), &format!("{}", quoted.display()));
    let quoted_csv = dir.join(" lead.csv");
    run_line(
        &mut m,
        format!("export \"{}\" episodes", quoted_csv.display()),
    );
    finish(&mut m);
    rocescope_testkit::assert_contains(m.status(), "rows of episodes");
    assert!(quoted_csv.exists());
}

#[test]
fn the_command_line_exports_partitions_by_time_window() {
    let mut m = sample_model();
    let dir = out_dir("partitions");
    let root = dir.join("fleet");
    m.apply(Command::ShowView(View::Packets));
    run_line(&mut m, format!("export {} --partition=2us", root.display()));
    rocescope_testkit::assert_contains(m.status(), "as Parquet partitions of 2us");
    finish(&mut m);
    let summary = m.last_export().as_ref().unwrap().as_ref().unwrap();
    assert_eq!(summary.rows, m.store().len());
    assert!(summary.files.len() > 1, "{:?}", summary.files);
    assert!(
        m.status()
            .contains(&format!("{} files", summary.files.len())),
        "{}",
        m.status()
    );
    // Hive folders under the root: capture, then the window's start.
    let capture = root.join("packets").join("capture=sample-write-read");
    for f in &summary.files {
        assert!(f.starts_with(&capture), "{}", f.display());
        let window = f.parent().unwrap().file_name().unwrap().to_string_lossy();
        let start: u64 = window
            .strip_prefix("window_start_ns=")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(start % 2_000, 0, "{window}");
    }
    // A bare --partition: 1 s windows; a bad window is told at once.
    run_line(
        &mut m,
        format!("export {} qps --partition", dir.join("qps-parts").display()),
    );
    rocescope_testkit::assert_contains(m.status(), "partitions of 1s");
    finish(&mut m);
    rocescope_testkit::assert_contains(m.status(), "rows of qps");
    run_line(
        &mut m,
        format!("export {} --partition=soon", dir.join("never").display()),
    );
    rocescope_testkit::assert_starts_with(m.status(), "export --partition:");
    assert!(!m.exporting());
    // Partitions are Parquet: a CSV name is refused with its path.
    run_line(
        &mut m,
        format!("export {} --partition", dir.join("p.csv").display()),
    );
    assert!(!m.exporting());
    rocescope_testkit::assert_contains(m.status(), "p.csv");
}
