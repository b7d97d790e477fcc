//! The cost of keeping the Slots and Profiler views up to date in a long
//! live session: a bounded store takes the simulator's non-frame records at
//! the rate the `default` scenario makes them (about 100,000 a simulated
//! second: profiler samples of four probes and slot decisions), and the
//! model's views are refreshed as its tick does, every 25,000 records (a
//! quarter of a simulated second). Prints, as the store fills and once its
//! records' share is full and the oldest go, the refresh's time, how far
//! the newest sample shown lags the newest taken, and the peak RSS.
//!
//! `cargo bench -p rocescope --bench records_refresh [-- CAP [TICKS]]`
//! (defaults: 2GiB, the live sessions' default cap, and 160 ticks: the
//! records' share, 1.68 M of them, fills after 67).

use std::time::Instant;

use rocescope_core::records::Derived;
use rocescope_replay::record::{ProbeDef, ProfilerSample, SlotDecision, SlotKind, Verdict};
use rocescope_replay::store::{SpillConfig, Store};
use rocescope_replay::{Record, TimeBase};

/// Records between two refreshes.
const PER_TICK: u64 = 25_000;

fn main() {
    let args: Vec<String> = rocescope_testkit::bench_args();
    let cap = args.first().map_or("2GiB", String::as_str);
    let cap_bytes = rocescope_decoders::units::parse_size_bytes(cap).unwrap_or_else(|e| {
        eprintln!("records_refresh: {e}");
        std::process::exit(2)
    });
    let ticks: u64 = args.get(1).and_then(|t| t.parse().ok()).unwrap_or(160);
    let folder = rocescope_testkit::temp_dir("records-refresh");
    let store = Store::live_bounded(
        TimeBase::Nanoseconds,
        SpillConfig {
            dir: folder.path().to_path_buf(),
            max_memory_bytes: cap_bytes,
            max_disk_bytes: None,
            remove_on_drop: true,
        },
    )
    .unwrap_or_else(|e| panic!("a bounded store: {e}"));
    for probe in 0..4u16 {
        store.push_record(Record::ProbeDef(ProbeDef {
            probe,
            name: format!("fifo{probe}"),
            unit: "beats".into(),
            module: "sim".into(),
        }));
    }
    let mut view = Derived::default();
    let mut ts_ns = 0u64;
    let mut refresh_ms = Vec::new();
    println!(" tick  records held  deleted  refresh ms  newest shown behind  peak RSS MiB");
    for tick in 1..=ticks {
        for i in 0..PER_TICK {
            // 10 µs of simulated time a record: 100,000 a second.
            ts_ns += 10_000;
            let r = if i % 10 == 9 {
                Record::Slot(SlotDecision {
                    ts_ns,
                    slot: SlotKind::Aes,
                    qpn: 0x100,
                    psn: i as u32,
                    verdict: Verdict::Transformed,
                    latency_ns: 40,
                    detail: 0,
                })
            } else {
                Record::Profiler(ProfilerSample {
                    cycle: ts_ns / 4,
                    ts_ns,
                    probe: (i % 4) as u16,
                    value: (i % 97) as i64,
                })
            };
            store.push_record(r);
        }
        let t = Instant::now();
        view.refresh(&store);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        refresh_ms.push(ms);
        let newest = view
            .probes()
            .iter()
            .filter_map(|p| p.samples().last())
            .map(|s| s.ts_ns)
            .max()
            .unwrap_or(0);
        if tick % 10 == 0 || tick == 1 {
            let deleted = store.spill_stats().map_or(0, |s| s.records_deleted);
            println!(
                "{tick:5}  {:12}  {deleted:7}  {ms:10.2}  {:16.3} s  {:12.0}",
                store.record_count(),
                ts_ns.saturating_sub(newest) as f64 / 1e9,
                rocescope_testkit::proc_status_kib("VmHWM:") as f64 / 1024.0
            );
        }
    }
    refresh_ms.sort_by(f64::total_cmp);
    let at = |q: f64| refresh_ms[((refresh_ms.len() - 1) as f64 * q) as usize];
    println!(
        "refresh over {ticks} ticks: median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.9),
        at(1.0)
    );
}
