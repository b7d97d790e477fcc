//! A waveform from a real simulator for the signals views' tests: Icarus
//! Verilog runs a generated testbench that streams three RoCE frames built
//! by `PacketBuilder` over a 64-bit AXI4-Stream with idle cycles, and sets
//! `bth_opcode`, `bth_psn` and `aeth_syndrome` registers to each frame's
//! values on its first beat. Made once per test process. `None` (the test
//! skips) without iverilog unless `ROCESCOPE_REQUIRE_IVERILOG=1`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use rocescope_decoders::{Opcode, PacketBuilder};

/// The frames: (opcode, PSN, syndrome, bytes).
pub(crate) fn frames() -> Vec<(u8, u32, u8, Vec<u8>)> {
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let mut w = PacketBuilder::rocev2_ipv4(a, b, Opcode::RC_WRITE_ONLY, 0x12, 100);
    w.ext.reth.dma_len = 20;
    let w0 = w.build(&[7u8; 20]);
    let mut w = PacketBuilder::rocev2_ipv4(a, b, Opcode::RC_WRITE_ONLY, 0x12, 101);
    w.ext.reth.dma_len = 20;
    let w1 = w.build(&[9u8; 20]);
    let mut n = PacketBuilder::rocev2_ipv4(b, a, Opcode::RC_ACK, 0x13, 101);
    n.ext.aeth.syndrome = 0x60;
    let nak = n.build(&[]);
    vec![
        (Opcode::RC_WRITE_ONLY.0, 100, 0, w0),
        (Opcode::RC_WRITE_ONLY.0, 101, 0, w1),
        (Opcode::RC_ACK.0, 101, 0x60, nak),
    ]
}

pub(crate) fn vcd() -> Option<PathBuf> {
    static MADE: OnceLock<Option<PathBuf>> = OnceLock::new();
    MADE.get_or_init(make).clone()
}

fn make() -> Option<PathBuf> {
    if Command::new("iverilog").arg("-V").output().is_err() {
        assert!(
            std::env::var_os("ROCESCOPE_REQUIRE_IVERILOG").is_none(),
            "iverilog is required (ROCESCOPE_REQUIRE_IVERILOG is set) but was not found"
        );
        eprintln!("skipped: iverilog not found (set ROCESCOPE_REQUIRE_IVERILOG to make this fail)");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("rocescope-signals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    let mut v = String::from(
        "`timescale 1ns/1ps
module rx(input aclk);
  reg [63:0] tdata = 0; reg [7:0] tkeep = 0; reg tvalid = 0; reg tlast = 0;
  reg [7:0] bth_opcode = 0; reg [23:0] bth_psn = 0; reg [7:0] aeth_syndrome = 0;
endmodule
module tb;
  reg clk = 0; always #2 clk = ~clk;
  rx u(.aclk(clk));
  initial begin
    $dumpfile(\"wave.vcd\"); $dumpvars(0, tb);
    repeat (3) @(posedge clk);
",
    );
    for (op, psn, syn, f) in frames() {
        for (k, chunk) in f.chunks(8).enumerate() {
            let mut data = [0u8; 8];
            data[..chunk.len()].copy_from_slice(chunk);
            let hex: String = data.iter().rev().map(|b| format!("{b:02x}")).collect();
            let keep = (1u16 << chunk.len()) - 1;
            let last = u8::from((k + 1) * 8 >= f.len());
            let _ = write!(
                v,
                "    u.tdata <= 64'h{hex}; u.tkeep <= 8'h{keep:02x}; u.tvalid <= 1; u.tlast <= {last};"
            );
            if k == 0 {
                let _ = write!(
                    v,
                    " u.bth_opcode <= 8'h{op:02x}; u.bth_psn <= 24'd{psn}; u.aeth_syndrome <= 8'h{syn:02x};"
                );
            }
            v.push_str(" @(posedge clk);\n");
        }
        v.push_str("    u.tvalid <= 0; u.tlast <= 0; repeat (4) @(posedge clk);\n");
    }
    v.push_str("    #3 $finish;\n  end\nendmodule\n");
    std::fs::write(dir.join("tb.v"), v).ok()?;
    let ok = |c: &mut Command| c.current_dir(&dir).status().is_ok_and(|s| s.success());
    assert!(
        ok(Command::new("iverilog").args(["-o", "sim.vvp", "tb.v"])),
        "iverilog failed on {}",
        dir.join("tb.v").display()
    );
    assert!(ok(Command::new("vvp").args(["-n", "sim.vvp"])), "vvp failed");
    Some(dir.join("wave.vcd"))
}

/// A copy of the waveform for one test: the saved selection is kept per
/// file, so tests running at once never see each other's.
pub(crate) fn vcd_copy(name: &str) -> Option<PathBuf> {
    let src = vcd()?;
    let dst = src.with_file_name(format!("{name}.vcd"));
    std::fs::copy(&src, &dst).ok()?;
    Some(dst)
}

/// A workbench model of the waveform, indexed.
pub(crate) fn model(path: &std::path::Path) -> rocescope_core::Model {
    use rocescope_replay::store::{RcAnalyzer, Store};
    let analysis = RcAnalyzer::default();
    let store = Store::open(
        path,
        rocescope_decoders::DecodeConfig::default(),
        Box::new(analysis.clone()),
    )
    .expect("the waveform opens as a capture");
    store.wait();
    crate::keep_test_progress_apart();
    let mut m = rocescope_core::Model::new(
        store,
        analysis,
        rocescope_core::source::SourceHandle::file("wave.vcd".into()),
    );
    m.forget_lesson_progress();
    m.tick(std::time::Instant::now());
    m
}
