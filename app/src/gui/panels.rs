//! The panels: each reads the model (the same queries as the TUI's views)
//! and pushes the `Command`s its widgets produce; none changes state.

use eframe::egui;
use std::time::{Duration, Instant};

use egui::{Align2, Color32, FontId, Pos2, Rect, RichText, Sense, Stroke, Ui, Vec2, pos2, vec2};
use egui_extras::{Column, TableBuilder};
use egui_plot::{Line, LineStyle, Plot, PlotPoint, PlotPoints, Polygon, Text, VLine};
use rocescope_core::command::View;
use rocescope_core::model::Selected;
use rocescope_core::query::{self, RowClass};
use rocescope_core::{Command, Model, Overlay, explain};
use rocescope_replay::Record;
use rocescope_replay::record::{SlotDecision, Verdict};
use rocescope_replay::store::{Flags, Row};

use super::waveform::{self, WaveState};

pub const RED: Color32 = Color32::from_rgb(0xf0, 0x50, 0x50);
pub const YELLOW: Color32 = Color32::from_rgb(0xf0, 0xc0, 0x30);
pub const MAGENTA: Color32 = Color32::from_rgb(0xd0, 0x60, 0xd0);
pub const CYAN: Color32 = Color32::from_rgb(0x40, 0xc8, 0xe0);
pub const GREEN: Color32 = Color32::from_rgb(0x60, 0xd0, 0x60);
pub const DIM: Color32 = Color32::from_gray(130);

/// Colours of the QPs' throughput lines.
pub const QP_COLORS: [Color32; 8] = [
    GREEN,
    CYAN,
    YELLOW,
    MAGENTA,
    Color32::from_rgb(0x60, 0x90, 0xff),
    RED,
    Color32::from_gray(220),
    Color32::from_rgb(0xa0, 0xf0, 0x80),
];

pub fn class_color(f: Flags, normal: Color32) -> Color32 {
    match query::row_class(f) {
        RowClass::Error => RED,
        RowClass::Retransmission => YELLOW,
        RowClass::OutOfOrder => MAGENTA,
        RowClass::Congestion => CYAN,
        RowClass::NotRoce => DIM,
        RowClass::Normal => normal,
    }
}

/// Non-frame records the panels show (profiler probes, slot decisions),
/// re-read from the store only when it holds more, at most 4 times a second.
#[derive(Debug, Default)]
pub struct RecordCache {
    count: usize,
    at: Option<Instant>,
    pub probes: Vec<waveform::Probe>,
    pub slots: Vec<SlotDecision>,
}

impl RecordCache {
    fn refresh(&mut self, model: &Model) {
        if self
            .at
            .is_some_and(|t| t.elapsed() < Duration::from_millis(250))
        {
            return;
        }
        self.at = Some(Instant::now());
        let n = model.store.record_count();
        if n == self.count {
            return;
        }
        self.count = n;
        let recs = model.store.records_where(|r| {
            matches!(
                r,
                Record::Profiler(_) | Record::ProbeDef(_) | Record::Slot(_)
            )
        });
        self.slots = recs
            .iter()
            .filter_map(|r| match r {
                Record::Slot(s) => Some(*s),
                _ => None,
            })
            .collect();
        self.probes = waveform::probes_from(&recs);
    }
}

/// GUI-side view state: scroll positions, zoom, caches. Never model state.
#[derive(Debug, Default)]
pub struct PanelState {
    /// First visible position in the packet list.
    pub packets_first: u64,
    /// Rows the packet list shows (for PageUp/PageDown).
    pub page_rows: u64,
    scroll_accum: f32,
    last_selected: Option<u64>,
    /// The selection moved since the last frame (lists scroll to it).
    pub(super) selection_moved: bool,
    /// (packet, field) the detail tree last scrolled to.
    /// and for how many frames (the first frame's layout is not final).
    detail_scrolled: Option<(u64, usize, u8)>,
    filter_buf: String,
    filter_buf_for: Option<String>,
    /// Give the filter field the keyboard (the `/` key, the palette).
    pub focus_filter: bool,
    sel_cache: Option<Selected>,
    pub records: RecordCache,
    pub wave: WaveState,
}

impl PanelState {
    /// Called once a frame before the panels draw.
    pub fn begin_frame(&mut self, model: &Model) {
        self.selection_moved = model.selected != self.last_selected;
        self.last_selected = model.selected;
        if self.sel_cache.as_ref().map(|s| s.index) != model.selected {
            self.sel_cache = model.selected_packet();
        }
        self.records.refresh(model);
        if self.filter_buf_for.as_deref() != Some(model.filter_text.as_str()) {
            self.filter_buf = model.filter_text.clone();
            self.filter_buf_for = Some(model.filter_text.clone());
        }
    }

