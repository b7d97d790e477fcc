//! The RC analysis, run on the simulator's frames alone, against the
//! simulator's ground truth (which the analysis never sees), over every
//! shipped scenario.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use rocescope_decoders::analysis::{Class, EpisodeCause, Observation, RcAnalysis};
use rocescope_decoders::{DecodeConfig, LinkLayer, decode};
use rocescope_replay::Record;
use rocescope_replay::record::{RetransmitCause, TruthEvent};
use rocescope_sim::{Scenario, Simulator};

/// What one run gave: per captured frame, whether the analysis flagged it a
/// retransmission and whether the simulator says it was one; plus totals.
#[derive(Debug, Default)]
struct Run {
    frames: u64,
    /// (frame index, flagged, truth) where the two disagree.
    mismatches: Vec<(usize, bool, bool)>,
    flagged_retx: u64,
    truth_retx_captured: u64,
    truth_timeouts: u64,
    truth_capture_drops: u64,
    truth_wire_drops: u64,
    episodes: HashMap<EpisodeCause, u64>,
    capture_loss: u64,
}

/// Decodes a captured frame and hands it to the analysis as frame
/// `index`: its observation (none without a BTH) and its class.
fn observe(
    an: &mut RcAnalysis,
    index: u64,
    ts_ns: u64,
    orig_len: u32,
    data: &[u8],
) -> (Option<Observation>, Class) {
    let p = decode(data, LinkLayer::Ethernet, &DecodeConfig::default());
    let obs = Observation::from_packet(&p, ts_ns, orig_len);
    let class = obs.map_or(Class::default(), |o| an.observe(index, &o));
    (obs, class)
}

fn run(sc: Scenario) -> Run {
    let mut sim = Simulator::new(sc);
    let mut an = RcAnalysis::default();
    let mut frames: Vec<(u64, Option<u32>)> = Vec::new();
    let mut classes: Vec<Class> = Vec::new();
    let mut truth_retx: HashMap<(u64, u32), ()> = HashMap::new();
    let mut r = Run::default();
    sim.run(&mut |rec| match rec {
        Record::Frame { .. } => {
            let Some(f) = rec.as_frame() else { return };
            let (obs, c) = observe(&mut an, classes.len() as u64, f.ts_ns, f.orig_len, f.data);
            frames.push((f.ts_ns, obs.map(|o| o.psn)));
            classes.push(c);
            for l in an.drain_late().collect::<Vec<_>>() {
                let c = &mut classes[l.index as usize];
                c.0 = (c.0 & !l.clear.0) | l.set.0;
            }
        }
        Record::Truth(g) => match g.event {
            TruthEvent::Retransmit { cause } => {
                truth_retx.insert((g.ts_ns, g.psn), ());
                if cause == RetransmitCause::Timeout {
                    r.truth_timeouts += 1;
                }
            }
            TruthEvent::WireDrop => r.truth_wire_drops += 1,
            TruthEvent::CaptureDrop => r.truth_capture_drops += 1,
            _ => {}
        },
        _ => {}
    });
    r.frames = frames.len() as u64;
    for (i, ((ts, psn), c)) in frames.iter().zip(&classes).enumerate() {
        let flagged = c.contains(Class::RETRANSMISSION);
        let truth = psn.is_some_and(|p| truth_retx.contains_key(&(*ts, p)));
        r.flagged_retx += u64::from(flagged);
        r.truth_retx_captured += u64::from(truth);
        if flagged != truth {
            r.mismatches.push((i, flagged, truth));
        }
    }
    let report = an.report();
    for e in &report.episodes {
        *r.episodes.entry(e.cause).or_default() += 1;
    }
    r.capture_loss = report.counters.capture_loss_packets;
    r
}

fn scenario(name: &str, duration_ns: u64) -> Scenario {
    let mut sc = Scenario::builtin(name).unwrap();
    sc.duration_ns = sc.duration_ns.min(duration_ns);
    sc
}

