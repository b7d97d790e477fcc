//! Overview: the throughput plot, the counters, the findings.

use eframe::egui;

use egui::{Align2, Color32, RichText, Stroke, Ui};
use egui_plot::{Line, LineStyle, Plot, PlotPoint, PlotPoints, Polygon, Text, VLine};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model, explain};

use super::super::layout;
use super::{
    CYAN, DIM, PanelState, QP_COLORS, RED, YELLOW, ms_since_start, select_item, selected_item,
};

/// The colour of the episodes' marks along the plot's floor.
pub(crate) const EPISODE_MARK: Color32 = YELLOW;

/// How far up the plot the episodes' marks reach (a share of its height):
/// a rug along the floor, so that the series above stays readable however
/// many episodes a live run has.
pub(crate) const EPISODE_MARK_SHARE: f64 = 0.06;

pub fn overview(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    let h = ui.available_height();
    legend(ui, model);
    let plot_h = (h * 0.55).max(120.0);
    throughput_plot(ui, model, plot_h, &mut st.throughput, out);
    ui.separator();
    // The counters and the findings scroll in what is left, never cut.
    let rest = ui.available_height();
    ui.horizontal_top(|ui| {
        scroll_column(ui, "counters", rest, |ui| counters(ui, model));
        ui.separator();
        // Several capture points: their summary (fixed width) before the
        // diagnosis, which takes the width left.
        if model.points().is_some() || model.source().live_points.is_some() {
            scroll_column(ui, "points", rest, |ui| capture_points(ui, model));
            ui.separator();
        }
        ui.vertical(|ui| {
            ui.strong("Diagnosis")
                .on_hover_text("click: select, double-click: open in the ladder");
            findings(ui, model, out);
        });
    });
}

/// Several capture points' summary: latency per segment, losses by
/// segment, each clock (the TUI's Overview shows the same lines).
fn capture_points(ui: &mut Ui, model: &Model) {
    let normal = ui.visuals().text_color();
    // A live session: each point's link first (a point down in red).
    for line in model.point_link_lines() {
        let col = if line.starts_with("link ") && !line.contains(": connected,") {
            RED
        } else {
            normal
        };
        ui.add(egui::Label::new(RichText::new(line).color(col).monospace()).extend());
    }
    let Some(r) = model.points() else {
        return;
    };
    let names: Vec<&str> = r.points.iter().map(|p| p.name.as_str()).collect();
    ui.strong(format!("Capture points {}", names.join(" > ")));
    for line in rocescope_replay::text::points_overview_lines(r) {
        let col = if line.starts_with("losses: ") && !r.losses.is_empty() {
            YELLOW
        } else {
            normal
        };
        ui.add(egui::Label::new(RichText::new(line).color(col).monospace()).extend());
    }
    latency_plot(ui, model);
}

/// Each segment's one-way latency (p99) over the capture, one line per
/// segment and direction: queueing growth shows as a line rising.
fn latency_plot(ui: &mut Ui, model: &Model) {
    let series = query::segment_latency_series(model);
    if series.is_empty() {
        return;
    }
    ui.add_space(4.0);
    ui.strong("One-way latency per segment, p99");
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for (i, (name, _)) in series.iter().enumerate() {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(18.0, 10.0), egui::Sense::hover());
            let y = rect.center().y;
            ui.painter().line_segment(
                [egui::pos2(rect.left(), y), egui::pos2(rect.right(), y)],
                Stroke::new(2.0, QP_COLORS[i % QP_COLORS.len()]),
            );
            ui.label(RichText::new(name).small());
        }
    });
    Plot::new("segment-latency")
        .height(140.0)
        .width(380.0)
        .x_axis_label("ms since the first packet")
        .y_axis_label("µs")
        .include_y(0.0)
        .allow_scroll(false)
        .show(ui, |pui| {
            for (i, (name, pts)) in series.iter().enumerate() {
                let points: PlotPoints<'_> = pts.iter().map(|&(x, _, p99)| [x, p99]).collect();
                pui.line(
                    Line::new(name.clone(), points)
                        .color(QP_COLORS[i % QP_COLORS.len()])
                        .width(1.5),
                );
            }
        });
}

