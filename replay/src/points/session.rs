//! A session of points: each point a store with its RC analysis and the
//! tap that takes its sightings, and the analysis over all of them, for a
//! file or a live feed alike.

use std::path::Path;
use std::sync::Arc;

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::{AnalysisConfig, QpEnds};

use super::{PointInput, PointTap, PointsConfig, PointsError, PointsReport, SharedSightings};
use crate::TimeBase;
use crate::store::{Ingest, RcAnalyzer, Store, StoreError};
use crate::wave::WaveOptions;

/// One capture point: its store, its analysis and its sightings.
#[derive(Debug, Clone)]
pub struct Point {
    pub name: String,
    pub store: Arc<Store>,
    pub analysis: RcAnalyzer,
    pub sightings: SharedSightings,
    /// Its offset against the first point, given by hand.
    pub fixed_offset_ns: Option<i64>,
}

impl Point {
    /// A capture file as a point, indexed in the background; its index
    /// bounded in memory by `spill` when given (see [`Store::open_kept`]).
    pub fn open(
        name: &str,
        path: &Path,
        decode: DecodeConfig,
        wave: &WaveOptions,
        fixed_offset_ns: Option<i64>,
        analysis: AnalysisConfig,
        spill: Option<crate::store::SpillConfig>,
    ) -> Result<Point, StoreError> {
        let analysis = RcAnalyzer::with_config(analysis);
        let (tap, sightings) = PointTap::new(Box::new(analysis.clone()));
        let store = Store::open_kept(path, decode, Box::new(tap), wave, spill, None)?;
        Ok(Point {
            name: name.to_owned(),
            store,
            analysis,
            sightings,
            fixed_offset_ns,
        })
    }

    /// A live point fed through `Ingest` (the simulator, a link), keeping
    /// at most `max_sightings` (the newest).
    pub fn live(name: &str, store: Arc<Store>, max_sightings: usize) -> (Point, Ingest) {
        let analysis = RcAnalyzer::default();
        let (tap, sightings) = PointTap::bounded(Box::new(analysis.clone()), max_sightings);
        let ingest = Ingest::new(DecodeConfig::default(), Box::new(tap));
        (
            Point {
                name: name.to_owned(),
                store,
                analysis,
                sightings,
                fixed_offset_ns: None,
            },
            ingest,
        )
    }

    /// An in-memory live point (tests, the simulator's finite runs).
    pub fn in_memory(name: &str) -> (Point, Ingest) {
        Point::live(name, Store::live(TimeBase::Nanoseconds), usize::MAX)
    }
}

/// The analysis of `points` as they are now (a live session's so far).
/// Complete stores are read in place under their taps' locks (nothing
/// writes them any more); a growing one's sightings are copied first, so
/// that its ingest never waits for the analysis.
pub fn analyse_points(points: &[Point], cfg: &PointsConfig) -> Result<PointsReport, PointsError> {
    let complete = points.iter().all(|p| p.store.progress().complete);
    let guards: Vec<_> = points
        .iter()
        .map(|p| p.sightings.lock().unwrap_or_else(|e| e.into_inner()))
        .collect();
    let copies: Vec<(Vec<super::Sighting>, super::WideCounts)> = if complete {
        Vec::new()
    } else {
        guards
            .iter()
            .map(|g| (g.list.clone(), g.counts.clone()))
            .collect()
    };
    let let_go: Vec<u64> = guards.iter().map(|g| g.let_go).collect();
    let guards = if complete {
        guards
    } else {
        drop(guards);
        Vec::new()
    };
    let extra: Vec<(Vec<crate::store::Conversation>, Vec<QpEnds>, bool)> = points
        .iter()
        .map(|p| {
            (
                p.store.conversations(),
                p.analysis
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .qp_ends(),
                p.store.time_base() == TimeBase::Ordinal,
            )
        })
        .collect();
    let inputs: Vec<PointInput<'_>> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (convs, qps, ordinal) = &extra[i];
            PointInput {
                name: &p.name,
                sightings: match guards.get(i) {
                    Some(g) => &g.list,
                    None => &copies[i].0,
                },
                counts: match guards.get(i) {
                    Some(g) => Some(&g.counts),
                    None => Some(&copies[i].1),
                },
                conversations: convs,
                qps,
                ordinal: *ordinal,
                fixed_offset_ns: p.fixed_offset_ns,
                let_go: let_go[i],
            }
        })
        .collect();
    let cfg = PointsConfig {
        live: cfg.live || !complete,
        ..cfg.clone()
    };
    super::analyse(&inputs, &cfg)
}
