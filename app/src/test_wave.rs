//! A waveform from a real simulator for the signals views' tests: Icarus
//! Verilog runs the shipped testbench `assets/waveforms/axis_replay.v` on
//! three RoCE frames built by `PacketBuilder`, written as its beats
//! ([`beats_hex`]): a 64-bit AXI4-Stream with idle cycles, and
//! `bth_opcode`, `bth_psn` and `aeth_syndrome` registers set to each
//! frame's values on its first beat. Made once per test process. `None`
//! (the test skips) without iverilog unless `ROCESCOPE_REQUIRE_IVERILOG=1`.
//! The README's `sim_dump.vcd` is the same testbench on the bundled
//! sample's frames (`assets/waveforms/sample-write-read.hex`, checked here
//! to be what [`sample_beats`] makes of the sample).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rocescope_decoders::{DecodeConfig, LinkLayer, Opcode, PacketBuilder, decode};

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

/// The shipped testbench.
pub(crate) fn testbench() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/waveforms/axis_replay.v")
}

/// The testbench's `+frames` file: one 35-digit word a beat, `{1, idle
/// cycles before the beat (16 bits), first, last, tkeep, tdata (byte 0 in
/// the low bits), BTH opcode, PSN, AETH syndrome}`. `frames` are (idle
/// cycles before the frame, bytes).
pub(crate) fn beats_hex(frames: &[(u16, &[u8])]) -> String {
    let mut out = String::from(
        "// Beats for assets/waveforms/axis_replay.v, one a line:\n\
         // {1, idle cycles before it [15:0], first, last, tkeep[7:0], tdata[63:0], BTH opcode, PSN[23:0], AETH syndrome}\n",
    );
    for (idle, f) in frames {
        let p = decode(f, LinkLayer::Ethernet, &DecodeConfig::default());
        let (op, psn) = p.bth().map_or((0, 0), |b| (b.opcode().0, b.psn()));
        let syn = p.ext().aeth().map_or(0, |a| a.syndrome_raw());
        let beats = f.chunks(8).count();
        for (k, chunk) in f.chunks(8).enumerate() {
            let mut data = [0u8; 8];
            data[..chunk.len()].copy_from_slice(chunk);
            let hex: String = data.iter().rev().map(|b| format!("{b:02x}")).collect();
            let keep = (1u16 << chunk.len()) - 1;
            let idle = if k == 0 { *idle } else { 0 };
            let first = u8::from(k == 0);
            let last = u8::from(k + 1 == beats);
            let _ = writeln!(
                out,
                "1{idle:04x}{first}{last}{keep:02x}{hex}{op:02x}{psn:06x}{syn:02x}"
            );
        }
    }
    out
}

/// The bundled sample capture's frames as beats, each frame's first beat
/// on the 4 ns cycle nearest its capture time (the first after 3 idle
/// cycles), so that the waveform aligns with the capture.
pub(crate) fn sample_beats() -> String {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/captures/sample-write-read.pcap");
    let mut r = rocescope_replay::CaptureReader::open(&sample).expect("the sample opens");
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    while let Some(f) = r.next_frame().expect("the sample reads") {
        frames.push((f.ts_ns, f.data.to_vec()));
    }
    let t0 = frames.first().map_or(0, |f| f.0);
    let mut next_free = 0u64;
    let mut with_gaps = Vec::new();
    for (ts, bytes) in &frames {
        let cycle = 3 + (ts - t0).div_ceil(4);
        let idle = cycle.saturating_sub(next_free);
        next_free = next_free + idle + bytes.chunks(8).count() as u64;
        with_gaps.push((
            u16::try_from(idle).expect("gaps under 262 µs"),
            bytes.as_slice(),
        ));
    }
    beats_hex(&with_gaps)
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
    let dir = rocescope_testkit::build_tmp().join("signals");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    // Three idle cycles before the first frame, four between frames.
    let frames = frames();
    let gaps: Vec<(u16, &[u8])> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (if i == 0 { 3 } else { 4 }, f.3.as_slice()))
        .collect();
    std::fs::write(dir.join("frames.hex"), beats_hex(&gaps)).ok()?;
    let ok = |c: &mut Command| c.current_dir(&dir).status().is_ok_and(|s| s.success());
    assert!(
        ok(Command::new("iverilog")
            .args(["-o", "sim.vvp"])
            .arg(testbench())),
        "iverilog failed on {}",
        testbench().display()
    );
    assert!(
        ok(Command::new("vvp").args(["-n", "sim.vvp", "+frames=frames.hex"])),
        "vvp failed"
    );
    // The same run as FST, for the signals' loads from either format.
    assert!(
        ok(Command::new("vvp").args([
            "-n",
            "sim.vvp",
            "-fst",
            "+frames=frames.hex",
            "+dump=wave.fst"
        ])),
        "vvp -fst failed"
    );
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

