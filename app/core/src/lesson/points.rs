//! A lesson whose scenario has capture points (`[[point]]`): the run seen
//! at each point, each point's frames in a store of its own (as `sim
//! --points` writes them), the points analysed as one session; the lesson
//! shows the first point's capture with the points beside it, and its
//! facts are that capture's and the points'.

use rocescope_replay::points::{Point, PointsConfig, PointsReport, analyse_points};
use rocescope_sim::{PointStores, Scenario, Simulator};

use super::LessonError;

/// A scenario's run at its points, analysed.
#[derive(Debug)]
pub struct PointsRun {
    pub points: Vec<Point>,
    pub report: PointsReport,
}

/// Run `sc` (which has points) to its end and analyse its points.
pub fn run(sc: Scenario) -> Result<PointsRun, LessonError> {
    let name = sc.name.clone();
    let mut stores = PointStores::new(&sc);
    Simulator::new(sc).run_into(&mut stores);
    let points = stores.finish();
    let report =
        analyse_points(&points, &PointsConfig::default()).map_err(|e| LessonError::Run {
            message: format!("scenario {name}'s capture points: {e}"),
        })?;
    Ok(PointsRun { points, report })
}
