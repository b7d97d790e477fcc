//! Loopback throughput: an in-process agent serving header-only RoCE
//! frames, a client feeding the live store (decode + RC analysis), over
//! real TCP on 127.0.0.1. Reports Mpps into the store and the drops.
//!
//! `cargo bench -p rocescope-device-link --bench loopback [-- FRAMES [PPS]]`
//! PPS paces the source (0 = as fast as it can produce); default 3,000,000
//! frames at 6 Mpps, then unpaced.
//!
//! `cargo bench -p rocescope-device-link --bench loopback -- sim [SCENARIO [FRAMES [PPS]]]`
//! feeds the agent from the simulator exactly as `rocescope agent --sim`
//! does (`SimSource`); SCENARIO is a shipped name or a TOML file (default
//! `line-rate`, 5.7 M frames per simulated second); the run is long enough
//! for about FRAMES frames, and PPS paces it through the simulator's pace
//! (simulated per wall time).

use std::time::{Duration, Instant};

use rocescope_decoders::{Opcode, PacketBuilder};
use rocescope_device_link::agent::AgentConfig;
use rocescope_device_link::source::{Publisher, SourceError};
use rocescope_device_link::{
    Agent, AttachUrl, Batch, Client, ClientConfig, SimSource, Source, SourceStatus,
};
use rocescope_replay::Record;
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

/// Header-only RC WRITE MIDDLE/ONLY frames on 8 QPs, PSNs in order.
struct Synth {
    frames: u64,
    pps: u64,
}

impl Source for Synth {
    fn describe(&self) -> String {
        "synthetic".into()
    }
    fn run(&mut self, out: &Publisher) -> Result<SourceStatus, SourceError> {
        let mut templates = Vec::new();
        for qp in 0..8u32 {
            let b = PacketBuilder::rocev2_ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                Opcode::RC_WRITE_ONLY,
                0x100 + qp,
                0,
            );
            let mut f = Vec::new();
            b.build_headers_into(4096, &mut f);
            templates.push(f);
        }
        // PSN: last 3 bytes of the BTH (Ethernet 14 + IPv4 20 + UDP 8 + 12).
        let psn_at = 14 + 20 + 8 + 9;
        let start = Instant::now();
        let mut batch = Batch::with_capacity(4096, 4096 * 80);
        let mut i = 0u64;
        while i < self.frames {
            for _ in 0..4096.min(self.frames - i) {
                let qp = (i % 8) as usize;
                let psn = ((i / 8) as u32) & 0xff_ffff;
                let f = &mut templates[qp];
                f[psn_at..psn_at + 3].copy_from_slice(&psn.to_be_bytes()[1..]);
                batch.push_frame(i * 100, 0, None, f.len() as u32 + 4096, f);
                i += 1;
            }
            out.publish_from(&mut batch);
            if self.pps > 0 {
                let due = Duration::from_secs_f64(i as f64 / self.pps as f64);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        }
        Ok(SourceStatus::End)
    }
}

/// CPU seconds (user, system) this process has used, from /proc/self/stat
/// (Linux; zeros elsewhere). Clock ticks are taken as 100 per second.
fn cpu_secs() -> (f64, f64) {
    let (user, system) = rocescope_testkit::proc_cpu_ticks("/proc/self/stat");
    (user as f64 / 100.0, system as f64 / 100.0)
}

fn run(frames: u64, pps: u64) {
    run_source(Box::new(Synth { frames, pps }), pps);
}

/// Counts frames.
struct Count(u64);

impl RecordSink for Count {
    fn frame(&mut self, _f: FrameRef<'_>) {
        self.0 += 1;
    }
    fn record(&mut self, _r: Record) {}
}