#[test]
fn retransmission_flags_match_the_ground_truth_frame_by_frame() {
    for name in Scenario::builtin_names() {
        let r = run(scenario(name, 2_000_000));
        assert!(r.frames > 0, "{name}: no frames");
        assert!(
            r.mismatches.is_empty(),
            "{name}: {} of {} frames disagree with the ground truth (index, flagged, truth): {:?}",
            r.mismatches.len(),
            r.frames,
            &r.mismatches[..r.mismatches.len().min(10)]
        );
        eprintln!(
            "{name}: {} frames, {} retransmissions, episodes {:?}",
            r.frames, r.flagged_retx, r.episodes
        );
    }
}

#[test]
fn loss_gives_nak_episodes_and_never_invented_timeouts() {
    for name in ["default", "lossy-link", "teaching-basic"] {
        let r = run(scenario(name, 2_000_000));
        assert!(
            r.truth_wire_drops > 0,
            "{name}: the scenario should lose packets"
        );
        assert!(r.flagged_retx > 0, "{name}");
        let naks = r
            .episodes
            .get(&EpisodeCause::NakSeqErr)
            .copied()
            .unwrap_or(0);
        assert!(naks > 0, "{name}: {:?}", r.episodes);
        if r.truth_timeouts == 0 {
            assert_eq!(
                r.episodes.get(&EpisodeCause::Timeout),
                None,
                "{name}: no timer fired, yet {:?}",
                r.episodes
            );
        }
    }
}

#[test]
fn a_timeout_is_told_from_a_nak() {
    // Lose the last packet of a message: nothing after it makes the
    // responder NAK, so only the requester's timer can recover.
    let mut sc = Scenario::builtin("teaching-basic").unwrap();
    sc.faults.clear();
    let text = rocescope_testkit::alice_to_bob("tail-loss", 3, 3_000_000)
        + r#"
op = "write"
size_bytes = 16384
messages = 1
queue_depth = 1
[[fault]]
kind = "loss"
node = "alice"
direction = "to_switch"
nth = 4
[sniffer]
node = "alice"
filter = 0x8000_0000
fixed_card = true
rx_cut_quirk = false
"#;
    let sc = Scenario::from_toml(&text, "tail-loss.toml").unwrap();
    let r = run(sc);
    assert!(r.truth_timeouts > 0, "the scenario must need the timer");
    assert!(r.mismatches.is_empty(), "{:?}", r.mismatches);
    assert_eq!(
        r.episodes.get(&EpisodeCause::Timeout),
        Some(&1),
        "{:?}",
        r.episodes
    );
}

#[test]
fn capture_loss_is_not_a_retransmission() {
    // A sniffer too slow for the link misses frames the wire carried.
    let mut sc = scenario("window-stall", 2_000_000);
    sc.set("sniffer_gbytes_s", "0.01").unwrap();
    sc.set("sniffer_buffer_bytes", "1024").unwrap();
    let r = run(sc);
    assert!(r.truth_capture_drops > 0, "the sniffer should drop frames");
    assert_eq!(r.truth_wire_drops, 0);
    eprintln!(
        "capture drops {} -> capture loss {}",
        r.truth_capture_drops, r.capture_loss
    );
    assert!(r.capture_loss > 0, "capture loss must be seen");
    assert_eq!(r.flagged_retx, 0, "capture loss reported as retransmission");
    assert!(r.mismatches.is_empty());
}

#[test]
fn a_long_round_trip_is_diagnosed_as_window_limited() {
    use rocescope_decoders::analysis::FindingCause;
    let mut sim = Simulator::new(scenario("window-stall", 2_000_000));
    let mut an = RcAnalysis::default();
    let mut i = 0u64;
    sim.run(&mut |rec| {
        if let Some(f) = rec.as_frame() {
            observe(&mut an, i, f.ts_ns, f.orig_len, f.data);
            i += 1;
        }
    });
    let r = an.report();
    assert!(!r.findings.is_empty());
    assert!(
        r.findings
            .iter()
            .all(|f| f.cause == FindingCause::WindowLimited),
        "{:#?}",
        r.findings
    );
    // The window is the one the capture shows the sender held at,
    // BALBOA's 16, and the stalls of the one QP are one finding.
    let w = r.qps[0].window_packets;
    assert_eq!(w, 16, "window");
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    assert!(r.findings[0].items.len() > 1);
    rocescope_testkit::assert_contains(
        &r.findings[0].text,
        &format!("the window full at {w} packets (the capture shows the sender held at it)"),
    );
}