    /// The selected packet (bytes read once per selection).
    pub fn selected(&self) -> Option<&Selected> {
        self.sel_cache.as_ref()
    }
}

/// Draw the panel of `view`.
pub fn show(view: View, ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    match view {
        View::Overview => overview(ui, model, out),
        View::Packets => packets(ui, model, st, out),
        View::Qps => qps(ui, model, out),
        View::Ladder => ladder(ui, model, out),
        View::Retransmissions => retransmissions(ui, model, out),
        View::Slots => slots(ui, model, st, out),
        View::Profiler => waveform::show(ui, model, st, out),
        View::Explain => explain_panel(ui, model, st),
        View::Lessons => lessons(ui, model, out),
    }
}

/// Select item `i` of a list view: the list index belongs to the model's
/// current view, so a click in another view's list switches to it first.
fn select_item(model: &Model, view: View, i: usize, out: &mut Vec<Command>) {
    if model.view != view && !out.contains(&Command::ShowView(view)) {
        out.push(Command::ShowView(view));
    }
    let base = if model.view == view {
        model.list_index
    } else {
        0
    };
    out.push(Command::MoveSelection(i as i64 - base as i64));
}

fn selected_item(model: &Model, view: View) -> Option<usize> {
    (model.view == view).then_some(model.list_index)
}

/// Milliseconds since the first packet (the plots' x axis).
fn ms_since_start(model: &Model, ts_ns: u64) -> f64 {
    let t0 = model.store.stats().first_ts_ns.unwrap_or(0);
    (ts_ns as f64 - t0 as f64) / 1e6
}

// ---------------------------------------------------------------- overview

pub fn overview(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let h = ui.available_height();
    let plot_h = (h * 0.6).max(120.0);
    throughput_plot(ui, model, plot_h, out);
    ui.separator();
    ui.horizontal_top(|ui| {
        ui.vertical(|ui| {
            ui.set_width(260.0);
            counters(ui, model);
        });
        ui.separator();
        ui.vertical(|ui| {
            ui.strong("Diagnosis (click: select, double-click: open in the ladder)");
            findings(ui, model, out);
        });
    });
}

