//! The multi-point analysis (`rocescope_replay::points`) against the
//! simulator's truth: every shipped scenario run with points a, sw and b,
//! each point with its own clock; the clocks aligned within 1 µs (drifts of
//! ±60 ppm over 100 ms), every request loss placed on the segment it
//! happened on, capture loss told apart from wire loss.

use rocescope_replay::points::{LossKind, Point, PointsConfig, PointsReport, analyse_points};
use rocescope_replay::store::Ingest;
use rocescope_sim::points::{PointSpec, PointsTruth};
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

/// Each point's frames into its own store, as a live feed.
struct Feed {
    points: Vec<(Point, Ingest)>,
}

impl RecordSink for Feed {
    fn frame(&mut self, _f: FrameRef<'_>) {}
    fn record(&mut self, _r: rocescope_replay::Record) {}
    fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
        let Some((p, ingest)) = self.points.get_mut(usize::from(point)) else {
            return;
        };
        p.store.ingest(ingest, &f.ingest_frame());
    }
}

struct Run {
    report: PointsReport,
    truth: PointsTruth,
    specs: Vec<PointSpec>,
    end_ns: u64,
}

fn run(sc: Scenario) -> Run {
    let specs = sc.points.clone();
    let mut feed = Feed {
        points: specs.iter().map(|s| Point::in_memory(&s.name)).collect(),
    };
    let mut sim = Simulator::new(sc);
    sim.run_into(&mut feed);
    for (p, ingest) in &mut feed.points {
        p.store.finish_live(ingest);
    }
    let points: Vec<Point> = feed.points.into_iter().map(|(p, _)| p).collect();
    let report = analyse_points(&points, &PointsConfig::default()).expect("analysed");
    Run {
        report,
        truth: sim.points_truth().cloned().expect("truth"),
        specs,
        end_ns: sim.now_ns(),
    }
}

