//! Waveforms from a real simulator: Icarus Verilog runs a small testbench
//! (generated here, into a temp folder) that streams frames built by
//! `PacketBuilder` over AXI4-Stream, with idle cycles and pseudo-random
//! backpressure, and dumps VCD (and FST with `vvp -fst`). The testbench logs
//! the time of each frame's first transfer itself; rocescope must give back
//! the same bytes at the same times, through the reader, `rocescope decode`,
//! `--to frames.pcapng` and the store (`info`, `stats`).
//!
//! Skipped without iverilog unless `ROCESCOPE_REQUIRE_IVERILOG=1`.

mod support;
use support::rocescope_outcome as rocescope;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocescope_decoders::{Opcode, PacketBuilder};
use rocescope_replay::wave::WaveOptions;
use rocescope_replay::{CaptureFormat, CaptureReader, PcapngWriter};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fn iverilog_available() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::IVERILOG])
}

/// How a stream's signals are named.
#[derive(Clone, Copy)]
enum Naming {
    /// A module of its own: `tb.uN.tdata`, its clock port `aclk`.
    Scope,
    /// Signals sharing a prefix (`m_axis_rx_tdata`), the clock taken from
    /// the scope above (`tb.clk`).
    Prefix(&'static str),
}

struct Stream {
    naming: Naming,
    width_bits: u32,
    tkeep: bool,
    tready: bool,
    seed: u32,
    frames: Vec<Vec<u8>>,
}

impl Stream {
    /// A stream named by its scope, with TKEEP and TREADY.
    fn scoped(width_bits: u32, seed: u32, frames: Vec<Vec<u8>>) -> Stream {
        Stream {
            naming: Naming::Scope,
            width_bits,
            tkeep: true,
            tready: true,
            seed,
            frames,
        }
    }

    fn width_bytes(&self) -> usize {
        self.width_bits as usize / 8
    }

    /// The frames as the bus carries them: without tkeep, the last beat's
    /// unused bytes (zeros) are part of the frame.
    fn expected(&self) -> Vec<Vec<u8>> {
        let nb = self.width_bytes();
        self.frames
            .iter()
            .map(|f| {
                let mut f = f.clone();
                if !self.tkeep {
                    f.resize(f.len().div_ceil(nb) * nb, 0);
                }
                f
            })
            .collect()
    }

    fn prefix(&self) -> &'static str {
        match self.naming {
            Naming::Scope => "",
            Naming::Prefix(p) => p,
        }
    }

    /// `$readmemh` words {idle[7:0], last, keep[NB-1:0], data[W-1:0]}, one a
    /// beat; idle cycles before some frames and inside some.
    fn mem(&self) -> String {
        let nb = self.width_bytes();
        let total_bits = 8 + 1 + nb + nb * 8;
        let mut out = String::new();
        let mut rng = self.seed;
        for f in &self.frames {
            let beats = f.len().div_ceil(nb).max(1);
            for b in 0..beats {
                rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let idle = if b == 0 {
                    (rng >> 16) % 4
                } else {
                    u32::from((rng >> 16).is_multiple_of(5))
                };
                let chunk = &f[(b * nb).min(f.len())..((b + 1) * nb).min(f.len())];
                let mut bits = vec![false; total_bits];
                for (i, byte) in chunk.iter().enumerate() {
                    for k in 0..8 {
                        bits[i * 8 + k] = byte >> k & 1 == 1;
                    }
                }
                for i in 0..chunk.len() {
                    bits[nb * 8 + i] = true;
                }
                bits[nb * 8 + nb] = b + 1 == beats;
                for k in 0..8 {
                    bits[nb * 9 + 1 + k] = idle >> k & 1 == 1;
                }
                let digits = total_bits.div_ceil(4);
                for d in (0..digits).rev() {
                    let mut v = 0u32;
                    for k in 0..4 {
                        if bits.get(d * 4 + k).copied().unwrap_or(false) {
                            v |= 1 << k;
                        }
                    }
                    out.push(char::from_digit(v, 16).unwrap_or('0'));
                }
                out.push('\n');
            }
        }
        out
    }