fn throughput_plot(ui: &mut Ui, model: &Model, height: f32, out: &mut Vec<Command>) {
    let report = model.report();
    let stats = model.store.stats();
    let t0 = stats.first_ts_ns.unwrap_or(0) as f64;
    let span_ms = stats
        .last_ts_ns
        .map_or(1.0, |b| ((b as f64 - t0) / 1e6).max(1e-3));
    let cursor_ms = ms_since_start(model, model.cursor_ns());
    let selected_ms = model
        .selected
        .and_then(|s| model.store.row(s))
        .map(|r| ms_since_start(model, r.ts_ns));
    let resp = Plot::new("throughput")
        .height(height)
        .legend(egui_plot::Legend::default())
        .x_axis_label("ms since the first packet")
        .y_axis_label("GB/s on the wire")
        .include_y(0.0)
        .include_x(0.0)
        .include_x(span_ms)
        .allow_double_click_reset(true)
        .show(ui, |pui| {
            let bounds = pui.plot_bounds();
            let width_px = pui.transform().frame().width().max(1.0);
            // Two points per pixel over the visible range only.
            let n = (width_px * 2.0) as usize;
            let (x0, x1) = (bounds.min()[0].max(0.0), bounds.max()[0].min(span_ms));
            if x1 > x0 {
                let a_ns = t0 + x0 * 1e6;
                let b_ns = t0 + x1 * 1e6;
                let xs: Vec<f64> = (0..n)
                    .map(|c| x0 + (x1 - x0) * (c as f64 + 0.5) / n as f64)
                    .collect();
                let mut total = vec![0.0; n];
                for (i, q) in report.qps.iter().enumerate() {
                    let color = QP_COLORS[i % QP_COLORS.len()];
                    let ys = query::resample_rate(&q.series, a_ns, b_ns, n);
                    for (t, y) in total.iter_mut().zip(&ys) {
                        *t += y;
                    }
                    let name = format!("QP 0x{:x}", q.dest_qp);
                    pui.line(
                        Line::new(name.clone(), points(&xs, &ys))
                            .color(color)
                            .width(1.5),
                    );
                    if let Some(rs) = &q.reverse_series {
                        let ys = query::resample_rate(rs, a_ns, b_ns, n);
                        for (t, y) in total.iter_mut().zip(&ys) {
                            *t += y;
                        }
                        pui.line(
                            Line::new(format!("{name} responses"), points(&xs, &ys))
                                .color(color.gamma_multiply(0.6))
                                .style(LineStyle::dashed_dense()),
                        );
                    }
                }
                if report.qps.len() > 1 {
                    pui.line(
                        Line::new("aggregate", points(&xs, &total))
                            .color(Color32::WHITE)
                            .width(1.0),
                    );
                }
            }
            // Findings as shaded spans, episodes as thin lines (at most one a pixel).
            let ymax = bounds.max()[1];
            for f in &report.findings {
                let a = ms_since_start(model, f.start_ns);
                let b = ms_since_start(model, f.end_ns).max(a + (x1 - x0) / width_px as f64);
                if b < x0 || a > x1 {
                    continue;
                }
                pui.polygon(
                    Polygon::new(
                        "findings",
                        PlotPoints::new(vec![[a, 0.0], [b, 0.0], [b, ymax], [a, ymax]]),
                    )
                    .fill_color(RED.gamma_multiply(0.15))
                    .stroke(Stroke::new(1.0, RED.gamma_multiply(0.6))),
                );
                pui.text(
                    Text::new("findings", PlotPoint::new(a, ymax * 0.95), "drop")
                        .color(RED)
                        .anchor(Align2::LEFT_TOP),
                );
            }
            let px_ms = (x1 - x0) / width_px as f64;
            let mut last_px = f64::NEG_INFINITY;
            for e in &report.episodes {
                let x = ms_since_start(model, e.start_ns);
                if x < x0 || x > x1 || x - last_px < px_ms {
                    continue;
                }
                last_px = x;
                pui.vline(
                    VLine::new("retransmission episodes", x)
                        .color(YELLOW.gamma_multiply(0.7))
                        .width(1.0),
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
    if resp.response.clicked() {
        if let Some(p) = resp.inner {
            let t = (t0 + p.x.max(0.0) * 1e6) as u64;
            out.push(Command::JumpToTime(t));
        }
    }
}

fn points(xs: &[f64], ys: &[f64]) -> PlotPoints<'static> {
    PlotPoints::new(xs.iter().zip(ys).map(|(x, y)| [*x, *y]).collect())
}

fn counters(ui: &mut Ui, model: &Model) {
    let report = model.report();
    let stats = model.store.stats();
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
            row(
                ui,
                "wire bytes",
                query::human_bytes(stats.wire_bytes),
                normal,
            );
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
            if model.source.live {
                let t = model
                    .source
                    .status()
                    .sim_time_ns
                    .load(std::sync::atomic::Ordering::Relaxed);
                row(ui, "sim time", format!("{} µs", t / 1000), normal);
            }
        });
}

fn findings(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let report = model.report();
    if report.findings.is_empty() {
        ui.weak("no throughput drop found (yet)");
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

// ----------------------------------------------------------------- packets

const ROW_H: f32 = 18.0;

pub fn packets(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    filter_bar(ui, model, st, out);
    let avail = ui.available_height();
    let list_h = (avail * 0.58).max(ROW_H * 4.0);
    let (list_rect, _) = ui.allocate_exact_size(vec2(ui.available_width(), list_h), Sense::hover());
    packet_list(ui, list_rect, model, st, out);
    ui.separator();
    ui.columns(2, |cols| {
        detail_tree(&mut cols[0], model, st, out);
        hex_view(&mut cols[1], model, st);
    });
}

fn filter_bar(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.label("filter:");
        let editing = model.overlay == Overlay::FilterEdit;
        let r = ui.add(
            egui::TextEdit::singleline(&mut st.filter_buf)
                .id(egui::Id::new("rocescope-filter"))
                .hint_text("bth.psn >= 100 && rocescope.retransmission")
                .font(egui::TextStyle::Monospace)
                .desired_width((ui.available_width() * 0.55).max(160.0)),
        );
        if st.focus_filter {
            r.request_focus();
            st.focus_filter = false;
        }
        if r.changed() {
            out.push(Command::SetFilter(st.filter_buf.clone()));
        }
        if r.gained_focus() && !editing {
            out.push(Command::EditFilter);
        }
        if r.lost_focus() && editing {
            out.push(Command::CloseOverlay);
        }
        if let Some(e) = &model.filter_error {
            ui.colored_label(RED, e.to_string());
        } else if model.filter().is_some() {
            let (scanned, len) = model.filter_progress();
            if scanned < len {
                ui.weak(format!("filtering {}%", scanned * 100 / len.max(1)));
            }
        }
    });
}

/// Columns of the packet list: (title, width in px).
const PACKET_COLS: [(&str, f32); 8] = [
    ("No.", 80.0),
    ("Time", 110.0),
    ("Source > Destination", 190.0),
    ("Opcode", 150.0),
    ("QP", 70.0),
    ("PSN", 80.0),
    ("Len", 50.0),
    ("Analysis", 120.0),
];

/// The virtualized packet list: only the rows in view are fetched, and
/// positions are u64 so that tens of millions of rows scroll exactly
/// (egui's own scroll areas are f32 pixels).
fn packet_list(
    ui: &mut Ui,
    rect: Rect,
    model: &Model,
    st: &mut PanelState,
    out: &mut Vec<Command>,
) {
    let painter = ui.painter_at(rect);
    let font = FontId::monospace(12.0);
    let text_color = ui.visuals().text_color();
    let bar_w = 12.0;
    let header = Rect::from_min_size(rect.min, vec2(rect.width(), ROW_H));
    painter.rect_filled(header, 0.0, ui.visuals().faint_bg_color);
    let mut x = rect.left() + 4.0;
    for (t, w) in PACKET_COLS {
        painter.text(
            pos2(x, header.center().y),
            Align2::LEFT_CENTER,
            t,
            FontId::proportional(12.0),
            text_color,
        );
        x += w;
    }
    let body = Rect::from_min_max(
        pos2(rect.left(), header.bottom()),
        pos2(rect.right() - bar_w, rect.bottom()),
    );
    let rows_fit = ((body.height() / ROW_H).floor() as u64).max(1);
    st.page_rows = rows_fit;
    let total = model.visible_len();
    let max_first = total.saturating_sub(rows_fit);
    // Follow the selection when it moved (keys, jumps, other panels).
    if st.selection_moved {
        if let Some(s) = model.selected {
            let pos = model.visible_pos(s);
            if pos < st.packets_first || pos >= st.packets_first + rows_fit {
                st.packets_first = pos.saturating_sub(rows_fit / 2);
            }
        }
    }
    let resp = ui.interact(body, ui.id().with("packet-list"), Sense::click());
    if resp.hovered() {
        let dy = ui.input(|i| i.smooth_scroll_delta.y);
        st.scroll_accum -= dy / ROW_H;
        let whole = st.scroll_accum.trunc();
        st.scroll_accum -= whole;
        st.packets_first = (st.packets_first as i64 + whole as i64).max(0) as u64;
    }
    // Scrollbar: position maps linearly to the first row.
    let bar = Rect::from_min_max(pos2(rect.right() - bar_w, body.top()), rect.max);
    let bar_resp = ui.interact(bar, ui.id().with("packet-bar"), Sense::click_and_drag());
    if let Some(p) = bar_resp.interact_pointer_pos() {
        let frac = ((p.y - bar.top()) / bar.height()).clamp(0.0, 1.0) as f64;
        st.packets_first = (frac * max_first as f64) as u64;
    }
    st.packets_first = st.packets_first.min(max_first);
    painter.rect_filled(bar, 2.0, ui.visuals().extreme_bg_color);
    if total > rows_fit {
        let h = (bar.height() * rows_fit as f32 / total as f32).max(16.0);
        let top =
            bar.top() + (bar.height() - h) * (st.packets_first as f32 / max_first.max(1) as f32);
        painter.rect_filled(
            Rect::from_min_size(pos2(bar.left() + 2.0, top), vec2(bar_w - 4.0, h)),
            3.0,
            ui.visuals().widgets.inactive.bg_fill,
        );
    }
    let rows = model.visible_rows(st.packets_first, rows_fit as usize);
    let convs = model.store.conversations();
    let click = resp
        .clicked()
        .then(|| resp.interact_pointer_pos())
        .flatten();
    for (k, (index, r)) in rows.iter().enumerate() {
        let top = body.top() + k as f32 * ROW_H;
        let row_rect = Rect::from_min_size(pos2(body.left(), top), vec2(body.width(), ROW_H));
        if Some(*index) == model.selected {
            painter.rect_filled(row_rect, 0.0, ui.visuals().selection.bg_fill);
        } else if k % 2 == 1 {
            painter.rect_filled(row_rect, 0.0, ui.visuals().faint_bg_color);
        }
        if click.is_some_and(|p| row_rect.contains(p)) {
            out.push(Command::SelectRow(*index));
        }
        let color = class_color(r.flags, text_color);
        let conv = convs.get(r.conversation as usize);
        let (op, psn) = if r.flags.contains(Flags::ROCE) {
            (query::short_opcode(r.opcode), r.psn.to_string())
        } else {
            ("-".into(), String::new())
        };
        let cells = [
            (index + 1).to_string(),
            query::rel_time(model, r.ts_ns),
            conv.map(|c| format!("{} > {}", c.key.src_addr(), c.key.dst_addr()))
                .unwrap_or_default(),
            op,
            conv.map(|c| format!("0x{:x}", c.key.dest_qp))
                .unwrap_or_default(),
            psn,
            r.origlen.to_string(),
            query::flag_text(r.flags),
        ];
        let mut x = body.left() + 4.0;
        for (cell, (_, w)) in cells.iter().zip(PACKET_COLS) {
            painter.text(
                pos2(x, top + ROW_H / 2.0),
                Align2::LEFT_CENTER,
                cell,
                font.clone(),
                color,
            );
            x += w;
        }
    }
    if total == 0 {
        painter.text(
            body.center(),
            Align2::CENTER_CENTER,
            "no packets (yet)",
            FontId::proportional(14.0),
            DIM,
        );
    }
}

fn detail_tree(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    let Some(sel) = st.sel_cache.clone() else {
        ui.weak("no packet selected");
        return;
    };
    let p = sel.packet();
    let mut fields = Vec::new();
    p.for_each_field(&mut |f| {
        fields.push((
            f.name,
            f.label,
            f.depth,
            query::field_value(f.name, &f.value),
        ))
    });
    let (current, _) = model.field_position();
    let frames = match st.detail_scrolled {
        Some((i, f, n)) if (i, f) == (sel.index, current) => n,
        _ => 0,
    };
    let scroll = frames < 2;
    st.detail_scrolled = Some((sel.index, current, frames.saturating_add(1)));
    ui.strong(format!(
        "Frame {}: {}",
        sel.index + 1,
        p.summary().to_string().replace('→', ">")
    ));
    egui::ScrollArea::vertical()
        .id_salt("detail")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for (i, (name, label, depth, v)) in fields.iter().enumerate() {
                let text = if *depth == 0 {
                    RichText::new(label.to_string()).strong()
                } else {
                    RichText::new(format!("    {label}: {v}")).monospace()
                };
                let r = ui.selectable_label(i == current, text).on_hover_text(*name);
                if i == current && scroll {
                    r.scroll_to_me(Some(egui::Align::Center));
                }
                if r.clicked() {
                    out.push(Command::MoveField(i as i64 - current as i64));
                }
            }
        });
}

