//! Decoding frames out of a large VCD: a 512-bit AXI4-Stream (tkeep,
//! tready, a 250 MHz clock, data changing at the edges as a simulator dumps
//! it) carrying RoCE WRITEs and ACKs, written to `target/bench-data/` (at
//! least 1 GB by default, deleted afterwards). Reports the time to the
//! hierarchy (the interfaces found: the first screen), to the first frame,
//! and the frames per second decoded; then the time to read the hierarchy
//! for the signal browser and to load one chosen signal (`tvalid`, and the
//! 512-bit `tdata`) as the workbench's signals view does, with the memory
//! the loaded signal holds.
//!
//! `cargo bench -p rocescope-replay --bench wave [-- MEGABYTES]`
#![allow(clippy::unwrap_used)]

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use rocescope_decoders::{Opcode, PacketBuilder};
use rocescope_replay::CaptureReader;

const WIDTH_BYTES: usize = 64;

fn bits(out: &mut Vec<u8>, bytes: &[u8; WIDTH_BYTES]) {
    out.push(b'b');
    for byte in bytes.iter().rev() {
        for k in (0..8).rev() {
            out.push(if byte >> k & 1 == 1 { b'1' } else { b'0' });
        }
    }
}

/// Writes the VCD; returns the frames it carries.
fn write_vcd(path: &Path, min_bytes: u64) -> u64 {
    let mut out = BufWriter::with_capacity(1 << 22, std::fs::File::create(path).unwrap());
    out.write_all(
        b"$timescale 1ps $end\n$scope module tb $end\n$var wire 1 ! clk $end\n\
$scope module rx $end\n$var wire 1 ! aclk $end\n$var wire 512 \" tdata [511:0] $end\n\
$var wire 64 # tkeep [63:0] $end\n$var wire 1 $ tvalid $end\n$var wire 1 % tready $end\n\
$var wire 1 & tlast $end\n$upscope $end\n$upscope $end\n$enddefinitions $end\n\
#0\n$dumpvars\n0!\n0$\n1%\n0&\nb0 \"\nb0 #\n$end\n",
    )
    .unwrap();
    let mut frames = 0u64;
    let mut written = 0u64;
    let mut t_ps = 0u64;
    let mut line = Vec::with_capacity(4096);
    let mut psn = 0u32;
    while written < min_bytes {
        let mut b = PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            Opcode::RC_WRITE_ONLY,
            0x12,
            psn,
        );
        b.ext.reth.dma_len = 64;
        let frame = b.build(&[psn as u8; 64 + 13]);
        psn = psn.wrapping_add(1) & 0xff_ffff;
        let beats = frame.len().div_ceil(WIDTH_BYTES);
        for k in 0..beats {
            line.clear();
            // Rising edge: the beat's values change at the edge, sampled at
            // the next one.
            t_ps += 2000;
            line.extend_from_slice(format!("#{t_ps}\n1!\n").as_bytes());
            let mut data = [0u8; WIDTH_BYTES];
            let chunk = &frame[k * WIDTH_BYTES..((k + 1) * WIDTH_BYTES).min(frame.len())];
            data[..chunk.len()].copy_from_slice(chunk);
            bits(&mut line, &data);
            line.extend_from_slice(b" \"\n");
            if k == 0 {
                line.extend_from_slice(b"1$\n");
            }
            let last = k + 1 == beats;
            if last {
                let mut keep = [0u8; WIDTH_BYTES];
                let n = chunk.len();
                for i in 0..n {
                    keep[i / 8] |= 1 << (i % 8);
                }
                line.push(b'b');
                for byte in keep[..8].iter().rev() {
                    for j in (0..8).rev() {
                        line.push(if byte >> j & 1 == 1 { b'1' } else { b'0' });
                    }
                }
                line.extend_from_slice(b" #\n1&\n");
            } else if k == 0 {
                line.extend_from_slice(b"0&\n");
            }
            t_ps += 2000;
            line.extend_from_slice(format!("#{t_ps}\n0!\n").as_bytes());
            out.write_all(&line).unwrap();
            written += line.len() as u64;
        }
        // The edge that takes the last beat, with tvalid dropping at it.
        t_ps += 2000;
        let tail = format!("#{t_ps}\n1!\n0$\n0&\n");
        t_ps += 2000;
        let tail = format!("{tail}#{t_ps}\n0!\n");
        out.write_all(tail.as_bytes()).unwrap();
        written += tail.len() as u64;
        frames += 1;
    }
    out.write_all(format!("#{}\n", t_ps + 2000).as_bytes())
        .unwrap();
    out.flush().unwrap();
    frames
}

fn main() {
    let mb: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1100);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("axis-{mb}MB.vcd"));
    let t = Instant::now();
    let frames = write_vcd(&path, mb * 1_000_000);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "waveform: {} ({:.2} GB of VCD, {frames} frames, written in {:.1} s)",
        path.display(),
        size as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let mut r = CaptureReader::open(&path).unwrap();
    let hierarchy_s = t.elapsed().as_secs_f64();
    let w = r.wave().unwrap();
    println!(
        "hierarchy and interfaces (first screen): {:.1} ms ({} interface: {})",
        hierarchy_s * 1e3,
        w.interfaces().len(),
        w.interfaces()[0].name
    );
    let mut n = 0u64;
    let mut bytes = 0u64;
    let mut first_s = 0.0;
    while let Some(f) = r.next_frame().unwrap() {
        if n == 0 {
            first_s = t.elapsed().as_secs_f64();
        }
        n += 1;
        bytes += f.data.len() as u64;
    }
    let total_s = t.elapsed().as_secs_f64();
    assert_eq!(n, frames, "every frame decoded");
    println!("first frame: {:.1} ms", first_s * 1e3);
    println!(
        "decoded {n} frames ({:.1} MB) in {total_s:.2} s: {:.2} M frames/s, {:.0} MB/s of VCD",
        bytes as f64 / 1e6,
        n as f64 / total_s / 1e6,
        size as f64 / total_s / 1e6
    );
    signals(&path);
    std::fs::remove_file(&path).unwrap();
}

/// The process's resident memory (kB), from /proc.
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The signals view's costs: the browser's hierarchy, one signal loaded.
fn signals(path: &Path) {
    use rocescope_replay::wave::signals;
    let t = Instant::now();
    let h = signals::hierarchy(path).unwrap();
    println!(
        "signal browser's hierarchy: {:.1} ms ({} signals)",
        t.elapsed().as_secs_f64() * 1e3,
        h.signals.len()
    );
    for name in ["tb.rx.tvalid", "tb.rx.tdata"] {
        let before = rss_kb();
        let t = Instant::now();
        let loaded = signals::load(path, &[name.to_owned()], signals::MAX_CHANGES).unwrap();
        let s = &loaded[0];
        let secs = t.elapsed().as_secs_f64();
        let held = (s.changes.capacity() * std::mem::size_of::<signals::Change>()) as f64 / 1e6;
        println!(
            "loaded {name} ({} bits): {secs:.2} s, {} changes kept, {} past the cap counted, \
             {held:.1} MB held ({} bytes a change; RSS +{:.1} MB)",
            s.width_bits,
            s.changes.len(),
            s.dropped,
            std::mem::size_of::<signals::Change>(),
            rss_kb().saturating_sub(before) as f64 / 1e3
        );
    }
}
