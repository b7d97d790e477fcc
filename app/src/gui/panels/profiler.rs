//! The profiler as a logic-analyser waveform: one row per probe, the value
//! held until the next sample (step lines), min/max per pixel column when
//! zoomed out, cycle grid and values at deep zoom. Linked to the packets:
//! selecting a packet centres the waveform on it; a click in the waveform
//! selects the packet at that time.

use eframe::egui;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Shape, Stroke, Ui, pos2};
use rocescope_core::query;
use rocescope_core::records::Sample;
use rocescope_core::{Command, Model};

use super::{CYAN, DIM, GREEN, PanelState};

/// The waveform's visible time window (absolute ns).
#[derive(Debug, Default, Clone, Copy)]
pub struct WaveState {
    pub start_ns: f64,
    pub end_ns: f64,
    init: bool,
    /// The width of the probes' names (px): the longest, up to 40 % of
    /// the panel; the waveform starts after it.
    pub name_w: f32,
}

impl WaveState {
    fn span(&self) -> f64 {
        (self.end_ns - self.start_ns).max(1.0)
    }

    fn center_on(&mut self, t: f64) {
        let half = self.span() / 2.0;
        self.start_ns = t - half;
        self.end_ns = t + half;
    }
}

/// How many samples of one column are looked at for its min/max, at most.
const MAX_PER_COLUMN: usize = 64;

/// Per pixel column: (min, max, value at the column's end), or `None`
/// where nothing changes in the column. Bounded work per column.
pub fn columns(
    samples: &[Sample],
    start_ns: f64,
    ns_per_px: f64,
    width: usize,
) -> Vec<Option<(i64, i64, i64)>> {
    let mut out = Vec::with_capacity(width);
    for c in 0..width {
        let a = start_ns + c as f64 * ns_per_px;
        let b = a + ns_per_px;
        let ia = samples.partition_point(|s| (s.ts_ns as f64) <= a);
        let ib = samples.partition_point(|s| (s.ts_ns as f64) <= b);
        if ib <= ia {
            out.push(None);
            continue;
        }
        let held = if ia > 0 {
            samples[ia - 1].value
        } else {
            samples[ia].value
        };
        let (mut lo, mut hi) = (held, held);
        let stride = ((ib - ia) / MAX_PER_COLUMN).max(1);
        let mut k = ia;
        while k < ib {
            lo = lo.min(samples[k].value);
            hi = hi.max(samples[k].value);
            k += stride;
        }
        let end = samples[ib - 1].value;
        lo = lo.min(end);
        hi = hi.max(end);
        out.push(Some((lo, hi, end)));
    }
    out
}

