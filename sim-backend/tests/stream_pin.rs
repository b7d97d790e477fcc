//! The record stream of fixed scenarios, pinned by a hash computed on the
//! simulator before its speed work: optimisations must leave every record
//! (kind, time, bytes, fields) and the run's counters exactly as they were.
//! A model change that alters the stream on purpose updates these hashes in
//! the same commit and says why.

use rocescope_replay::Record;
use rocescope_sim::{FrameRef, RecordSink, Scenario, SimStats, Simulator};

/// FNV-1a, 64 bits: stable across platforms and Rust versions.
#[derive(Debug)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Records and counters of a run, hashed: each record's full Debug form
/// (every field of every kind, frame bytes included), then the counters a
/// change of the model would move (not the event counts: the speed work may
/// schedule fewer events for the same records).
#[derive(Debug, PartialEq, Eq)]
struct Pin {
    records: u64,
    frames: u64,
    frame_bytes: u64,
    last_ts_ns: u64,
    hash: u64,
}

fn stats_text(s: &SimStats) -> String {
    let qps: Vec<_> = s
        .qps
        .iter()
        .map(|q| {
            (
                q.qpn,
                q.messages,
                q.bytes,
                q.acked_bytes,
                q.errors,
                q.latency_sum_ns,
                q.retransmissions,
                q.timeouts,
            )
        })
        .collect();
    format!(
        "{} {} {} {} {} {} {} {} {} {} {:?} {:?} {:?}",
        s.packets_sent,
        s.frames_captured,
        s.capture_drops,
        s.wire_drops,
        s.wire_corrupt,
        s.naks,
        s.cnps,
        s.ecn_marked,
        s.dpi_drops,
        s.psn_drops,
        s.hbm_fetch_ns,
        s.indication_to_packet_ns,
        qps
    )
}

/// Runs `sc` to its end through `run_until` in steps of `step_ns`.
fn pin(sc: Scenario, step_ns: u64) -> Pin {
    let mut h = Fnv::new();
    let (mut records, mut frames, mut frame_bytes, mut last_ts_ns) = (0, 0, 0, 0);
    let mut sim = Simulator::new(sc);
    let mut sink = |r: Record| {
        records += 1;
        if let Record::Frame { ts_ns, data, .. } = &r {
            frames += 1;
            frame_bytes += data.len() as u64;
            last_ts_ns = *ts_ns;
        }
        h.bytes(format!("{r:?}\n").as_bytes());
    };
    let mut t_ns = 0;
    loop {
        t_ns += step_ns;
        if !sim.run_until(t_ns, &mut sink) {
            break;
        }
    }
    h.bytes(stats_text(sim.stats()).as_bytes());
    Pin {
        records,
        frames,
        frame_bytes,
        last_ts_ns,
        hash: h.0,
    }
}

fn builtin(name: &str) -> Scenario {
    Scenario::builtin(name).unwrap_or_else(|| panic!("no scenario {name}"))
}

fn check(what: &str, got: Pin, want: Pin) {
    assert_eq!(got, want, "{what}: the record stream changed");
}

#[test]
fn default_scenario_stream_is_pinned() {
    let want = Pin {
        records: 47234,
        frames: 46186,
        frame_bytes: 2648080,
        last_ts_ns: 9999818,
        hash: 16928711330439807506,
    };
    check("default", pin(builtin("default"), 50_000), want);
}

/// A sink that hashes lent frames as `Record::Frame`s.
struct Lent(Fnv, u64);

impl RecordSink for Lent {
    fn frame(&mut self, f: FrameRef<'_>) {
        self.record(f.to_record());
    }
    fn record(&mut self, r: Record) {
        self.1 += 1;
        self.0.bytes(format!("{r:?}\n").as_bytes());
    }
}

#[test]
fn lent_frames_give_the_same_stream() {
    for name in ["default", "aes"] {
        let want = pin(builtin(name), 1_000_000);
        let mut sink = Lent(Fnv::new(), 0);
        let mut sim = Simulator::new(builtin(name));
        sim.run_into(&mut sink);
        sink.0.bytes(stats_text(sim.stats()).as_bytes());
        assert_eq!((sink.1, sink.0.0), (want.records, want.hash), "{name}");
    }
}

#[test]
fn stream_does_not_depend_on_the_step_size() {
    let a = pin(builtin("default"), 1_000_000);
    let b = pin(builtin("default"), 7_777);
    assert_eq!(a, b);
}

