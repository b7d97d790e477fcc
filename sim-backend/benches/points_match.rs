//! Multi-point matching speed: a shipped scenario run with points a, sw and
//! b into three in-memory stores (their sightings taken at ingest), then
//! `analyse_points` timed alone, several times: frames per second per
//! point (the frames of the busiest point over the analysis' wall time),
//! and the memory the analysis allocates per frame (its peak, counted by
//! the allocator, over the sightings of all points); the first run's report
//! digested whole, to compare two builds' outputs.
//!
//! `cargo bench -p rocescope-sim --bench points_match [-- SCENARIO [DURATION_MS [THREADS [RUNS]]]]`
//! (defaults: line-rate, 200 ms, 2 threads, 5 runs). Each run says its wall and its CPU time:
//! on a busy machine the wall counts the others' time too.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rocescope_replay::points::{PointsConfig, analyse_points};
use rocescope_sim::{PointStores, Scenario, Simulator};

/// The system allocator, counting the bytes held and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator with the caller's own
// arguments; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: as the caller's contract.
        unsafe { System.alloc(layout) }
    }
    // Zeroed memory from the system's own call (fresh pages need no
    // filling), as the program without this counter gets it.
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: as the caller's contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if new > layout.size() {
            let held = HELD.fetch_add(new - layout.size(), Ordering::Relaxed) + new - layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        } else {
            HELD.fetch_sub(layout.size() - new, Ordering::Relaxed);
        }
        // SAFETY: as the caller's contract.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let args: Vec<String> = rocescope_testkit::bench_args();
    let name = args.first().map_or("line-rate", String::as_str);
    let ms: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let threads: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2);
    let runs: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut sc = Scenario::builtin(name).expect("a shipped scenario");
    sc.bound_to_ns(ms * 1_000_000);
    sc.set_points("a,sw,b").expect("points");
    let mut stores = PointStores::new(&sc);
    let t = Instant::now();
    Simulator::new(sc).run_into(&mut stores);
    let points = stores.finish();
    let sizes: Vec<usize> = points
        .iter()
        .map(|p| p.sightings.lock().map_or(0, |s| s.list.len()))
        .collect();
    let total: usize = sizes.iter().sum();
    let busiest = sizes.iter().copied().max().unwrap_or(0);
    println!(
        "{name}, {ms} ms simulated in {:.2} s: frames per point {sizes:?}",
        t.elapsed().as_secs_f64()
    );
    let cfg = PointsConfig {
        threads,
        ..PointsConfig::default()
    };
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for run in 0..runs {
        let before = HELD.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let t = Instant::now();
        let cpu0 = process_cpu_s();
        let r = analyse_points(&points, &cfg).expect("analysed");
        let wall = t.elapsed().as_secs_f64();
        let cpu = process_cpu_s() - cpu0;
        let peak = PEAK.load(Ordering::Relaxed) - before;
        walls.push(wall);
        cpus.push(cpu);
        println!(
            "run {run}: {threads} threads, {:.1} ms wall, {:.0} ms CPU: {:.2} M frames/s per point; {} journeys, {} losses; peak {:.1} MiB allocated = {:.1} bytes per frame (of {total} sightings)",
            wall * 1e3,
            cpu * 1e3,
            busiest as f64 / wall / 1e6,
            r.journeys,
            r.losses.len(),
            peak as f64 / (1 << 20) as f64,
            peak as f64 / total.max(1) as f64,
        );
        if run == 0 {
            // So that two builds' reports can be compared whole.
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&format!("{r:?}"), &mut h);
            println!(
                "report digest {:016x}: {} losses, {} capture losses, {} episodes",
                std::hash::Hasher::finish(&h),
                r.losses.len(),
                r.capture_losses.len(),
                r.episodes.len()
            );
            // What the report says, without how the analysis numbered its
            // journeys internally: every field, each frame's path as read.
            println!("content digest {:016x}", content_digest(&r));
        }
        drop(r);
    }
    walls.sort_by(f64::total_cmp);
    cpus.sort_by(f64::total_cmp);
    let median = walls[walls.len() / 2];
    let cpu = cpus[cpus.len() / 2];
    // On a busy machine the wall counts the others' time too; the CPU
    // (all threads, 10 ms ticks) is the analysis' own.
    println!(
        "median {:.1} ms wall: {:.2} M frames/s per point; median CPU {:.0} ms: {:.2} M frames/s per point of CPU",
        median * 1e3,
        busiest as f64 / median / 1e6,
        cpu * 1e3,
        busiest as f64 / cpu.max(1e-3) / 1e6
    );
}

/// The process' CPU time so far, every thread (ended ones too), seconds:
/// `utime + stime` from `/proc/self/stat`, in 10 ms ticks.
fn process_cpu_s() -> f64 {
    let (user, system) = rocescope_testkit::proc_cpu_ticks("/proc/self/stat");
    (user + system) as f64 / 100.0
}

/// A digest of everything a report says: its fields, and each point's
/// paths as `PointPaths::iter` reads them (row, cell), not the marks they
/// are kept in (which name journeys by the analysis' own numbering).
fn content_digest(r: &rocescope_replay::points::PointsReport) -> u64 {
    use std::fmt::Write as _;
    use std::hash::Hasher as _;
    struct Feed(std::collections::hash_map::DefaultHasher);
    impl std::fmt::Write for Feed {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Feed(std::collections::hash_map::DefaultHasher::new());
    let _ = write!(
        h,
        "{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
        r.points,
        r.losses,
        r.capture_losses,
        r.segments,
        r.episodes,
        r.flows,
        r.journeys,
        r.warnings,
        r.t0_ns
    );
    for p in &r.paths {
        let _ = write!(h, "|{}", p.len());
        for (row, cell) in p.iter() {
            let _ = write!(h, ";{row},{cell:?}");
        }
    }
    h.0.finish()
}
