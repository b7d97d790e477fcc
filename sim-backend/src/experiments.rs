//! The paper's measurements, computed by running the model (nothing is
//! hard-coded: every figure comes from simulated completions or from times
//! the simulator observed, so changing a parameter moves it).
//!
//! `rocescope sim --experiment NAME --json` prints these; until the CLI is
//! wired, `cargo run -p rocescope-sim --release --example experiment -- NAME`.

use serde::Serialize;

use crate::engine::Simulator;
use crate::params::Params;
use crate::scenario::{FaultKind, FaultSpec, LinkDir, OpKind, Scenario};

/// Names accepted by [`run_json`].
pub const NAMES: &[&str] = &["throughput", "fairness", "retransmission"];

/// Message sizes of the throughput experiment: 64 B .. 1 MiB.
pub const THROUGHPUT_SIZES: &[u64] = &[
    64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576,
];

/// QP counts of the fairness experiment.
pub const FAIRNESS_QPS: &[usize] = &[1, 2, 4, 8, 16, 32];

/// One row of the throughput experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputRow {
    /// `"write"` or `"read"`.
    pub op: &'static str,
    /// Message size.
    pub size_bytes: u64,
    /// Payload throughput with many messages outstanding.
    pub throughput_gbytes_s: f64,
    /// Post-to-completion latency with one message outstanding.
    pub latency_us: f64,
}

/// The throughput experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputReport {
    /// WRITE rows then READ rows, by size.
    pub rows: Vec<ThroughputRow>,
}

/// One row of the fairness experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FairnessRow {
    /// QPs sharing the link.
    pub qps: usize,
    /// Sum of the QPs' throughputs.
    pub aggregate_gbytes_s: f64,
    /// Each QP's throughput.
    pub per_qp_gbytes_s: Vec<f64>,
}

/// The fairness experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FairnessReport {
    /// One row per QP count.
    pub rows: Vec<FairnessRow>,
}

/// The retransmission experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetransmissionReport {
    /// Time to fetch one 4 KiB payload from the HBM retransmission buffer.
    pub hbm_fetch_ns: f64,
    /// From the retransmission indication (the NAK processed) to the start
    /// of the resent packet on the wire.
    pub indication_to_packet_ns: f64,
}

fn op_name(op: OpKind) -> &'static str {
    match op {
        OpKind::Write => "write",
        OpKind::Read => "read",
        OpKind::Mixed => "mixed",
        OpKind::Send => "send",
    }
}

/// Runs until `qp` has completed `messages` messages (or `limit_ns` passes).
fn run_messages(sim: &mut Simulator, messages: u64, limit_ns: u64) {
    let mut t = 0;
    let mut sink = |_r| {};
    while sim
        .stats()
        .qps
        .iter()
        .map(|q| q.messages)
        .min()
        .unwrap_or(0)
        < messages
        && t < limit_ns
    {
        t += 50_000;
        if !sim.run_until(t, &mut sink) {
            break;
        }
    }
}

/// Steady-state throughput (GB/s) of one QP sending `size_bytes` messages.
pub fn measure_throughput(params: &Params, op: OpKind, size_bytes: u64) -> f64 {
    let mut sc = Scenario::two_cards(op, size_bytes, 1, 32);
    sc.params = params.clone();
    sc.duration_ns = 1_000_000_000;
    let k = ((8u64 << 20) / size_bytes).clamp(16, 3000);
    sc.qps[0].messages = k;
    let mut sim = Simulator::new(sc);
    sim.record_completions(true);
    run_messages(&mut sim, k, 500_000_000);
    let c = &sim.stats().qps[0].completions;
    if c.len() < 4 {
        return 0.0;
    }
    let w = c.len() / 4;
    let (t0, _) = c[w];
    let (t1, _) = c[c.len() - 1];
    let bytes: u64 = c[w + 1..].iter().map(|&(_, b)| b).sum();
    if t1 <= t0 {
        return 0.0;
    }
    bytes as f64 / (t1 - t0) as f64
}

