//! A waveform's signals at a viewer's speed: the first load reads the body
//! once and every later one comes from memory. Shown by spoiling the file
//! after the first load: the later loads still give what the intact file
//! holds, where a load that reads the file again (`stream_load`, every
//! load before `SignalFile`) fails.

use std::path::{Path, PathBuf};

use rocescope_replay::wave::SignalFile;
use rocescope_replay::wave::signals::{LoadedSignal, MAX_CHANGES, stream_load};

fn seed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../decoders/fuzz/corpus/wave")
        .join(name)
}

fn copy(name: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rocescope-signal-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let to = dir.join(format!("{tag}-{name}"));
    std::fs::copy(seed(name), &to).expect("copy");
    to
}

fn load(file: &SignalFile, path: &str) -> LoadedSignal {
    file.load(&[path.to_owned()], MAX_CHANGES)
        .expect("loads")
        .remove(0)
}

/// Overwrites the file in place with bytes no parser reads.
fn spoil(path: &Path) {
    let len = std::fs::metadata(path).expect("file").len() as usize;
    std::fs::write(path, vec![b'#'; len]).expect("spoil");
}

#[test]
fn later_signals_of_a_vcd_and_an_ila_csv_come_from_memory() {
    for (name, first, later) in [
        ("icarus.vcd", "tb.clk", ["tb.u0.tvalid", "tb.u0.tdata"]),
        ("chipscopy-ila.csv", "u/tvalid", ["u/tdata", "u/tlast"]),
    ] {
        let intact = SignalFile::open(&seed(name), &Default::default()).expect("opens");
        let want: Vec<LoadedSignal> = later.iter().map(|p| load(&intact, p)).collect();
        assert!(want.iter().all(|w| w.changes.len() > 2), "{name}: {want:?}");

        let path = copy(name, "held");
        let file = SignalFile::open(&path, &Default::default()).expect("opens");
        assert!(!file.body_held(), "{name}: nothing read at open");
        let (_, t) = file
            .load_timed(&[first.to_owned()], MAX_CHANGES)
            .expect("first load");
        assert!(file.body_held(), "{name}: the first load holds the body");
        assert!(t.body_seconds > 0.0, "{name}: the first load read the body");
        spoil(&path);
        for (p, w) in later.iter().zip(&want) {
            let (got, t) = file
                .load_timed(&[(*p).to_owned()], MAX_CHANGES)
                .expect("a later load");
            assert_eq!(&got[0], w, "{name}: {p} from memory");
            assert_eq!(t.body_seconds, 0.0, "{name}: {p} read no body");
        }
        // Reading the file again, as every load did before, now fails.
        assert!(
            stream_load(
                &path,
                &[later[0].to_owned()],
                MAX_CHANGES,
                &Default::default()
            )
            .is_err(),
            "{name}: the spoiled file cannot be read"
        );
    }
}

/// An FST's body is not read: each load reads the chosen signals' blocks,
/// and loads agree with the VCD of the same run.
#[test]
fn an_fst_loads_what_its_vcd_holds() {
    let vcd = SignalFile::open(&seed("icarus.vcd"), &Default::default()).expect("vcd");
    let fst = SignalFile::open(&seed("icarus.fst"), &Default::default()).expect("fst");
    for p in ["tb.clk", "tb.u0.tdata", "tb.u0.tvalid", "tb.u0.tlast"] {
        let (a, b) = (load(&vcd, p), load(&fst, p));
        assert_eq!(a.changes, b.changes, "{p}");
    }
}

/// A damaged VCD cannot be held: each load streams and keeps the changes
/// before the damage, and says where it stopped.
#[test]
fn a_damaged_body_is_read_signal_by_signal() {
    let file =
        SignalFile::open(&seed("bad-four-state-value.vcd"), &Default::default()).expect("opens");
    let all: Vec<String> = file
        .hierarchy()
        .signals
        .iter()
        .map(|s| s.path.clone())
        .collect();
    let loaded = file
        .load(&all, MAX_CHANGES)
        .expect("the changes before the damage");
    assert!(!file.body_held());
    assert!(
        file.streamed_because()
            .is_some_and(|w| w.contains("the parser failed")),
        "{:?}",
        file.streamed_because()
    );
    let clk = loaded.iter().find(|s| s.path == "tb.clk").expect("clk");
    assert!(
        clk.cut
            .as_deref()
            .is_some_and(|c| c.starts_with("unreadable past ")),
        "{clk:?}"
    );
}
