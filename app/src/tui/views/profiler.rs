//! Profiler: the probes' values over time.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Paragraph, Sparkline};
use rocescope_core::Model;

use super::{GREEN, title};

pub(super) fn profiler(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let mut area = area;
    if let Some(s) = model.signals() {
        // The waveform's signals first; the probes, if any, below them.
        if model.probes().is_empty() {
            super::signals::signals(f, model, s, area);
            return;
        }
        let parts = Layout::vertical([Constraint::Percentage(60), Constraint::Min(3)]).split(area);
        super::signals::signals(f, model, s, parts[0]);
        area = parts[1];
    }
    let defs = model.probes();
    if defs.is_empty() {
        f.render_widget(
            Paragraph::new("No profiler probes in this source.").block(title("Profiler")),
            area,
        );
        return;
    }
    let cursor = model.cursor_ns();
    let per = 3u16;
    let n = (area.height / per).max(1) as usize;
    let areas = Layout::vertical(vec![Constraint::Length(per); n.min(defs.len())]).split(area);
    for (p, a) in defs.iter().zip(areas.iter()) {
        let name = &p.name;
        // Step chart: the value held until the next sample, over the last columns.
        let n = p.samples().partition_point(|s| s.ts_ns <= cursor);
        let vals: Vec<(u64, i64)> = p.samples()[..n]
            .iter()
            .map(|s| (s.ts_ns, s.value))
            .collect();
        let width = usize::from(a.width.saturating_sub(2));
        let span_ns = 200_000u64;
        let start = cursor.saturating_sub(span_ns);
        let mut data = vec![0u64; width];
        let mut vi = 0;
        let mut cur = 0i64;
        for (x, slot) in data.iter_mut().enumerate() {
            let t = start + span_ns * x as u64 / width.max(1) as u64;
            while vi < vals.len() && vals[vi].0 <= t {
                cur = vals[vi].1;
                vi += 1;
            }
            *slot = cur.max(0) as u64;
        }
        let last = vals.last().map_or(0, |v| v.1);
        f.render_widget(
            Sparkline::default()
                .data(&data)
                .style(Style::default().fg(GREEN))
                .block(title(format!(
                    "{name} = {last} (last 200 µs to the cursor)"
                ))),
            *a,
        );
    }
}