#[test]
fn other_shipped_scenarios_streams_are_pinned() {
    let want = [
        (
            "lossy-link",
            Pin {
                records: 11432,
                frames: 6166,
                frame_bytes: 334132,
                last_ts_ns: 1708970,
                hash: 4741831737947524096,
            },
        ),
        (
            "incast",
            Pin {
                records: 13424,
                frames: 1631,
                frame_bytes: 88698,
                last_ts_ns: 2289538,
                hash: 12014148492508618586,
            },
        ),
        (
            "window-stall",
            Pin {
                records: 363,
                frames: 304,
                frame_bytes: 16432,
                last_ts_ns: 1837393,
                hash: 5262861455211351689,
            },
        ),
        (
            "read-heavy",
            Pin {
                records: 7423,
                frames: 7132,
                frame_bytes: 499240,
                last_ts_ns: 1999974,
                hash: 14459220539629177931,
            },
        ),
        (
            "aes",
            Pin {
                records: 733,
                frames: 348,
                frame_bytes: 825344,
                last_ts_ns: 199373,
                hash: 7832229553190220242,
            },
        ),
        (
            "dpi-drop",
            Pin {
                records: 375,
                frames: 186,
                frame_bytes: 393576,
                last_ts_ns: 198824,
                hash: 14331023399465250295,
            },
        ),
        (
            "teaching-basic",
            Pin {
                records: 60,
                frames: 19,
                frame_bytes: 1094,
                last_ts_ns: 18938,
                hash: 5309560106730023017,
            },
        ),
        // Pinned when it was shipped (2026-11-30), on the code of then.
        (
            "line-rate",
            Pin {
                records: 56657,
                frames: 56268,
                frame_bytes: 3179156,
                last_ts_ns: 9999966,
                hash: 13176822903424946235,
            },
        ),
        // Pinned when it was shipped (2026-12-01), with the ConnectX's DCQCN
        // reaction point.
        (
            "dcqcn",
            Pin {
                records: 5298,
                frames: 4874,
                frame_bytes: 267564,
                last_ts_ns: 1999918,
                hash: 7840197354465264535,
            },
        ),
        // Pinned when they were shipped (issue 48): PFC frames on the
        // wire, SEND into a receive queue with RNR NAKs, host stalls.
        (
            "pfc",
            Pin {
                records: 6018,
                frames: 4651,
                frame_bytes: 265238,
                last_ts_ns: 1999730,
                hash: 12068813738078946386,
            },
        ),
        (
            "rnr",
            Pin {
                records: 503,
                frames: 304,
                frame_bytes: 16608,
                last_ts_ns: 1887471,
                hash: 12012052003854357390,
            },
        ),
        (
            "host-stall",
            Pin {
                records: 7949,
                frames: 7806,
                frame_bytes: 438112,
                last_ts_ns: 1999601,
                hash: 1394439568535230423,
            },
        ),
    ];
    let mut pinned: Vec<&str> = want.iter().map(|(n, _)| *n).chain(["default"]).collect();
    let mut shipped = Scenario::builtin_names();
    pinned.sort_unstable();
    shipped.sort_unstable();
    assert_eq!(pinned, shipped, "every shipped scenario is pinned");
    for (name, want) in want {
        check(name, pin(builtin(name), 20_000), want);
    }
}

/// The card as built captures RoCE frames whole: payload bytes, AES and
/// the payload pattern all reach the records.
#[test]
fn whole_frame_capture_stream_is_pinned() {
    let mut sc = builtin("default");
    sc.duration_ns = 1_000_000;
    if let Some(s) = &mut sc.sniffer {
        s.fixed_card = false;
        s.tag_direction = true;
    }
    let want = Pin {
        records: 4861,
        frames: 4669,
        frame_bytes: 11951702,
        last_ts_ns: 999845,
        hash: 7686757419657359385,
    };
    check("default, whole frames", pin(sc, 50_000), want);
}

/// Paths the shipped scenarios leave out: PFC pauses, duplicated and
/// reordered frames, an open-loop rate, a ConnectX requester, the RX-cut
/// quirk and untagged direction.
const MIXED: &str = r#"
name = "pin-mixed"
seed = 11
duration_ns = 1_500_000
[params]
pfc_enabled = 1
pfc_xoff_bytes = 65536
pfc_xon_bytes = 32768
switch_buffer_bytes = 262144
ecn_threshold_bytes = 16384
[[node]]
name = "a"
kind = "balboa"
[[node]]
name = "b"
kind = "connectx"
[[node]]
name = "c"
kind = "balboa"
[[qp]]
from = "a"
to = "b"
op = "mixed"
size_bytes = 20000
queue_depth = 3
[[qp]]
from = "c"
to = "b"
op = "write"
size_bytes = 65536
rate_gbps = 40.0
queue_depth = 2
[[qp]]
from = "b"
to = "a"
op = "read"
size_bytes = 9000
queue_depth = 2
[[fault]]
kind = "duplicate"
node = "a"
direction = "to_switch"
probability = 0.002
[[fault]]
kind = "reorder"
node = "b"
direction = "from_switch"
probability = 0.002
delay_ns = 3000
[[fault]]
kind = "loss"
node = "c"
nth = 500
[sniffer]
node = "a"
filter = 0x8000_0000
fixed_card = true
rx_cut_quirk = true
"#;

#[test]
fn mixed_features_stream_is_pinned() {
    let sc = Scenario::from_toml(MIXED, "pin-mixed.toml").unwrap_or_else(|e| panic!("{e}"));
    let want = Pin {
        records: 6121,
        frames: 3715,
        frame_bytes: 217944,
        last_ts_ns: 1499926,
        hash: 9103793294660143272,
    };
    check("mixed", pin(sc, 30_000), want);
}
