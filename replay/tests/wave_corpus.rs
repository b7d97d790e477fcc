//! The waveform fuzz target's corpus (`decoders/fuzz/corpus/wave/`)
//! through its body, `rocescope_replay::wave::exercise`: the Icarus seeds
//! read whole, and each damaged file that once panicked a parser (on the
//! reading thread or the caller's), wrote to stdout, hung, or asked for a
//! terabyte (or a signal of 300 million bits) ends in an error that says where, with no panic. The ILA
//! captures are ChipScoPy's own export of three frames in two windows.

use std::path::Path;

#[test]
fn the_wave_corpus_reads_or_fails_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../decoders/fuzz/corpus/wave");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the corpus")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expect: [(&str, Option<&str>); 13] = [
        ("bad-four-state-value.vcd", Some("cannot be read past")),
        ("bad-vector-value.vcd", Some("cannot be read past")),
        ("chipscopy-ila.csv", None),
        ("chipscopy-ila.vcd", None),
        (
            "ila-cut-inside-its-last-sample.vcd",
            Some("cut short at 108 ns (its last line is incomplete)"),
        ),
        (
            "ila-sample-past-any-capture.vcd",
            Some("is past the 4194304 samples an ILA capture can hold"),
        ),
        (
            "hierarchy-of-a-terabyte.fst",
            Some("hierarchy block at byte"),
        ),
        ("icarus.fst", None),
        (
            "signal-of-300-million-bits.vcd",
            Some("its header declares signal tb.u0.i.[31:0] 300000002 bits wide"),
        ),
        ("icarus.vcd", None),
        ("time-goes-back.vcd", Some("time goes back from #")),
        (
            "time-table-longer-than-block.fst",
            Some("value-change block at byte"),
        ),
        (
            "time-table-of-2-47-times.fst",
            Some("value-change block at byte"),
        ),
    ];
    for (name, want) in expect {
        assert!(names.iter().any(|n| n == name), "{name} is in the corpus");
        let bytes = std::fs::read(dir.join(name)).expect("seed");
        let (frames, error) = rocescope_replay::wave::exercise(&bytes);
        match want {
            None => assert!(
                error.is_none() && frames == if name.contains("ila") { 3 } else { 4 },
                "{name}: {frames} {error:?}"
            ),
            Some(w) => {
                let e = error.unwrap_or_default();
                assert!(e.contains(w), "{name}: {e}");
            }
        }
    }
    // Everything else in the corpus (what fuzzing added) ends too.
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).expect("seed");
        let _ = rocescope_replay::wave::exercise(&bytes);
    }
}

/// The signals view's load of a file whose body panics the VCD parser
/// keeps every change before it and says where it stopped.
#[test]
fn a_signal_load_stops_at_a_damaged_value_with_the_changes_before() {
    use rocescope_replay::wave::signals;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../decoders/fuzz/corpus/wave/bad-four-state-value.vcd");
    let h = signals::hierarchy(&path).expect("the header is whole");
    let all: Vec<String> = h
        .signals
        .iter()
        .filter(|s| s.width_bits.is_some())
        .map(|s| s.path.clone())
        .collect();
    let loaded = signals::load(&path, &all, 1 << 20).expect("changes before the damage");
    let clk = loaded
        .iter()
        .find(|s| s.path == "tb.clk")
        .expect("the clock");
    let cut = clk.cut.as_deref().unwrap_or_default();
    assert!(
        cut.starts_with("unreadable past ") && cut.contains(" ns: the parser failed: "),
        "{cut}"
    );
    assert!(clk.changes.len() > 10, "{}", clk.changes.len());
}