/// [`vcd_copy`] with a 65,536-bit signal `tb.wide` written short (`b0`,
/// `b1`) at 300 time steps after its frames: its body holds about 2.4 MB,
/// past a budget of 1 MiB.
pub(crate) fn wide_vcd_copy(name: &str) -> Option<PathBuf> {
    let path = vcd_copy(name)?;
    let text = std::fs::read_to_string(&path).ok()?;
    let (header, body) = text.split_once("$enddefinitions")?;
    let last_ns: u64 = body
        .lines()
        .filter_map(|l| l.strip_prefix('#')?.trim().parse().ok())
        .max()?;
    let mut out = format!(
        "{header}$scope module tb $end\n$var reg 65536 ~w wide [65535:0] $end\n$upscope $end\n\
         $enddefinitions{body}"
    );
    for i in 1..=300 {
        out.push_str(&format!("#{}\nb{} ~w\n", last_ns + i, i % 2));
    }
    std::fs::write(&path, out).ok()?;
    Some(path)
}

/// A small Vivado ILA capture as CSV, written here (ChipScoPy's format is
/// checked against ChipScoPy itself in `tests/wave_ila.rs`): the three
/// frames on a 64-bit AXI4-Stream (`u/tdata`, `u/tkeep`, `u/tvalid`,
/// `u/tlast`), the first two in a window of 32 samples with its trigger at
/// sample 3, the third in a second window, its trigger at sample 4 of it.
pub(crate) fn ila_csv(name: &str) -> PathBuf {
    let dir = rocescope_testkit::build_tmp().join("ila");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.csv"));
    let mut out = String::from(
        "Sample in Buffer,Sample in Window,TRIGGER,u/tdata[63:0],u/tkeep[7:0],u/tvalid,u/tlast\n\
         Radix - UNSIGNED,UNSIGNED,UNSIGNED,HEX,HEX,HEX,HEX\n",
    );
    let f = frames();
    let windows: [(&[usize], usize); 2] = [(&[0, 1], 3), (&[2], 4)];
    let mut sample = 0;
    for (w, (which, trigger)) in windows.iter().enumerate() {
        let mut rows: Vec<(u64, u8, u8, u8)> = vec![(0, 0, 0, 0); 2];
        for &k in *which {
            let beats = f[k].3.chunks(8).count();
            for (b, chunk) in f[k].3.chunks(8).enumerate() {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                let keep = ((1u16 << chunk.len()) - 1) as u8;
                rows.push((u64::from_le_bytes(word), keep, 1, u8::from(b + 1 == beats)));
            }
            rows.push((0, 0, 0, 0));
        }
        rows.resize(32, (0, 0, 0, 0));
        for (i, (data, keep, valid, last)) in rows.into_iter().enumerate() {
            let trig = u8::from(i == *trigger);
            let _ = writeln!(
                out,
                "{sample},{i},{trig},{data:016X},{keep:02X},{valid},{last}"
            );
            sample += 1;
        }
        let _ = w;
    }
    std::fs::write(&path, out).expect("ILA CSV written");
    path
}

