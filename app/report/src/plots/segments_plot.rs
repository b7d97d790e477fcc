//! One-way latency of each segment between capture points over time: a
//! line per segment and direction (its median per slice of time), so that
//! a queue building on one hop shows as that line rising.

use super::{PALETTE, TimeLines, TimePlot, headroom};
use crate::view::View;

pub(super) struct SegmentsPlot<'v> {
    pub chart: TimeLines<'v>,
}

impl<'v> SegmentsPlot<'v> {
    pub fn new(view: &'v View<'v>) -> SegmentsPlot<'v> {
        let mut lines = Vec::new();
        let mut max = 0f64;
        if let Some(r) = view.points {
            for (k, s) in r.segments.iter().enumerate() {
                let pts: Vec<(f64, f64)> = s
                    .series
                    .iter()
                    .map(|&(t, p50, _)| (view.time.x(t), p50.max(0) as f64 / 1e3))
                    .collect();
                max = pts.iter().map(|p| p.1).fold(max, f64::max);
                lines.push((
                    format!(
                        "{}  p50 {}",
                        s.name,
                        rocescope_replay::text::signed_duration_text(s.p50_ns)
                    ),
                    PALETTE[k % PALETTE.len()],
                    pts,
                ));
            }
        }
        SegmentsPlot {
            chart: TimeLines {
                view,
                title: "One-way latency per segment (median per slice)",
                y_desc: "latency (µs)",
                y_max: headroom(max),
                lines,
                limit: None,
            },
        }
    }
}

impl TimePlot for SegmentsPlot<'_> {
    const NAME: &'static str = "segment_latency";
    fn chart(&self) -> &TimeLines<'_> {
        &self.chart
    }
}
