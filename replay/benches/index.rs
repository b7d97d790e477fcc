//! Indexing a 2M-packet header-only RoCE capture: rate, peak memory per
//! packet, time to the first rows, against `tshark -r FILE` on the same file.
//!
//! `cargo bench -p rocescope-replay --bench index [-- PACKETS] [write|read-mix] [analysis] [no-states] [piped=K [piped-each]] [no-tshark] [cold] [reread] [FILE.pcap|FILE.pcapng]`
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::AnalysisConfig;
use rocescope_replay::store::{Analyzer, NoAnalysis, RcAnalyzer, Store};
use rocescope_replay::synth;

use rocescope_testkit::proc_status_kib as status_kib;

/// The two captures: the bench's own pcap, and a second one made another
/// way (pcapng, READs, 24 QPs; `synth::write_read_mix_pcapng`).
const CAPTURES: [(&str, &str); 2] = [("write", "pcap"), ("read-mix", "pcapng")];

fn capture(dir: &Path, name: &str, ext: &str, n: u64) -> std::path::PathBuf {
    let path = match name {
        "write" => dir.join(format!("header-only-{n}.{ext}")),
        _ => dir.join(format!("header-only-{name}-{n}.{ext}")),
    };
    if !path.exists() {
        match name {
            "write" => synth::write_header_only_pcap(&path, n).unwrap(),
            _ => synth::write_read_mix_pcapng(&path, n).unwrap(),
        }
    }
    path
}

/// `[PACKETS] [write|read-mix] [analysis] [no-states] [piped=K [piped-each]] [no-tshark] [cold] [reread] [FILE]`:
/// `analysis` runs only the indexing with the RC analysis (for callgrind),
/// `no-states` without its time by state (what that costs, against it),
/// `piped=K` (with `no-states`) what a time by state on a third thread would
/// cost instead ([`Piped`]: K dependent multiplies a packet there; with
/// `piped-each` handed over every indexer batch, not in blocks),
/// `cold` drops the page cache before each indexing run (root only),
/// `reread` first evicts the capture's own pages from the page cache (no
/// root needed) so that the warm-up read caches it the way a first read
/// does, whatever wrote it (BENCHMARKS.md, "Why the indexer is built so":
/// how the file sits in the page cache), a `.pcap` or `.pcapng` FILE is
/// indexed instead of the bench's own two.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |w: &str| args.iter().any(|a| a == w);
    let n: u64 = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    // A capture of the user's (one the simulator recorded, a card's): its
    // frames are counted by the indexing itself.
    if let Some(file) = args
        .iter()
        .find(|a| a.ends_with(".pcap") || a.ends_with(".pcapng"))
    {
        let path = Path::new(file);
        let frames = count_frames(path);
        bench_one(path, frames, &Modes::from_args(&has));
        return;
    }
    let dir = rocescope_testkit::bench_data();
    for (name, ext) in CAPTURES {
        if CAPTURES.iter().any(|(c, _)| has(c)) && !has(name) {
            continue;
        }
        let path = capture(&dir, name, ext, n);
        bench_one(&path, n, &Modes::from_args(&has));
    }
}

/// The run's switches.
#[derive(Clone, Copy)]
struct Modes {
    analysis_only: bool,
    no_states: bool,
    /// `piped=K`: the analysis wrapped in [`Piped`], K steps a packet;
    /// `piped-each`: its events handed over every batch.
    piped: Option<u64>,
    piped_each: bool,
    no_tshark: bool,
    cold: bool,
    reread: bool,
}

impl Modes {
    fn from_args(has: &dyn Fn(&str) -> bool) -> Modes {
        Modes {
            analysis_only: has("analysis"),
            no_states: has("no-states"),
            piped: std::env::args().find_map(|a| a.strip_prefix("piped=")?.parse().ok()),
            piped_each: has("piped-each"),
            no_tshark: has("no-tshark"),
            cold: has("cold"),
            reread: has("reread"),
        }
    }
}

