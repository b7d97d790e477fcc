//! Live sessions through an agent on loopback: a simulated card that runs
//! until stopped serves whoever attaches, whenever; a finite source that
//! ends is reported as ended; the simulator's evidence records reach the
//! client's store, analysis and recording.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rocescope_decoders::{Opcode, PacketBuilder};
use rocescope_device_link::agent::AgentError;
use rocescope_device_link::client::{LinkEvent, LinkState};
use rocescope_device_link::{
    Agent, AgentConfig, AttachUrl, CaptureSource, Client, ClientConfig, SimSource, Source,
    SourceStatus,
};
use rocescope_replay::record::TruthEvent;
use rocescope_replay::store::Flags;
use rocescope_replay::{CaptureItem, CaptureReader, PcapngWriter, Record};
use rocescope_sim::{Scenario, Simulator};

type AgentThread = JoinHandle<Result<SourceStatus, AgentError>>;

/// An agent on a free loopback port serving `source`; its port, stop flag
/// and thread.
fn serve(
    source: Box<dyn Source>,
    wait_for_client: bool,
) -> (u16, Arc<std::sync::atomic::AtomicBool>, AgentThread) {
    let mut cfg = AgentConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.wait_for_client = wait_for_client;
    let agent = Agent::bind(cfg).unwrap();
    let port = agent.local_addr().unwrap().port();
    let stop = agent.stop_flag();
    let t = std::thread::spawn(move || agent.run(source, Vec::new()));
    (port, stop, t)
}

fn client(port: u16, exit_on_end: bool, record: Option<std::path::PathBuf>) -> Client {
    let mut cfg = ClientConfig::new(AttachUrl::Tcp {
        host: "127.0.0.1".into(),
        port,
    });
    cfg.exit_on_end = exit_on_end;
    cfg.record = record;
    // Quick retries: the ended test watches the client look for an agent.
    cfg.backoff_max = Duration::from_millis(200);
    Client::start(cfg).unwrap()
}

/// Waits (bounded) until `done` holds.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < end, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-link");
    let _ = std::fs::create_dir_all(&dir);
    dir.join(name)
}

#[test]
fn a_simulated_card_serves_one_client_after_another_until_stopped() {
    let mut sc = Scenario::builtin("default").unwrap();
    assert!(sc.until_stopped);
    // A short finite run, so that going past it is quick to see.
    sc.duration_ns = 300_000;
    let finite_frames = {
        let mut n = 0u64;
        Simulator::new(sc.clone()).run(&mut |r| n += u64::from(matches!(r, Record::Frame { .. })));
        n
    };
    // Not waiting for a client: the card is up before anyone attaches. At
    // 1% of real time (about 46 k frames a second), which a debug build's
    // ingest keeps up with, so that leaving does not wait for a backlog.
    let (port, stop, agent) = serve(Box::new(SimSource::new(sc, Some(0.01))), false);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!agent.is_finished(), "the agent ended with nobody attached");
    let mut seen = Vec::new();
    for round in 0..2 {
        let c = client(port, false, None);
        // More frames than the scenario's finite run holds: it went on.
        let want = if round == 0 {
            finite_frames + 1000
        } else {
            20_000
        };
        wait_for("frames", Duration::from_secs(120), || {
            c.stats().frames_received >= want
        });
        assert_eq!(c.stats().state(), LinkState::Live);
        let store = Arc::clone(c.store());
        let s = c.stop();
        assert_eq!(s.frames_dropped, 0, "round {round}: {s:?}");
        assert_eq!(s.reconnects, 0, "round {round}");
        assert!(!agent.is_finished(), "round {round}: the agent ended");
        // The second client starts mid-stream (mid-message, PSNs far from
        // the first): the analysis takes its first packets as they come,
        // not as a storm of gaps and resends. What it flags is what the
        // card resent, by the simulator's ground truth the client received
        // (from every start: the simulator's test
        // `a_capture_joined_anywhere_flags_only_what_the_card_resent`).
        let resent: std::collections::HashSet<(u32, u32)> = store
            .records_where(|r| {
                matches!(r, Record::Truth(t) if matches!(t.event, TruthEvent::Retransmit { .. }))
            })
            .iter()
            .filter_map(|r| match r {
                Record::Truth(t) => Some((t.qpn, t.psn)),
                _ => None,
            })
            .collect();
        let flagged = Flags::OUT_OF_SEQUENCE | Flags::DUPLICATE | Flags::RETRANSMISSION;
        let unexplained: Vec<_> = (0..store.len())
            .map(|i| store.row(i).unwrap())
            .filter(|r| r.flags.intersects(flagged))
            .filter(|r| {
                let qpn = store.conversation(r.conversation).map(|c| c.key.dest_qp);
                !qpn.is_some_and(|q| resent.contains(&(q, r.psn)))
            })
            .collect();
        assert!(
            unexplained.is_empty(),
            "round {round}: {} of {} rows flagged but not resent by the card, the first {:?}",
            unexplained.len(),
            store.len(),
            unexplained.first()
        );
        assert_eq!(store.stats().roce_packets, store.len());
        seen.push(store.row(0).unwrap().ts_ns);
        std::thread::sleep(Duration::from_millis(200));
    }
    // The second client got the card where it stood, not a new run.
    assert!(seen[1] > seen[0], "{seen:?}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let status = agent.join().unwrap().unwrap();
    assert_eq!(status, SourceStatus::Stopped);
}

