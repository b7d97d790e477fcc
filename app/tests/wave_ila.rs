//! Vivado ILA captures, as ChipScoPy's own `ILAWaveform.export_waveform`
//! writes them (CSV and VCD, `tests/ila/export.py`): a continuous 64-bit
//! AXI4-Stream of RoCE frames, with idle cycles and backpressure, captured
//! in three windows (the last one partial) that start and end inside
//! frames. rocescope must give back every frame whole inside a window, at
//! its sample's time, count the ones a window's edge cut, and keep none of
//! them; through `decode`, `info`, `stats` and the signals view.
//!
//! Skipped without chipscopy (`pip install chipscopy`) unless
//! `ROCESCOPE_REQUIRE_CHIPSCOPY=1`.

mod support;
use support::rocescope_outcome as rocescope;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocescope_decoders::{Opcode, PacketBuilder};
use rocescope_replay::PcapngWriter;

const WINDOW: usize = 96;
const TRIGGERS: [usize; 3] = [10, 20, 5];
/// Samples missing from the last window.
const SHORT: usize = 20;

fn chipscopy_available() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::CHIPSCOPY])
}

/// One clock cycle of the stream.
#[derive(Clone, Copy, Default)]
struct Cycle {
    data: u64,
    keep: u8,
    valid: bool,
    last: bool,
    ready: bool,
}

/// RoCE frames: WRITEs of sizes that leave the last beat partly filled,
/// and their ACKs.
fn frames() -> Vec<Vec<u8>> {
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let mut out = Vec::new();
    for k in 0..24u32 {
        let mut w = PacketBuilder::rocev2_ipv4(a, b, Opcode::RC_WRITE_ONLY, 0x12, 500 + k);
        let len = (29 * k as usize + 5) % 140;
        w.ext.reth.dma_len = len as u32;
        let payload: Vec<u8> = (0..len).map(|i| (i as u8) ^ (k as u8)).collect();
        out.push(w.build(&payload));
        let mut ack = PacketBuilder::rocev2_ipv4(b, a, Opcode::RC_ACK, 0x13, 500 + k);
        ack.ext.aeth.syndrome = 0x1f;
        out.push(ack.build(&[]));
    }
    out
}

/// The frames as a continuous stream, and each frame's first and last
/// transfer cycle.
fn stream(frames: &[Vec<u8>]) -> (Vec<Cycle>, Vec<(usize, usize)>) {
    let mut rng = 0x49_u32;
    let mut next = move || {
        rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        rng >> 16
    };
    let mut cycles = vec![Cycle::default(); 3];
    let mut spans = Vec::new();
    for f in frames {
        for _ in 0..next() % 4 {
            cycles.push(Cycle {
                ready: true,
                ..Cycle::default()
            });
        }
        let beats = f.len().div_ceil(8);
        let mut first = None;
        for b in 0..beats {
            let chunk = &f[b * 8..((b + 1) * 8).min(f.len())];
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let beat = Cycle {
                data: u64::from_le_bytes(word),
                keep: ((1u16 << chunk.len()) - 1) as u8,
                valid: true,
                last: b + 1 == beats,
                ready: true,
            };
            // Backpressure: the beat held while tready is low.
            if next() % 5 == 0 {
                cycles.push(Cycle {
                    ready: false,
                    ..beat
                });
            }
            first.get_or_insert(cycles.len());
            cycles.push(beat);
        }
        spans.push((first.unwrap_or(0), cycles.len() - 1));
    }
    cycles.extend(std::iter::repeat_n(
        Cycle {
            ready: true,
            ..Cycle::default()
        },
        8,
    ));
    (cycles, spans)
}

/// Where each window starts in the stream: at the start; inside a frame
/// (so the window's first beats are a frame's end); on an idle cycle right
/// before a frame.
fn window_starts(cycles: &[Cycle], spans: &[(usize, usize)]) -> [usize; 3] {
    let inside = spans[9].0 + 2;
    let idle_before = spans
        .iter()
        .skip(24)
        .find(|(first, _)| !cycles[first - 1].valid)
        .map(|(first, _)| first - 1)
        .expect("a frame after an idle cycle");
    [0, inside, idle_before]
}

/// What rocescope must find: frames whole inside a window with their
/// sample, and the cut ones at starts and ends.
struct Expected {
    frames: Vec<(usize, Vec<u8>)>,
    cut_at_start: u64,
    cut_at_end: u64,
}