/// Evicts the file's clean pages from the page cache (GNU dd's
/// `iflag=nocache count=0`, POSIX_FADV_DONTNEED on the whole file).
fn evict(path: &Path) -> bool {
    Command::new("dd")
        .arg(format!("if={}", path.display()))
        .args(["iflag=nocache", "count=0", "status=none"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Frames in a capture, by a decode-only indexing run (also warms the cache).
fn count_frames(path: &Path) -> u64 {
    let store = Store::open(path, DecodeConfig::default(), Box::new(NoAnalysis)).unwrap();
    store.wait();
    store.len()
}

fn drop_caches() -> bool {
    // Needs root; other users of the machine re-read their files after it.
    std::fs::write("/proc/sys/vm/drop_caches", "1").is_ok()
}

fn bench_one(path: &Path, n: u64, modes: &Modes) {
    let Modes {
        analysis_only,
        no_states,
        piped,
        piped_each,
        no_tshark,
        cold,
        reread,
    } = *modes;
    let size = std::fs::metadata(path).unwrap().len();
    println!(
        "capture: {} ({n} packets, {:.1} MB)",
        path.display(),
        size as f64 / 1e6
    );

    if reread {
        let evicted = evict(path);
        println!(
            "page cache: {}",
            if evicted {
                "the capture evicted, then read back once"
            } else {
                "could not evict the capture (dd failed): as it was"
            }
        );
    }
    // Warm the page cache so both tools read from memory, through a small
    // buffer so that the process's peak memory stays the indexer's.
    let mut buf = vec![0u8; 1 << 20];
    let mut f = std::fs::File::open(path).unwrap();
    while std::io::Read::read(&mut f, &mut buf).unwrap() > 0 {}

    let tshark_s = if no_tshark {
        None
    } else {
        tshark_once(path).and_then(|_| tshark_once(path))
    };
    match tshark_s {
        Some(ts) => println!("tshark -r: {ts:.3} s, {:.0} packets/s", n as f64 / ts),
        None => println!("tshark not run: no comparison"),
    }
    for (name, analysis) in [("decode only", false), ("with RC analysis", true)] {
        if analysis_only && !analysis {
            continue;
        }
        if cold && !drop_caches() {
            println!("  cannot drop the page cache (not root): cold figure not taken");
            return;
        }
        let analyzer: Box<dyn Analyzer> = if analysis {
            let rc = RcAnalyzer::with_config(AnalysisConfig {
                time_by_state: !no_states,
                ..AnalysisConfig::default()
            });
            match piped {
                Some(k) => Box::new(Piped::new(rc, k, if piped_each { 1 } else { PIPED_EVENTS })),
                None => Box::new(rc),
            }
        } else {
            Box::new(NoAnalysis)
        };
        let (secs, first_rows_ms, index_bytes, per_packet) = index_once(path, n, analyzer);
        let rate = n as f64 / secs;
        let warmth = if cold { "cold, " } else { "" };
        let states = match (analysis && no_states, piped) {
            (true, Some(k)) => format!(", no time by state, piped={k}"),
            (true, None) => ", no time by state".to_owned(),
            _ => String::new(),
        };
        println!(
            "rocescope index ({warmth}{name}{states}): {secs:.3} s, {:.1} Mpackets/s",
            rate / 1e6
        );
        println!("  first rows visible after {first_rows_ms:.2} ms");
        println!(
            "  index {index_bytes:.1} bytes/packet; peak RSS growth {per_packet:.1} bytes/packet all in"
        );
        if let Some(ts) = tshark_s {
            println!("  {:.0}x faster than tshark -r", ts / secs);
        }
    }
}

/// Seconds of one `tshark -r FILE > /dev/null`, or `None` without tshark.
fn tshark_once(path: &Path) -> Option<f64> {
    let t = Instant::now();
    Command::new("tshark")
        .arg("-r")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()
        .filter(|s| s.success())
        .map(|_| t.elapsed().as_secs_f64())
}

/// Index once; returns (seconds, ms to the first rows, index bytes per
/// packet, peak RSS growth per packet).
fn index_once(path: &Path, n: u64, analyzer: Box<dyn Analyzer>) -> (f64, f64, f64, f64) {
    // Peak memory of the indexing alone: reset the high-water mark first.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base_kib = status_kib("VmRSS:");
    let t = Instant::now();
    let store = Store::open(path, DecodeConfig::default(), analyzer).unwrap();
    while store.is_empty() {
        std::hint::spin_loop();
    }
    let first_rows_ms = t.elapsed().as_secs_f64() * 1e3;
    store.wait();
    let secs = t.elapsed().as_secs_f64();
    let peak_kib = status_kib("VmHWM:");
    assert_eq!(store.len(), n);
    let per_packet = (peak_kib.saturating_sub(base_kib)) as f64 * 1024.0 / n as f64;
    (
        secs,
        first_rows_ms,
        store.index_bytes() as f64 / n as f64,
        per_packet,
    )
}

/// Events a [`Piped`] analysis hands its thread at once: fewer, larger
/// hand-overs (a batch of the indexer's, a few hundred packets, each sent
/// alone cost more than the whole time by state).
const PIPED_EVENTS: usize = 16_384;

/// What a time by state on a third thread would cost (issue 48: can the
/// accounting hide on the reader's core, which the indexing leaves partly
/// idle?): the analysis as it is, and for every packet a 32-byte event
/// handed to a thread of its own, which works K dependent multiplies on
/// each (K about 20 takes the CPU the accounting takes on `write`). The
/// events are what a real split must carry at the least; the work, its
/// CPU. Its thread is drained before the source ends.
struct Piped {
    inner: RcAnalyzer,
    events: Vec<[u64; 4]>,
    /// Events handed over at once (at least).
    block: usize,
    tx: Option<std::sync::mpsc::SyncSender<Vec<[u64; 4]>>>,
    worker: Option<std::thread::JoinHandle<u64>>,
}

impl Piped {
    fn new(inner: RcAnalyzer, k: u64, block: usize) -> Piped {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<[u64; 4]>>(8);
        let worker = std::thread::spawn(move || {
            let mut acc = 0u64;
            for v in rx {
                for e in &v {
                    let mut x = e[0] ^ e[1];
                    for _ in 0..k {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(e[2]);
                    }
                    acc = acc.wrapping_add(x);
                }
            }
            acc
        });
        Piped {
            inner,
            events: Vec::with_capacity(block),
            block,
            tx: Some(tx),
            worker: Some(worker),
        }
    }

    fn hand_over(&mut self) {
        let events = std::mem::replace(&mut self.events, Vec::with_capacity(self.block));
        if let Some(tx) = &self.tx {
            tx.send(events).unwrap();
        }
    }
}

impl Analyzer for Piped {
    fn batch(
        &mut self,
        first_index: u64,
        batch: &mut [rocescope_replay::store::PacketInfo],
        wide: &[rocescope_replay::store::Wide],
        late: &mut Vec<rocescope_replay::store::LateFlags>,
    ) {
        self.inner.batch(first_index, batch, wide, late);
        for (i, info) in batch.iter().enumerate() {
            self.events.push([
                info.row.ts_ns,
                first_index + i as u64,
                u64::from(info.row.origlen),
                u64::from(info.row.conversation),
            ]);
        }
        if self.events.len() >= self.block {
            self.hand_over();
        }
    }

    fn record(&mut self, r: &rocescope_replay::Record) {
        self.inner.record(r);
    }

    fn finish(&mut self) {
        self.hand_over();
        drop(self.tx.take());
        if let Some(w) = self.worker.take() {
            std::hint::black_box(w.join().unwrap());
        }
        self.inner.finish();
    }

    fn is_costly(&self) -> bool {
        self.inner.is_costly()
    }
}
