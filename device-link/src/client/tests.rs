use super::*;
use crate::agent::{Agent, AgentConfig};
use crate::sim::SimSource;
use rocescope_sim::{Scenario, Simulator};

/// The client's stop returns (bounded: a stop that hangs fails the test).
fn stops_in_time(client: Client) {
    let (tx, stopped) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(client.stop());
    });
    stopped
        .recv_timeout(Duration::from_secs(30))
        .expect("the stop returns");
}

/// A file name whose reader thread fails, for the tests.
pub(super) const RX_PANICS: &str = "test-rx-panics.pcap";

/// A reader thread that panics ends the link with a fatal event in its
/// words, the client finished, and a stop that returns (the queue closed),
/// never a link that hangs its stop or looks as if it runs on.
#[test]
fn a_reader_thread_that_fails_ends_the_link_saying_so() {
    let url = AttachUrl::parse(&format!("file:/nonexistent/{RX_PANICS}")).unwrap();
    let client = Client::start(ClientConfig::new(url)).unwrap();
    let ev = client
        .events()
        .recv_timeout(Duration::from_secs(30))
        .expect("an event");
    let LinkEvent::Fatal(why) = ev else {
        panic!("not fatal: {ev:?}");
    };
    assert!(
        why.starts_with("the link's attach-rx thread failed ("),
        "{why}"
    );
    assert!(
        why.contains("a link reader's failure, for the test"),
        "{why}"
    );
    let t0 = Instant::now();
    while !client.is_finished() {
        assert!(t0.elapsed() < Duration::from_secs(30), "never finished");
        std::thread::sleep(Duration::from_millis(5));
    }
    stops_in_time(client);
}

/// A file name whose ingest thread fails, for the tests.
pub(super) const INGEST_PANICS: &str = "test-ingest-panics.pcap";

/// An ingest thread that panics ends the link saying so, and the live store
/// ends with its status naming why: a caller waiting on it returns, and no
/// view reads the session as one that still grows.
#[test]
fn an_ingest_thread_that_fails_ends_the_store_saying_so() {
    let url = AttachUrl::parse(&format!("file:/nonexistent/{INGEST_PANICS}")).unwrap();
    let client = Client::start(ClientConfig::new(url)).unwrap();
    let t0 = Instant::now();
    let why = loop {
        let left = Duration::from_secs(30).saturating_sub(t0.elapsed());
        match client.events().recv_timeout(left).expect("a fatal event") {
            LinkEvent::Fatal(why) if why.contains("attach-ingest") => break why,
            _ => {}
        }
    };
    assert!(
        why.contains("a link ingest's failure, for the test"),
        "{why}"
    );
    assert!(
        client.store().wait_timeout(Duration::from_secs(30)),
        "the store never ended"
    );
    let error = client.store().progress().error.expect("the store's error");
    assert!(
        error.starts_with("the link's ingest failed (") && error.contains("for the test"),
        "{error}"
    );
    stops_in_time(client);
}

/// `ingest_batch` on every path (raw, decoded and taken in place,
/// decoded and shared with the recorder), records between frames.
#[test]
fn ingest_batch_keeps_rows_and_bytes_on_every_path() {
    use rocescope_decoders::{Opcode, PacketBuilder};
    use rocescope_replay::store::NoAnalysis;
    let frames: Vec<Vec<u8>> = (0..50u32)
        .map(|i| {
            let mut f = Vec::new();
            PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 9, i)
                .build_into(&vec![7; i as usize % 5], &mut f);
            f
        })
        .collect();
    let batch = || {
        let mut b = Batch::default();
        for (i, f) in frames.iter().enumerate() {
            if i % 7 == 3 {
                b.push_record(Record::Annotation {
                    ts_ns: i as u64,
                    text: format!("note {i}"),
                });
            }
            b.push_frame(i as u64 * 10, 0, None, f.len() as u32, f);
        }
        b
    };
    for (decode, shared) in [(false, false), (true, false), (true, true)] {
        let store = Store::live(TimeBase::Nanoseconds);
        let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(NoAnalysis));
        // Twice, so that the second batch lands after the first's bytes.
        for _ in 0..2 {
            let mut b = batch();
            if decode {
                b.decode(&DecodeConfig::default());
            }
            let mut b = Arc::new(b);
            let recorder = shared.then(|| Arc::clone(&b));
            ingest_batch(&store, &mut ingest, &mut b, None);
            drop(recorder);
        }
        store.finish_live(&mut ingest);
        assert_eq!(store.len(), 2 * frames.len() as u64);
        assert_eq!(store.record_count(), 2 * 7);
        for i in 0..store.len() {
            let k = i as usize % frames.len();
            let row = store.row(i).expect("row");
            assert_eq!(row.psn, k as u32, "{decode} {shared} row {i}");
            assert_eq!(store.frame_bytes(i).expect("bytes"), frames[k], "row {i}");
        }
    }
}

/// Every frame reaches the store with its own bytes, whether ingest
/// decodes it or the socket thread did (a slow ingest makes it decode).
#[test]
fn stores_every_frame_with_its_bytes() {
    let mut sc = Scenario::builtin("default").expect("default");
    sc.bound_to_ns(3_000_000);
    let mut want = Vec::new();
    Simulator::new(sc.clone()).run(&mut |r| {
        if let Record::Frame { data, .. } = r {
            want.push(data);
        }
    });
    assert!(want.len() > 1000, "{}", want.len());
    // Slow ingest; and with a recording, which shares the batches
    // (ingest then copies the decoded rows instead of taking them).
    let folder = rocescope_testkit::temp_dir("client");
    let rec = folder.path().join("recorded.pcapng");
    for (slow, record) in [
        (None, None),
        (Some(1_000_000), None),
        (Some(1_000_000), Some(rec.clone())),
    ] {
        let mut cfg = AgentConfig::new("127.0.0.1:0".parse().expect("addr"));
        cfg.wait_for_client = true;
        let agent = Agent::bind(cfg).expect("bind");
        let port = agent.local_addr().expect("addr").port();
        let source = Box::new(SimSource::new(sc.clone(), None));
        let t = std::thread::spawn(move || agent.run(source, Vec::new()));
        let mut ccfg = ClientConfig::new(AttachUrl::Tcp {
            host: "127.0.0.1".into(),
            port,
        });
        ccfg.exit_on_end = true;
        ccfg.max_ingest_pps = slow;
        ccfg.record = record;
        let client = Client::start(ccfg).expect("client");
        while !client.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let store = Arc::clone(client.store());
        let s = client.stop();
        let _ = t.join();
        assert_eq!(s.frames_dropped, 0);
        assert_eq!(store.len(), want.len() as u64);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(&store.frame_bytes(i as u64).expect("bytes"), w, "row {i}");
        }
    }
    let _ = std::fs::remove_file(&rec);
}
