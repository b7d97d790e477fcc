//! A session of three capture points for the workbenches' tests: the
//! simulator's `lossy-link` (3 ms) written at points `a`, `sw` and `b`,
//! each read back as a capture and analysed as one session; the model
//! shows `a`'s capture with the points' analysis, as `open --point` does.

use std::time::Instant;

use rocescope_core::Model;
use rocescope_core::source::SourceHandle;
use rocescope_decoders::DecodeConfig;
use rocescope_replay::points::{Point, PointsConfig, analyse_points};

/// The model, its captures in a temporary folder (removed when the
/// returned folder is dropped).
pub(crate) fn model(label: &str) -> (Model, impl Sized + use<>) {
    let tmp = rocescope_testkit::temp_dir(label);
    let dir = tmp.path().to_path_buf();
    let mut sc = rocescope_sim::Scenario::resolve("lossy-link").unwrap();
    sc.bound_to_ns(3_000_000);
    sc.set_points("a,sw,b").unwrap();
    rocescope_sim::points::write_points(sc, &dir).unwrap();
    let points: Vec<Point> = ["a", "sw", "b"]
        .iter()
        .map(|n| {
            let p = Point::open(
                n,
                &dir.join(format!("{n}.pcapng")),
                DecodeConfig::default(),
                &Default::default(),
                None,
                Default::default(),
                None,
            )
            .unwrap();
            p.store.wait();
            p
        })
        .collect();
    let report = analyse_points(&points, &PointsConfig::default()).unwrap();
    let first = points.into_iter().next().unwrap();
    crate::keep_test_progress_apart();
    let mut m = Model::new(
        first.store,
        first.analysis,
        SourceHandle::file("a.pcapng".into()),
    );
    m.forget_lesson_progress();
    m.set_points(report);
    m.tick(Instant::now());
    (m, tmp)
}