fn expected(frames: &[Vec<u8>], spans: &[(usize, usize)], starts: &[usize; 3]) -> Expected {
    let mut e = Expected {
        frames: Vec::new(),
        cut_at_start: 0,
        cut_at_end: 0,
    };
    for (k, &o) in starts.iter().enumerate() {
        let len = if k == 2 { WINDOW - SHORT } else { WINDOW };
        for (f, &(first, last)) in frames.iter().zip(spans) {
            if first >= o && last < o + len {
                e.frames.push((k * WINDOW + first - o, f.clone()));
            } else if first < o && last >= o {
                e.cut_at_start += 1;
            } else if first >= o && first < o + len && last >= o + len {
                e.cut_at_end += 1;
            }
        }
    }
    e
}

/// Probe names: as Vivado names nets, or an ILA's generic ones.
fn probe_names(generic: bool) -> [String; 5] {
    let net = |s: &str| format!("design_1_i/cmac_usplus_0/rx_axis_{s}");
    if generic {
        ["probe0", "probe1", "probe2", "probe3", "probe4"].map(String::from)
    } else {
        ["tdata", "tkeep", "tvalid", "tlast", "tready"].map(net)
    }
}

/// Writes the capture with ChipScoPy: `name.csv` and `name.vcd` in `dir`.
fn export(dir: &Path, name: &str, generic: bool) -> (PathBuf, PathBuf, Expected) {
    let frames = frames();
    let (cycles, spans) = stream(&frames);
    let starts = window_starts(&cycles, &spans);
    let want = expected(&frames, &spans, &starts);
    let names = probe_names(generic);
    let mut samples = String::new();
    for (k, &o) in starts.iter().enumerate() {
        let len = if k == 2 { WINDOW - SHORT } else { WINDOW };
        for c in &cycles[o..o + len] {
            let _ = write!(
                samples,
                "{}[\"{:016x}\",\"{:02x}\",\"{}\",\"{}\",\"{}\"]",
                if samples.is_empty() { "" } else { "," },
                c.data,
                c.keep,
                u8::from(c.valid),
                u8::from(c.last),
                u8::from(c.ready)
            );
        }
    }
    let (csv, vcd) = (
        dir.join(format!("{name}.csv")),
        dir.join(format!("{name}.vcd")),
    );
    let spec = format!(
        "{{\"probes\":[[\"{}\",64],[\"{}\",8],[\"{}\",1],[\"{}\",1],[\"{}\",1]],\"window_size\":{WINDOW},\"trigger_position\":[{},{},{}],\"samples\":[{samples}],\"csv\":{:?},\"vcd\":{:?}}}",
        names[0],
        names[1],
        names[2],
        names[3],
        names[4],
        TRIGGERS[0],
        TRIGGERS[1],
        TRIGGERS[2],
        csv.display().to_string(),
        vcd.display().to_string(),
    );
    let spec_path = dir.join(format!("{name}.json"));
    std::fs::write(&spec_path, spec).expect("spec");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ila/export.py");
    rocescope_testkit::run_ok(Command::new("python3").arg(&script).arg(&spec_path));
    (csv, vcd, want)
}

fn temp_dir(name: &str) -> PathBuf {
    support::out_dir("wave-ila", name)
}

/// Test `test`'s folder and ChipScoPy's export of `name` in it (`export`),
/// or `None` without chipscopy: the test is skipped.
fn exported(
    test: &str,
    name: &str,
    generic: bool,
) -> Option<(PathBuf, PathBuf, PathBuf, Expected)> {
    if !chipscopy_available() {
        return None;
    }
    let dir = temp_dir(test);
    let (csv, vcd, want) = export(&dir, name, generic);
    Some((dir, csv, vcd, want))
}

