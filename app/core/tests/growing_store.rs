//! The views of a store that grows: a file shows all of itself while it is
//! being indexed (the packet list and the filters reach the last row
//! indexed, not where indexing stood when the first screen was drawn), and
//! a live session bounded by a disk ring lists the rows it kept.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::clock::PlayState;
use rocescope_replay::store::{Ingest, IngestFrame, RcAnalyzer, Store};

/// Frames of a header-only capture, as (ts_ns, bytes).
fn frames(n: u64) -> Vec<(u64, Vec<u8>)> {
    rocescope_replay::synth::header_only_frames(n)
}

fn feed(store: &Store, ingest: &mut Ingest, frames: &[(u64, Vec<u8>)]) {
    for (ts_ns, data) in frames {
        let f = IngestFrame::ethernet(*ts_ns, data);
        store.ingest(ingest, &f);
    }
    store.flush_live(ingest);
}

/// A store that grows behind a file source, as `Store::open` indexes, what
/// feeds it, and the model of it opened once `first` was in.
fn growing_file(first: &[(u64, Vec<u8>)]) -> (std::sync::Arc<Store>, Ingest, Model) {
    let analysis = RcAnalyzer::default();
    let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    feed(&store, &mut ingest, first);
    let m = Model::new(
        std::sync::Arc::clone(&store),
        analysis,
        SourceHandle::file("big.pcap".into()),
    );
    (store, ingest, m)
}

#[test]
fn rows_indexed_after_the_first_screen_are_listed_and_filtered() {
    let all = frames(40_000);
    let (store, mut ingest, mut m) = growing_file(&all[..256]);
    assert_eq!(m.visible_len(), 256);

    feed(&store, &mut ingest, &all[256..]);
    m.tick(Instant::now());
    assert_eq!(
        m.visible_len(),
        40_000,
        "the list stops where indexing stood"
    );
    assert_eq!(
        m.clock().state(),
        PlayState::Paused,
        "replay starts only when asked"
    );

    // A filter finds rows of the whole file: every ACK, 20,000 of them.
    m.apply(Command::ShowView(View::Packets));
    support::filter_scanned(&mut m, "opcode == 17");
    assert_eq!(m.visible_len(), 20_000);
    let last = m.visible_row(m.visible_len() - 1).unwrap();
    assert_eq!(last, 39_999);
}

#[test]
fn a_clock_the_user_moved_stays_where_they_put_it() {
    let all = frames(4_000);
    let (store, mut ingest, mut m) = growing_file(&all[..1_000]);
    let t = all[499].0;
    m.apply(Command::JumpToTime(t));
    feed(&store, &mut ingest, &all[1_000..]);
    m.tick(Instant::now());
    assert_eq!(m.visible_len(), 500);
}

#[test]
fn rows_the_disk_ring_deleted_are_not_listed_or_filtered() {
    use rocescope_replay::store::SpillConfig;
    let all = frames(400_000);
    let analysis = RcAnalyzer::default();
    let folder = rocescope_testkit::temp_dir("ring-view");
    let dir = folder.path().to_path_buf();
    let store = Store::live_bounded(
        rocescope_replay::TimeBase::Nanoseconds,
        SpillConfig {
            dir,
            max_memory_bytes: 4 << 20,
            max_disk_bytes: Some(12 << 20),
            remove_on_drop: true,
        },
    )
    .unwrap();
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    feed(&store, &mut ingest, &all);
    let first = store.first_row();
    assert!(first > 0, "the ring deleted rows");
    let mut m = Model::new(
        std::sync::Arc::clone(&store),
        analysis,
        SourceHandle::external("attach:test".into()),
    );
    m.tick(Instant::now());
    assert_eq!(m.visible_len(), 400_000 - first);
    assert_eq!(m.visible_row(0), Some(first));
    let rows = m.visible_rows(0, 3);
    assert_eq!(rows[0].0, first);
    assert_eq!(rows[0].1.ts_ns, all[first as usize].0);
    m.apply(Command::SelectFirst);
    assert!(
        m.selected_packet().is_some(),
        "the first kept row reads back"
    );

    support::filter_scanned(&mut m, "opcode == 17");
    // Every other frame is an ACK; only kept ones are listed.
    let kept_acks = (first..400_000).filter(|i| i % 2 == 1).count() as u64;
    assert_eq!(m.visible_len(), kept_acks);
    assert!(m.visible_row(0).unwrap() >= first);
}

/// Packets the report counts over its QPs.
fn reported_packets(m: &Model) -> u64 {
    m.report().qps.iter().map(|q| q.packets).sum()
}

#[test]
fn a_files_report_is_made_again_until_its_analysis_is_final_then_kept() {
    let all = frames(4_000);
    let (store, mut ingest, mut m) = growing_file(&all[..1_000]);
    let t0 = Instant::now();
    m.tick(t0);
    let first = m.report_generation();
    assert!(first > 0, "the first screen has a report");

    // Still indexing: made again every 250 ms with what came since.
    feed(&store, &mut ingest, &all[1_000..2_000]);
    m.tick(t0 + Duration::from_secs(1));
    let growing = m.report_generation();
    assert!(growing > first);
    let part = reported_packets(&m);
    assert!(part > 0);

    // Indexed to its end: the report made once more, with every packet...
    feed(&store, &mut ingest, &all[2_000..]);
    store.finish_live(&mut ingest);
    m.tick(t0 + Duration::from_secs(2));
    assert_eq!(m.report_generation(), growing + 1);
    let whole = reported_packets(&m);
    assert!(whole > part, "{whole} packets after the end, {part} before");

    // ...and then kept: nothing can change it.
    m.tick(t0 + Duration::from_secs(3));
    m.tick(t0 + Duration::from_secs(4));
    assert_eq!(m.report_generation(), growing + 1);
    assert_eq!(reported_packets(&m), whole);
}

#[test]
fn a_live_sources_report_is_made_again_every_250_ms() {
    let all = frames(1_000);
    let analysis = RcAnalyzer::default();
    let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    feed(&store, &mut ingest, &all);
    store.finish_live(&mut ingest);
    let mut m = Model::new(
        store,
        analysis,
        SourceHandle::external("attach:test".into()),
    );
    let t0 = Instant::now();
    m.tick(t0);
    let g = m.report_generation();
    m.tick(t0 + Duration::from_secs(1));
    assert_eq!(m.report_generation(), g + 1);
}
