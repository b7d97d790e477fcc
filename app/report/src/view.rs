//! What the page and the plots both derive from the capture: the time axis,
//! the QPs the plots draw, the worst episode, names for people.

use rocescope_decoders::analysis::{EpisodeRow, FindingRow, QpRow, Report};
use rocescope_replay::TimeBase;
use rocescope_replay::store::{Store, StoreStats};
use rocescope_replay::text::duration_text;

use crate::Input;

/// At most this many QPs get a line in a plot (the busiest); the table
/// lists them all.
pub const MAX_PLOTTED: usize = 8;

/// Time as the plots show it: relative to the first packet, in a unit that
/// keeps the tick labels short; or frame indices for captures without time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeAxis {
    pub t0_ns: u64,
    pub t1_ns: u64,
    pub ordinal: bool,
    /// Nanoseconds per axis unit.
    pub unit_ns: f64,
    pub unit: &'static str,
}

impl TimeAxis {
    fn new(stats: &StoreStats, ordinal: bool) -> TimeAxis {
        let t0_ns = stats.first_ts_ns.unwrap_or(0);
        // Frame k of an ordinal capture spans [k, k + 1).
        let last = stats.last_ts_ns.unwrap_or(t0_ns) + u64::from(ordinal);
        let t1_ns = last.max(t0_ns + 1);
        let span_ns = t1_ns - t0_ns;
        let (unit_ns, unit) = if ordinal {
            (1.0, "frame")
        } else if span_ns >= 10_000_000_000 {
            (1e9, "s")
        } else if span_ns >= 10_000_000 {
            (1e6, "ms")
        } else {
            (1e3, "µs")
        };
        TimeAxis {
            t0_ns,
            t1_ns,
            ordinal,
            unit_ns,
            unit,
        }
    }

    /// Axis position of `ts_ns`.
    pub fn x(&self, ts_ns: u64) -> f64 {
        (ts_ns as f64 - self.t0_ns as f64) / self.unit_ns
    }

    /// End of the axis.
    pub fn x_max(&self) -> f64 {
        self.x(self.t1_ns)
    }

    pub fn label(&self) -> String {
        if self.ordinal {
            "frame index (the capture has no timestamps)".to_owned()
        } else {
            format!("time since the first packet ({})", self.unit)
        }
    }
}

pub struct View<'a> {
    pub name: &'a str,
    pub store: &'a Store,
    pub report: &'a Report,
    /// The report's rows, as `stats --json` gives them: the page's tables
    /// read these.
    pub qps: Vec<QpRow>,
    pub episodes: Vec<EpisodeRow>,
    pub findings: Vec<FindingRow>,
    pub stats: StoreStats,
    pub format: String,
    pub time: TimeAxis,
    /// Indices into `report.qps` the plots draw, busiest first.
    pub plotted: Vec<usize>,
    /// Index into `report.episodes` of the episode the ladder shows.
    pub worst: Option<usize>,
    pub warnings: Vec<String>,
    /// Why indexing stopped early, if it did.
    pub index_error: Option<String>,
    /// A session of capture points, this capture the first.
    pub points: Option<&'a rocescope_replay::points::PointsReport>,
}

impl<'a> View<'a> {
    pub fn new(input: &Input<'a>) -> View<'a> {
        let store = input.store;
        let report = input.report;
        let stats = store.stats();
        let ordinal = store.time_base() == TimeBase::Ordinal;
        let mut plotted: Vec<usize> = (0..report.qps.len()).collect();
        plotted.sort_by_key(|&i| std::cmp::Reverse(report.qps[i].wire_bytes));
        plotted.truncate(MAX_PLOTTED);
        // The worst episode: most packets resent, then the longest recovery,
        // then the earliest.
        let worst = report
            .episodes
            .iter()
            .enumerate()
            .max_by_key(|(i, e)| (e.packets_resent, e.recovery_ns, std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        View {
            name: input.name,
            store,
            report,
            qps: report.qp_rows(),
            episodes: report.episode_rows(),
            findings: report.finding_rows(),
            stats,
            format: store.format().map(|f| f.to_string()).unwrap_or_default(),
            time: TimeAxis::new(&stats, ordinal),
            plotted,
            worst,
            warnings: store.warnings().iter().map(|w| w.to_string()).collect(),
            index_error: store.progress().error,
            points: input.points,
        }
    }

    /// A duration in words: µs below a millisecond, ms below a second.
    /// Ordinal captures have no durations, only frame counts.
    pub fn duration(&self, ns: u64) -> String {
        if self.time.ordinal {
            return format!("{ns} frames");
        }
        duration_text(ns)
    }
}