/// What each line and mark of the plot is, in a row above it (egui_plot's
/// own legend is drawn over the data).
fn legend(ui: &mut Ui, model: &Model) {
    let report = model.report();
    let swatch = |ui: &mut Ui, kind: Swatch, color: Color32, text: &str| {
        let (rect, _) = ui.allocate_exact_size(egui::vec2(18.0, 10.0), egui::Sense::hover());
        let p = ui.painter();
        let (l, r, y) = (rect.left(), rect.right(), rect.center().y);
        match kind {
            Swatch::Line => {
                p.line_segment(
                    [egui::pos2(l, y), egui::pos2(r, y)],
                    Stroke::new(2.0, color),
                );
            }
            Swatch::Dashed => {
                p.add(egui::Shape::dashed_line(
                    &[egui::pos2(l, y), egui::pos2(r, y)],
                    Stroke::new(1.5, color),
                    3.0,
                    2.0,
                ));
            }
            Swatch::Area => {
                p.rect_filled(rect, 0.0, color);
            }
            Swatch::Tick => {
                let x = rect.center().x;
                p.line_segment(
                    [egui::pos2(x, rect.bottom()), egui::pos2(x, rect.top())],
                    Stroke::new(2.0, color),
                );
            }
        }
        ui.label(RichText::new(text).small());
    };
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for (i, q) in report.qps.iter().take(QP_COLORS.len()).enumerate() {
            swatch(
                ui,
                Swatch::Line,
                QP_COLORS[i],
                &rocescope_replay::text::qp_name(q),
            );
        }
        if report.qps.len() > QP_COLORS.len() {
            ui.label(RichText::new(format!("+{} QPs", report.qps.len() - QP_COLORS.len())).small());
        }
        if report.qps.iter().any(|q| q.reverse_series.is_some()) {
            swatch(ui, Swatch::Dashed, DIM, "responses");
        }
        if report.qps.len() > 1 {
            swatch(ui, Swatch::Line, Color32::WHITE, "aggregate");
        }
        if !report.findings.is_empty() {
            swatch(ui, Swatch::Area, RED.gamma_multiply(0.4), "findings");
        }
        if !report.episodes.is_empty() {
            swatch(ui, Swatch::Tick, EPISODE_MARK, "retransmission episodes");
        }
        swatch(ui, Swatch::Dashed, CYAN, "selected packet");
        swatch(ui, Swatch::Line, Color32::WHITE, "time cursor");
    });
}

#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Dashed,
    Area,
    Tick,
}

/// What the throughput plot derives from the report, kept across frames:
/// its lines walk every bin in the visible range and its ceiling every bin,
/// so they are made again only when the report is (every 250 ms) or the
/// visible range or width changes, not at every frame.
#[derive(Debug, Default)]
pub struct ThroughputCache {
    /// The report generation `data_max` is of.
    data_max_of: Option<u64>,
    /// The largest rate the plot can draw (its y axis' ceiling).
    data_max: f64,
    /// What `lines` are of.
    lines_of: Option<LinesKey>,
    /// Per QP its line then its responses' line (where it has any), then
    /// the aggregate (with more than one QP).
    lines: Vec<Vec<PlotPoint>>,
}

/// The report generation, the visible range (ms since the first packet,
/// and the first packet's time) and the columns the lines are resampled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LinesKey {
    report: u64,
    x0_ms: u64,
    x1_ms: u64,
    t0_ns: u64,
    columns: usize,
}

impl ThroughputCache {
    /// The y axis' data maximum for the model's report.
    fn data_max(&mut self, model: &Model) -> f64 {
        let generation = model.report_generation();
        if self.data_max_of != Some(generation) {
            let report = model.report();
            let maxima: Vec<f64> = report
                .qps
                .iter()
                .flat_map(|q| std::iter::once(&q.series).chain(q.reverse_series.as_ref()))
                .map(layout::series_max_gbytes_s)
                .collect();
            self.data_max = layout::throughput_data_max(&maxima, report.qps.len());
            self.data_max_of = Some(generation);
        }
        self.data_max
    }

    /// The lines over `[x0, x1]` ms (`t0` ns the first packet), `n` columns
    /// each, resampled only if the report or any of these changed.
    fn lines(
        &mut self,
        model: &Model,
        t0: f64,
        (x0, x1): (f64, f64),
        n: usize,
    ) -> &[Vec<PlotPoint>] {
        let key = LinesKey {
            report: model.report_generation(),
            x0_ms: x0.to_bits(),
            x1_ms: x1.to_bits(),
            t0_ns: t0.to_bits(),
            columns: n,
        };
        if self.lines_of != Some(key) {
            self.resample(model, t0, (x0, x1), n);
            self.lines_of = Some(key);
        }
        &self.lines
    }

