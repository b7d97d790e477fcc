//! The gate of issue 51's period replay: a run with the period machinery on
//! gives every record (bytes and times), every counter and the recorded
//! pcapng exactly as the event-by-event run, for every shipped scenario and
//! every scenario file under `assets/`, at several durations. Step 1 (this
//! branch) only detects periods; the same gate holds the replay to come.
//!
//! The 1 ms runs are a plain test; the 20 ms, 200 ms and 500 ms runs are
//! ignored in debug builds (4.6 min for the 20 ms ones): `cargo test --release -p rocescope-sim --test
//! period -- --include-ignored`.

use std::path::{Path, PathBuf};

use rocescope_sim::{PeriodStats, Scenario, Simulator};

/// Every shipped scenario and every scenario file under `assets/`.
fn all_scenarios() -> Vec<(String, Scenario)> {
    let mut v: Vec<(String, Scenario)> = Scenario::builtin_names()
        .into_iter()
        .map(|n| {
            let sc = Scenario::builtin(n).unwrap_or_else(|| panic!("builtin {n}"));
            (n.to_owned(), sc)
        })
        .collect();
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets");
    for dir in ["scenarios", "lessons/scenarios"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(assets.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for f in files {
            let sc = Scenario::load(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            v.push((f.display().to_string(), sc));
        }
    }
    assert!(v.len() >= 13 + 13 + 18, "scenarios found: {}", v.len());
    v
}

/// What a run found and counted: the counters as JSON, the pcapng
/// `--record` writes (when asked), and what the period detector found.
struct Outcome {
    stats_json: String,
    pcapng: Vec<u8>,
    period: PeriodStats,
}

/// A simulator with the period machinery off, or on with the replay.
fn simulator(sc: Scenario, duration_ns: u64, periods: bool) -> Simulator {
    let mut sim = detector(sc, duration_ns, periods);
    sim.replay_periods(periods);
    sim
}

/// A simulator with the period detector (and its check) only.
fn detector(mut sc: Scenario, duration_ns: u64, on: bool) -> Simulator {
    sc.bound_to_ns(duration_ns);
    let mut sim = Simulator::new(sc);
    sim.detect_periods(on);
    sim
}

fn outcome(
    sim: &Simulator,
    sc: &Scenario,
    duration_ns: u64,
    periods: bool,
    pcapng: bool,
) -> Outcome {
    let pcapng = if pcapng {
        let dir = std::env::temp_dir().join(format!(
            "rocescope-period-{}-{periods}-{duration_ns}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("run.pcapng");
        simulator(sc.clone(), duration_ns, periods)
            .record_to(&path)
            .expect("record");
        let bytes = std::fs::read(&path).expect("read pcapng");
        let _ = std::fs::remove_dir_all(&dir);
        bytes
    } else {
        Vec::new()
    };
    Outcome {
        stats_json: serde_json::to_string(sim.stats()).expect("stats as JSON"),
        pcapng,
        period: sim.period_stats(),
    }
}

/// Runs `sc` with the period machinery off and on in step, a simulated
/// millisecond at a time (as a paced consumer pulls them), comparing every
/// record as it comes: memory stays that of a millisecond's records.
fn compare(name: &str, sc: &Scenario, duration_ns: u64, pcapng: bool) -> (Outcome, Outcome) {
    const CHUNK_NS: u64 = 1_000_000;
    let mut off = simulator(sc.clone(), duration_ns, false);
    let mut on = simulator(sc.clone(), duration_ns, true);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut t_ns, mut seen) = (0, 0usize);
    loop {
        t_ns += CHUNK_NS;
        let more_off = off.run_until(t_ns, &mut |r| a.push(r));
        let more_on = on.run_until(t_ns, &mut |r| b.push(r));
        assert_eq!(
            a.len(),
            b.len(),
            "{name} {duration_ns} ns: records up to {t_ns} ns"
        );
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!(
                "{name} {duration_ns} ns: record {} differs:\n off {:?}\n on  {:?}",
                seen + i,
                a[i],
                b[i]
            );
        }
        assert_eq!(more_off, more_on, "{name}: end at {t_ns} ns");
        seen += a.len();
        a.clear();
        b.clear();
        if !more_off {
            break;
        }
    }
    (
        outcome(&off, sc, duration_ns, false, pcapng),
        outcome(&on, sc, duration_ns, true, pcapng),
    )
}

fn gate(duration_ns: u64, pcapng: bool) {
    for (name, sc) in all_scenarios() {
        let (off, on) = compare(&name, &sc, duration_ns, pcapng);
        assert_eq!(
            off.stats_json, on.stats_json,
            "{name} {duration_ns} ns: counters"
        );
        assert!(off.pcapng == on.pcapng, "{name} {duration_ns} ns: pcapng");
        assert_eq!(
            off.period,
            PeriodStats::default(),
            "{name}: off counts nothing"
        );
        // Every period checked predicted its outputs exactly.
        assert_eq!(
            on.period.check_failures, 0,
            "{name} {duration_ns} ns: {:?}",
            on.period
        );
        // The detector looked: it keyed, or skipped steps after draws, or
        // the run had too few steps to key (16 draw-free ones come first,
        // and none in the first millisecond), or ended in that millisecond.
        let stats: serde_json::Value = serde_json::from_str(&off.stats_json).expect("JSON");
        let fsm_steps = stats["events_by_kind"][4].as_u64().expect("FSM steps");
        assert!(
            on.period.off.is_some()
                || on.period.keys > 0
                || on.period.steps_after_draws > 0
                || on.period.detection_pauses > 0
                || fsm_steps <= 64
                || duration_ns <= 1_000_000,
            "{name} {duration_ns} ns: keyed nothing in {fsm_steps} steps: {:?}",
            on.period
        );
    }
}

/// A run to its end with the detector on, no replay: what it found.
fn detect(sc: Scenario, duration_ns: u64) -> PeriodStats {
    let mut sim = detector(sc, duration_ns, true);
    sim.run(&mut |_| {});
    sim.period_stats()
}

#[test]
fn the_same_outputs_1ms() {
    gate(1_000_000, true);
}

#[test]
#[ignore = "long in a debug build: run with --release"]
fn the_same_outputs_20ms() {
    gate(20_000_000, true);
}

#[test]
#[ignore = "long in a debug build: run with --release"]
fn the_same_outputs_200ms() {
    gate(200_000_000, false);
}

#[test]
#[ignore = "long in a debug build: run with --release"]
fn the_same_outputs_500ms() {
    gate(500_000_000, false);
}

/// The detector on the scenarios the census of issue 51 measured: the
/// line-rate state repeats every 64 response-FSM steps (22,784 ns) from
/// 329 us on; the default's loss rule draws between every two sights.
#[test]
fn periods_found() {
    let p = &detect(
        Scenario::builtin("line-rate").expect("line-rate"),
        20_000_000,
    );
    assert_eq!(p.off, None);
    assert_eq!(
        (p.longest_run_period_steps, p.longest_run_period_ps),
        (64, 22_784_000),
        "{p:?}"
    );
    assert_eq!(p.longest_run_from_ps, 329_355_872, "{p:?}");
    assert!(p.repeats * 100 >= p.keys * 98, "{p:?}");
    assert_eq!(p.repeats_without_draws, p.repeats, "{p:?}");
    // Timer and profiler events fall in about a quarter of the periods.
    assert!(p.repeats_replayable * 100 >= p.keys * 70, "{p:?}");
    assert_eq!(p.table_resets, 0);
    // Its outputs predicted period after period from the one before.
    assert!(p.checks > 0, "{p:?}");
    assert_eq!((p.check_failures, p.checks_unsupported), (0, 0), "{p:?}");

    let p = &detect(Scenario::builtin("default").expect("default"), 20_000_000);
    assert_eq!(p.off, None);
    assert_eq!(p.longest_run_period_steps, 2144, "{p:?}");
    assert!(p.repeats * 100 >= p.keys * 75, "{p:?}");
    assert_eq!(p.repeats_without_draws, 0, "{p:?}");

    let q = detect(Scenario::builtin("dcqcn").expect("dcqcn"), 1_000_000);
    assert!(q.off.is_some() && q.keys == 0, "{q:?}");
}

/// The replay on line-rate: whole periods handed out shifted (the gate
/// holds them to the event-by-event run).
#[test]
fn line_rate_replays_periods() {
    let mut sim = simulator(
        Scenario::builtin("line-rate").expect("line-rate"),
        20_000_000,
        true,
    );
    sim.run(&mut |_| {});
    let p = sim.period_stats();
    assert!(p.replayed_periods >= p.replays && p.replays > 0, "{p:?}");
    assert_eq!((p.templates, p.check_failures), (1, 0), "{p:?}");
    assert_eq!((p.detection_pauses, p.steps_after_draws), (0, 0), "{p:?}");
    // The profiler's ticks (every 100 us, 4.4 periods) computed inside
    // the replays from one recorded period: nearly every period after the
    // template (detection starts at 1 ms) replayed.
    assert_eq!((p.recordings, p.recordings_failed), (1, 0), "{p:?}");
    assert!(p.replayed_ticks >= 160, "{p:?}");
    let periods_in_run = 20_000_000 / 22_784;
    assert!(p.replayed_periods * 100 >= periods_in_run * 90, "{p:?}");

    // default's loss rule draws for nearly every frame: a step after a
    // draw is not keyed (no period runs through a draw), nor one of the 16
    // steps after it, and an attempt of 256 steps without a key
    // pauses detection (1 ms, then 2, 4, ...): it keys almost nothing.
    let mut sim = simulator(
        Scenario::builtin("default").expect("default"),
        20_000_000,
        true,
    );
    sim.run(&mut |_| {});
    let p = sim.period_stats();
    let steps = sim.stats().events_by_kind[4];
    assert_eq!((p.templates, p.replays), (0, 0), "{p:?}");
    // Its attempts end after 256 steps without a key.
    assert!(p.detection_pauses >= 3, "{steps} steps: {p:?}");
    assert!(
        p.steps_after_draws * 2 >= p.detection_pauses * 256,
        "{steps} steps: {p:?}"
    );
    assert!(p.keys * 100 <= steps, "{steps} steps: {p:?}");
}

/// The replay against the event-by-event run where it replays, in a test
/// that every build runs (the gates above in debug builds cover only the
/// first millisecond, before any replay): every record, the counters and
/// the pcapng the same. read-heavy's capture keeps its READ responses' first
/// payload bytes (the card's RX cut quirk cuts them by the TX side's flags):
/// those frames are replayed too, written again from their shifted fields.
#[test]
fn replays_give_the_same_outputs() {
    for name in ["line-rate", "read-heavy"] {
        let sc = Scenario::builtin(name).expect(name);
        let (off, on) = compare(name, &sc, 4_000_000, true);
        assert_eq!(off.stats_json, on.stats_json, "{name}: counters");
        assert!(off.pcapng == on.pcapng, "{name}: pcapng");
        let p = &on.period;
        assert_eq!((p.templates, p.check_failures), (1, 0), "{name}: {p:?}");
        assert!(p.replayed_periods >= 50, "{name}: {p:?}");
    }
    // read-heavy's frames include READ responses cut past their headers
    // (54 or 58 bytes of headers, 70 captured).
    let mut sim = simulator(
        Scenario::builtin("read-heavy").expect("read-heavy"),
        4_000_000,
        true,
    );
    let mut cut_past_headers = 0;
    sim.run(&mut |r| {
        if let rocescope_replay::Record::Frame { data, .. } = &r
            && data.len() == 70
            && data.get(42).is_some_and(|op| (0x0D..=0x0F).contains(op))
        {
            cut_past_headers += 1;
        }
    });
    let p = sim.period_stats();
    assert!(
        p.replays > 0 && cut_past_headers > 1000,
        "{cut_past_headers}: {p:?}"
    );
}

/// Prints what the detector finds on each scenario (with `--nocapture`).
#[test]
#[ignore = "a census, not a check"]
fn census() {
    let ms: u64 = std::env::var("CENSUS_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let only = std::env::var("CENSUS_ONLY").unwrap_or_default();
    for (name, sc) in all_scenarios() {
        if !only.is_empty() && name != only {
            continue;
        }
        let mut sim = simulator(sc.clone(), ms * 1_000_000, true);
        sim.run(&mut |_| {});
        println!("{name}: {:?}", detect(sc, ms * 1_000_000));
        println!("{name} with the replay: {:?}", sim.period_stats());
    }
}
