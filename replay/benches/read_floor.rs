//! The floor under indexing a classic pcap: `read` into a 1 MiB buffer and
//! walk the record headers, nothing else (no decoding, no hand-over, no
//! index). What the indexer does on top of this is what it can shorten.
//!
//! `cargo bench -p rocescope-replay --bench read_floor [-- RUNS] [FILE.pcap]`
//! (by default the index bench's `target/bench-data/header-only-2000000.pcap`,
//! made by `cargo bench -p rocescope-replay --bench index`; a relative FILE
//! is from `replay/`, where cargo runs benches).
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::time::Instant;

const BUFFER_BYTES: usize = 1 << 20;
const FILE_HEADER_BYTES: usize = 24;
const RECORD_HEADER_BYTES: usize = 16;

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
        while let Some(h) = buf.get(at..at + RECORD_HEADER_BYTES) {
            let caplen = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
            let end = at + RECORD_HEADER_BYTES + caplen;
            if end > have {
                break;
            }
            sum += u64::from(buf[end - 1]);
            records += 1;
            at = end;
        }
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
    let path = args
        .iter()
        .find(|a| a.parse::<usize>().is_err())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/bench-data/header-only-2000000.pcap")
        });
    for _ in 0..runs {
        let t = Instant::now();
        match walk(&path) {
            Ok((records, sum)) => println!(
                "read and walked {records} records in {:.1} ms (check {sum})",
                t.elapsed().as_secs_f64() * 1e3
            ),
            Err(e) => {
                eprintln!("read_floor: {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    }
}
