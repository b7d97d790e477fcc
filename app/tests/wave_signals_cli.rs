//! `rocescope signals`: a waveform's signals without a workbench, on the
//! committed Icarus Verilog VCD and FST (the fuzz seeds) and ChipScoPy's
//! ILA capture; the README's commands word for word.

mod support;

use std::path::{Path, PathBuf};

fn seed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../decoders/fuzz/corpus/wave")
        .join(name)
}

fn rocescope(dir: &Path, args: &[&str]) -> (bool, String, String) {
    support::outcome(support::bin().current_dir(dir).args(args))
}

/// `rocescope signals FILE ARGS` in `dir`.
fn signals(dir: &Path, file: &Path, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["signals", file.to_str().expect("utf-8")];
    all.extend(args);
    rocescope(dir, &all)
}

fn temp_dir(name: &str) -> PathBuf {
    support::out_dir("wave-signals-cli", name)
}

#[test]
fn the_readme_signals_commands_work_as_printed() {
    let dir = temp_dir("readme");
    std::fs::copy(seed("icarus.vcd"), dir.join("sim_dump.vcd")).expect("copy");
    let readme = support::user_docs();
    let mut ran = 0;
    for line in readme.lines() {
        let Some(cmd) = line.strip_prefix("rocescope signals ") else {
            continue;
        };
        // The README's sim_dump.vcd (the shipped testbench's) has its
        // stream at tb.u; this test's seed, from an older bench, at tb.u0
        // (readme_files.rs runs the same lines on the README's own file).
        let words: Vec<String> = support::command_words(cmd)
            .map(|w| w.replace("tb.u.", "tb.u0."))
            .collect();
        let mut args = vec!["signals"];
        args.extend(words.iter().map(String::as_str));
        let (ok, stdout, stderr) = rocescope(&dir, &args);
        assert!(ok && !stdout.is_empty(), "README: {line}: {stderr}");
        if cmd.contains("--list") {
            assert!(stdout.lines().any(|l| l == "tb.u0.tdata 64"), "{stdout}");
            assert!(stdout.lines().any(|l| l == "tb.clk 1"), "{stdout}");
        } else {
            // The first load reads the body, the second comes from memory.
            let loads: Vec<&str> = stderr
                .lines()
                .filter(|l| l.contains(" loaded in "))
                .collect();
            assert_eq!(loads.len(), 2, "{stderr}");
            assert!(loads[0].contains("the file's body read in"), "{stderr}");
            assert!(!loads[1].contains("body"), "{stderr}");
            let csv = std::fs::read_to_string(dir.join("signals.csv")).expect("written");
            let mut lines = csv.lines();
            assert_eq!(
                lines.next(),
                Some("ts_ns,cycle,probe,probe_name,unit,module,value")
            );
            let rows: Vec<&str> = lines.collect();
            assert!(
                rows.iter().any(|r| r.contains(",tb.u0.tvalid,bin,wave,")),
                "{csv}"
            );
            assert!(
                rows.iter().any(|r| r.contains(",tb.u0.tdata,hex,wave,")),
                "{csv}"
            );
            rocescope_testkit::assert_contains(
                &stdout,
                &format!("{} rows of profiler (2 signals)", rows.len()),
            );
        }
        ran += 1;
    }
    assert_eq!(ran, 2, "the README's signals commands");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn signals_of_an_fst_an_ila_capture_and_what_is_not_there() {
    let dir = temp_dir("files");
    let out = dir.join("fst.jsonl");
    let (ok, _, stderr) = signals(
        &dir,
        &seed("icarus.fst"),
        &[
            "--show",
            "tb.u0.tlast",
            "--to",
            out.to_str().expect("utf-8"),
        ],
    );
    assert!(ok, "{stderr}");
    let rows = std::fs::read_to_string(&out).expect("jsonl");
    assert!(
        rows.lines().count() > 2 && rows.contains("\"probe_name\":\"tb.u0.tlast\""),
        "{rows}"
    );
    // An ILA capture: its probes, and its triggers and windows told.
    let (ok, stdout, stderr) = signals(&dir, &seed("chipscopy-ila.csv"), &["--list", "--json"]);
    assert!(ok, "{stderr}");
    rocescope_testkit::assert_contains(&stdout, "{\"path\":\"u/tdata\",\"width_bits\":64}");
    assert!(stderr.contains("12 ns: the ILA's trigger"), "{stderr}");
    rocescope_testkit::assert_contains(&stderr, "128 ns: a capture window starts");
    // A name the file lacks, and a file that is no waveform.
    let (ok, _, stderr) = signals(
        &dir,
        &seed("icarus.vcd"),
        &["--show", "tb.nope", "--to", out.to_str().expect("utf-8")],
    );
    assert!(!ok && stderr.contains("no signal tb.nope"), "{stderr}");
    let text = dir.join("not-a-wave.txt");
    std::fs::write(&text, "hello\n").expect("write");
    let (ok, _, stderr) = signals(&dir, &text, &["--list"]);
    assert!(!ok && stderr.contains("not a waveform"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A VCD whose 65,536-bit signal is written short (`b0`, `b1`: each change
/// held at the full width by the body pass) is not held past the budget:
/// each signal streams from the file, said, every change still loaded.
/// Under the default budget the same file is held.
#[test]
fn a_body_past_the_memory_budget_streams_every_change() {
    let dir = temp_dir("held-budget");
    let vcd = dir.join("wide.vcd");
    let mut text = String::from(
        "$timescale 1ns $end\n$scope module tb $end\n$var wire 1 ! clk $end\n\
         $var reg 65536 \" w [65535:0] $end\n$upscope $end\n$enddefinitions $end\n",
    );
    for i in 0..2_000 {
        text.push_str(&format!("#{i}\nb{} \"\n{}!\n", i % 2, i % 2));
    }
    std::fs::write(&vcd, text).expect("write");
    let out = dir.join("w.csv");
    let args = [
        "--show",
        "tb.w",
        "tb.clk",
        "--to",
        out.to_str().expect("utf-8"),
    ];
    let mut tight = args.to_vec();
    tight.extend(["--max-memory", "16MiB"]);
    let (ok, stdout, stderr) = signals(&dir, &vcd, &tight);
    assert!(ok, "{stderr}");
    rocescope_testkit::assert_contains(
        &stderr,
        "its body could not be held (holding it would take more than the 16.0 MiB it may hold: \
         each change of a vector is held at its full width, and a VCD writes a value without its \
         leading zeros); each signal read the file again",
    );
    rocescope_testkit::assert_contains(&stdout, "4000 rows of profiler (2 signals)");
    let streamed = std::fs::read_to_string(&out).expect("csv");
    let (ok, stdout, stderr) = signals(&dir, &vcd, &args);
    assert!(ok && !stderr.contains("could not be held"), "{stderr}");
    rocescope_testkit::assert_contains(&stdout, "4000 rows of profiler (2 signals)");
    assert_eq!(std::fs::read_to_string(&out).expect("csv"), streamed);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A VCD whose time goes back: the body pass stops there as the stream
/// does, each signal keeps its changes before it and says where. The pass
/// once printed a warning for each skipped step on stdout from its thread
/// while the command held stdout's lock waiting for it: it never ended.
#[test]
fn a_vcd_whose_time_goes_back_loads_the_changes_before_it() {
    let dir = temp_dir("time-back");
    let out = dir.join("back.csv");
    let mut child = support::bin()
        .current_dir(&dir)
        .args([
            "signals",
            seed("time-goes-back.vcd").to_str().expect("utf-8"),
            "--show",
            "tb.clk",
            "--to",
            out.to_str().expect("utf-8"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let started = std::time::Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("rocescope signals did not end in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    let (stdout, stderr) = (support::text(&output.stdout), support::text(&output.stderr));
    assert!(!stdout.contains("WARN"), "{stdout}");
    // A cut file: the changes before the cut written, and an error for it.
    assert!(!output.status.success(), "{stderr}");
    rocescope_testkit::assert_contains(
        &stderr,
        "unreadable past 228 ns: failed to load Vcd: [vcd] time goes back from #230000 to #5; \
         the changes before it were written",
    );
    let rows = std::fs::read_to_string(&out).expect("csv").lines().count();
    assert!(rows > 2, "the changes before it: {rows} lines");
    let _ = std::fs::remove_dir_all(&dir);
}