fn hex_view(ui: &mut Ui, model: &Model, st: &PanelState) {
    let Some(sel) = st.selected() else {
        return;
    };
    let p = sel.packet();
    let (current, _) = model.field_position();
    let mut range = (0, 0);
    let mut k = 0;
    p.for_each_field(&mut |f| {
        if k == current {
            range = (f.offset, f.len);
        }
        k += 1;
    });
    ui.strong(format!(
        "Hex ({} of {} bytes)",
        sel.bytes.len(),
        sel.row.origlen
    ));
    let font = FontId::monospace(12.0);
    let normal = ui.visuals().text_color();
    egui::ScrollArea::vertical()
        .id_salt("hex")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for (line, chunk) in sel.bytes.chunks(16).enumerate() {
                let mut job = egui::text::LayoutJob::default();
                job.append(
                    &format!("{:04x}  ", line * 16),
                    0.0,
                    egui::TextFormat::simple(font.clone(), DIM),
                );
                for (j, b) in chunk.iter().enumerate() {
                    let off = line * 16 + j;
                    let on = off >= range.0 && off < range.0 + range.1;
                    let mut fmt = egui::TextFormat::simple(
                        font.clone(),
                        if on { Color32::BLACK } else { normal },
                    );
                    if on {
                        fmt.background = YELLOW;
                    }
                    job.append(&format!("{b:02x}"), 0.0, fmt);
                    job.append(" ", 0.0, egui::TextFormat::simple(font.clone(), normal));
                }
                ui.label(job);
            }
        });
}

