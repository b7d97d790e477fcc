//! The paper's numbers, reproduced by the model (`FIDELITY.md`).

use rocescope_sim::experiments::{self, measure_fairness, measure_latency, measure_throughput};
use rocescope_sim::{OpKind, Params};

#[test]
fn large_writes_and_reads_run_at_11_2_to_11_6_gbytes_s() {
    let p = Params::default();
    for op in [OpKind::Write, OpKind::Read] {
        for size in [32768, 1 << 20] {
            let t = measure_throughput(&p, op, size);
            assert!((11.2..=11.6).contains(&t), "{op:?} {size}: {t} GB/s");
        }
    }
}

#[test]
fn small_message_latency_matches_the_paper() {
    let p = Params::default();
    let w = measure_latency(&p, OpKind::Write, 64);
    let r = measure_latency(&p, OpKind::Read, 64);
    assert!((5.2..=5.8).contains(&w), "WRITE 64 B {w} us");
    assert!((7.4..=8.2).contains(&r), "READ 64 B {r} us");
}

#[test]
fn qps_share_the_line_evenly() {
    let p = Params::default();
    for n in [1, 2, 8, 32] {
        let row = measure_fairness(&p, n);
        assert!(
            (11.2..=11.6).contains(&row.aggregate_gbytes_s),
            "{n} QPs: {row:?}"
        );
        let max = row.per_qp_gbytes_s.iter().cloned().fold(0.0, f64::max);
        let min = row.per_qp_gbytes_s.iter().cloned().fold(f64::MAX, f64::min);
        assert!(max / min <= 1.10, "{n} QPs: {row:?}");
    }
}

#[test]
fn retransmission_times_match_and_follow_the_parameters() {
    let r = experiments::retransmission(&Params::default());
    assert!((r.hbm_fetch_ns - 1732.0).abs() < 1.0, "{r:?}");
    assert!((r.indication_to_packet_ns - 1860.0).abs() < 20.0, "{r:?}");
    let mut p = Params::default();
    p.set("hbm_fetch_ns", "3464").expect("valid");
    let r2 = experiments::retransmission(&p);
    assert!((r2.hbm_fetch_ns - 3464.0).abs() < 1.0, "{r2:?}");
    assert!(
        r2.indication_to_packet_ns > r.indication_to_packet_ns + 1500.0,
        "{r2:?}"
    );
}

#[test]
fn results_move_with_the_parameters() {
    let base = measure_throughput(&Params::default(), OpKind::Write, 65536);
    let mut p = Params::default();
    p.set("ack_gap_cycles", "170").expect("valid");
    let slower = measure_throughput(&p, OpKind::Write, 65536);
    assert!(slower < base * 0.7, "{base} -> {slower}");
    let mut p = Params::default();
    p.set("host_post_ns", "3000").expect("valid");
    let lat = measure_latency(&p, OpKind::Write, 64);
    assert!(lat > measure_latency(&Params::default(), OpKind::Write, 64) + 1.0);
    let json = experiments::run_json("retransmission", &Params::default()).expect("known");
    assert!(json.contains("\"hbm_fetch_ns\""), "{json}");
    assert!(
        experiments::run_json("nope", &Params::default())
            .unwrap_err()
            .contains("fairness")
    );
}
