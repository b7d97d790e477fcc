//! What the core's integration tests share (`mod support;` in a test file).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::time::Instant;

use rocescope_core::Model;
use rocescope_core::source::SourceHandle;
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{RcAnalyzer, Store};

/// The workbench's model of the bundled sample capture (a WRITE and a READ
/// with a retransmission), indexed in full; its source named `name`.
pub fn sample_model(name: &str) -> Model {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/captures/sample-write-read.pcap");
    let analysis = RcAnalyzer::default();
    let store = Store::open(&path, DecodeConfig::default(), Box::new(analysis.clone())).unwrap();
    store.wait();
    let mut m = Model::new(store, analysis, SourceHandle::file(name.into()));
    m.tick(Instant::now());
    m
}

/// Sets the packet filter `f` and ticks `m` until its scan of the store
/// has ended (the test fails where it takes over 120 s).
pub fn filter_scanned(m: &mut Model, f: &str) {
    m.apply(rocescope_core::Command::SetFilter(f.into()));
    let t0 = Instant::now();
    loop {
        m.tick(Instant::now());
        let (scanned, len) = m.filter_progress();
        if scanned >= len {
            return;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "the scan of filter {f:?} hangs at {scanned} of {len}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Capture file `path` as the workbench opens it, default decoding.
pub fn file_spec(path: &Path) -> rocescope_core::source::SourceSpec {
    rocescope_core::source::SourceSpec::File {
        path: path.to_path_buf(),
        decode: Default::default(),
        wave: Default::default(),
    }
}

/// `m` once its file is indexed and the analysis' report taken: the model
/// takes the report a quarter second after the last (it opened with the
/// empty one), so it ticks once that long has passed.
pub fn finished(mut m: Model) -> Model {
    m.store().wait();
    m.tick(Instant::now() + std::time::Duration::from_secs(1));
    m
}

/// Every row of the model's store.
pub fn all_rows(m: &Model) -> Vec<rocescope_replay::store::Row> {
    let mut rows = Vec::new();
    m.store().rows(0..m.store().len(), &mut rows);
    rows
}

/// The rows the packet list shows under filter `f`, once its scan of the
/// whole store ended.
pub fn filtered(m: &mut Model, f: &str) -> Vec<u64> {
    m.apply(rocescope_core::Command::ShowView(
        rocescope_core::View::Packets,
    ));
    filter_scanned(m, f);
    (0..m.visible_len())
        .map(|p| m.visible_row(p).unwrap())
        .collect()
}
