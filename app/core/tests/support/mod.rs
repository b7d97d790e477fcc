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