#[test]
fn every_shipped_scenario_is_diagnosed_one_finding_per_cause_and_qp() {
    use rocescope_decoders::analysis::FindingCause;
    use rocescope_replay::TimeBase;
    use rocescope_replay::store::{Ingest, RcAnalyzer, Store};
    use rocescope_sim::StoreSink;
    // Through the store's ingest, as a recording reopened is: the frames
    // (PFC frames too) and the records a recording carries.
    for name in Scenario::builtin_names() {
        let store = Store::live(TimeBase::Nanoseconds);
        let analysis = RcAnalyzer::default();
        let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
        let mut sim = Simulator::new(scenario(name, 2_000_000));
        sim.run_into(&mut StoreSink {
            store: &store,
            ingest: &mut ingest,
            analysis: &analysis,
        });
        store.finish_live(&mut ingest);
        let r = analysis.finish_report();
        let mut seen: Vec<(u32, FindingCause)> = Vec::new();
        for f in &r.findings {
            assert!(
                !seen.contains(&(f.qp, f.cause)),
                "{name}: two {:?} findings on QP {}",
                f.cause,
                f.qp
            );
            seen.push((f.qp, f.cause));
            assert_eq!(
                f.items.len() > 1,
                f.text.contains("; the worst, "),
                "{}",
                f.text
            );
        }
        let items: usize = r.findings.iter().map(|f| f.items.len()).sum();
        eprintln!(
            "{name}: {} QPs, {} findings ({items} drops or events): {:?}",
            r.qps.len(),
            r.findings.len(),
            r.findings
                .iter()
                .map(|f| (f.cause.name(), f.items.len()))
                .collect::<Vec<_>>()
        );
        for f in &r.findings {
            eprintln!("    {}", f.text);
        }
    }
}

/// The ConnectX peer's DCQCN on the `dcqcn` scenario: the sniffed
/// requester's rate steps down on CNPs 50 µs apart and comes back. The
/// diagnosis tells one `congestion` finding on that QP, a stepwise rate cut
/// against its level before the first CNP, and nothing else.
#[test]
fn the_connectx_dcqcn_staircase_is_one_congestion_finding_on_its_qp() {
    use rocescope_decoders::analysis::FindingCause;
    let sc = scenario("dcqcn", 2_000_000);
    let line_gbytes_s = sc.params.link_gbps / 8.0;
    let mut sim = Simulator::new(sc);
    let mut an = RcAnalysis::default();
    let mut i = 0u64;
    let mut cnps_ns = Vec::new();
    sim.run(&mut |rec| {
        if let Some(f) = rec.as_frame() {
            observe(&mut an, i, f.ts_ns, f.orig_len, f.data);
            i += 1;
        } else if let Record::Truth(t) = rec
            && t.event == TruthEvent::CnpSent
        {
            cnps_ns.push(t.ts_ns);
        }
    });
    assert!(
        sim.stats().qps[0].dcqcn_cnps >= 2,
        "{:?}",
        sim.stats().qps[0]
    );
    let r = an.report();
    let texts: Vec<&str> = r.findings.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(r.findings.len(), 1, "one finding, no false one: {texts:?}");
    let f = &r.findings[0];
    assert_eq!(f.cause, FindingCause::Congestion, "{texts:?}");
    // The sniffed requester: cx1 (10.0.0.2) writing to cx0's first QP.
    let qp = &r.qps[f.qp as usize];
    assert_eq!(qp.dest_qp, 0x100, "{qp:?}");
    assert_eq!(qp.requester[12..], [10, 0, 0, 2]);
    assert!(
        f.text
            .contains("a stepwise rate cut (DCQCN-style) from the level before the first CNP at "),
        "{}",
        f.text
    );
    // Measured against the line rate it ran at alone, not a level that
    // followed the staircase down.
    assert!(
        f.before_gbytes_s > 0.8 * line_gbytes_s,
        "level before: {} GB/s",
        f.before_gbytes_s
    );
    assert!(f.during_gbytes_s < 0.6 * f.before_gbytes_s, "{f:?}");
    let first_cnp_ns = cnps_ns.iter().copied().min().unwrap_or(u64::MAX);
    assert!(
        f.start_ns >= first_cnp_ns,
        "{} before {first_cnp_ns}",
        f.start_ns
    );
}