/// The largest distance between the estimated and the true clock of each
/// point, ns, over the run.
fn alignment_error(r: &Run) -> Vec<i64> {
    let first = &r.specs[0];
    r.specs
        .iter()
        .enumerate()
        .map(|(p, spec)| {
            (0..=100)
                .map(|k| {
                    let t = r.end_ns * k / 100;
                    let est = r.report.point_clock(p, first.clock_ns(t)).expect("point");
                    (est - spec.clock_ns(t) as i64).abs()
                })
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Request drops of the truth that some point saw before they were lost,
/// with their segment, away from the captures' end (a frame in flight
/// when the captures stop is not judged: no later frame shows whether
/// the points after it were still capturing).
fn request_drops(r: &Run) -> Vec<(u32, u32, u8, u64, String)> {
    let end = r.report.points.iter().map(|p| p.last_ns).min().unwrap_or(0);
    r.truth
        .drops
        .iter()
        .filter(|d| {
            d.opcode <= 0x0C && !d.behind_loss && r.specs[0].clock_ns(d.ts_ns) + 300_000 < end
        })
        .filter_map(|d| {
            let seg = PointsTruth::segment(d, &r.specs)?;
            Some((
                d.dest_qp,
                d.psn,
                d.opcode,
                r.specs[0].clock_ns(d.ts_ns),
                seg,
            ))
        })
        .collect()
}

/// Every request drop placed on its segment, and no request loss told
/// that did not happen.
fn check_losses(name: &str, r: &Run) -> usize {
    let want = request_drops(r);
    let got: Vec<_> = r.report.losses.iter().filter(|l| l.request).collect();
    for (qp, psn, op, ts, seg) in &want {
        let hit = got.iter().find(|l| {
            l.dest_qp == *qp && l.psn == *psn && l.opcode == *op && l.ts_ns.abs_diff(*ts) < 100_000
        });
        match hit {
            Some(l) => assert_eq!(
                &l.segment, seg,
                "{name}: QP {qp:#x} PSN {psn} lost on {seg}, placed on {} ({})",
                l.segment, l.evidence
            ),
            None => panic!(
                "{name}: QP {qp:#x} PSN {psn} opcode {op:#x} lost on {seg} at {ts}: not found among {} losses: {:?}",
                got.len(),
                got.iter()
                    .take(5)
                    .map(|l| (l.dest_qp, l.psn, &l.segment, l.ts_ns))
                    .collect::<Vec<_>>()
            ),
        }
    }
    for l in &got {
        assert!(
            r.truth.drops.iter().any(|d| l.dest_qp == d.dest_qp
                && l.psn == d.psn
                && l.ts_ns.abs_diff(r.specs[0].clock_ns(d.ts_ns)) < 100_000),
            "{name}: a loss told that did not happen: {l:?}"
        );
    }
    want.len()
}

fn scenario(name: &str, duration_ns: u64) -> Scenario {
    let mut sc = Scenario::builtin(name).expect("shipped");
    sc.bound_to_ns(duration_ns);
    sc.set_points("a,sw,b").expect("points");
    sc
}

#[test]
fn every_shipped_scenario_has_its_request_losses_placed() {
    let mut placed = 0;
    for name in Scenario::builtin_names() {
        let r = run(scenario(name, 3_000_000));
        for (p, e) in alignment_error(&r).iter().enumerate() {
            assert!(*e < 1_000, "{name}: point {p} off by {e} ns");
        }
        for s in &r.report.points {
            assert_eq!(s.capture_loss, 0, "{name}: {} has no capture loss", s.name);
        }
        let n = check_losses(name, &r);
        // The figures BENCHMARKS.md quotes (`-- --nocapture`).
        eprintln!(
            "{name}: {n} request losses placed on their segment; largest clock error {:?} ns",
            alignment_error(&r)
        );
        placed += n;
    }
    assert!(placed > 20, "the scenarios lose requests: {placed}");
}

#[test]
fn clocks_drifting_60_ppm_apart_align_within_a_microsecond_over_100_ms() {
    let text = rocescope_testkit::alice_to_bob("drifting", 11, 100_000_000)
        + r#"
size_bytes = 16384
queue_depth = 2
rate_gbps = 2.0
[[fault]]
kind = "loss"
node = "alice"
direction = "to_switch"
probability = 0.002
[[point]]
name = "a"
tap = "alice"
offset_ns = 250_000
drift_ppm = 60.0
[[point]]
name = "sw"
tap = "switch"
offset_ns = 1_750_000
drift_ppm = -60.0
[[point]]
name = "b"
tap = "bob"
offset_ns = 900_000
drift_ppm = -45.5
"#;
    let r = run(Scenario::from_toml(&text, "drifting.toml").expect("loads"));
    let errors = alignment_error(&r);
    // The figure BENCHMARKS.md quotes (`-- --nocapture`).
    eprintln!("largest clock error per point over the run, ns: {errors:?}");
    for (p, e) in errors.iter().enumerate() {
        assert!(
            *e < 1_000,
            "point {p} off by {e} ns: {:?}",
            r.report.points[p]
        );
    }
    let sw = &r.report.points[1];
    // Relative drift of sw against a: about -120 ppm.
    assert!((sw.drift_ppm + 120.0).abs() < 1.0, "{sw:?}");
    check_losses("drifting", &r);
}

#[test]
fn capture_loss_at_a_point_is_not_wire_loss() {
    let mut sc = scenario("lossy-link", 3_000_000);
    sc.set_point("sw.capture_loss=0.02").expect("sw");
    let r = run(sc);
    let missed = r
        .truth
        .capture_drops
        .iter()
        .filter(|c| c.point == 1)
        .count() as u64;
    let told = r.report.points[1].capture_loss;
    assert!(missed > 50, "{missed}");
    // Every frame sw missed that a and b both saw is told; the few it
    // missed that were then lost leave the place open.
    assert!(
        told + 20 >= missed && told <= missed,
        "told {told} of {missed}"
    );
    for s in [&r.report.points[0], &r.report.points[2]] {
        assert_eq!(s.capture_loss, 0, "{s:?}");
    }
    // Each request loss is still on its segment, or both segments are
    // named where sw may have missed it.
    for (qp, psn, _, ts, seg) in request_drops(&r) {
        let l = r
            .report
            .losses
            .iter()
            .find(|l| l.dest_qp == qp && l.psn == psn && l.ts_ns.abs_diff(ts) < 100_000)
            .unwrap_or_else(|| panic!("PSN {psn} on {seg} not found"));
        match l.kind {
            LossKind::Either => assert!(l.segment.contains(&seg), "{l:?}"),
            _ => assert_eq!(l.segment, seg, "{l:?}"),
        }
    }
    assert!(
        r.report
            .losses
            .iter()
            .any(|l| l.kind == LossKind::Either && l.segment == "a>sw or sw>b"),
        "some losses near sw's capture loss are open between a>sw and sw>b"
    );
}

/// The points of a run, each fed up to `cut_ns` of true time (or all).
fn points_of(sc: Scenario, cut_ns: &[Option<u64>]) -> Vec<Point> {
    struct Cut {
        feed: Feed,
        cut: Vec<Option<u64>>,
        clocks: Vec<PointSpec>,
    }
    impl RecordSink for Cut {
        fn frame(&mut self, _f: FrameRef<'_>) {}
        fn record(&mut self, _r: rocescope_replay::Record) {}
        fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
            let p = usize::from(point);
            if let Some(Some(cut)) = self.cut.get(p)
                && f.ts_ns > self.clocks[p].clock_ns(*cut)
            {
                return;
            }
            self.feed.point_frame(point, f);
        }
    }
    let clocks = sc.points.clone();
    let mut sink = Cut {
        feed: Feed {
            points: clocks.iter().map(|s| Point::in_memory(&s.name)).collect(),
        },
        cut: cut_ns.to_vec(),
        clocks,
    };
    let mut sim = Simulator::new(sc);
    sim.run_into(&mut sink);
    sink.feed
        .points
        .into_iter()
        .map(|(p, mut ingest)| {
            p.store.finish_live(&mut ingest);
            p
        })
        .collect()
}

#[test]
fn points_of_two_exchanges_are_told_apart() {
    let a = points_of(scenario("lossy-link", 300_000), &[]);
    let mut other = scenario("lossy-link", 300_000);
    other.seed = 99;
    let b = points_of(other, &[]);
    let mixed = vec![a[0].clone(), b[2].clone()];
    let e = analyse_points(&mixed, &PointsConfig::default()).expect_err("nothing shared");
    assert_eq!(
        e.to_string(),
        "a and b share no traffic: not the same exchange? (no frame was seen at two of them)"
    );
    // A third point of the same exchange as the first: the stranger is
    // left out and said, the others analysed.
    let mixed = vec![a[0].clone(), a[1].clone(), b[2].clone()];
    let r = analyse_points(&mixed, &PointsConfig::default()).expect("two share");
    assert!(!r.points[2].aligned);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("b shares no traffic with a or sw: not the same exchange?")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.losses.iter().all(|l| l.segment == "a>sw"),
        "{:?}",
        r.losses
    );
}

#[test]
fn points_out_of_path_order_are_named() {
    let p = points_of(scenario("lossy-link", 500_000), &[]);
    // The mirror given first: a frame from a reaches sw before a "sends" it.
    let shuffled = vec![p[1].clone(), p[0].clone(), p[2].clone()];
    let r = analyse_points(&shuffled, &PointsConfig::default()).expect("analysed");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("are the points given in path order?") && w.contains("sw")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn a_point_that_ends_early_is_said_and_its_overlap_analysed() {
    let sc = scenario("lossy-link", 3_000_000);
    let specs = sc.points.clone();
    let full = run(sc.clone());
    let cut = points_of(sc, &[None, None, Some(1_500_000)]);
    let r = analyse_points(&cut, &PointsConfig::default()).expect("analysed");
    assert!(r.points[2].ended_early, "{:?}", r.points[2]);
    assert!(
        r.warnings.iter().any(|w| w.starts_with("b ends early")),
        "{:?}",
        r.warnings
    );
    // No frame after b's end is called lost on its way to b, and the
    // losses of the overlap are those of the whole run.
    let b_end = r.points[2].last_ns;
    for l in &r.losses {
        assert!(l.segment == "a>sw" || l.ts_ns < b_end, "{l:?}");
    }
    let early: Vec<_> = full
        .report
        .losses
        .iter()
        .filter(|l| l.ts_ns + 300_000 < b_end)
        .map(|l| (l.psn, l.segment.clone()))
        .collect();
    for x in &early {
        assert!(
            r.losses.iter().any(|l| (l.psn, l.segment.clone()) == *x),
            "{x:?} lost in the overlap"
        );
    }
    assert!(early.len() > 5);
    let _ = specs;
}

#[test]
fn lumina_latencies_per_nak_episode() {
    let sc = scenario("lossy-link", 3_000_000);
    let mut sim = Simulator::new(sc.clone());
    sim.run(&mut |_| {});
    let mut truth = sim.stats().indication_to_packet_ns.clone();
    truth.sort_unstable();
    let r = run(sc);
    let eps = &r.report.episodes;
    let mut k: Vec<i64> = eps.iter().filter_map(|e| e.nak_reaction_ns).collect();
    k.sort_unstable();
    // On the wire the reaction is the simulator's own (the NAK's
    // indication to the resend's first bit) plus the NAK's way through the
    // requester's receive path, where it may wait behind ACKs.
    assert!(
        k.len() + 5 >= truth.len() && !k.is_empty(),
        "{k:?} {truth:?}"
    );
    let (ours, theirs) = (k[0], truth[0] as i64);
    assert!((0..200).contains(&(ours - theirs)), "{ours} vs {theirs}");
    assert!(eps.len() > 10, "{}", eps.len());
    let end = r.report.points[0].last_ns;
    for e in eps.iter().filter(|e| e.ts_ns + 50_000 < end) {
        // BALBOA NAKs a few cycles after the out-of-sequence arrival and
        // resends 1.86 us after the NAK (plus its receive path).
        let g = e.nak_generation_ns.expect("b shows the generation");
        let k = e.nak_reaction_ns.expect("a shows the reaction");
        assert!((0..5_000).contains(&g), "{e:?}");
        assert!((1_000..20_000).contains(&k), "{e:?}");
        assert_eq!(e.generation_at, Some(2));
        assert_eq!(e.reaction_at, Some(0));
        assert!(e.resend_span_ns.is_some_and(|s| s >= 0), "{e:?}");
    }
}

#[test]
fn a_capture_without_times_is_aligned_by_order() {
    // b as the card's converted pcap: its times are frame indices.
    let sc = scenario("lossy-link", 3_000_000);
    let specs = sc.points.clone();
    let mut feed = Feed {
        points: specs
            .iter()
            .map(|s| {
                if s.name == "b" {
                    Point::live(
                        &s.name,
                        rocescope_replay::store::Store::live(rocescope_replay::TimeBase::Ordinal),
                        usize::MAX,
                    )
                } else {
                    Point::in_memory(&s.name)
                }
            })
            .collect(),
    };
    struct Ordinal<'a>(&'a mut Feed, u64);
    impl RecordSink for Ordinal<'_> {
        fn frame(&mut self, _f: FrameRef<'_>) {}
        fn record(&mut self, _r: rocescope_replay::Record) {}
        fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
            if point == 2 {
                self.1 += 1;
                self.0.point_frame(point, FrameRef { ts_ns: self.1, ..f });
            } else {
                self.0.point_frame(point, f);
            }
        }
    }
    let mut sim = Simulator::new(sc);
    sim.run_into(&mut Ordinal(&mut feed, 0));
    let truth = sim.points_truth().cloned().expect("truth");
    let points: Vec<Point> = feed
        .points
        .into_iter()
        .map(|(p, mut ingest)| {
            p.store.finish_live(&mut ingest);
            p
        })
        .collect();
    let report = analyse_points(&points, &PointsConfig::default()).expect("analysed");
    assert!(
        report.points[2].ordinal && report.points[2].aligned,
        "{:?}",
        report.points[2]
    );
    let r = Run {
        report,
        truth,
        specs,
        end_ns: sim.now_ns(),
    };
    assert!(check_losses("ordinal b", &r) > 5);
    // No latency is read off a point without times.
    assert!(r.report.segments.iter().all(|s| s.from != 2 && s.to != 2));
    assert_eq!(r.report.points[2].capture_loss, 0);
}

#[test]
fn an_offset_given_by_hand_is_used() {
    let mut p = points_of(scenario("lossy-link", 500_000), &[]);
    p[2].fixed_offset_ns = Some(-1234);
    let r = analyse_points(&p, &PointsConfig::default()).expect("analysed");
    let b = &r.points[2];
    assert!(
        b.fixed && b.offset_ns == -1234 && b.drift_ppm == 0.0,
        "{b:?}"
    );
}

/// A live session: the analysis made again as frames arrive, one point's
/// feed a step behind the others' (its agent lags). A frame still on its
/// way to the point behind is not lost: every loss told at every step
/// happened, and the losses of the whole run are found at its end.
#[test]
fn a_live_analysis_calls_no_frame_in_flight_lost() {
    /// Point `late`'s frames held for one step.
    struct Lagging {
        feed: Feed,
        late: u8,
        held: Vec<(u64, u32, Vec<u8>)>,
    }
    impl RecordSink for Lagging {
        fn frame(&mut self, _f: FrameRef<'_>) {}
        fn record(&mut self, _r: rocescope_replay::Record) {}
        fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
            if point == self.late {
                self.held.push((f.ts_ns, f.orig_len, f.data.to_vec()));
            } else {
                self.feed.point_frame(point, f);
            }
        }
    }
    let sc = scenario("lossy-link", 3_000_000);
    let specs = sc.points.clone();
    let mut lag = Lagging {
        feed: Feed {
            points: specs.iter().map(|s| Point::in_memory(&s.name)).collect(),
        },
        late: 2,
        held: Vec::new(),
    };
    let points: Vec<Point> = lag.feed.points.iter().map(|(p, _)| p.clone()).collect();
    let mut sim = Simulator::new(sc);
    let (mut t_ns, mut told, mut steps) = (0u64, Vec::new(), 0);
    let release = |lag: &mut Lagging, held: Vec<(u64, u32, Vec<u8>)>| {
        for (ts_ns, orig_len, data) in &held {
            let f = FrameRef {
                ts_ns: *ts_ns,
                port: 0,
                direction: None,
                orig_len: *orig_len,
                data,
            };
            lag.feed.point_frame(lag.late, f);
        }
    };
    loop {
        t_ns += 250_000;
        let held = std::mem::take(&mut lag.held);
        let more = sim.run_until_into(t_ns, &mut lag);
        // The point behind gets the step before's frames now.
        release(&mut lag, held);
        for (p, ingest) in &mut lag.feed.points {
            p.store.flush_live(ingest);
        }
        if let Ok(r) = analyse_points(&points, &PointsConfig::default()) {
            steps += 1;
            told.extend(r.losses.iter().map(|l| (steps, l.clone())));
        }
        if !more {
            break;
        }
    }
    let held = std::mem::take(&mut lag.held);
    release(&mut lag, held);
    for (p, ingest) in &mut lag.feed.points {
        p.store.finish_live(ingest);
    }
    let truth = sim.points_truth().cloned().expect("truth");
    assert!(steps >= 8, "analysed at {steps} steps");
    for (step, l) in &told {
        assert!(
            truth.drops.iter().any(|d| l.dest_qp == d.dest_qp
                && l.psn == d.psn
                && l.ts_ns.abs_diff(specs[0].clock_ns(d.ts_ns)) < 100_000),
            "step {step}: a frame in flight called lost: {l:?}"
        );
    }
    let r = Run {
        report: analyse_points(&points, &PointsConfig::default()).expect("analysed"),
        truth,
        specs,
        end_ns: sim.now_ns(),
    };
    assert!(check_losses("live lossy-link", &r) > 5);
}
