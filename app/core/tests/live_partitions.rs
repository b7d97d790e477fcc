//! The workbench's live partitions at the core: a simulator session written
//! window by window, rerun with a parameter change (the rerun is the next
//! capture, beside the first, the first one finished), stopped at quit.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rocescope_core::source::{Pace, spawn_sim, steer};
use rocescope_core::{Command, Model};

fn finished_sim() -> Model {
    let sc = rocescope_sim::Scenario::resolve("teaching-basic").unwrap();
    let (store, analysis, handle) = spawn_sim(sc, Pace::Fast, None);
    while !handle.status().finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(5));
    }
    store.wait();
    let mut m = Model::new(store, analysis, handle);
    m.tick(Instant::now());
    m
}

fn count(dir: &Path, table: &str, sql: &str) -> Vec<(String, u64)> {
    let df = rocescope_data::query_parquet_tables(&[(table, dir.join(table))], sql).unwrap();
    let (names, n) = (df.column("capture").unwrap(), df.column("n").unwrap());
    (0..df.height())
        .map(|i| {
            (
                names.get(i).unwrap().get_str().unwrap().to_owned(),
                n.get(i).unwrap().try_extract::<u64>().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_rerun_is_written_as_the_next_capture_and_quit_finishes_both() {
    let folder = rocescope_testkit::temp_dir("core-parts");
    let dir = folder.path().to_path_buf();
    let _ = std::fs::remove_dir_all(&dir);
    let mut m = finished_sim();
    m.apply(Command::WritePartitions {
        dir: dir.clone(),
        window_ns: 1_000,
        capture: Some("core".into()),
    });
    assert!(m.partitions().is_some(), "{}", m.status());
    let first_rows = m.store().len();
    m.apply(Command::SetSimParam {
        key: "window_packets".into(),
        value: "4".into(),
    });
    steer(&mut m);
    rocescope_testkit::assert_contains(m.status(), "restarted");
    let w = m.partitions().expect("the rerun keeps writing");
    assert_eq!(w.spec.capture_name(), "core-run1");
    // Let the rerun (Pace::Fast) end, then quit.
    let t0 = Instant::now();
    while !m.source().status().finished.load(Ordering::Acquire) {
        assert!(t0.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(10));
    }
    m.store().wait();
    m.tick(Instant::now());
    let second_rows = m.store().len();
    let said = m.finish_partitions();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said.iter().all(|s| s.ends_with(", done")), "{said:?}");
    assert!(!m.writing_partitions());
    // Each run's packets, in the packets table and in its QPs'.
    let want = [
        ("core".to_owned(), first_rows),
        ("core-run1".to_owned(), second_rows),
    ];
    let got = count(
        &dir,
        "packets",
        "SELECT capture, count(*) AS n FROM packets GROUP BY capture ORDER BY capture",
    );
    assert_eq!(got, want);
    let got = count(
        &dir,
        "qps",
        "SELECT capture, sum(packets) AS n FROM qps GROUP BY capture ORDER BY capture",
    );
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}