    fn module(&self, i: usize) -> String {
        let p = self.prefix();
        let (ports, clk) = match self.naming {
            Naming::Scope => ("input aclk", "aclk"),
            Naming::Prefix(_) => ("", "tb.clk"),
        };
        let rdy = if self.tready {
            format!("{p}tready")
        } else {
            "1'b1".to_owned()
        };
        let w = self.width_bits;
        let nb = self.width_bytes();
        let n: usize = self
            .frames
            .iter()
            .map(|f| f.len().div_ceil(nb).max(1))
            .sum();
        let mut m = String::new();
        let _ = writeln!(m, "module gen{i}({ports});");
        let _ = writeln!(
            m,
            "  localparam W = {w}; localparam NB = {nb}; localparam N = {n};"
        );
        let _ = writeln!(m, "  reg [W-1:0] {p}tdata = 0;");
        let _ = writeln!(m, "  reg {p}tvalid = 0;\n  reg {p}tlast = 0;");
        if self.tkeep {
            let _ = writeln!(m, "  reg [NB-1:0] {p}tkeep = 0;");
        }
        if self.tready {
            let _ = writeln!(m, "  reg {p}tready = 0;");
        }
        let _ = writeln!(
            m,
            "  reg [W+NB+8:0] mem [0:N-1];
  reg [W+NB+8:0] w;
  integer i = 0; integer waited = 0; integer log;
  reg first = 1; reg done = 0;
  reg [31:0] lfsr = 32'h{seed:08x};
  initial begin $readmemh(\"s{i}.mem\", mem); log = $fopen(\"s{i}.log\", \"w\"); end
  always @(posedge {clk}) begin
    lfsr <= {{lfsr[30:0], lfsr[31] ^ lfsr[21] ^ lfsr[1] ^ lfsr[0]}};",
            seed = self.seed | 1
        );
        if self.tready {
            let _ = writeln!(m, "    {p}tready <= lfsr[3] | lfsr[9];");
        }
        let keep = if self.tkeep {
            format!("{p}tkeep <= w[W+NB-1:W]; ")
        } else {
            String::new()
        };
        let _ = writeln!(
            m,
            "    if ({p}tvalid && {rdy}) begin
      if (first) $fdisplay(log, \"%0d\", $time);
      first <= {p}tlast;
    end
    if (!{p}tvalid || {rdy}) begin
      if (i < N) begin
        w = mem[i];
        if (waited < w[W+NB+8:W+NB+1]) begin waited <= waited + 1; {p}tvalid <= 0; end
        else begin
          waited <= 0; {p}tdata <= w[W-1:0]; {keep}{p}tlast <= w[W+NB]; {p}tvalid <= 1; i <= i + 1;
        end
      end else begin {p}tvalid <= 0; done <= 1; end
    end
  end
endmodule"
        );
        m
    }
}

/// A simulation's outputs.
struct Sim {
    dir: PathBuf,
    wave: PathBuf,
    /// Per stream, the logged first-transfer times in ns.
    times_ns: Vec<Vec<u64>>,
}

/// Writes the testbench and runs it; `fst` dumps FST instead of VCD.
fn simulate(name: &str, streams: &[Stream], fst: bool) -> Sim {
    let dir = support::out_dir("wave-iverilog", &format!("{name}-{}", u8::from(fst)));
    let mut v = String::from("`timescale 1ns/1ps\n");
    for (i, s) in streams.iter().enumerate() {
        v.push_str(&s.module(i));
        v.push('\n');
        std::fs::write(dir.join(format!("s{i}.mem")), s.mem()).expect("mem file");
    }
    v.push_str("module tb;\n  reg clk = 0;\n  always #2 clk = ~clk;\n");
    for (i, s) in streams.iter().enumerate() {
        match s.naming {
            Naming::Scope => {
                let _ = writeln!(v, "  gen{i} u{i}(.aclk(clk));");
            }
            Naming::Prefix(_) => {
                let _ = writeln!(v, "  gen{i} u{i}();");
            }
        }
    }
    let done = (0..streams.len())
        .map(|i| format!("u{i}.done"))
        .collect::<Vec<_>>()
        .join(" && ");
    let _ = writeln!(
        v,
        "  reg [8*256-1:0] dump;
  initial begin
    if (!$value$plusargs(\"dump=%s\", dump)) dump = \"wave.vcd\";
    $dumpfile(dump); $dumpvars(0, tb);
  end
  always @(posedge clk) if ({done}) begin #7 $finish; end
  initial #2000000 $finish;
endmodule"
    );
    std::fs::write(dir.join("tb.v"), v).expect("tb.v");
    rocescope_testkit::run_ok(
        Command::new("iverilog")
            .current_dir(&dir)
            .args(["-o", "sim.vvp", "tb.v"]),
    );
    let wave = dir.join(if fst { "wave.fst" } else { "wave.vcd" });
    let mut cmd = Command::new("vvp");
    cmd.current_dir(&dir).arg("-n").arg("sim.vvp");
    if fst {
        cmd.arg("-fst");
    }
    cmd.arg(format!("+dump={}", wave.display()));
    let out = cmd.output().expect("vvp runs");
    assert!(
        out.status.success() && wave.exists(),
        "vvp: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let times_ns = (0..streams.len())
        .map(|i| {
            std::fs::read_to_string(dir.join(format!("s{i}.log")))
                .expect("log")
                .lines()
                .map(|l| l.trim().parse::<u64>().expect("a time"))
                .collect()
        })
        .collect();
    Sim {
        dir,
        wave,
        times_ns,
    }
}

/// An RC exchange, one WRITE Only per PSN with its ACK, payloads of sizes
/// that leave the last beat partly filled.
fn rc_frames(count: u32, qp: u32, psn0: u32) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for k in 0..count {
        let psn = psn0 + k;
        let mut w = PacketBuilder::rocev2_ipv4(A, B, Opcode::RC_WRITE_ONLY, qp, psn);
        w.ext.reth.va = 0x7f00_0000_0000 + u64::from(k) * 4096;
        w.ext.reth.rkey = 0x2d5;
        let len = (37 * k as usize + 3) % 300;
        w.ext.reth.dma_len = len as u32;
        let payload: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(13) ^ k as u8)
            .collect();
        out.push(w.build(&payload));
        let mut a = PacketBuilder::rocev2_ipv4(B, A, Opcode::RC_ACK, qp + 1, psn);
        a.ext.aeth.syndrome = 0x1f;
        a.ext.aeth.msn = k;
        out.push(a.build(&[]));
    }
    out
}

/// Every frame of a file through the capture reader: (ts_ns, port, bytes).
/// A frame read back: (ts_ns, port, bytes).
type Got = (u64, u8, Vec<u8>);

fn read_all(path: &Path, opts: &WaveOptions) -> (Vec<Got>, Option<String>) {
    let mut r = CaptureReader::open_with(path, opts).expect("opens");
    let mut v = Vec::new();
    loop {
        match r.next_frame() {
            Ok(Some(f)) => v.push((f.ts_ns, f.port.expect("a port"), f.data.to_vec())),
            Ok(None) => return (v, None),
            Err(e) => return (v, Some(e.to_string())),
        }
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn a_512_bit_stream_with_backpressure_in_vcd_and_fst() {
    if !iverilog_available() {
        return;
    }
    let stream = Stream::scoped(512, 0x1234_5678, rc_frames(12, 0x12, 100));
    let expected = stream.expected();
    for fst in [false, true] {
        let sim = simulate("w512", std::slice::from_ref(&stream), fst);
        let times = &sim.times_ns[0];
        assert_eq!(
            times.len(),
            expected.len(),
            "the testbench sent every frame"
        );
        let r = CaptureReader::open(&sim.wave).expect("opens");
        assert!(matches!(r.format(), CaptureFormat::Wave(_)));
        let w = r.wave().expect("a waveform");
        assert_eq!(w.interfaces().len(), 1);
        assert_eq!(w.interfaces()[0].name, "tb.u0");
        assert_eq!(w.interfaces()[0].width_bits, 512);
        assert_eq!(w.interfaces()[0].clock_name, "tb.u0.aclk");
        drop(r);
        let (frames, err) = read_all(&sim.wave, &WaveOptions::default());
        assert_eq!(err, None);
        assert_eq!(frames.len(), expected.len());
        for (k, (got, want)) in frames.iter().zip(&expected).enumerate() {
            assert_eq!(got.2, *want, "frame {k} bytes (fst: {fst})");
            assert_eq!(got.0, times[k], "frame {k} first-beat time (fst: {fst})");
            assert_eq!(got.1, 0);
        }

        // The same frames as a pcapng with the testbench's times decode to
        // the same JSON lines, field for field.
        let reference = sim.dir.join("reference.pcapng");
        let mut wr =
            PcapngWriter::new(std::fs::File::create(&reference).expect("create")).expect("writer");
        for (f, &t) in expected.iter().zip(times) {
            wr.write_frame(t, 0, None, f.len() as u32, f)
                .expect("write");
        }
        wr.finish().expect("finish");
        let (ok, want_jsonl, _) = rocescope(&["decode", s(&reference), "--format", "jsonl"]);
        assert!(ok);
        let (ok, got_jsonl, stderr) = rocescope(&["decode", s(&sim.wave), "--format", "jsonl"]);
        assert!(ok, "{stderr}");
        assert_eq!(got_jsonl, want_jsonl);
        assert!(got_jsonl.contains("\"infiniband.bth.psn\":111"));
        assert!(
            stderr.contains("port 0: AXI4-Stream tb.u0 (512-bit tdata"),
            "{stderr}"
        );

        // --to writes what Wireshark would open; it decodes the same.
        let out = sim.dir.join("frames.pcapng");
        let (ok, stdout, stderr) = rocescope(&["decode", s(&sim.wave), "--to", s(&out)]);
        assert!(ok, "{stderr}");
        assert!(stdout.contains("24 frames written"), "{stdout}");
        let (_, again, _) = rocescope(&["decode", s(&out), "--format", "jsonl"]);
        assert_eq!(again, want_jsonl);
        // Wireshark names the interface after the waveform's (when tshark is here).
        if let Ok(t) = Command::new("tshark")
            .args([
                "-r",
                s(&out),
                "-T",
                "fields",
                "-e",
                "frame.interface_description",
            ])
            .output()
        {
            let names = String::from_utf8_lossy(&t.stdout);
            assert!(
                names.lines().count() == 24
                    && names
                        .lines()
                        .all(|l| l.starts_with("AXI4-Stream tb.u0 (512-bit")),
                "{names}"
            );
        }

        // Alignment: a capture of the same traffic on another clock (and
        // header-only for every other frame, as the card's sniffer cuts
        // them), with one frame the waveform lacks.
        let capture = sim.dir.join("capture.pcapng");
        let shift_ns = 1_700_000_000_123_456_789u64;
        let mut wr =
            PcapngWriter::new(std::fs::File::create(&capture).expect("create")).expect("writer");
        for (k, (f, &t)) in expected.iter().zip(times).enumerate() {
            let keep = if k % 2 == 0 { f.len() } else { f.len().min(64) };
            wr.write_frame(t + shift_ns, 0, None, f.len() as u32, &f[..keep])
                .expect("write");
        }
        let stray = rc_frames(1, 0x77, 5)[0].clone();
        wr.write_frame(
            shift_ns + 10 * 1_000_000,
            0,
            None,
            stray.len() as u32,
            &stray,
        )
        .expect("write");
        wr.finish().expect("finish");
        let (ok, info, stderr) =
            rocescope(&["info", s(&capture), "--wave", s(&sim.wave), "--json"]);
        assert!(ok, "{stderr}");
        let info: serde_json::Value = serde_json::from_str(&info).expect("json");
        let a = &info["alignment"];
        assert_eq!(a["offset_ns"], shift_ns, "{a}");
        assert_eq!(a["spread_ns"], 0, "{a}");
        assert_eq!(
            (&a["matched"], &a["capture_unmatched"], &a["wave_unmatched"]),
            (&24.into(), &1.into(), &0.into()),
            "{a}"
        );
        let (ok, text, _) = rocescope(&["info", s(&capture), "--wave", s(&sim.wave)]);
        assert!(ok);
        rocescope_testkit::assert_contains(
            &text,
            &format!(
                "waveform: 24 matched, 1 capture / 0 waveform frames unmatched, waveform time 0 = capture time {} (the capture on wall-clock time; spread 0 ns)",
                rocescope_replay::text::utc_text(shift_ns)
            ),
        );

        // `stats` tells the same alignment beside its analysis.
        let (ok, stats, stderr) =
            rocescope(&["stats", s(&capture), "--wave", s(&sim.wave), "--json"]);
        assert!(ok, "{stderr}");
        let stats: serde_json::Value = serde_json::from_str(&stats).expect("json");
        assert_eq!(stats["alignment"]["offset_ns"], shift_ns, "{stats}");
        assert_eq!(stats["alignment"]["matched"], 24, "{stats}");
        assert!(
            stats["qps"].as_array().is_some_and(|q| !q.is_empty()),
            "{stats}"
        );
        // `gui --wave` aligns before its window opens: a waveform that is
        // not there fails there, naming both files.
        let missing = sim.dir.join("missing.vcd");
        let (ok, _, stderr) = rocescope(&["gui", s(&capture), "--wave", s(&missing)]);
        assert!(!ok);
        assert!(
            stderr.contains("aligning") && stderr.contains("missing.vcd"),
            "{stderr}"
        );

        // The store and the RC analysis: a QP, every WRITE acknowledged.
        let (ok, info, stderr) = rocescope(&["info", s(&sim.wave), "--json"]);
        assert!(ok, "{stderr}");
        let info: serde_json::Value = serde_json::from_str(&info).expect("json");
        assert_eq!(info["packets"], 24, "{info}");
        assert_eq!(info["interfaces"][0]["name"], "tb.u0", "{info}");
        let (ok, stats, stderr) = rocescope(&["stats", s(&sim.wave), "--json"]);
        assert!(ok, "{stderr}");
        let stats: serde_json::Value = serde_json::from_str(&stats).expect("json");
        let qp = &stats["qps"][0];
        assert_eq!(
            (
                &qp["packets"],
                &qp["requests"],
                &qp["next_psn"],
                &qp["state_at_end"]
            ),
            (&24.into(), &12.into(), &112.into(), &"idle".into()),
            "{stats}"
        );
        assert_eq!(qp["counters"]["acks"], 12, "{stats}");
        rocescope_testkit::remove_unless_keep(&sim.dir);
    }
}

#[test]
fn two_narrow_streams_one_without_tkeep_or_tready() {
    if !iverilog_available() {
        return;
    }
    let streams = [
        Stream {
            naming: Naming::Prefix("m_axis_rx_"),
            width_bits: 64,
            tkeep: true,
            tready: true,
            seed: 0xdead_beef,
            frames: rc_frames(5, 0x20, 7),
        },
        Stream {
            naming: Naming::Scope,
            width_bits: 64,
            tkeep: false,
            tready: false,
            seed: 0x0bad_cafe,
            frames: rc_frames(4, 0x40, 900),
        },
    ];
    let sim = simulate("two", &streams, false);
    let (frames, err) = read_all(&sim.wave, &WaveOptions::default());
    assert_eq!(err, None);
    let r = CaptureReader::open(&sim.wave).expect("opens");
    let names: Vec<String> = r
        .wave()
        .expect("wave")
        .interfaces()
        .iter()
        .map(|i| format!("{} {}", i.name, i.clock_name))
        .collect();
    assert_eq!(names, ["tb.u0.m_axis_rx tb.clk", "tb.u1 tb.u1.aclk"]);
    drop(r);
    // Frames in time order across the ports, each port's in its own order.
    assert!(
        frames
            .windows(2)
            .all(|w| (w[0].0, w[0].1) <= (w[1].0, w[1].1))
    );
    for (port, stream) in streams.iter().enumerate() {
        let mine: Vec<&Got> = frames.iter().filter(|f| usize::from(f.1) == port).collect();
        let want = stream.expected();
        assert_eq!(mine.len(), want.len(), "port {port}");
        for (k, f) in mine.iter().enumerate() {
            assert_eq!(f.2, want[k], "port {port} frame {k}");
            assert_eq!(f.0, sim.times_ns[port][k], "port {port} frame {k} time");
        }
    }
    // --axis picks one interface, by its end; a wrong one says what there is.
    let (only, _) = read_all(
        &sim.wave,
        &WaveOptions {
            axis: Some("m_axis_rx".into()),
            ..WaveOptions::default()
        },
    );
    assert_eq!(only.len(), streams[0].frames.len());
    let (ok, _, stderr) = rocescope(&["decode", s(&sim.wave), "--axis", "nope"]);
    assert!(!ok);
    assert!(
        stderr.contains("no AXI4-Stream interface \"nope\"")
            && stderr.contains("tb.u1")
            && stderr.matches(s(&sim.wave)).count() == 1,
        "{stderr}"
    );
    // A capture of the same frames 5 µs later: the offset in ns. (The
    // README's commands run as printed in app/tests/readme_files.rs.)
    let capture = sim.dir.join("capture.pcapng");
    let mut wr =
        PcapngWriter::new(std::fs::File::create(&capture).expect("create")).expect("writer");
    for f in &frames {
        wr.write_frame(f.0 + 5_000, 0, None, f.2.len() as u32, &f.2)
            .expect("write");
    }
    wr.finish().expect("finish");
    for cmd in ["info", "stats"] {
        let (ok, stdout, stderr) = rocescope(&[cmd, s(&capture), "--wave", s(&sim.wave)]);
        assert!(ok, "{stderr}");
        assert!(
            stdout.contains("capture = waveform +5000 ns (spread 0 ns)"),
            "{cmd}: {stdout}"
        );
    }

    // --clock overrides the clock found (here with the same clock by name).
    let (ok, text, stderr) = rocescope(&["decode", s(&sim.wave), "--clock", "tb.clk"]);
    assert!(ok, "{stderr}");
    assert_eq!(text.lines().count(), frames.len());
    rocescope_testkit::remove_unless_keep(&sim.dir);
}

#[test]
fn a_cut_waveform_keeps_every_whole_frame_and_says_where() {
    if !iverilog_available() {
        return;
    }
    let stream = Stream::scoped(128, 0x5eed, rc_frames(10, 0x12, 0));
    let sim = simulate("cut", std::slice::from_ref(&stream), false);
    let bytes = std::fs::read(&sim.wave).expect("vcd");
    // Cut in the middle of a line, 60 % of the way in.
    let mut at = bytes.len() * 6 / 10;
    while bytes[at] == b'\n' || bytes[at - 1] == b'\n' {
        at += 1;
    }
    let cut = sim.dir.join("cut.vcd");
    std::fs::write(&cut, &bytes[..at]).expect("write");
    let (frames, err) = read_all(&cut, &WaveOptions::default());
    let want = stream.expected();
    assert!(
        !frames.is_empty() && frames.len() < want.len(),
        "{}",
        frames.len()
    );
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(f.2, want[k], "frame {k}");
        assert_eq!(f.0, sim.times_ns[0][k], "frame {k} time");
    }
    let err = err.expect("a cut waveform is an error after its whole frames");
    assert!(
        err.contains(s(&cut)) && err.contains("cut short at ") && err.contains(" ns"),
        "names the file and time: {err}"
    );
    let (ok, text, stderr) = rocescope(&["decode", s(&cut)]);
    assert!(!ok, "a cut waveform fails");
    assert_eq!(
        text.lines().count(),
        frames.len(),
        "every whole frame printed"
    );
    assert!(stderr.contains(&err), "{stderr}");
    // The workbench's store keeps the frames and shows the error; `info`
    // and `stats` tell what was read, then fail with it.
    let (ok, info, stderr) = rocescope(&["info", s(&cut), "--json"]);
    assert!(!ok && stderr.contains(&err), "{stderr}");
    let info: serde_json::Value = serde_json::from_str(&info).expect("json");
    assert_eq!(info["packets"], frames.len(), "{info}");
    assert!(
        info["error"]
            .as_str()
            .is_some_and(|e| e.contains("cut short")),
        "{info}"
    );
    let (ok, stats, stderr) = rocescope(&["stats", s(&cut), "--json"]);
    assert!(!ok && stderr.contains(&err), "{stderr}");
    let stats: serde_json::Value = serde_json::from_str(&stats).expect("json");
    assert_eq!(stats["qps"][0]["packets"], frames.len(), "{stats}");
    assert!(
        stats["error"]
            .as_str()
            .is_some_and(|e| e.contains("cut short")),
        "{stats}"
    );
    rocescope_testkit::remove_unless_keep(&sim.dir);
}

/// The waveform fuzz target's valid seeds (`decoders/fuzz/corpus/wave/`):
/// a small Icarus VCD and FST of one 64-bit stream with backpressure. The
/// committed files read back as the frames they were made from (Icarus
/// writes a date into a VCD, so they are checked by content, not bytes);
/// `ROCESCOPE_WRITE_WAVE_SEEDS=1` writes them again.
#[test]
fn the_wave_fuzz_seeds_are_icarus_waveforms_of_known_frames() {
    if !iverilog_available() {
        return;
    }
    let stream = Stream::scoped(64, 0x5eed_0049, rc_frames(2, 0x12, 100));
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../decoders/fuzz/corpus/wave");
    for fst in [false, true] {
        let name = if fst { "icarus.fst" } else { "icarus.vcd" };
        let seed = corpus.join(name);
        if std::env::var_os("ROCESCOPE_WRITE_WAVE_SEEDS").is_some() {
            let sim = simulate("seeds", std::slice::from_ref(&stream), fst);
            std::fs::create_dir_all(&corpus).expect("corpus folder");
            std::fs::copy(&sim.wave, &seed).expect("seed written");
            let _ = std::fs::remove_dir_all(&sim.dir);
        }
        let (frames, err) = read_all(&seed, &WaveOptions::default());
        assert_eq!(err, None, "{name}");
        let got: Vec<Vec<u8>> = frames.into_iter().map(|f| f.2).collect();
        assert_eq!(got, stream.expected(), "{name}");
        let len = std::fs::metadata(&seed).expect("seed").len();
        assert!(
            len < 16 * 1024,
            "{name} is {len} bytes: keep the seeds small"
        );
    }
}
