//! A file shows all of itself while it is being indexed: the packet list and
//! the filters reach the last row indexed, not where indexing stood when
//! the first screen was drawn.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model, View};
use rocescope_decoders::DecodeConfig;
use rocescope_replay::CaptureReader;
use rocescope_replay::clock::PlayState;
use rocescope_replay::store::{Ingest, IngestFrame, RcAnalyzer, Store};

/// Frames of a header-only capture, as (ts_ns, bytes).
fn frames(n: u64) -> Vec<(u64, Vec<u8>)> {
    let path = std::env::temp_dir().join(format!(
        "rocescope-indexing-{}-{n}.pcap",
        std::process::id()
    ));
    rocescope_replay::synth::write_header_only_pcap(&path, n).unwrap();
    let mut r = CaptureReader::open(&path).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push((f.ts_ns, f.data.to_vec()));
    }
    let _ = std::fs::remove_file(&path);
    out
}

fn feed(store: &Store, ingest: &mut Ingest, frames: &[(u64, Vec<u8>)]) {
    for (ts_ns, data) in frames {
        let f = IngestFrame {
            ts_ns: *ts_ns,
            data,
            origlen: data.len() as u32,
            linktype: 1,
            port: 0,
            dir: None,
            file_offset: 0,
        };
        store.ingest(ingest, &f);
    }
    store.flush_live(ingest);
}

#[test]
fn rows_indexed_after_the_first_screen_are_listed_and_filtered() {
    let all = frames(40_000);
    let analysis = RcAnalyzer::default();
    // A store that grows behind a file source, as `Store::open` indexes.
    let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    feed(&store, &mut ingest, &all[..256]);
    let mut m = Model::new(
        std::sync::Arc::clone(&store),
        analysis,
        SourceHandle::file("big.pcap".into()),
    );
    assert_eq!(m.visible_len(), 256);

    feed(&store, &mut ingest, &all[256..]);
    m.tick(Instant::now());
    assert_eq!(
        m.visible_len(),
        40_000,
        "the list stops where indexing stood"
    );
    assert_eq!(
        m.clock.state(),
        PlayState::Paused,
        "replay starts only when asked"
    );

    // A filter finds rows of the whole file: every ACK, 20,000 of them.
    m.apply(Command::ShowView(View::Packets));
    m.apply(Command::SetFilter("opcode == 17".into()));
    let t0 = Instant::now();
    loop {
        m.tick(Instant::now());
        let (scanned, len) = m.filter_progress();
        if scanned >= len {
            break;
        }
        assert!(t0.elapsed().as_secs() < 60, "filter scan hangs");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(m.visible_len(), 20_000);
    let last = m.visible_row(m.visible_len() - 1).unwrap();
    assert_eq!(last, 39_999);
}

#[test]
fn a_clock_the_user_moved_stays_where_they_put_it() {
    let all = frames(4_000);
    let analysis = RcAnalyzer::default();
    let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    feed(&store, &mut ingest, &all[..1_000]);
    let mut m = Model::new(
        std::sync::Arc::clone(&store),
        analysis,
        SourceHandle::file("big.pcap".into()),
    );
    let t = all[499].0;
    m.apply(Command::JumpToTime(t));
    feed(&store, &mut ingest, &all[1_000..]);
    m.tick(Instant::now());
    assert_eq!(m.visible_len(), 500);
}