// --------------------------------------------------------------------- QPs

pub fn qps(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let report = model.report();
    ui.strong("QP conversations (click: select, double-click: ladder)");
    let sel = selected_item(model, View::Qps);
    let heads = query::QP_COLUMNS;
    TableBuilder::new(ui)
        .id_salt("qps")
        .striped(true)
        .sense(Sense::click())
        .columns(Column::auto().at_least(50.0).resizable(true), heads.len())
        .header(20.0, |mut h| {
            for t in heads {
                h.col(|ui| {
                    ui.strong(t);
                });
            }
        })
        .body(|body| {
            body.rows(ROW_H, report.qps.len(), |mut row| {
                let i = row.index();
                let q = &report.qps[i];
                row.set_selected(sel == Some(i));
                let c = &q.counters;
                let cells = [
                    format!("0x{:x}", q.dest_qp),
                    format!(
                        "{} > {}",
                        query::addr(q.requester),
                        query::addr(q.responder)
                    ),
                    query::qp_state(report, i, model.cursor_ns()).to_owned(),
                    q.next_psn.to_string(),
                    q.oldest_unacked_psn.map_or("-".into(), |p| p.to_string()),
                    format!("{}/{}", q.outstanding, q.window_packets),
                    query::human_bytes(q.wire_bytes),
                    c.retransmitted_packets.to_string(),
                    query::naks(c).to_string(),
                    c.np_cnp_sent.to_string(),
                    q.rtt_p50_ns
                        .map_or("-".into(), |ns| format!("{:.2} µs", ns as f64 / 1e3)),
                ];
                for cell in cells {
                    row.col(|ui| {
                        ui.label(RichText::new(cell).monospace());
                    });
                }
                let r = row.response();
                if r.clicked() {
                    select_item(model, View::Qps, i, out);
                    out.push(Command::SelectQp(i as u32));
                }
                if r.double_clicked() {
                    out.push(Command::OpenSelectedQp);
                }
            });
        });
}

