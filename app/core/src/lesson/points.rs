//! A lesson whose scenario has capture points (`[[point]]`): the run seen
//! at each point, each point's frames in a store of its own (as `sim
//! --points` writes them), the points analysed as one session; the lesson
//! shows the first point's capture with the points beside it, and its
//! facts are that capture's and the points'.

use rocescope_replay::points::{Point, PointsConfig, PointsReport, analyse_points};
use rocescope_replay::store::{Ingest, IngestFrame};
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

use super::LessonError;

/// Each point's frames into its own store.
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
        p.store.ingest(
            ingest,
            &IngestFrame {
                ts_ns: f.ts_ns,
                data: f.data,
                origlen: f.orig_len,
                linktype: 1,
                port: 0,
                dir: None,
                file_offset: 0,
            },
        );
    }
}

/// A scenario's run at its points, analysed.
#[derive(Debug)]
pub struct PointsRun {
    pub points: Vec<Point>,
    pub report: PointsReport,
}

/// Run `sc` (which has points) to its end and analyse its points.
pub fn run(sc: Scenario) -> Result<PointsRun, LessonError> {
    let name = sc.name.clone();
    let mut feed = Feed {
        points: sc
            .points
            .iter()
            .map(|p| Point::in_memory(&p.name))
            .collect(),
    };
    let mut sim = Simulator::new(sc);
    sim.run_into(&mut feed);
    for (p, ingest) in &mut feed.points {
        p.store.finish_live(ingest);
    }
    let points: Vec<Point> = feed.points.into_iter().map(|(p, _)| p).collect();
    let report =
        analyse_points(&points, &PointsConfig::default()).map_err(|e| LessonError::Run {
            message: format!("scenario {name}'s capture points: {e}"),
        })?;
    Ok(PointsRun { points, report })
}
