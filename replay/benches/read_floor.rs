//! The floor under indexing a classic pcap: `read` into a 1 MiB buffer and
//! walk the record headers, nothing else (no decoding, no hand-over, no
//! index). What the indexer does on top of this is what it can shorten.
//!
//! `cargo bench -p rocescope-replay --bench read_floor [-- RUNS] [map] [FILE.pcap]`
//! (by default the index bench's `target/bench-data/header-only-2000000.pcap`,
//! made by `cargo bench -p rocescope-replay --bench index`; a relative FILE
//! is from `replay/`, where cargo runs benches). With `map`, each run also
//! walks the file through a read-only mapping, its pages faulted in on
//! demand and then populated up front: the floor a mapped input would have.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::time::Instant;

const BUFFER_BYTES: usize = 1 << 20;
const FILE_HEADER_BYTES: usize = 24;
const RECORD_HEADER_BYTES: usize = 16;

/// Walks the records in `buf` from `at`: (records, check sum, where the
/// first record not wholly in `buf` starts).
fn walk_records(buf: &[u8], mut at: usize) -> (u64, u64, usize) {
    let (mut records, mut sum) = (0u64, 0u64);
    while let Some(h) = buf.get(at..at + RECORD_HEADER_BYTES) {
        let caplen = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let end = at + RECORD_HEADER_BYTES + caplen;
        let Some(&last) = end.checked_sub(1).and_then(|e| buf.get(e)) else {
            break;
        };
        sum += u64::from(last);
        records += 1;
        at = end;
    }
    (records, sum, at)
}

/// The same walk over a read-only mapping of the whole file, its pages
/// faulted in as the walk reaches them or, with `populate`, all before it.
fn walk_mapped(path: &std::path::Path, populate: bool) -> std::io::Result<(u64, u64)> {
    let file = std::fs::File::open(path)?;
    let mut options = memmap2::MmapOptions::new();
    if populate {
        options.populate();
    }
    // SAFETY: a bench over a file nothing else writes while it runs.
    #[allow(unsafe_code)]
    let map = unsafe { options.map(&file)? };
    let (records, sum, _) = walk_records(&map, FILE_HEADER_BYTES);
    Ok((records, sum))
}

/// One way of walking a file: (records, check sum).
type Walk = fn(&std::path::Path) -> std::io::Result<(u64, u64)>;

/// Records and the sum of one byte of each (so that the walk reads them).
fn walk(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    let mut file = std::fs::File::open(path)?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)?;
    if ![0xa1b2_c3d4, 0xa1b2_3c4d].contains(&u32::from_le_bytes(magic)) {
        return Err(std::io::Error::other(
            "not a little-endian classic pcap (magic at byte 0)",
        ));
    }
    let mut buf = vec![0u8; BUFFER_BYTES];
    let (mut have, mut at) = (0usize, FILE_HEADER_BYTES - magic.len());
    let (mut records, mut sum) = (0u64, 0u64);
    loop {
        if have == buf.len() {
            // A record larger than the buffer: grow it.
            buf.resize(buf.len() * 2, 0);
        }
        let k = file.read(&mut buf[have..])?;
        if k == 0 {
            return Ok((records, sum));
        }
        have += k;
        let (n, s, next) = walk_records(&buf[..have], at);
        (records, sum, at) = (records + n, sum + s, next);
        let rest = have.saturating_sub(at);
        buf.copy_within(at.min(have)..have, 0);
        at -= have - rest;
        have = rest;
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let runs: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(5);
    let mapped = args.iter().any(|a| a == "map");
    let path = args
        .iter()
        .find(|a| a.parse::<usize>().is_err() && *a != "map")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/bench-data/header-only-2000000.pcap")
        });
    for _ in 0..runs {
        let mut ways: Vec<(&str, Walk)> = vec![("read and walked", walk)];
        if mapped {
            ways.push(("mapped (faulted on demand) and walked", |p| {
                walk_mapped(p, false)
            }));
            ways.push(("mapped (populated first) and walked", |p| {
                walk_mapped(p, true)
            }));
        }
        for (how, way) in ways {
            let t = Instant::now();
            match way(&path) {
                Ok((records, sum)) => println!(
                    "{how} {records} records in {:.1} ms (check {sum})",
                    t.elapsed().as_secs_f64() * 1e3
                ),
                Err(e) => {
                    eprintln!("read_floor: {}: {e}", path.display());
                    std::process::exit(1);
                }
            }
        }
    }
}