/// Mean post-to-completion latency (µs) of `size_bytes` messages, one at a time.
pub fn measure_latency(params: &Params, op: OpKind, size_bytes: u64) -> f64 {
    let mut sc = Scenario::two_cards(op, size_bytes, 1, 1);
    sc.params = params.clone();
    sc.duration_ns = 1_000_000_000;
    let k = 8;
    sc.qps[0].messages = k;
    let mut sim = Simulator::new(sc);
    run_messages(&mut sim, k, 500_000_000);
    let q = &sim.stats().qps[0];
    if q.messages == 0 {
        return 0.0;
    }
    q.latency_sum_ns as f64 / q.messages as f64 / 1000.0
}

/// WRITE and READ throughput and latency over message sizes 64 B .. 1 MiB.
pub fn throughput(params: &Params) -> ThroughputReport {
    throughput_sizes(params, THROUGHPUT_SIZES)
}

/// [`throughput`] over chosen sizes.
pub fn throughput_sizes(params: &Params, sizes: &[u64]) -> ThroughputReport {
    let mut rows = Vec::new();
    for op in [OpKind::Write, OpKind::Read] {
        for &size in sizes {
            rows.push(ThroughputRow {
                op: op_name(op),
                size_bytes: size,
                throughput_gbytes_s: measure_throughput(params, op, size),
                latency_us: measure_latency(params, op, size),
            });
        }
    }
    ThroughputReport { rows }
}

/// Per-QP and aggregate throughput of 32 KiB READs on `qps` QPs.
pub fn measure_fairness(params: &Params, qps: usize) -> FairnessRow {
    let mut sc = Scenario::two_cards(OpKind::Read, 32768, qps, 4);
    sc.params = params.clone();
    let warm_ns = 200_000u64;
    let window_ns = 1_000_000u64;
    sc.duration_ns = warm_ns + window_ns;
    let mut sim = Simulator::new(sc);
    sim.run_until(warm_ns, &mut |_r| {});
    let before: Vec<u64> = sim.stats().qps.iter().map(|q| q.acked_bytes).collect();
    sim.run(&mut |_r| {});
    let per: Vec<f64> = sim
        .stats()
        .qps
        .iter()
        .zip(before)
        .map(|(q, b)| (q.acked_bytes - b) as f64 / window_ns as f64)
        .collect();
    FairnessRow {
        qps,
        aggregate_gbytes_s: per.iter().sum(),
        per_qp_gbytes_s: per,
    }
}

/// 32 KiB READs shared by 1, 2, 4, 8, 16 and 32 QPs.
pub fn fairness(params: &Params) -> FairnessReport {
    FairnessReport {
        rows: FAIRNESS_QPS
            .iter()
            .map(|&n| measure_fairness(params, n))
            .collect(),
    }
}

/// One WRITE stream loses one packet: the NAK triggers Go-Back-N whose
/// payloads come back from HBM; both times are read off the run.
pub fn retransmission(params: &Params) -> RetransmissionReport {
    let mut sc = Scenario::two_cards(OpKind::Write, 65536, 1, 1);
    sc.params = params.clone();
    sc.duration_ns = 2_000_000;
    sc.qps[0].messages = 4;
    sc.faults.push(FaultSpec {
        kind: FaultKind::Loss,
        node: 0,
        direction: LinkDir::ToSwitch,
        at: crate::scenario::FaultAt::Wire,
        qp: None,
        probability: 0.0,
        nth: 5,
        start_ns: 0,
        end_ns: 0,
        delay_ns: 0,
        every_ns: 0,
    });
    let mut sim = Simulator::new(sc);
    sim.run(&mut |_r| {});
    let s = sim.stats();
    let mean = |v: &[u64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<u64>() as f64 / v.len() as f64
        }
    };
    RetransmissionReport {
        hbm_fetch_ns: mean(&s.hbm_fetch_ns),
        indication_to_packet_ns: mean(&s.indication_to_packet_ns),
    }
}

/// Runs an experiment by name and returns its JSON. Unknown names list the
/// valid ones.
pub fn run_json(name: &str, params: &Params) -> Result<String, String> {
    let r = match name {
        "throughput" => serde_json::to_string(&throughput(params)),
        "fairness" => serde_json::to_string(&fairness(params)),
        "retransmission" => serde_json::to_string(&retransmission(params)),
        _ => {
            return Err(format!(
                "unknown experiment `{name}`; valid experiments: {}",
                NAMES.join(", ")
            ));
        }
    };
    r.map_err(|e| e.to_string())
}
