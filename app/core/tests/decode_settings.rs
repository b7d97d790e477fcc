//! Frames on an extra RoCE port (`--roce-port 4792`) decode as RoCE
//! everywhere the workbench decodes them again: the detail tree, the hex
//! highlighting and the field filters use the store's settings, not the
//! defaults.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{Ingest, IngestFrame, RcAnalyzer, Store};

#[test]
fn the_detail_and_the_field_filters_decode_with_the_stores_roce_ports() {
    let cfg = DecodeConfig {
        extra_roce_ports: vec![4792],
    };
    let analysis = RcAnalyzer::default();
    let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(cfg.clone(), Box::new(analysis.clone()));
    for (ts_ns, data) in rocescope_replay::synth::writes_to_port(4792, 4) {
        store.ingest(&mut ingest, &IngestFrame::ethernet(ts_ns, &data));
    }
    store.finish_live(&mut ingest);
    assert_eq!(
        store.decode_config(),
        cfg,
        "the store keeps its ingest's settings"
    );

    let mut m = Model::new(
        std::sync::Arc::clone(&store),
        analysis,
        SourceHandle::file("port-4792.pcap".into()),
    );
    m.apply(Command::SelectFirst);
    let sel = m.selected_packet().unwrap();
    let p = sel.packet();
    assert_eq!(
        p.bth().map(|b| b.dest_qp()),
        Some(0x12),
        "the detail decodes RoCE"
    );
    assert_eq!(p.ext().reth().map(|r| r.va()), Some(0x1000));

    m.apply(Command::SetFilter("infiniband.reth.va == 0x3000".into()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while m.filter_progress().0 < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        m.tick(Instant::now());
    }
    assert_eq!(m.visible_len(), 1, "the field filter decodes RoCE on 4792");
    assert_eq!(m.visible_row(0), Some(2));
}
