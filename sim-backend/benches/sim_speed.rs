//! Simulator speed: simulated time per wall time on one core, default
//! scenario (header-only capture), records handed to a consumer that touches
//! every frame. `cargo bench -p rocescope-sim --bench sim_speed [SCENARIO]`

use std::time::Instant;

use rocescope_replay::Record;
use rocescope_sim::{Scenario, Simulator};

fn main() {
    let name = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| "default".to_owned());
    let scenario = match Scenario::resolve(&name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for run in 0..3 {
        let mut sim = Simulator::new(scenario.clone());
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
        let sim_s = sim.duration_ns() as f64 * 1e-9;
        let s = sim.stats();
        println!(
            "{name} run {run}: sim {:.3} ms in {:.3} ms wall -> sim/wall = {:.2}; {records} records ({:.2} M/s), {frames} frames ({bytes} B), {} packets on links, {} events ({:.1} M/s), {} retransmissions",
            sim_s * 1e3,
            wall * 1e3,
            sim_s / wall,
            records as f64 / wall / 1e6,
            s.packets_sent,
            s.events,
            s.events as f64 / wall / 1e6,
            s.qps.iter().map(|q| q.retransmissions).sum::<u64>(),
        );
        if run == 0 {
            println!(
                "  events by kind (post, tx, switch, node, fsm, timer, prof): {:?}; queue peak {}",
                s.events_by_kind, s.queue_peak
            );
        }
    }
}