    fn resample(&mut self, model: &Model, t0: f64, (x0, x1): (f64, f64), n: usize) {
        let report = model.report();
        let a_ns = t0 + x0 * 1e6;
        let b_ns = t0 + x1 * 1e6;
        let x = |c: usize| x0 + (x1 - x0) * (c as f64 + 0.5) / n as f64;
        let series = report
            .qps
            .iter()
            .flat_map(|q| std::iter::once(&q.series).chain(q.reverse_series.as_ref()));
        let count = series.clone().count() + usize::from(report.qps.len() > 1);
        // The lines' vectors are kept: a range that moves every frame (a
        // drag, a live session) refills them instead of growing new ones.
        self.lines.resize_with(count, Vec::new);
        let mut total = vec![0.0; n];
        for (s, line) in series.zip(&mut self.lines) {
            let ys = query::resample_rate(s, a_ns, b_ns, n);
            for (t, y) in total.iter_mut().zip(&ys) {
                *t += y;
            }
            line.clear();
            line.extend(ys.iter().enumerate().map(|(c, &y)| PlotPoint::new(x(c), y)));
        }
        if report.qps.len() > 1
            && let Some(line) = self.lines.last_mut()
        {
            line.clear();
            line.extend(
                total
                    .iter()
                    .enumerate()
                    .map(|(c, &y)| PlotPoint::new(x(c), y)),
            );
        }
    }
}

fn throughput_plot(
    ui: &mut Ui,
    model: &Model,
    height: f32,
    cache: &mut ThroughputCache,
    out: &mut Vec<Command>,
) {
    let report = model.report();
    let stats = model.store().stats();
    let t0 = stats.first_ts_ns.unwrap_or(0) as f64;
    let span_ms = stats
        .last_ts_ns
        .map_or(1.0, |b| ((b as f64 - t0) / 1e6).max(1e-3));
    let cursor_ms = ms_since_start(model, model.cursor_ns());
    let selected_ms = model
        .selected()
        .and_then(|s| model.store().row(s))
        .map(|r| ms_since_start(model, r.ts_ns));
    // The y axis from the data, the link rate as its ceiling: not from the
    // items (the findings' shading reaches the top and would grow it).
    let link = model
        .source()
        .scenario()
        .map(|sc| sc.params.link_gbps / 8.0);
    let y_top = layout::throughput_y_top(cache.data_max(model), link);
    let resp = Plot::new("throughput")
        .id(egui::Id::new(layout::THROUGHPUT_PLOT_ID))
        .height(height)
        .x_axis_label("ms since the first packet")
        .y_axis_label("GB/s on the wire")
        .default_y_bounds(0.0, y_top)
        .include_x(0.0)
        .include_x(span_ms)
        .allow_double_click_reset(true)
        .show(ui, |pui| {
            let bounds = pui.plot_bounds();
            let width_px = pui.transform().frame().width().max(1.0);
            let (x0, x1) = (bounds.min()[0].max(0.0), bounds.max()[0].min(span_ms));
            let (ymin, ymax) = (bounds.min()[1], bounds.max()[1]);
            let px_ms = ((x1 - x0) / width_px as f64).max(f64::MIN_POSITIVE);
            // Under the series: the findings as light spans, the episodes
            // as short marks along the floor (at most one a pixel).
            let mut drops = Vec::new();
            for f in &report.findings {
                let a = ms_since_start(model, f.start_ns);
                let b = ms_since_start(model, f.end_ns).max(a + px_ms);
                if b < x0 || a > x1 {
                    continue;
                }
                pui.polygon(
                    Polygon::new(
                        "findings",
                        PlotPoints::new(vec![[a, 0.0], [b, 0.0], [b, ymax], [a, ymax]]),
                    )
                    .fill_color(RED.gamma_multiply(0.08))
                    .stroke(Stroke::new(1.0, RED.gamma_multiply(0.25))),
                );
                drops.push(a);
            }
            let mark = (ymax - ymin) * EPISODE_MARK_SHARE;
            let mut last_px = f64::NEG_INFINITY;
            for e in &report.episodes {
                let x = ms_since_start(model, e.start_ns);
                if x < x0 || x > x1 || x - last_px < px_ms {
                    continue;
                }
                last_px = x;
                pui.line(
                    Line::new(
                        "retransmission episodes",
                        PlotPoints::new(vec![[x, ymin], [x, ymin + mark]]),
                    )
                    .color(EPISODE_MARK)
                    .width(1.5),
                );
            }
            // Two points per pixel over the visible range only.
            let n = (width_px * 2.0) as usize;
            if x1 > x0 {
                let mut lines = cache.lines(model, t0, (x0, x1), n).iter();
                for (i, q) in report.qps.iter().enumerate() {
                    let color = QP_COLORS[i % QP_COLORS.len()];
                    let name = rocescope_replay::text::qp_name(q);
                    if let Some(line) = lines.next() {
                        pui.line(
                            Line::new(name.clone(), PlotPoints::Borrowed(line))
                                .color(color)
                                .width(1.5),
                        );
                    }
                    if q.reverse_series.is_some()
                        && let Some(line) = lines.next()
                    {
                        pui.line(
                            Line::new(format!("{name} responses"), PlotPoints::Borrowed(line))
                                .color(color.gamma_multiply(0.6))
                                .style(LineStyle::dashed_dense()),
                        );
                    }
                }
                if report.qps.len() > 1
                    && let Some(line) = lines.next()
                {
                    pui.line(
                        Line::new("aggregate", PlotPoints::Borrowed(line))
                            .color(Color32::WHITE)
                            .width(1.0),
                    );
                }
            }
            // "drop" labels stacked on a few rows at the top, thinned so
            // that none covers another (the episodes have the floor).
            let font = egui::TextStyle::Small.resolve(&pui.ctx().style());
            let size = pui
                .ctx()
                .fonts(|f| f.layout_no_wrap("drop".into(), font, RED).size());
            let px_y = (ymax - ymin) / f64::from(pui.transform().frame().height().max(1.0));
            let at: Vec<(f32, f32)> = drops
                .iter()
                .map(|a| (((a.max(x0) - x0) / px_ms) as f32, size.x))
                .collect();
            for p in layout::place_labels(&at, 3, 4.0) {
                let y = ymax - px_y * (2.0 + f64::from(size.y + 1.0) * p.row as f64);
                pui.text(
                    Text::new(
                        "findings",
                        PlotPoint::new(drops[p.index].max(x0), y),
                        "drop",
                    )
                    .color(RED)
                    .anchor(Align2::LEFT_TOP),
                );
            }
            pui.vline(
                VLine::new("time cursor", cursor_ms)
                    .color(Color32::WHITE)
                    .width(1.5),
            );
            if let Some(s) = selected_ms {
                pui.vline(
                    VLine::new("selected packet", s)
                        .color(CYAN)
                        .style(LineStyle::dashed_loose()),
                );
            }
            pui.pointer_coordinate()
        });
    // A click moves the shared time cursor (and selects the packet there).
    if resp.response.clicked()
        && let Some(p) = resp.inner
    {
        let t = (t0 + p.x.max(0.0) * 1e6) as u64;
        out.push(Command::JumpToTime(t));
    }
}

