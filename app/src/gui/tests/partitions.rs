//! The desktop workbench writing live partitions from its command line:
//! the status bar counts the windows, `:partitions off` finishes them, and
//! the folder reads back to the session's rows and QPs.

use super::*;

fn query(dir: &Path, table: &str, sql: &str) -> Vec<u64> {
    let df = rocescope_data::query_parquet_tables(&[(table, dir.join(table))], sql).unwrap();
    df.columns()
        .iter()
        .map(|c| c.get(0).unwrap().try_extract::<u64>().unwrap())
        .collect()
}

#[test]
fn the_command_line_writes_partitions_and_the_status_bar_counts_them() {
    let folder = rocescope_testkit::temp_dir("gui-parts");
    let dir = folder.path().to_path_buf();
    let _ = std::fs::remove_dir_all(&dir);
    let mut wb = Workbench::new(sim_model("teaching-basic"), only(View::Overview));
    let ctx = egui::Context::default();
    settle(&ctx, &mut wb);
    let line = format!("partitions {} 1us gui-run", dir.display());
    command_line(&ctx, &mut wb, &line);
    assert!(wb.model.partitions().is_some(), "{}", wb.model.status());
    // The run has ended: its closed windows are written at once.
    let t0 = Instant::now();
    let f = loop {
        let f = frame(&ctx, &mut wb, Vec::new());
        if f.has("windows (") || t0.elapsed() > std::time::Duration::from_secs(30) {
            break f;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    f.shows("(capture=gui-run):");
    assert!(f.has("windows ("), "{}", f.all());
    command_line(&ctx, &mut wb, "partitions off");
    let t0 = Instant::now();
    while wb.model.writing_partitions() {
        assert!(t0.elapsed().as_secs() < 30, "the writer did not finish");
        frame(&ctx, &mut wb, Vec::new());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let f = settle(&ctx, &mut wb);
    f.shows(", done");
    let rows = wb.model.store().len();
    let qps = wb.model.report().qps.len() as u64;
    assert!(rows > 10, "{rows}");
    let got = query(
        &dir,
        "packets",
        "SELECT count(*) AS n, count(DISTINCT window_start_ns) AS w FROM packets",
    );
    assert_eq!(got[0], rows);
    assert!(got[1] >= 2, "{got:?}");
    assert_eq!(query(&dir, "qps", "SELECT count(*) AS n FROM qps"), [qps]);
    let _ = std::fs::remove_dir_all(&dir);
}
