//! The bench waveform: a 512-bit AXI4-Stream (tkeep, tready, a 250 MHz
//! clock, data changing at the edges as a simulator dumps it) carrying
//! RoCE WRITEs, as VCD (`benches/wave.rs`, `benches/signals.rs`).

use std::io::{BufWriter, Write};
use std::path::Path;

use rocescope_decoders::{Opcode, PacketBuilder};

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
pub fn write_vcd(path: &Path, min_bytes: u64) -> u64 {
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