fn counters(ui: &mut Ui, model: &Model) {
    let report = model.report();
    let stats = model.store().stats();
    let c = &report.counters;
    let normal = ui.visuals().text_color();
    let warn = |v: u64, col: Color32| if v > 0 { col } else { normal };
    egui::Grid::new("counters")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            let row = |ui: &mut Ui, k: &str, v: String, col: Color32| {
                ui.label(k);
                ui.label(RichText::new(v).color(col).monospace());
                ui.end_row();
            };
            row(ui, "packets", stats.packets.to_string(), normal);
            row(ui, "RoCE", stats.roce_packets.to_string(), normal);
            row(ui, "wire bytes", query::size_text(stats.wire_bytes), normal);
            row(ui, "QPs", report.qps.len().to_string(), normal);
            row(
                ui,
                "retransmitted",
                c.retransmitted_packets.to_string(),
                warn(c.retransmitted_packets, YELLOW),
            );
            row(
                ui,
                "packet_seq_err",
                c.packet_seq_err.to_string(),
                warn(c.packet_seq_err, RED),
            );
            row(ui, "timeouts", c.local_ack_timeout_err.to_string(), normal);
            row(
                ui,
                "CNPs / CE",
                format!("{} / {}", c.np_cnp_sent, c.np_ecn_marked_roce_packets),
                normal,
            );
            row(
                ui,
                "capture loss",
                c.capture_loss_packets.to_string(),
                normal,
            );
            row(
                ui,
                "ICRC errors",
                stats.icrc_errors.to_string(),
                warn(stats.icrc_errors, RED),
            );
            if model.source().live {
                let t = model
                    .source()
                    .status()
                    .sim_time_ns
                    .load(std::sync::atomic::Ordering::Relaxed);
                row(
                    ui,
                    "sim time",
                    rocescope_decoders::units::duration_text(t),
                    normal,
                );
            }
        });
}