/// The times of the signals view's markers of `kind`.
fn markers(
    signals: &rocescope_core::signals::Signals,
    kind: rocescope_replay::wave::signals::MarkerKind,
) -> Vec<u64> {
    signals
        .markers()
        .iter()
        .filter(|m| m.kind == kind)
        .map(|m| m.ts_ns)
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The expected frames as a pcapng at `period_ps` a sample, decoded to
/// JSON lines: what `decode --format jsonl` of the capture must print.
fn reference_jsonl(dir: &Path, want: &Expected, hz: u64) -> String {
    let path = dir.join(format!("reference-{hz}.pcapng"));
    let mut w = PcapngWriter::new(std::fs::File::create(&path).expect("create")).expect("writer");
    for (sample, f) in &want.frames {
        let ts_ns = (*sample as u128 * 1_000_000_000 / u128::from(hz)) as u64;
        w.write_frame(ts_ns, 0, None, f.len() as u32, f)
            .expect("write");
    }
    w.finish().expect("finish");
    let (ok, jsonl, stderr) = rocescope(&["decode", s(&path), "--format", "jsonl"]);
    assert!(ok, "{stderr}");
    jsonl
}

#[test]
fn ila_captures_by_net_name_in_csv_and_vcd() {
    let Some((dir, csv, vcd, want)) = exported("net", "cmac_rx", false) else {
        return;
    };
    assert!(
        want.cut_at_start >= 1 && want.cut_at_end >= 1 && want.frames.len() > 10,
        "the windows cut frames at both edges ({} {} {})",
        want.cut_at_start,
        want.cut_at_end,
        want.frames.len()
    );
    let reference = reference_jsonl(&dir, &want, 250_000_000);
    for (file, format) in [(&csv, "ILA CSV"), (&vcd, "ILA VCD")] {
        let (ok, jsonl, stderr) = rocescope(&["decode", s(file), "--format", "jsonl"]);
        assert!(ok, "{format}: {stderr}");
        assert_eq!(jsonl, reference, "{format}: the frames and their times");
        assert!(
            stderr.contains(
                "port 0: AXI4-Stream design_1_i/cmac_usplus_0/rx_axis (64-bit tdata, clock ILA sample clock 250 MHz, tkeep, tready)"
            ),
            "{format}: {stderr}"
        );

        let (ok, info, stderr) = rocescope(&["info", s(file), "--json"]);
        assert!(ok, "{format}: {stderr}");
        let info: serde_json::Value = serde_json::from_str(&info).expect("json");
        assert_eq!(info["format"], format!("{format} waveform (AXI4-Stream)"));
        assert_eq!(info["packets"], want.frames.len(), "{info}");
        let ila = &info["ila"];
        assert_eq!(ila["sample_clock_hz"], 250_000_000, "{ila}");
        assert_eq!(
            ila["windows"]
                .as_array()
                .map(|w| w.iter().map(|w| w["samples"].as_u64()).collect::<Vec<_>>()),
            Some(vec![
                Some(WINDOW as u64),
                Some(WINDOW as u64),
                Some((WINDOW - SHORT) as u64)
            ]),
            "{ila}"
        );
        let triggers: Vec<u64> = (0..3)
            .map(|k| ((k * WINDOW + TRIGGERS[k]) * 4) as u64)
            .collect();
        assert_eq!(ila["triggers_ns"], serde_json::json!(triggers), "{ila}");
        assert_eq!(
            (&ila["cut_at_window_start"], &ila["cut_at_window_end"]),
            (&want.cut_at_start.into(), &want.cut_at_end.into()),
            "{ila}"
        );
        let (ok, text, _) = rocescope(&["info", s(file)]);
        assert!(ok);
        rocescope_testkit::assert_contains(
            &text,
            &format!(
                "ILA capture: 3 windows of {} to {WINDOW} samples at 250 MHz; {} frames cut by a window's edge not kept ({} at a start, {} at an end); the time between windows is unknown: their samples are placed end to end",
                WINDOW - SHORT,
                want.cut_at_start + want.cut_at_end,
                want.cut_at_start,
                want.cut_at_end
            ),
        );

        // The RC analysis over them, and what the windows mean beside it.
        let (ok, stats, stderr) = rocescope(&["stats", s(file), "--json"]);
        assert!(ok, "{format}: {stderr}");
        let stats: serde_json::Value = serde_json::from_str(&stats).expect("json");
        let qp = &stats["qps"][0];
        assert!(qp["packets"].as_u64().is_some_and(|p| p > 4), "{stats}");
        assert_eq!(stats["ila"]["windows"].as_array().map(Vec::len), Some(3));
        let (ok, text, _) = rocescope(&["stats", s(file)]);
        assert!(
            ok && text.contains("the time between windows is unknown"),
            "{text}"
        );

        // Another sample clock moves every frame.
        let hz = 322_265_625;
        let (ok, jsonl, stderr) = rocescope(&[
            "decode",
            s(file),
            "--format",
            "jsonl",
            "--sample-clock",
            "322.265625MHz",
        ]);
        assert!(ok, "{stderr}");
        assert_eq!(
            jsonl,
            reference_jsonl(&dir, &want, hz),
            "{format} at {hz} Hz"
        );
    }
    rocescope_testkit::remove_unless_keep(&dir);
}

#[test]
fn generic_probe_names_are_mapped_with_axis() {
    let Some((dir, csv, vcd, want)) = exported("generic", "probes", true) else {
        return;
    };
    let reference = reference_jsonl(&dir, &want, 250_000_000);
    for file in [&csv, &vcd] {
        let (ok, _, stderr) = rocescope(&["decode", s(file)]);
        assert!(!ok, "generic names are no interface by themselves");
        assert!(
            stderr.contains("no AXI4-Stream interface among the ILA's probes by name")
                && stderr.contains("probe0 (64 bits)")
                && stderr.contains("--axis tdata=PROBE"),
            "{stderr}"
        );
        let map = "tdata=probe0,tkeep=probe1,tvalid=probe2,tlast=probe3,tready=probe4";
        let (ok, jsonl, stderr) =
            rocescope(&["decode", s(file), "--format", "jsonl", "--axis", map]);
        assert!(ok, "{stderr}");
        assert_eq!(jsonl, reference);
        let (ok, info, stderr) = rocescope(&["info", s(file), "--json", "--axis", map]);
        assert!(ok, "{stderr}");
        let info: serde_json::Value = serde_json::from_str(&info).expect("json");
        assert_eq!(info["packets"], want.frames.len());
        // A mapping that names a probe the capture lacks says what it has.
        let (ok, _, stderr) = rocescope(&[
            "decode",
            s(file),
            "--axis",
            "tdata=probe0,tvalid=probe9,tlast=probe3",
        ]);
        assert!(!ok && stderr.contains("no probe \"probe9\""), "{stderr}");
    }
    rocescope_testkit::remove_unless_keep(&dir);
}

#[test]
fn the_signals_view_marks_the_triggers_and_windows() {
    use rocescope_replay::wave::signals::MarkerKind;
    let Some((dir, csv, vcd, _)) = exported("signals", "cmac_rx", false) else {
        return;
    };
    for (file, tvalid) in [
        (&csv, "design_1_i/cmac_usplus_0/rx_axis_tvalid"),
        (&vcd, "dut.design_1_i/cmac_usplus_0/rx_axis_tvalid"),
    ] {
        let (mut signals, _) =
            rocescope_core::signals::Signals::open(file, 0, &Default::default()).expect("opens");
        assert!(
            signals.hierarchy().iter().any(|i| i.path == tvalid),
            "{:?}",
            signals.hierarchy()
        );
        let triggers = markers(&signals, MarkerKind::Trigger);
        let want: Vec<u64> = (0..3)
            .map(|k| ((k * WINDOW + TRIGGERS[k]) * 4) as u64)
            .collect();
        assert_eq!(triggers, want, "{}", file.display());
        let windows = markers(&signals, MarkerKind::Window);
        assert_eq!(windows, [WINDOW as u64 * 4, 2 * WINDOW as u64 * 4]);
        assert!(signals.wait_loaded(std::time::Duration::from_secs(10)));
        // A probe's values at its samples' times.
        let loaded = rocescope_replay::wave::signals::load_with(
            file,
            &[tvalid.to_owned()],
            1 << 20,
            &Default::default(),
        )
        .expect("loads");
        let changes = &loaded[0].changes;
        assert!(changes.len() > 10 && loaded[0].cut.is_none(), "{loaded:?}");
        assert!(changes.iter().all(|c| c.ts_ns % 4 == 0 && c.known));
        assert_eq!(changes[0].ts_ns, 0);
    }
    rocescope_testkit::remove_unless_keep(&dir);
}

/// The README's ILA commands, word for word on ChipScoPy's files (all but
/// `open` and `gui`, which need a terminal or a display).
#[test]
fn the_readme_ila_commands_work_as_printed() {
    let Some((dir, csv, vcd, _)) = exported("readme", "ila_capture", false) else {
        return;
    };
    let (_, generic_vcd, _) = export(&dir, "ila_probes", true);
    let readme = support::user_docs();
    let mut ran = 0;
    for line in readme
        .lines()
        .filter(|l| l.contains("ila_capture.") || l.contains("ila_probes."))
    {
        let Some(cmd) = line.strip_prefix("rocescope ") else {
            continue;
        };
        if cmd.starts_with("open ") || cmd.starts_with("gui ") {
            continue;
        }
        let args: Vec<String> = support::command_words(cmd)
            .map(|w| match w {
                "ila_capture.csv" => s(&csv).to_owned(),
                "ila_capture.vcd" => s(&vcd).to_owned(),
                "ila_probes.vcd" => s(&generic_vcd).to_owned(),
                w => w.to_owned(),
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, stdout, stderr) = rocescope(&args);
        assert!(ok && !stdout.is_empty(), "README: {line}: {stderr}");
        if cmd.starts_with("info ") {
            assert!(stdout.contains("at 322.265625 MHz"), "{line}: {stdout}");
        }
        ran += 1;
    }
    assert_eq!(ran, 4, "the README's ILA commands");
    rocescope_testkit::remove_unless_keep(&dir);
}
