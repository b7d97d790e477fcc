//! The simulator's capture points: each point's frames, clock and capture
//! loss, faults at a named place, and the truth of every drop. (The
//! multi-point analysis against this truth: `points_truth.rs`.)

use rocescope_decoders::{DecodeConfig, LinkLayer, decode};
use rocescope_replay::Record;
use rocescope_sim::points::{DropPlace, DropWhy, PointsTruth, Tap};
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

#[derive(Default)]
struct Sink {
    records: Vec<Record>,
    /// (point, ts_ns, dest_qp, psn, opcode, orig_len, bytes kept)
    points: Vec<(u8, u64, u32, u32, u8, u32, usize)>,
}

impl RecordSink for Sink {
    fn frame(&mut self, f: FrameRef<'_>) {
        self.records.push(f.to_record());
    }
    fn record(&mut self, r: Record) {
        self.records.push(r);
    }
    fn point_frame(&mut self, point: u8, f: FrameRef<'_>) {
        let p = decode(f.data, LinkLayer::Ethernet, &DecodeConfig::default());
        let bth = p.bth().expect("a point's frame is RoCE");
        self.points.push((
            point,
            f.ts_ns,
            bth.dest_qp(),
            bth.psn(),
            bth.opcode().0,
            f.orig_len,
            f.data.len(),
        ));
    }
}

fn run(sc: Scenario) -> (Sink, Option<PointsTruth>) {
    let mut sim = Simulator::new(sc);
    let mut sink = Sink::default();
    sim.run_into(&mut sink);
    (sink, sim.points_truth().cloned())
}

fn with_points(name: &str, list: &str, duration_ns: u64) -> Scenario {
    let mut sc = Scenario::builtin(name).expect("shipped");
    sc.bound_to_ns(duration_ns);
    sc.set_points(list).expect("points");
    sc
}

#[test]
fn points_change_nothing_of_the_run() {
    let mut plain = Scenario::builtin("lossy-link").expect("shipped");
    plain.bound_to_ns(400_000);
    let (a, none) = run(plain);
    assert!(none.is_none());
    let (b, truth) = run(with_points("lossy-link", "a,sw,b", 400_000));
    assert!(
        a.records == b.records,
        "the same records with points as without"
    );
    assert!(a.points.is_empty());
    let truth = truth.expect("truth");
    assert_eq!(truth.frames.iter().sum::<u64>(), b.points.len() as u64);
}

#[test]
fn each_point_sees_its_place_in_its_own_clock() {
    let mut sc = with_points("lossy-link", "a,sw,b", 500_000);
    sc.set_point("a.offset_ns=0").expect("a");
    sc.set_point("a.drift_ppm=0").expect("a");
    sc.set_point("b.drift_ppm=50").expect("b");
    sc.set_point("b.offset_ns=1000000").expect("b");
    let (sink, truth) = run(sc.clone());
    let truth = truth.expect("truth");
    let at = |i: u8| sink.points.iter().filter(|p| p.0 == i).collect::<Vec<_>>();
    let (a, sw, b) = (at(0), at(1), at(2));
    // Header-only frames: Ethernet to the extended headers, the wire
    // length kept.
    for p in &sink.points {
        assert!(p.6 <= 70 && p.6 >= 54, "{p:?}");
        assert!(p.5 as usize >= p.6);
    }
    // a sends everything it captures or loses; with a lossy link toward
    // the switch, the mirror sees fewer requests than a sent.
    let requests =
        |v: &[&(u8, u64, u32, u32, u8, u32, usize)]| v.iter().filter(|p| p.4 <= 0x0C).count();
    let lost_a_sw = truth
        .drops
        .iter()
        .filter(|d| {
            d.place
                == DropPlace::Link {
                    node: 0,
                    to_switch: true,
                }
                && d.opcode <= 0x0C
        })
        .count();
    assert!(lost_a_sw > 0, "lossy-link loses requests on a>sw");
    assert_eq!(requests(&a), requests(&sw) + lost_a_sw);
    // Clocks: each point's times are monotonic; b's run at +50 ppm from
    // 1 ms, so its first frame is about 1 ms later than a's clock says.
    for v in [&a, &sw, &b] {
        assert!(v.windows(2).all(|w| w[0].1 <= w[1].1));
    }
    let first_b = b.first().expect("b saw frames").1;
    assert!(first_b > 1_000_000, "{first_b}");
    assert_eq!(
        sc.points[2].clock_ns(400_000),
        1_000_000 + 400_000 + 20,
        "50 ppm of 400 us is 20 ns"
    );
}