fn findings(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let report = model.report();
    if report.findings.is_empty() {
        ui.weak(format!("{} (yet)", rocescope_replay::text::NO_FINDINGS));
        return;
    }
    let sel = selected_item(model, View::Overview);
    egui::ScrollArea::vertical()
        .id_salt("findings")
        .show(ui, |ui| {
            for (i, f) in report.findings.iter().enumerate() {
                let r = ui
                    .selectable_label(sel == Some(i), &f.text)
                    .on_hover_text(explain::finding(f.cause));
                if r.clicked() {
                    select_item(model, View::Overview, i, out);
                }
                if r.double_clicked() {
                    out.push(Command::OpenSelectedQp);
                }
                // Drops of one cause on one QP are one finding: each below.
                if f.items.len() > 1 {
                    egui::CollapsingHeader::new(format!("each of the {}", f.items.len()))
                        .id_salt(("finding", i))
                        .show(ui, |ui| {
                            for item in &f.items {
                                ui.label(&item.text);
                            }
                        });
                }
            }
        });
}

/// A column that scrolls within `height` (`id` keeps its scrolling apart).
fn scroll_column(ui: &mut egui::Ui, id: &str, height: f32, add: impl FnOnce(&mut egui::Ui)) {
    ui.vertical(|ui| {
        egui::ScrollArea::vertical()
            .id_salt(id)
            .max_height(height)
            .show(ui, add);
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Instant;

    use super::*;

    /// Each line's y values as `resample_rate` gives them over `[x0, x1]`
    /// ms, the aggregate last.
    fn resampled(model: &Model, t0: f64, (x0, x1): (f64, f64), n: usize) -> Vec<Vec<f64>> {
        let report = model.report();
        let (a, b) = (t0 + x0 * 1e6, t0 + x1 * 1e6);
        let mut lines: Vec<Vec<f64>> = report
            .qps
            .iter()
            .flat_map(|q| std::iter::once(&q.series).chain(q.reverse_series.as_ref()))
            .map(|s| query::resample_rate(s, a, b, n))
            .collect();
        if report.qps.len() > 1 {
            let total = (0..n).map(|c| lines.iter().map(|l| l[c]).sum()).collect();
            lines.push(total);
        }
        lines
    }

    fn ys(lines: &[Vec<PlotPoint>]) -> Vec<Vec<f64>> {
        lines
            .iter()
            .map(|l| l.iter().map(|p| p.y).collect())
            .collect()
    }

    /// The cached lines are made again when the report is made again and
    /// when the range or the width changes, and only then.
    #[test]
    fn the_throughput_lines_follow_the_report_and_the_range() {
        // The sample as a live source's: its report is made again every
        // 250 ms (a file's is final once indexed).
        let mut model = {
            use rocescope_replay::store::{RcAnalyzer, Store};
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../assets/captures/sample-write-read.pcap");
            let analysis = RcAnalyzer::default();
            let store = Store::open(&path, Default::default(), Box::new(analysis.clone())).unwrap();
            store.wait();
            let handle = rocescope_core::source::SourceHandle::external("sample".into());
            crate::keep_test_progress_apart();
            let mut m = Model::new(store, analysis, handle);
            m.forget_lesson_progress();
            m.tick(Instant::now());
            m
        };
        let stats = model.store().stats();
        let t0 = stats.first_ts_ns.unwrap() as f64;
        let span_ms = (stats.last_ts_ns.unwrap() as f64 - t0) / 1e6;
        let whole = (0.0, span_ms);
        let mut cache = ThroughputCache::default();

        let expect = resampled(&model, t0, whole, 100);
        assert!(expect.len() >= 2, "the sample has QPs: {}", expect.len());
        assert_eq!(ys(cache.lines(&model, t0, whole, 100)), expect);
        assert!(cache.data_max(&model) > 0.0);

        // The same report and range: kept, not resampled (a mark left in
        // the cache stays).
        cache.lines[0][0].y = -1.0;
        assert_eq!(cache.lines(&model, t0, whole, 100)[0][0].y, -1.0);
        cache.data_max = -1.0;
        assert_eq!(cache.data_max(&model), -1.0);

        // The report made again: resampled.
        let generation = model.report_generation();
        model.tick(Instant::now() + std::time::Duration::from_secs(1));
        assert!(model.report_generation() > generation);
        assert_eq!(ys(cache.lines(&model, t0, whole, 100)), expect);
        assert!(cache.data_max(&model) > 0.0);

        // Another range and width: resampled to it, x included.
        let part = (span_ms / 4.0, span_ms / 2.0);
        let lines = cache.lines(&model, t0, part, 37);
        assert_eq!(ys(lines), resampled(&model, t0, part, 37));
        let x_first = part.0 + (part.1 - part.0) * 0.5 / 37.0;
        assert!(lines.iter().all(|l| l.len() == 37 && l[0].x == x_first));
        assert_ne!(ys(lines), expect);
    }
}
