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

/// This test binary's one folder in the test build's (its tests name their
/// files apart by a tag; the next run overwrites them).
fn scratch() -> PathBuf {
    let dir = rocescope_testkit::build_tmp().join("replay-signal-file");
    std::fs::create_dir_all(&dir).expect("the test build's folder");
    dir
}

fn copy(name: &str, tag: &str) -> PathBuf {
    let dir = scratch();
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

/// A VCD of `steps` time steps, 1 ns apart, over several of wellen's
/// in-memory blocks (at most 65,535 time steps a block), with signals that
/// change at random (`a` 1 bit, `v` 8 bits with x and z, `w` 512 bits) and
/// signals written on every step while they hold one value for 40,000
/// steps (`k` 1 bit, `h` 8 bits, `q` 512 bits whose values differ in their
/// last bits only, `r` a real, `s` a string): a block then
/// starts with a value that repeats the last one before it, which is no
/// change.
fn many_blocks_vcd(tag: &str, steps: u32) -> PathBuf {
    use std::fmt::Write as _;
    let mut vcd = String::from(
        "$timescale 1ns $end\n$scope module tb $end\n\
         $var wire 1 a a $end\n$var wire 8 v v $end\n$var wire 512 w w $end\n\
         $var wire 1 k k $end\n$var wire 8 h h $end\n$var wire 512 q q $end\n\
         $var real 64 r r $end\n\
         $var string 1 s s $end\n$upscope $end\n$enddefinitions $end\n",
    );
    let mut rng = rocescope_testkit::Rng(0x9e37_79b9_7f4a_7c15u64);
    let mut next = move || rng.next_u64();
    for t in 0..steps {
        let _ = writeln!(vcd, "#{t}");
        let r = next();
        if r % 3 == 0 {
            let _ = writeln!(vcd, "{}a", (r >> 8) & 1);
        }
        if r % 5 == 0 {
            let bits: String = (0..8)
                .map(|i| match (r >> (16 + 2 * i)) & 7 {
                    0 => 'x',
                    1 => 'z',
                    b => char::from(b'0' + (b & 1) as u8),
                })
                .collect();
            let _ = writeln!(vcd, "b{bits} v");
        }
        if r % 11 == 0 {
            let bits: String = (0..8).map(|_| format!("{:064b}", next())).collect();
            let _ = writeln!(vcd, "b{bits} w");
        }
        let era = t / 40_000;
        let _ = writeln!(vcd, "{}k", era % 2);
        let _ = writeln!(vcd, "b{:08b} h", era * 37 % 256);
        let _ = writeln!(vcd, "b{:b} q", era + 1);
        let _ = writeln!(vcd, "r{}.5 r", era);
        let _ = writeln!(vcd, "sera{} s", era);
    }
    let dir = scratch();
    let path = dir.join(format!("{tag}-many-blocks.vcd"));
    std::fs::write(&path, vcd).expect("write vcd");
    path
}

/// A prefix load (`visit_signal_prefixes`, what a held body's load uses)
/// gives exactly the first changes a whole load gives, and counts exactly
/// the rest, for every kind of signal, with the cut before, at, after and
/// across the blocks' edges.
#[test]
fn a_prefix_load_gives_a_whole_loads_first_changes_and_counts_the_rest() {
    use wellen::{ChangeVisitor, LoadOptions, viewers};
    let path = many_blocks_vcd("prefix", 140_000);
    let header = viewers::read_header_from_file(&path, &LoadOptions::default()).expect("header");
    let h = header.hierarchy;
    let mut body = viewers::read_body(header.body, &h, None).expect("body");
    let names = ["a", "v", "w", "k", "h", "q", "r", "s"];
    let refs: Vec<wellen::SignalRef> = names
        .iter()
        .map(|n| {
            let var = h
                .all_vars()
                .find(|v| h[*v].full_name(&h) == format!("tb.{n}"))
                .expect("var");
            h[var].signal_ref()
        })
        .collect();
    let loaded = body.source.load_signals(&refs, &h, true);
    let whole: Vec<Vec<(u32, String)>> = refs
        .iter()
        .map(|r| {
            let s = loaded
                .iter()
                .find(|s| s.signal_ref() == *r)
                .expect("loaded");
            s.iter_changes().map(|(i, v)| (i, v.to_string())).collect()
        })
        .collect();
    for (n, w) in names.iter().zip(&whole) {
        assert!(w.len() > 3, "{n} has changes: {}", w.len());
    }
    // The held signals' first change of a block repeats the last before it.
    assert_eq!(whole[3].len(), 4, "k: one change an era");
    assert_eq!(whole[5].len(), 4, "q: one change an era");
    assert_eq!(whole[7].len(), 4, "s: one change an era");

    let mut cuts: Vec<usize> = vec![0, 1, 2, 3, 100, 9_999];
    for w in &whole {
        cuts.extend([w.len() / 2, w.len() - 1, w.len(), w.len() + 1]);
        // Changes either side of a block's edge (65,535 time steps a block).
        for (i, (idx, _)) in w.iter().enumerate() {
            if idx % 65_535 < 3 || idx % 65_535 > 65_532 {
                cuts.extend([i, i + 1]);
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        let mut seen: Vec<Vec<(u32, String)>> = vec![Vec::new(); refs.len()];
        let mut visitors: Vec<ChangeVisitor<'_>> = seen
            .iter_mut()
            .map(|s| -> ChangeVisitor<'_> {
                Box::new(move |i, v| {
                    if s.len() == cut {
                        return false;
                    }
                    s.push((i, v.to_string()));
                    true
                })
            })
            .collect();
        let not_given = body
            .source
            .visit_signal_prefixes(&refs, &h, &mut visitors, true);
        drop(visitors);
        for (k, n) in names.iter().enumerate() {
            let want = &whole[k][..cut.min(whole[k].len())];
            assert_eq!(seen[k], want, "{n}, cut at {cut}");
            assert_eq!(
                not_given[k],
                (whole[k].len() - want.len()) as u64,
                "{n}, cut at {cut}: the rest counted"
            );
        }
    }
    std::fs::remove_file(&path).expect("remove");
}

/// A held body's capped load keeps what an uncapped load keeps first, and
/// counts the rest as dropped: nothing is lost without a word.
#[test]
fn a_capped_load_keeps_the_first_changes_and_counts_the_rest() {
    let path = many_blocks_vcd("capped", 140_000);
    let file = SignalFile::open(&path, &Default::default()).expect("opens");
    let names: Vec<String> = ["tb.a", "tb.v", "tb.w", "tb.k", "tb.h", "tb.q"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let all = file.load(&names, usize::MAX).expect("uncapped");
    for s in &all {
        assert_eq!(s.dropped, 0, "{}", s.path);
    }
    for cap in [0, 1, 2, 3, 1_000, 30_000, 65_536] {
        let capped = file.load(&names, cap).expect("capped");
        for (c, a) in capped.iter().zip(&all) {
            let kept = cap.min(a.changes.len());
            assert_eq!(c.changes, &a.changes[..kept], "{} cap {cap}", a.path);
            assert_eq!(
                c.dropped,
                (a.changes.len() - kept) as u64,
                "{} cap {cap}: the rest counted",
                a.path
            );
        }
    }
    std::fs::remove_file(&path).expect("remove");
}