// ------------------------------------------------------------------ ladder

pub fn ladder(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let Some(q) = query::ladder_qp(model) else {
        ui.weak("no QP yet");
        return;
    };
    ui.strong(format!(
        "QP 0x{:x} {} > {} (requester QP {}) — hover an arrow for its explanation, click to select",
        q.dest_qp,
        query::addr(q.requester),
        query::addr(q.responder),
        q.requester_qp.map_or("?".into(), |p| format!("0x{p:x}"))
    ));
    let (rect, resp) = ui.allocate_exact_size(ui.available_size(), Sense::click());
    let painter = ui.painter_at(rect);
    let step = 26.0;
    let head = 22.0;
    let count = (((rect.height() - head) / step).floor() as usize).max(1);
    let rows = query::ladder_rows(model, q, count);
    let time_w = 100.0;
    let left = rect.left() + time_w + 20.0;
    let right = rect.right() - 20.0;
    let text = ui.visuals().text_color();
    let lane = Stroke::new(2.0, DIM);
    painter.line_segment(
        [pos2(left, rect.top() + head), pos2(left, rect.bottom())],
        lane,
    );
    painter.line_segment(
        [pos2(right, rect.top() + head), pos2(right, rect.bottom())],
        lane,
    );
    let f = FontId::proportional(12.0);
    painter.text(
        pos2(left, rect.top() + 2.0),
        Align2::CENTER_TOP,
        format!("requester {}", query::addr(q.requester)),
        f.clone(),
        text,
    );
    painter.text(
        pos2(right, rect.top() + 2.0),
        Align2::RIGHT_TOP,
        format!("responder {}", query::addr(q.responder)),
        f.clone(),
        text,
    );
    let hover = resp.hover_pos();
    let mut hovered: Option<&query::LadderRow> = None;
    let mut last_ts: Option<u64> = None;
    for (k, lr) in rows.iter().enumerate() {
        let y = rect.top() + head + (k as f32 + 0.5) * step;
        // Arrows slant down: the time a packet spends on the wire.
        let (a, b) = if lr.rightward {
            (pos2(left, y - 6.0), pos2(right, y + 6.0))
        } else {
            (pos2(right, y - 6.0), pos2(left, y + 6.0))
        };
        let mut color = class_color(lr.row.flags, text);
        let selected = Some(lr.index) == model.selected;
        let row_band = Rect::from_min_max(
            pos2(rect.left(), y - step / 2.0),
            pos2(rect.right(), y + step / 2.0),
        );
        if selected {
            painter.rect_filled(
                row_band,
                0.0,
                ui.visuals().selection.bg_fill.gamma_multiply(0.5),
            );
        }
        if hover.is_some_and(|p| row_band.contains(p)) {
            hovered = Some(lr);
            color = color.gamma_multiply(1.4);
            if resp.clicked() {
                out.push(Command::SelectRow(lr.index));
            }
        }
        if let Some(prev) = last_ts {
            if lr.row.ts_ns.saturating_sub(prev) > 20_000 {
                painter.text(
                    pos2((left + right) / 2.0, y - step / 2.0),
                    Align2::CENTER_CENTER,
                    format!("… {} µs silent …", (lr.row.ts_ns - prev) / 1000),
                    FontId::proportional(10.0),
                    DIM,
                );
            }
        }
        last_ts = Some(lr.row.ts_ns);
        painter.text(
            pos2(rect.left() + 2.0, y),
            Align2::LEFT_CENTER,
            query::rel_time(model, lr.row.ts_ns),
            FontId::monospace(11.0),
            DIM,
        );
        arrow(
            &painter,
            a,
            b,
            Stroke::new(if selected { 2.5 } else { 1.5 }, color),
        );
        let flags = query::flag_text(lr.row.flags);
        let label = if flags.is_empty() {
            format!("{} PSN {}", query::short_opcode(lr.row.opcode), lr.row.psn)
        } else {
            format!(
                "{} PSN {} [{flags}]",
                query::short_opcode(lr.row.opcode),
                lr.row.psn
            )
        };
        painter.text(
            pos2((left + right) / 2.0, y - 4.0),
            Align2::CENTER_BOTTOM,
            label,
            f.clone(),
            color,
        );
    }
    if let Some(lr) = hovered {
        let lr = *lr;
        resp.on_hover_ui_at_pointer(|ui| {
            ui.set_max_width(420.0);
            explain_row(ui, model, lr.index, &lr.row);
        });
    }
}