#[test]
fn capture_loss_is_a_points_own_and_told() {
    let mut sc = with_points("default", "a,sw,b", 300_000);
    sc.set_point("sw.capture_loss=0.05").expect("sw");
    let (sink, truth) = run(sc);
    let truth = truth.expect("truth");
    let missed = truth.capture_drops.len();
    assert!(missed > 20, "{missed}");
    assert!(truth.capture_drops.iter().all(|c| c.point == 1));
    assert_eq!(
        truth.frames[1] as usize,
        sink.points.iter().filter(|p| p.0 == 1).count()
    );
}

#[test]
fn faults_drop_at_their_named_place() {
    let text = rocescope_testkit::alice_to_bob("three-places", 3, 400_000)
        + r#"
size_bytes = 65536
queue_depth = 2
[[fault]]
kind = "loss"
node = "alice"
direction = "to_switch"
nth = 5
[[fault]]
kind = "loss"
node = "bob"
at = "switch"
nth = 40
[[fault]]
kind = "loss"
node = "bob"
at = "stack"
nth = 80
[[point]]
name = "a"
tap = "alice"
[[point]]
name = "sw"
tap = "switch"
[[point]]
name = "b"
tap = "bob"
"#;
    let sc = Scenario::from_toml(&text, "three-places.toml").expect("loads");
    assert_eq!(sc.points.len(), 3);
    assert_eq!(sc.points[1].tap, Tap::Switch);
    let points = sc.points.clone();
    let (_, truth) = run(sc);
    let truth = truth.expect("truth");
    let segments: Vec<String> = truth
        .drops
        .iter()
        .filter_map(|d| PointsTruth::segment(d, &points))
        .collect();
    assert!(segments.contains(&"a>sw".to_owned()), "{segments:?}");
    assert!(segments.contains(&"sw>b".to_owned()), "{segments:?}");
    assert!(segments.contains(&"b".to_owned()), "{segments:?}");
    assert!(
        truth
            .drops
            .iter()
            .any(|d| d.place == DropPlace::Stack { node: 1 } && d.why == DropWhy::Lost)
    );
}

#[test]
fn bad_points_and_places_are_named() {
    let mut sc = Scenario::builtin("default").expect("shipped");
    let e = sc.set_points("a,router,b").expect_err("no router");
    assert!(e.contains("`router` is no place to capture"), "{e}");
    assert!(sc.set_points("a").is_err());
    assert!(sc.set_points("a,a").expect_err("twice").contains("twice"));
    sc.set_points("a,sw,b").expect("ok");
    let e = sc.set_point("sw.drift_ppm=5000").expect_err("too far");
    assert!(e.contains("ppm"), "{e}");
    let e = sc.set_point("c.drift_ppm=5").expect_err("no c");
    assert!(e.contains("no point `c`"), "{e}");
    let base = "[[node]]\nname = \"x\"\nkind = \"balboa\"\n[[node]]\nname = \"y\"\nkind = \"balboa\"\n[[qp]]\nfrom = \"x\"\nto = \"y\"\n";
    let e = Scenario::from_toml(
        &format!(
            "{base}[[fault]]\nkind = \"corrupt\"\nnode = \"y\"\nat = \"stack\"\nprobability = 0.1\n"
        ),
        "f.toml",
    )
    .expect_err("corrupt in a stack");
    assert_eq!(e.key, "fault[0].at");
    let e = Scenario::from_toml(
        &format!("{base}[[point]]\nname = \"p\"\ntap = \"z\"\n"),
        "f.toml",
    )
    .expect_err("no node z");
    assert_eq!(e.key, "point[0].tap");
    assert!(e.message.contains("no place to capture"), "{e}");
}
