//! Runs a scenario and prints a one-line summary per record (frames decoded).
//! `cargo run -p rocescope-sim --example sim_dump -- teaching-basic [max_records]`

use rocescope_decoders::{DecodeConfig, LinkLayer, decode};
use rocescope_replay::Record;
use rocescope_sim::{Scenario, Simulator};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "teaching-basic".to_owned());
    let max: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let scenario = match Scenario::resolve(&name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut sim = Simulator::new(scenario);
    let cfg = DecodeConfig::default();
    let mut n = 0usize;
    sim.run(&mut |r: Record| {
        n += 1;
        if n > max {
            return;
        }
        match r.as_frame() {
            Some(f) => {
                let p = decode(f.data, LinkLayer::Ethernet, &cfg);
                println!(
                    "{:>10} {:?} {}/{} {} icrc={}",
                    f.ts_ns,
                    f.direction,
                    f.data.len(),
                    f.orig_len,
                    p.summary(),
                    p.icrc().as_str()
                );
            }
            None => println!("{:>10} {:?}", r.ts_ns(), r),
        }
    });
    println!("records: {n}");
    println!("{}", serde_json_like(sim.stats()));
}

fn serde_json_like(s: &rocescope_sim::SimStats) -> String {
    format!(
        "sent={} captured={} drops={} naks={} retx={:?} timeouts={:?} bytes={:?} hbm={:?} ind={:?}",
        s.packets_sent,
        s.frames_captured,
        s.wire_drops,
        s.naks,
        s.qps.iter().map(|q| q.retransmissions).collect::<Vec<_>>(),
        s.qps.iter().map(|q| q.timeouts).collect::<Vec<_>>(),
        s.qps.iter().map(|q| q.bytes).collect::<Vec<_>>(),
        s.hbm_fetch_ns.first(),
        s.indication_to_packet_ns.first(),
    )
}
