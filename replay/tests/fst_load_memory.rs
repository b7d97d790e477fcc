//! A load of an FST signal holds one of its blocks at a time, not the whole
//! signal: an FST compresses a wide signal's changes far below their width
//! (a 65,536-bit signal changing 4,000 times, in eight blocks: some 60 KB of
//! file, 32 MB of values), and building the signal whole before keeping its
//! first changes, as wellen's own load does, held all of them (the peak grew
//! by 42 MB; a block is 4 MB). Alone in its test binary, so that the
//! process's peak is this test's. Icarus Verilog writes the FST; skipped
//! without it unless `ROCESCOPE_REQUIRE_IVERILOG` is set.

use rocescope_replay::wave::SignalFile;

#[test]
fn a_wide_fst_signal_loads_within_what_it_keeps() {
    if !rocescope_testkit::available(&[rocescope_testkit::IVERILOG]) {
        return;
    }
    let dir = rocescope_testkit::build_tmp().join("fst-load-memory");
    std::fs::create_dir_all(&dir).expect("folder");
    std::fs::write(
        dir.join("tb.v"),
        "module tb;\n  reg [65535:0] w = 0;\n  integer i;\n  initial begin\n\
         \x20   $dumpfile(\"w.fst\");\n    $dumpvars(0, tb);\n\
         \x20   for (i = 0; i < 4000; i = i + 1) begin\n\
         \x20     #1 w = i[0] ? 0 : {i, 32'd1};\n\
         \x20     if (i % 500 == 499) $dumpflush;\n\
         \x20   end\n\
         \x20   $finish;\n  end\nendmodule\n",
    )
    .expect("testbench");
    let run = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{program}: {out:?}");
    };
    run("iverilog", &["-o", "tb.vvp", "tb.v"]);
    run("vvp", &["-n", "tb.vvp", "-fst"]);
    let fst = dir.join("w.fst");
    let file = SignalFile::open(&fst, &Default::default()).expect("opens");
    let before_kib = rocescope_testkit::proc_status_kib("VmHWM:");
    let loaded = file.load(&["tb.w".to_owned()], 100).expect("loads");
    let grew_kib = rocescope_testkit::proc_status_kib("VmHWM:").saturating_sub(before_kib);
    let w = &loaded[0];
    assert_eq!((w.changes.len(), w.dropped), (100, 3_901), "{w:?}");
    assert_eq!(w.changes[3].value, (2 << 32) | 1, "{:?}", w.changes[3]);
    // One block's values (4 MB) and what is kept, not all 32 MB.
    assert!(grew_kib < 8 << 10, "the peak grew by {grew_kib} KiB");
}