pub fn show(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    if let Some(s) = model.signals() {
        // The waveform's signals first; the probes, if any, below them.
        if model.probes().is_empty() {
            super::signals::show(ui, model, s, st, out);
            return;
        }
        let h = ui.available_height() * 0.6;
        ui.allocate_ui(egui::vec2(ui.available_width(), h), |ui| {
            super::signals::show(ui, model, s, st, out);
        });
        ui.separator();
    }
    let probes = &model.probes();
    if probes.is_empty() {
        ui.weak("No profiler probes in this source (the simulator records them: `rocescope gui --sim default`).");
        return;
    }
    let (first, last) = rocescope_core::records::samples_span_ns(probes);
    let (first, last) = (first as f64, last as f64);
    let cursor = model.cursor_ns() as f64;
    let w = &mut st.wave;
    let live = model.source().live && model.follow_live();
    if live && w.init && w.span() > 1000.0 {
        // Follow the newest data, keeping the zoom.
        let span = w.span();
        w.end_ns = cursor;
        w.start_ns = cursor - span;
    }
    if !w.init && last > first + 1000.0 {
        // The last 200 µs up to the cursor, or everything if shorter.
        w.end_ns = cursor.min(last).max(first + 1.0);
        w.start_ns = (w.end_ns - 200_000.0).max(first);
        w.init = true;
    }
    let selected_ts = model
        .selected()
        .and_then(|s| model.store().row(s))
        .map(|r| r.ts_ns as f64);
    if st.selection_moved
        && let Some(t) = selected_ts
    {
        w.center_on(t);
    }
    ui.horizontal(|ui| {
        if ui
            .button("fit")
            .on_hover_text("the whole recording (double-click)")
            .clicked()
        {
            w.start_ns = first;
            w.end_ns = last.max(first + 1.0);
        }
        if ui.button("+").on_hover_text("zoom in (wheel)").clicked() {
            let c = (w.start_ns + w.end_ns) / 2.0;
            let h = w.span() / 4.0;
            (w.start_ns, w.end_ns) = (c - h, c + h);
        }
        if ui.button("-").on_hover_text("zoom out (wheel)").clicked() {
            let c = (w.start_ns + w.end_ns) / 2.0;
            let h = w.span();
            (w.start_ns, w.end_ns) = (c - h, c + h);
        }
        if ui.button("to cursor").clicked() {
            w.center_on(cursor);
        }
        ui.weak(format!(
            "{} µs shown; drag to pan, wheel to zoom, click selects the packet at that time",
            (w.span() / 1e3).round()
        ));
    });
    let (rect, resp) = ui.allocate_exact_size(ui.available_size(), Sense::click_and_drag());
    // The names' column as wide as the longest name (a longer one than 40 %
    // of the panel is cut with an ellipsis), so that no name runs into the
    // waveform and its values.
    let name_font = FontId::proportional(12.0);
    let longest = ui.fonts(|f| {
        probes
            .iter()
            .map(|p| {
                f.layout_no_wrap(p.name.clone(), name_font.clone(), Color32::WHITE)
                    .size()
                    .x
            })
            .fold(0.0, f32::max)
    });
    let name_w = (longest + 16.0).clamp(60.0, (rect.width() * 0.4).max(60.0));
    w.name_w = name_w;
    let axis_h = 18.0;
    let plot = Rect::from_min_max(pos2(rect.left() + name_w, rect.top() + axis_h), rect.max);
    if plot.width() < 10.0 || plot.height() < 10.0 {
        return;
    }
    let width = plot.width() as usize;
    // Interaction: wheel zooms around the pointer, drag pans.
    if resp.hovered() {
        let dy = ui.input(|i| i.smooth_scroll_delta.y);
        if dy != 0.0
            && let Some(p) = resp.hover_pos()
        {
            let frac = ((p.x - plot.left()) / plot.width()).clamp(0.0, 1.0) as f64;
            let at = w.start_ns + frac * w.span();
            let k = (-(dy as f64) * 0.003).exp();
            let span = (w.span() * k).max(width as f64 * 0.01);
            w.start_ns = at - frac * span;
            w.end_ns = w.start_ns + span;
        }
    }
    if resp.dragged() {
        let dx = resp.drag_delta().x as f64 * w.span() / plot.width() as f64;
        w.start_ns -= dx;
        w.end_ns -= dx;
    }
    if resp.double_clicked() {
        w.start_ns = first;
        w.end_ns = last.max(first + 1.0);
    } else if resp.clicked()
        && let Some(p) = resp.interact_pointer_pos()
    {
        let t = w.start_ns + ((p.x - plot.left()) / plot.width()) as f64 * w.span();
        let row = model.store().seek_time(t.max(0.0) as u64);
        if row < model.store().len() {
            out.push(Command::SelectRow(row));
        }
    }
    let ns_per_px = w.span() / plot.width() as f64;
    let x_of = |t: f64| plot.left() + ((t - w.start_ns) / ns_per_px) as f32;
    let painter = ui.painter_at(rect);
    let text = ui.visuals().text_color();
    painter.rect_filled(plot, 0.0, ui.visuals().extreme_bg_color);
    time_axis(&painter, model, plot, w.start_ns, ns_per_px, text);
    let n = probes.len();
    let row_h = ((plot.height() / n as f32).clamp(22.0, 48.0)).min(plot.height());
    // Cycle grid at deep zoom (a cycle wider than 6 px).
    let period = probes.iter().find_map(|p| p.ns_per_cycle);
    let cycle_accurate = period.is_some_and(|per| per / ns_per_px >= 6.0);
    if let (true, Some(per)) = (cycle_accurate, period) {
        let s0 = probes.iter().find_map(|p| p.samples().first().copied());
        if let Some(s0) = s0 {
            let k0 = ((w.start_ns - s0.ts_ns as f64) / per).floor();
            let mut k = k0;
            loop {
                let t = s0.ts_ns as f64 + k * per;
                if t > w.end_ns {
                    break;
                }
                let x = x_of(t);
                painter.line_segment(
                    [pos2(x, plot.top()), pos2(x, plot.bottom())],
                    Stroke::new(1.0, Color32::from_white_alpha(12)),
                );
                k += 1.0;
            }
        }
    }
    let hover = resp.hover_pos();
    for (i, p) in probes.iter().enumerate() {
        let top = plot.top() + i as f32 * row_h;
        if top + row_h > plot.bottom() + 0.5 {
            break;
        }
        let band = Rect::from_min_max(
            pos2(plot.left(), top + 3.0),
            pos2(plot.right(), top + row_h - 3.0),
        );
        let mut job =
            egui::text::LayoutJob::simple_singleline(p.name.clone(), name_font.clone(), text);
        job.wrap = egui::text::TextWrapping::truncate_at_width(name_w - 12.0);
        let galley = ui.fonts(|f| f.layout_job(job));
        painter.galley(
            pos2(rect.left() + 4.0, band.center().y - galley.size().y / 2.0),
            galley,
            text,
        );
        painter.line_segment(
            [
                pos2(plot.left(), top + row_h),
                pos2(plot.right(), top + row_h),
            ],
            Stroke::new(1.0, Color32::from_white_alpha(20)),
        );
        let range = (p.max - p.min).max(1) as f32;
        let y_of = |v: i64| band.bottom() - (v - p.min) as f32 / range * band.height();
        let cols = columns(p.samples(), w.start_ns, ns_per_px, width);
        let ia = p
            .samples()
            .partition_point(|s| (s.ts_ns as f64) <= w.start_ns);
        let mut v = if ia > 0 {
            Some(p.samples()[ia - 1].value)
        } else {
            None
        };
        let mut path: Vec<Pos2> = Vec::new();
        let mut paths: Vec<Vec<Pos2>> = Vec::new();
        let mut x_start = plot.left();
        if let Some(v0) = v {
            path.push(pos2(x_start, y_of(v0)));
        }
        for (c, col) in cols.iter().enumerate() {
            let x = plot.left() + c as f32;
            if let Some((lo, hi, end)) = col {
                match v {
                    Some(prev) => path.push(pos2(x, y_of(prev))),
                    None => {
                        x_start = x;
                        let _ = x_start;
                    }
                }
                if lo != hi || v != Some(*end) {
                    if !path.is_empty() {
                        paths.push(std::mem::take(&mut path));
                    }
                    painter.line_segment(
                        [pos2(x, y_of(*lo)), pos2(x, y_of(*hi))],
                        Stroke::new(1.0, GREEN),
                    );
                }
                path.push(pos2(x, y_of(*end)));
                v = Some(*end);
            }
        }
        if let Some(vl) = v {
            let last_t = p.samples().last().map_or(w.end_ns, |s| s.ts_ns as f64);
            let x_end = x_of(last_t.max(cursor).min(w.end_ns)).min(plot.right());
            path.push(pos2(
                x_end.max(path.last().map_or(x_end, |q| q.x)),
                y_of(vl),
            ));
        }
        paths.push(path);
        for pts in paths {
            if pts.len() >= 2 {
                painter.add(Shape::line(pts, Stroke::new(1.5, GREEN)));
            }
        }
        // Values written in segments wide enough to hold them.
        let ib = p
            .samples()
            .partition_point(|s| (s.ts_ns as f64) <= w.end_ns);
        if ib.saturating_sub(ia) < width / 8 {
            for k in ia.saturating_sub(1)..ib {
                let s = p.samples()[k];
                let x0 = x_of(s.ts_ns as f64).max(plot.left());
                let x1 = p
                    .samples()
                    .get(k + 1)
                    .map_or(plot.right(), |n| x_of(n.ts_ns as f64))
                    .min(plot.right());
                if x1 - x0 > 40.0 {
                    painter.text(
                        pos2(x0 + 3.0, band.top()),
                        Align2::LEFT_TOP,
                        s.value.to_string(),
                        FontId::monospace(10.0),
                        DIM,
                    );
                }
            }
        }
        if let Some(hp) = hover
            && hp.y >= top
            && hp.y < top + row_h
            && hp.x >= plot.left()
        {
            let t = w.start_ns + (hp.x - plot.left()) as f64 * ns_per_px;
            let k = p.samples().partition_point(|s| (s.ts_ns as f64) <= t);
            if k > 0 {
                let s = p.samples()[k - 1];
                let cyc = p.ns_per_cycle.map_or(s.cycle, |per| {
                    s.cycle + ((t - s.ts_ns as f64) / per).max(0.0) as u64
                });
                painter.text(
                    pos2(hp.x + 8.0, top + 2.0),
                    Align2::LEFT_TOP,
                    format!(
                        "{} = {} {} at cycle {cyc} (t={})",
                        p.name,
                        s.value,
                        p.unit,
                        query::rel_time(model, t as u64)
                    ),
                    FontId::proportional(12.0),
                    Color32::WHITE,
                );
            }
        }
    }
    // The shared time cursor and the selected packet.
    if cursor >= w.start_ns && cursor <= w.end_ns {
        let x = x_of(cursor);
        painter.line_segment(
            [pos2(x, plot.top()), pos2(x, plot.bottom())],
            Stroke::new(1.5, Color32::WHITE),
        );
    }
    if let Some(t) = selected_ts
        && t >= w.start_ns
        && t <= w.end_ns
    {
        let x = x_of(t);
        painter.add(Shape::dashed_line(
            &[pos2(x, plot.top()), pos2(x, plot.bottom())],
            Stroke::new(1.5, CYAN),
            4.0,
            3.0,
        ));
    }
    if cycle_accurate {
        painter.text(
            pos2(plot.right() - 4.0, rect.top() + 2.0),
            Align2::RIGHT_TOP,
            "cycle-accurate",
            FontId::proportional(11.0),
            CYAN,
        );
    }
}

fn time_axis(
    painter: &egui::Painter,
    model: &Model,
    plot: Rect,
    start_ns: f64,
    ns_per_px: f64,
    color: Color32,
) {
    // Tick step: 1, 2 or 5 x 10^k ns, at least 90 px apart.
    let min_step = ns_per_px * 90.0;
    let mut k = 0u32;
    let step = loop {
        let s = [1.0, 2.0, 5.0][(k % 3) as usize] * 10f64.powi((k / 3) as i32);
        if s >= min_step || k > 60 {
            break s;
        }
        k += 1;
    };
    let mut t = (start_ns / step).ceil() * step;
    let end = start_ns + ns_per_px * plot.width() as f64;
    while t <= end {
        let x = plot.left() + ((t - start_ns) / ns_per_px) as f32;
        painter.line_segment(
            [pos2(x, plot.top() - 4.0), pos2(x, plot.top())],
            Stroke::new(1.0, DIM),
        );
        painter.text(
            pos2(x + 2.0, plot.top() - 2.0),
            Align2::LEFT_BOTTOM,
            query::rel_time(model, t.max(0.0) as u64),
            FontId::monospace(10.0),
            color,
        );
        t += step;
    }
}
