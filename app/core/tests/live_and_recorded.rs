//! The live workbench and a recording of the same scenario say the same
//! (issue 53): the default scenario run live, as plain `rocescope` runs it,
//! long enough that its rate series coarsen past the length of a loss,
//! tells every loss a 10 ms recording of it tells, read back from the file
//! as `rocescope stats` reads it.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rocescope_core::Model;
use rocescope_core::session::SessionLimits;
use rocescope_core::source::{Pace, SourceSpec, open};
use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::Report;

/// (cause, QP, the frame of its first evidence) of every item of every
/// finding: the live store and the recording hold the same frames in the
/// same order, while where a drop starts depends on the series' bins.
fn items(r: &Report) -> Vec<(&'static str, u32, Option<u64>)> {
    let mut v: Vec<_> = r
        .findings
        .iter()
        .flat_map(|f| {
            f.items
                .iter()
                .map(move |i| (f.cause.name(), f.qp, i.first_index))
        })
        .collect();
    v.sort_unstable();
    v
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(600), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_long_live_run_tells_every_loss_a_short_recording_of_it_tells() {
    let folder = rocescope_testkit::temp_dir("live-rec");
    let dir = folder.path().to_path_buf();
    let rec = dir.join("default-10ms.pcapng");
    let limits = SessionLimits::default();

    // The recording: 10 ms, finite, then reopened as a file.
    let mut sc = rocescope_sim::Scenario::resolve("default").unwrap();
    sc.bound_to_ns(10_000_000);
    let m = open(
        SourceSpec::Sim {
            scenario: Box::new(sc),
            pace: Pace::Fast,
            record: Some(rec.clone()),
        },
        &limits,
    )
    .unwrap();
    wait_for("the recording", || {
        m.source().status().finished.load(Ordering::Acquire)
    });
    drop(m);
    let mut file = open(
        SourceSpec::File {
            path: rec.clone(),
            decode: DecodeConfig::default(),
            wave: Default::default(),
        },
        &limits,
    )
    .unwrap();
    file.store().wait();
    file.tick(Instant::now());
    let recorded = file.analysis().0.lock().unwrap().report();
    let told = items(&recorded);
    assert!(
        told.iter().any(|(c, ..)| *c == "loss_go_back_n"),
        "the recording tells its losses: {told:?}"
    );

    // Live, paced to wall time, until it has run 60 ms: its series' bins
    // are then 32 µs, a loss's recovery shorter than a drop they show.
    let sc = rocescope_sim::Scenario::resolve("default").unwrap();
    assert!(sc.until_stopped, "the default scenario is a workload");
    let mut live: Model = open(
        SourceSpec::Sim {
            scenario: Box::new(sc),
            pace: Pace::RealTime(1.0),
            record: None,
        },
        &limits,
    )
    .unwrap();
    wait_for("60 ms of the live run", || {
        live.source().status().sim_time_ns.load(Ordering::Relaxed) >= 60_000_000
    });
    live.apply(rocescope_core::Command::Pause);
    std::thread::sleep(Duration::from_millis(300));
    live.tick(Instant::now());
    let report = live.report();
    let bin_ns = report.qps.iter().map(|q| q.series.bin_ns).max().unwrap();
    assert!(bin_ns >= 16_000, "the live series coarsened: {bin_ns} ns");
    let live_items = items(report);
    for it in &told {
        assert!(
            live_items.contains(it),
            "live misses {it:?} of the recording; live: {live_items:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
