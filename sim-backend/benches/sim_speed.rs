//! Simulator speed: simulated time per wall time on one core, default
//! scenario (header-only capture), records handed to a consumer that touches
//! every frame: first as owned `Record`s (`Simulator::run`), then with the
//! frames lent and copied into one reused arena, as a live-link batch does
//! (`Simulator::run_into`).
//! `cargo bench -p rocescope-sim --bench sim_speed [-- SCENARIO [RUNS [owned|lent [replay]]]]`

use std::time::Instant;

use rocescope_replay::Record;
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

/// Copies frames into one arena, cleared every 4096 frames.
#[derive(Default)]
struct Arena {
    bytes: Vec<u8>,
    frames: u64,
    records: u64,
    frame_bytes: u64,
}

impl RecordSink for Arena {
    fn frame(&mut self, f: FrameRef<'_>) {
        if self.frames.is_multiple_of(4096) {
            self.bytes.clear();
        }
        self.bytes.extend_from_slice(f.data);
        self.frames += 1;
        self.records += 1;
        self.frame_bytes += f.data.len() as u64;
    }
    fn record(&mut self, _r: Record) {
        self.records += 1;
    }
}

fn report(name: &str, how: &str, run: usize, sim: &Simulator, wall: f64, counts: (u64, u64, u64)) {
    let (records, frames, bytes) = counts;
    let sim_s = sim.duration_ns() as f64 * 1e-9;
    let s = sim.stats();
    println!(
        "{name} {how} run {run}: sim {:.3} ms in {:.3} ms wall -> sim/wall = {:.2}; {records} records ({:.2} M/s), {frames} frames ({bytes} B), {} packets on links, {} events ({:.1} M/s), {} retransmissions",
        sim_s * 1e3,
        wall * 1e3,
        sim_s / wall,
        records as f64 / wall / 1e6,
        s.packets_sent,
        s.events,
        s.events as f64 / wall / 1e6,
        s.qps.iter().map(|q| q.retransmissions).sum::<u64>(),
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let name = args
        .first()
        .cloned()
        .unwrap_or_else(|| "default".to_owned());
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let mode = args.get(2).map_or("both", String::as_str);
    let (owned, lent) = (mode != "lent", mode != "owned");
    // A fourth argument `replay`: the period detector and its replay on
    // (issue 51).
    let replay = args.get(3).is_some_and(|a| a == "replay");
    let new_sim = |sc: &Scenario| {
        let mut sim = Simulator::new(sc.clone());
        sim.detect_periods(replay);
        sim.replay_periods(replay);
        sim
    };
    let scenario = match Scenario::resolve(&name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for run in (0..runs).filter(|_| owned) {
        let mut sim = new_sim(&scenario);
        let (mut records, mut frames, mut bytes) = (0u64, 0u64, 0u64);
        let t0 = Instant::now();
        sim.run(&mut |r: Record| {
            records += 1;
            if let Record::Frame { data, .. } = &r {
                frames += 1;
                bytes += data.len() as u64;
            }
        });
        let wall = t0.elapsed().as_secs_f64();
        report(&name, "owned", run, &sim, wall, (records, frames, bytes));
        if run == 0 {
            let s = sim.stats();
            println!(
                "  events by kind (post, tx, switch, node, fsm, timer, prof): {:?}; queue peak {}",
                s.events_by_kind, s.queue_peak
            );
        }
    }
    for run in (0..runs).filter(|_| lent) {
        let mut sim = new_sim(&scenario);
        let mut arena = Arena::default();
        let t0 = Instant::now();
        sim.run_into(&mut arena);
        let wall = t0.elapsed().as_secs_f64();
        let counts = (arena.records, arena.frames, arena.frame_bytes);
        report(&name, "lent", run, &sim, wall, counts);
        if replay && run == 0 {
            println!("  periods: {:?}", sim.period_stats());
        }
    }
}
