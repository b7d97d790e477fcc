//! Every fuzz seed and regression input runs through the fuzz target's body.
#![allow(clippy::unwrap_used)]

#[test]
fn fuzz_seed_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(rocescope_decoders::exercise(&bytes) > 0);
        n += 1;
    }
    assert!(n >= 60, "seed corpus has only {n} files");
}