/// A workbench model of the waveform, indexed.
pub(crate) fn model(path: &std::path::Path) -> rocescope_core::Model {
    crate::indexed_model(path, "wave.vcd")
}

/// [`model`] with the waveform's signals opened beside its packets.
pub(crate) fn model_with_signals(path: &std::path::Path) -> rocescope_core::Model {
    model_with_signals_within(path, None)
}

/// [`model_with_signals`], its body held within `max_held_bytes`.
pub(crate) fn model_with_signals_within(
    path: &std::path::Path,
    max_held_bytes: Option<u64>,
) -> rocescope_core::Model {
    let mut m = model(path);
    m.apply(rocescope_core::Command::OpenSignals {
        path: path.to_path_buf(),
        offset_ns: 0,
        sample_clock_hz: None,
        max_held_bytes,
    });
    assert!(m.signals().is_some(), "{}", m.status());
    m
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rocescope_core::Command;
    use rocescope_core::signals::{Radix, Trace};

    fn shown(m: &rocescope_core::Model) -> Vec<(String, Radix)> {
        m.signals()
            .unwrap()
            .chosen()
            .iter()
            .map(|c| (c.path.clone(), c.radix))
            .collect()
    }

    /// The testbench's registers take each frame's values from its bytes:
    /// the ones the frames were built with.
    #[test]
    fn the_beats_carry_each_frames_opcode_psn_and_syndrome() {
        let frames = super::frames();
        let gaps: Vec<(u16, &[u8])> = frames.iter().map(|f| (4, f.3.as_slice())).collect();
        let hex = super::beats_hex(&gaps);
        let firsts: Vec<&str> = hex
            .lines()
            .filter(|l| !l.starts_with("//") && l.as_bytes()[5] == b'1')
            .collect();
        assert_eq!(firsts.len(), frames.len());
        for (line, (op, psn, syn, _)) in firsts.iter().zip(&frames) {
            assert!(
                line.ends_with(&format!("{op:02x}{psn:06x}{syn:02x}")),
                "{line}"
            );
            assert_eq!(line.len(), 35, "{line}");
        }
    }

    /// assets/waveforms/sample-write-read.hex is what the sample capture
    /// makes (ROCESCOPE_WRITE_SAMPLE_BEATS=1 writes it again).
    #[test]
    fn the_shipped_sample_beats_are_the_sample_capture() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../assets/waveforms/sample-write-read.hex");
        let want = super::sample_beats();
        if std::env::var_os("ROCESCOPE_WRITE_SAMPLE_BEATS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == want,
            "{} is stale: run ROCESCOPE_WRITE_SAMPLE_BEATS=1 cargo test -p rocescope --lib test_wave",
            path.display()
        );
    }

    #[test]
    fn the_chosen_signals_and_formats_are_restored_per_file() {
        let Some(vcd) = super::vcd_copy("restore") else {
            return;
        };
        let mut m = super::model_with_signals(&vcd);
        m.apply(Command::RunCommandLine("show tb.u.bth_psn".into()));
        m.apply(Command::RunCommandLine("show tb.u.tvalid".into()));
        m.apply(Command::RunCommandLine("fmt #1 signed".into()));
        drop(m);
        let mut m = super::model_with_signals(&vcd);
        assert_eq!(
            shown(&m),
            [
                ("tb.u.bth_psn".to_owned(), Radix::Signed),
                ("tb.u.tvalid".to_owned(), Radix::Binary)
            ]
        );
        // Restored signals are loaded again, from the file.
        assert!(m.wait_signals_loaded(Duration::from_secs(20)));
        let psn = &m.signals().unwrap().chosen()[0];
        assert!(matches!(psn.trace, Trace::Loaded { dropped: 0, .. }));
        assert_eq!(
            psn.changes().iter().map(|c| c.value).collect::<Vec<_>>(),
            [0, 100, 101]
        );
        // Another copy of the waveform has a selection of its own.
        let other = super::vcd_copy("restore-other").unwrap();
        assert!(shown(&super::model_with_signals(&other)).is_empty());
        // Hiding every signal is saved too.
        m.apply(Command::RemoveSignal("#2".into()));
        m.apply(Command::RemoveSignal("tb.u.bth_psn".into()));
        assert!(shown(&super::model_with_signals(&vcd)).is_empty());
    }

    #[test]
    fn signal_commands_and_the_cursor_link() {
        let Some(vcd) = super::vcd_copy("commands") else {
            return;
        };
        let mut m = super::model_with_signals(&vcd);
        m.apply(Command::SignalSearch("U. Bth".into()));
        let found: Vec<&str> = m
            .signals()
            .unwrap()
            .matches()
            .map(|s| s.path.as_str())
            .collect();
        assert_eq!(found, ["tb.u.bth_opcode", "tb.u.bth_psn"]);
        m.apply(Command::AddSignal("#2".into()));
        assert_eq!(shown(&m), [("tb.u.bth_psn".to_owned(), Radix::Psn)]);
        m.apply(Command::AddSignal("#3".into()));
        assert!(m.status().contains("no match #3"), "{}", m.status());
        m.apply(Command::AddSignal("tb.nothing".into()));
        assert!(
            m.status().contains("no signal tb.nothing"),
            "{}",
            m.status()
        );
        m.apply(Command::AddSignal("tb.u.bth_psn".into()));
        assert!(m.status().contains("shown already"), "{}", m.status());
        m.apply(Command::RunCommandLine("fmt #1 octal".into()));
        assert!(m.status().contains("not one of bin|hex"), "{}", m.status());
        assert!(m.wait_signals_loaded(Duration::from_secs(20)));
        // Selecting a packet puts the cursor on its first beat, where the
        // testbench set the PSN to the packet's.
        let rows: Vec<u64> = (0..3).map(|r| m.store().row(r).unwrap().ts_ns).collect();
        for (r, psn) in [(0u64, 100u64), (1, 101), (2, 101)] {
            m.apply(Command::SelectRow(r));
            let t = m.wave_cursor_ns().unwrap();
            assert_eq!(t, rows[r as usize]);
            let c = &m.signals().unwrap().chosen()[0];
            assert_eq!(c.at(t).map(|v| v.value), Some(psn), "row {r}");
            assert_eq!(c.text(c.at(t).unwrap()), psn.to_string());
        }
        // Moving the cursor selects the packet at or before it and keeps
        // the cursor where it was put.
        m.apply(Command::WaveCursor(rows[1] + 3));
        assert_eq!(m.selected(), Some(1));
        assert_eq!(m.wave_cursor_ns(), Some(rows[1] + 3));
        m.apply(Command::WaveCursor(rows[1] - 1));
        assert_eq!(m.selected(), Some(0));
        m.apply(Command::MoveSelection(2));
        assert_eq!(
            m.wave_cursor_ns(),
            Some(rows[2]),
            "selection moves the cursor"
        );
        // The cap on signals shown.
        m.apply(Command::SignalSearch(String::new()));
        for k in 1..=9 {
            m.apply(Command::AddSignal(format!("#{k}")));
        }
        assert_eq!(
            m.signals().unwrap().chosen().len(),
            rocescope_core::signals::MAX_CHOSEN
        );
        assert!(m.status().contains("at most 8"), "{}", m.status());
    }

    #[test]
    fn the_chosen_signals_export_as_the_profiler_table() {
        let Some(vcd) = super::vcd_copy("export") else {
            return;
        };
        let mut m = super::model_with_signals(&vcd);
        m.apply(Command::AddSignal("tb.u.bth_psn".into()));
        m.apply(Command::AddSignal("tb.u.bth_opcode".into()));
        assert!(m.wait_signals_loaded(Duration::from_secs(20)));
        m.apply(Command::ShowView(rocescope_core::View::Profiler));
        let out = vcd.with_file_name("signals-profiler.csv");
        m.apply(Command::RunCommandLine(format!("export {}", out.display())));
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while m.exporting() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
            m.tick(std::time::Instant::now());
        }
        assert!(
            m.status().contains("exported 6 rows of profiler"),
            "{}",
            m.status()
        );
        let csv = std::fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "ts_ns,cycle,probe,probe_name,unit,module,value");
        let psn: Vec<&str> = lines
            .iter()
            .filter(|l| l.contains("tb.u.bth_psn"))
            .copied()
            .collect();
        let t0 = m.store().row(0).unwrap().ts_ns;
        // The PSN is set on the cycle before the first beat transfers.
        assert_eq!(psn.len(), 3, "{csv}");
        assert!(
            psn[0].starts_with("0,0,8192,tb.u.bth_psn,psn,wave,0"),
            "{csv}"
        );
        let second: Vec<&str> = psn[1].split(',').collect();
        assert_eq!(second[6], "100");
        assert_eq!(second[0].parse::<u64>().unwrap(), t0 - 4, "{csv}");
        assert!(
            csv.contains(",8193,tb.u.bth_opcode,opcode,wave,10\n"),
            "{csv}"
        );
    }

    #[test]
    fn a_signal_loads_the_same_from_vcd_and_fst() {
        use rocescope_replay::wave::signals::{MAX_CHANGES, hierarchy, load};
        let Some(vcd) = super::vcd() else {
            return;
        };
        let fst = vcd.with_file_name("wave.fst");
        let names = ["tb.u.bth_psn".to_owned(), "tb.u.tvalid".to_owned()];
        let a = load(&vcd, &names, MAX_CHANGES).unwrap();
        let b = load(&fst, &names, MAX_CHANGES).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0].changes.len(), 3);
        assert_eq!(
            hierarchy(&vcd).unwrap().signals,
            hierarchy(&fst).unwrap().signals
        );
        // The cap: changes past it are counted, not kept.
        let capped = load(&vcd, &names[1..], 2).unwrap();
        assert_eq!(capped[0].changes.len(), 2);
        assert_eq!(capped[0].dropped as usize, a[1].changes.len() - 2);
        // A name the file lacks is an error naming the file and the signal.
        let e = load(&vcd, &["tb.nope".to_owned()], 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wave.vcd") && e.contains("tb.nope"), "{e}");
    }

    /// The guide's signals commands (docs/waveforms.md), as printed, on the
    /// waveform.
    #[test]
    fn the_readme_signals_commands_work_as_printed() {
        let Some(vcd) = super::vcd_copy("readme") else {
            return;
        };
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/waveforms.md"))
                .unwrap();
        let block: Vec<&str> = readme
            .lines()
            .skip_while(|l| !l.contains("signals commands: run by app/src/test_wave.rs"))
            .skip(2)
            .take_while(|l| !l.starts_with("```"))
            .collect();
        assert_eq!(block.len(), 7, "the README's signals block");
        let mut m = super::model_with_signals(&vcd);
        m.apply(Command::ShowView(rocescope_core::View::Profiler));
        let out = vcd.with_file_name("readme-signals.csv");
        for line in block {
            let cmd = line
                .strip_prefix(':')
                .and_then(|l| l.split("  #").next())
                .unwrap()
                .trim()
                .replace("signals.csv", &out.display().to_string());
            let before = m.status().to_owned();
            m.apply(Command::RunCommandLine(cmd.clone()));
            let st = m.status();
            assert!(
                st == before || st.starts_with("exporting"),
                "README: {line}: {st}"
            );
            assert!(m.wait_signals_loaded(Duration::from_secs(20)));
        }
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while m.exporting() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
            m.tick(std::time::Instant::now());
        }
        assert_eq!(shown(&m), [("tb.u.bth_opcode".to_owned(), Radix::Opcode)]);
        let t0 = m.store().row(0).unwrap().ts_ns;
        assert_eq!(m.wave_cursor_ns(), Some(t0 + 100));
        assert!(
            std::fs::read_to_string(&out)
                .unwrap()
                .contains("tb.u.bth_opcode,opcode,wave,17"),
            "{}",
            m.status()
        );
    }
}
