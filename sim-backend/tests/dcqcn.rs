//! The ConnectX peer's DCQCN reaction point on the `dcqcn` scenario: the
//! requester's rate steps down on CNPs, at most half a step, and comes back
//! once they stop; with `dcqcn_enabled` off nothing slows down.

mod common;

use common::*;
use rocescope_replay::record::Direction;
use rocescope_sim::{Scenario, Simulator};

const CNP: u8 = 0x81;

fn dcqcn() -> Scenario {
    Scenario::builtin("dcqcn").unwrap_or_else(|| panic!("no scenario dcqcn"))
}

/// WRITE payload bytes the sniffed requester sent in `[t1, t2)`, per µs.
fn sent_bytes_per_us(f: &[F], t1: u64, t2: u64) -> f64 {
    // Header-only capture: every WRITE packet of a 64 KiB message carries
    // one full PMTU.
    let packets = f
        .iter()
        .filter(|x| x.dir == Some(Direction::Tx) && x.opcode < 0x0C)
        .filter(|x| x.ts_ns >= t1 && x.ts_ns < t2)
        .count();
    let bytes = packets * 4096;
    bytes as f64 * 1000.0 / (t2 - t1) as f64
}

#[test]
fn the_rate_steps_down_at_most_half_per_cnp_and_recovers_when_cnps_stop() {
    let mut sim = Simulator::new(dcqcn());
    let mut recs = Vec::new();
    sim.run(&mut |r| recs.push(r));
    let line_gbps = sim.scenario().params.link_gbps;
    let s = sim.stats();
    assert_eq!(s.wire_drops, 0, "congestion without loss");
    let a = &s.qps[0];
    assert!(
        a.dcqcn_cnps >= 2,
        "a staircase needs CNPs: {}",
        a.dcqcn_cnps
    );
    // Every fall of the rate is a CNP's cut, to at least half the rate
    // before it; the rate only rises between CNPs.
    let mut before = line_gbps;
    let mut cuts = 0;
    for &(t_ns, r) in &a.dcqcn_rates {
        if r < before {
            cuts += 1;
            assert!(r >= before / 2.0, "at {t_ns} ns: {before} -> {r} Gb/s");
        }
        before = r;
    }
    assert_eq!(cuts, a.dcqcn_cnps, "{:?}", a.dcqcn_rates);
    let (first_cut_ns, first) = a.dcqcn_rates[0];
    assert!(first_cut_ns > 300_000, "no CNP before the second QP joins");
    assert_eq!(
        first,
        line_gbps / 2.0,
        "α starts at 1: the first CNP halves"
    );
    let lowest = a.dcqcn_rates.iter().map(|x| x.1).fold(line_gbps, f64::min);
    assert!(
        lowest <= line_gbps / 4.0,
        "a second CNP cut again: {lowest}"
    );
    // The second QP is done well before the end: no CNP since, and the
    // rate is back at the line rate.
    assert_eq!(s.qps[1].messages, 60);
    assert_eq!(before, line_gbps, "recovered: {:?}", a.dcqcn_rates.last());

    // On the wire, as the sniffer at the requester saw it.
    let f = frames(&recs);
    let cnps: Vec<u64> = f
        .iter()
        .filter(|x| x.opcode == CNP && x.dir == Some(Direction::Rx))
        .map(|x| x.ts_ns)
        .collect();
    assert_eq!(cnps.len() as u64, a.dcqcn_cnps);
    assert!(cnps.windows(2).all(|w| w[1] - w[0] >= 50_000), "{cnps:?}");
    let alone = sent_bytes_per_us(&f, 100_000, 300_000);
    let cut = sent_bytes_per_us(&f, cnps[1] + 10_000, cnps[1] + 60_000);
    let end = sent_bytes_per_us(&f, 1_800_000, 2_000_000);
    assert!(cut < 0.4 * alone, "stepped down: {cut} of {alone} B/µs");
    assert!(end > 0.9 * alone, "back up: {end} of {alone} B/µs");
}

#[test]
fn without_dcqcn_the_connectx_does_not_slow_down() {
    let mut sc = dcqcn();
    sc.set("dcqcn_enabled", "0")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulator::new(sc);
    sim.run(&mut |_| {});
    let s = sim.stats();
    assert!(s.cnps > 0, "the CNPs still come");
    assert!(
        s.qps
            .iter()
            .all(|q| q.dcqcn_cnps == 0 && q.dcqcn_rates.is_empty())
    );
}
