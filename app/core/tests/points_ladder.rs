//! The ladder of a session of capture points draws, among the first
//! point's frames, a response lost before it reached the first point (an
//! ACK lost on `sw>a`): the first point's capture has no row of it, the
//! points that saw it do.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use rocescope_core::query::{UNSEEN_ROW, ladder_qp, ladder_rows};
use rocescope_core::source::SourceHandle;
use rocescope_core::{Command, Model};

/// The scenario, shared with the terminal workbench's test.
const SCENARIO: &str = include_str!("ack-lost-toward-alice.toml");

#[test]
fn a_response_lost_on_sw_a_is_drawn_on_the_ladder() {
    let sc = rocescope_sim::Scenario::from_toml(SCENARIO, "ack-lost.toml").unwrap();
    let run = rocescope_core::lesson::points::run(sc).unwrap();
    let loss = run
        .report
        .losses
        .iter()
        .find(|l| l.segment == "sw>a")
        .unwrap_or_else(|| panic!("no loss on sw>a: {:?}", run.report.losses))
        .clone();
    assert!(!loss.request, "{loss:?}");
    let first = run.points.into_iter().next().unwrap();
    let mut m = Model::new(
        first.store,
        first.analysis,
        SourceHandle::file("a.pcapng".into()),
    );
    m.set_points(run.report);
    m.tick(Instant::now());
    // The first point's frame at the loss's time, selected: the ladder
    // is drawn around it.
    let mut rows = Vec::new();
    m.store().rows(0..m.horizon(), &mut rows);
    let at = rows.partition_point(|r| r.ts_ns < loss.ts_ns) as u64;
    m.apply(Command::SelectRow(at));
    m.tick(Instant::now());
    let q = ladder_qp(&m).unwrap();
    let ladder = ladder_rows(&m, q, 40);
    let lost = ladder
        .iter()
        .find(|r| r.unseen.is_some())
        .unwrap_or_else(|| panic!("the ACK lost on sw>a is not on the ladder"));
    assert_eq!(lost.index, UNSEEN_ROW);
    assert_eq!((lost.row.psn, lost.row.opcode), (loss.psn, loss.opcode));
    assert!(!lost.rightward);
    let span = lost.lane_span(&m).unwrap();
    // From b's lane, seen at sw, vanished before a.
    assert_eq!((span.from, span.to), (2, 1), "{span:?}");
    assert!(span.vanished && !span.rightward, "{span:?}");
    // Among the first point's frames, in time order.
    assert!(ladder.windows(2).all(|w| w[0].row.ts_ns <= w[1].row.ts_ns));
    assert!(ladder.iter().filter(|r| r.unseen.is_none()).count() > 10);
}