fn run_sim(name: &str, frames: u64, pps: u64) {
    let mut scenario = match Scenario::resolve(name) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // The scenario's frame rate, from its first simulated millisecond.
    let probe_ns = 1_000_000u64.min(scenario.duration_ns);
    let mut count = Count(0);
    Simulator::new(scenario.clone()).run_until_into(probe_ns, &mut count);
    let per_sim_s = count.0 as f64 / (probe_ns as f64 * 1e-9);
    if per_sim_s <= 0.0 {
        eprintln!("{name}: no frames");
        std::process::exit(2);
    }
    scenario.bound_to_ns((frames as f64 / per_sim_s * 1e9) as u64);
    let pace = (pps > 0).then(|| pps as f64 / per_sim_s);
    println!(
        "sim {name}: {:.2} M frames per simulated second; {:.1} ms simulated{}",
        per_sim_s / 1e6,
        scenario.duration_ns as f64 / 1e6,
        pace.map_or(String::new(), |p| format!(", pace {p:.3}")),
    );
    run_source(Box::new(SimSource::new(scenario, pace)), pps);
}

fn run_source(source: Box<dyn Source>, pps: u64) {
    let cpu0 = cpu_secs();
    let mut cfg = AgentConfig::new("127.0.0.1:0".parse().expect("addr"));
    cfg.wait_for_client = true;
    cfg.client_queue_bytes = 512 << 20;
    cfg.client_queue_batches = 1 << 16;
    let agent = Agent::bind(cfg).expect("bind");
    let port = agent.local_addr().expect("addr").port();
    let what = source.describe();
    let t = std::thread::spawn(move || agent.run(source, Vec::new()));
    let mut ccfg = ClientConfig::new(AttachUrl::Tcp {
        host: "127.0.0.1".into(),
        port,
    });
    ccfg.exit_on_end = true;
    ccfg.queue_bytes = 1 << 30;
    ccfg.queue_batches = 1 << 16;
    let client = Client::start(ccfg).expect("client");
    let start = Instant::now();
    let mut first: Option<(Instant, u64)> = None;
    while !client.is_finished() {
        let s = client.stats();
        if first.is_none() && s.frames_received > 0 {
            first = Some((Instant::now(), s.frames_received));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let store = std::sync::Arc::clone(client.store());
    let s = client.stop();
    let end = Instant::now();
    let _ = t.join();
    let (t0, n0) = first.unwrap_or((start, 0));
    let secs = (end - t0).as_secs_f64();
    let rate = (s.frames_received - n0) as f64 / secs / 1e6;
    let cpu1 = cpu_secs();
    let (user, sys) = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    let frames = (s.frames_received + s.frames_dropped).max(1);
    println!(
        "loopback {what}, {} pace: {} frames into the store ({} rows, {} RoCE), {} dropped (agent {}, client {}), {:.2} s, {:.2} Mpps, {:.0} MB/s on the socket; CPU {:.0} ns/frame user + {:.0} system",
        if pps == 0 {
            "unpaced".to_owned()
        } else {
            format!("{:.1} Mpps", pps as f64 / 1e6)
        },
        s.frames_received,
        store.len(),
        store.stats().roce_packets,
        s.frames_dropped,
        s.frames_dropped_agent,
        s.frames_dropped_client,
        secs,
        rate,
        s.bytes_received as f64 / secs / 1e6,
        user * 1e9 / frames as f64,
        sys * 1e9 / frames as f64,
    );
}

fn main() {
    let mut args: Vec<String> = rocescope_testkit::bench_args();
    if args.first().is_some_and(|a| a == "sim") {
        args.remove(0);
        let name = args
            .first()
            .cloned()
            .unwrap_or_else(|| "line-rate".to_owned());
        let frames = args
            .get(1)
            .and_then(|a| a.parse().ok())
            .unwrap_or(3_000_000);
        match args.get(2).and_then(|a| a.parse().ok()) {
            Some(pps) => run_sim(&name, frames, pps),
            None => {
                run_sim(&name, frames, 6_000_000);
                run_sim(&name, frames, 0);
            }
        }
        return;
    }
    let frames = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(3_000_000);
    match args.get(1).and_then(|a| a.parse().ok()) {
        Some(pps) => run(frames, pps),
        None => {
            run(frames, 6_000_000);
            run(frames, 0);
        }
    }
}