/// A line from `a` to `b` with a filled arrowhead at `b`.
pub fn arrow(painter: &egui::Painter, a: Pos2, b: Pos2, stroke: Stroke) {
    let dir = (b - a).normalized();
    let len = 10.0;
    let tip_base = b - dir * len;
    painter.line_segment([a, tip_base], stroke);
    let n = Vec2::new(-dir.y, dir.x) * 4.5;
    painter.add(egui::Shape::convex_polygon(
        vec![b, tip_base + n, tip_base - n],
        stroke.color,
        Stroke::NONE,
    ));
}

/// The student's explanation of row `index` (decoded on demand).
fn explain_row(ui: &mut Ui, model: &Model, index: u64, row: &Row) {
    let Ok(bytes) = model.store.frame_bytes(index) else {
        return;
    };
    let sel = Selected {
        index,
        row: *row,
        bytes,
        link: model
            .store
            .link_layer(row.port)
            .unwrap_or(rocescope_decoders::LinkLayer::Ethernet),
    };
    let p = sel.packet();
    let flags: Vec<&str> = row.flags.names().collect();
    ui.strong(format!(
        "Frame {}: {}",
        index + 1,
        p.summary().to_string().replace('→', ">")
    ));
    for para in explain::packet(&p, &flags) {
        ui.label(para);
    }
}

// --------------------------------------------------------- retransmissions

pub fn retransmissions(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let report = model.report();
    ui.strong(format!(
        "Retransmission episodes: {} (click: select, double-click: ladder)",
        report.episodes.len()
    ));
    let sel = selected_item(model, View::Retransmissions);
    let why_h = 70.0;
    let heads = [
        "frame", "time", "QP", "cause", "from PSN", "resent", "bytes", "recovery",
    ];
    let table_h = (ui.available_height() - why_h).max(60.0);
    ui.allocate_ui(vec2(ui.available_width(), table_h), |ui| {
        TableBuilder::new(ui)
            .id_salt("episodes")
            .striped(true)
            .sense(Sense::click())
            .max_scroll_height(table_h)
            .columns(Column::auto().at_least(60.0).resizable(true), heads.len())
            .header(20.0, |mut h| {
                for t in heads {
                    h.col(|ui| {
                        ui.strong(t);
                    });
                }
            })
            .body(|body| {
                body.rows(ROW_H, report.episodes.len(), |mut row| {
                    let i = row.index();
                    let e = &report.episodes[i];
                    row.set_selected(sel == Some(i));
                    let qp = report
                        .qps
                        .get(e.qp as usize)
                        .map_or(format!("#{}", e.qp), |q| format!("0x{:x}", q.dest_qp));
                    let cells = [
                        (e.first_index + 1).to_string(),
                        query::rel_time(model, e.start_ns),
                        qp,
                        e.cause.name().to_owned(),
                        e.from_psn.to_string(),
                        e.packets_resent.to_string(),
                        query::human_bytes(e.bytes_resent),
                        if e.recovered {
                            format!("{:.2} µs", e.recovery_ns as f64 / 1e3)
                        } else {
                            "not recovered".to_owned()
                        },
                    ];
                    for cell in cells {
                        row.col(|ui| {
                            ui.label(RichText::new(cell).monospace());
                        });
                    }
                    let r = row.response();
                    if r.clicked() {
                        select_item(model, View::Retransmissions, i, out);
                        out.push(Command::SelectRow(e.first_index));
                    }
                    if r.double_clicked() {
                        out.push(Command::OpenSelectedQp);
                    }
                });
            });
    });
    ui.separator();
    if let Some(e) = sel.and_then(|i| report.episodes.get(i)) {
        ui.label(explain::episode(e.cause));
    } else {
        ui.weak("select an episode to see why it happened");
    }
}