fn capture_bytes(frames: u32) -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    for i in 0..frames {
        let mut f = Vec::new();
        PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_ONLY, 7, i)
            .build_headers_into(1024, &mut f);
        w.write_frame(
            1000 + u64::from(i) * 100,
            0,
            None,
            f.len() as u32 + 1024,
            &f,
        )
        .unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn a_finite_source_that_ends_is_reported_as_ended() {
    let bytes = capture_bytes(500);
    let source = CaptureSource::new("file-under-test", std::io::Cursor::new(bytes));
    let (port, _stop, agent) = serve(Box::new(source), true);
    // Waits for a new agent after the end, as the workbench does.
    let c = client(port, false, None);
    let mut end = None;
    wait_for("END", Duration::from_secs(30), || {
        while let Ok(ev) = c.events().try_recv() {
            match ev {
                LinkEvent::End(e) => end = Some(e),
                LinkEvent::Disconnected { reason, .. } if end.is_some() => {
                    panic!("after the end the client says disconnected: {reason}")
                }
                _ => {}
            }
        }
        end.is_some()
    });
    let end = end.unwrap();
    assert_eq!(end.source, "file-under-test");
    assert_eq!(end.frames, Some(500));
    assert!(end.to_string().contains("ended after 500 frames"), "{end}");
    assert_eq!(agent.join().unwrap().unwrap(), SourceStatus::End);
    // The agent is gone; the client keeps looking for a new one but stays
    // "ended", never "disconnected".
    std::thread::sleep(Duration::from_millis(800));
    while let Ok(ev) = c.events().try_recv() {
        assert!(
            !matches!(ev, LinkEvent::Disconnected { .. }),
            "after the end: {ev:?}"
        );
    }
    let s = c.stats();
    assert_eq!(s.state(), LinkState::Ended, "{s:?}");
    assert!(s.source_ended);
    assert_eq!(s.frames_received, 500);
    assert!(!c.is_finished());
    let s = c.stop();
    assert_eq!(s.frames_received, 500);
}

#[test]
fn evidence_records_arrive_through_the_agent_into_analysis_and_recording() {
    // DPI drops (evidence the diagnosis cites) and slot decisions.
    let sc = Scenario::builtin("dpi-drop").unwrap();
    let mut want_evidence = 0u64;
    let mut want_slots = 0u64;
    Simulator::new(sc.clone()).run(&mut |r| match &r {
        Record::Truth(t) if t.event == TruthEvent::DpiDrop => want_evidence += 1,
        Record::Slot(_) => want_slots += 1,
        _ => {}
    });
    assert!(
        want_evidence > 3 && want_slots > 10,
        "{want_evidence} {want_slots}"
    );
    let mut bounded = sc;
    bounded.bound_to_ns(bounded.duration_ns);
    let (port, _stop, agent) = serve(Box::new(SimSource::new(bounded, None)), true);
    let rec = tmp("evidence.pcapng");
    let c = client(port, true, Some(rec.clone()));
    wait_for("the end", Duration::from_secs(60), || c.is_finished());
    let store = Arc::clone(c.store());
    let s = c.stop();
    assert_eq!(agent.join().unwrap().unwrap(), SourceStatus::End);
    assert!(s.source_ended);
    assert_eq!(s.evidence_received, want_evidence, "{s:?}");
    let stored = |keep: &dyn Fn(&Record) -> bool| store.records_where(keep).len() as u64;
    assert_eq!(
        stored(&|r| matches!(r, Record::Truth(t) if t.event == TruthEvent::DpiDrop)),
        want_evidence
    );
    assert_eq!(stored(&|r| matches!(r, Record::Slot(_))), want_slots);
    // The recording keeps them, so a reopened recording has the same evidence.
    let mut r = CaptureReader::open(&rec).unwrap();
    let (mut evidence, mut slots) = (0, 0);
    while let Some(item) = r.next_item().unwrap() {
        if let CaptureItem::Record(rec) = item {
            evidence += u64::from(rocescope_replay::store::evidence(&rec).is_some());
            slots += u64::from(matches!(rec, Record::Slot(_)));
        }
    }
    assert_eq!((evidence, slots), (want_evidence, want_slots));
    let _ = std::fs::remove_file(&rec);
}