// ------------------------------------------------------------------- slots

pub fn slots(ui: &mut Ui, model: &Model, st: &PanelState, out: &mut Vec<Command>) {
    let all = &st.records.slots;
    if all.is_empty() {
        ui.weak("No service-slot records in this source (run a scenario with slots, e.g. `rocescope gui --sim aes` or `--sim dpi-drop`).");
        return;
    }
    let cursor = model.cursor_ns();
    let n = all.partition_point(|s| s.ts_ns <= cursor);
    let visible = &all[..n];
    let drops = visible
        .iter()
        .filter(|s| matches!(s.verdict, Verdict::Drop))
        .count();
    ui.strong(format!(
        "Service-slot decisions: {n} up to the cursor, {drops} dropped"
    ));
    let sel = selected_item(model, View::Slots);
    let heads = ["time", "slot", "QP", "PSN", "verdict", "latency"];
    TableBuilder::new(ui)
        .id_salt("slots")
        .striped(true)
        .sense(Sense::click())
        .columns(Column::auto().at_least(70.0).resizable(true), heads.len())
        .header(20.0, |mut h| {
            for t in heads {
                h.col(|ui| {
                    ui.strong(t);
                });
            }
        })
        .body(|body| {
            body.rows(ROW_H, visible.len(), |mut row| {
                let i = row.index();
                let s = &visible[i];
                row.set_selected(sel == Some(i));
                let color = match s.verdict {
                    Verdict::Drop => RED,
                    Verdict::Transformed => CYAN,
                    Verdict::Pass => row_text_color(),
                };
                let cells = [
                    query::rel_time(model, s.ts_ns),
                    format!("{:?}", s.slot),
                    format!("0x{:x}", s.qpn),
                    s.psn.to_string(),
                    format!("{:?}", s.verdict),
                    format!("{} ns", s.latency_ns),
                ];
                for cell in cells {
                    row.col(|ui| {
                        ui.label(RichText::new(cell).monospace().color(color));
                    });
                }
                if row.response().clicked() {
                    select_item(model, View::Slots, i, out);
                }
            });
        });
}

fn row_text_color() -> Color32 {
    Color32::from_gray(210)
}

// ----------------------------------------------------------------- explain

pub fn explain_panel(ui: &mut Ui, model: &Model, st: &PanelState) {
    let Some(sel) = st.selected() else {
        ui.weak("Select a packet (Packets panel) to have it explained.");
        return;
    };
    let _ = model;
    let p = sel.packet();
    let flags: Vec<&str> = sel.row.flags.names().collect();
    egui::ScrollArea::vertical()
        .id_salt("explain")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            ui.heading(format!(
                "Frame {}: {}",
                sel.index + 1,
                p.summary().to_string().replace('→', ">")
            ));
            for para in explain::packet(&p, &flags) {
                ui.add_space(4.0);
                ui.label(para);
            }
        });
}

// ----------------------------------------------------------------- lessons

pub fn lessons(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let all = rocescope_core::lesson::builtin();
    let sel = selected_item(model, View::Lessons);
    ui.strong("Lessons (double-click to open; n / p move through the steps)");
    for (i, l) in all.iter().enumerate() {
        let r = ui.selectable_label(
            sel == Some(i),
            format!(
                "{}. {} — {} (scenario: {})",
                i + 1,
                l.title,
                l.summary,
                l.scenario
            ),
        );
        if r.clicked() {
            select_item(model, View::Lessons, i, out);
        }
        if r.double_clicked() {
            out.push(Command::OpenSelectedQp);
        }
    }
    ui.add_space(8.0);
    ui.weak(format!(
        "Opening a lesson starts the scenario it was written for; L leaves it, back to this source: {}.",
        model.source.name
    ));
}

/// The current lesson step, docked at the bottom while a lesson is open.
pub fn lesson_box(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let Some(l) = &model.lesson else { return };
    let n = l.steps.len();
    let i = model.lesson_step.min(n.saturating_sub(1));
    ui.horizontal(|ui| {
        ui.strong(format!("Lesson: {} — step {}/{}", l.title, i + 1, n));
        if ui.button("previous (p)").clicked() {
            out.push(Command::PrevLessonStep);
        }
        if ui.button("next (n)").clicked() {
            out.push(Command::NextLessonStep);
        }
        if let Some(name) = model.previous_source_name() {
            if ui.button(format!("leave (L), back to {name}")).clicked() {
                out.push(Command::LeaveLesson);
            }
        }
        ui.weak(format!("on {}", model.source.name));
    });
    if let Some(step) = l.steps.get(i) {
        ui.label(&step.text);
    }
}
