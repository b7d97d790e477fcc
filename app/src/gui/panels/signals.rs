//! Waveform signals beside packets: a hierarchy browser with search on the
//! left, the chosen signals' step charts on the right (one-bit signals as a
//! line, buses as value segments), each with its format, around the
//! waveform cursor. A click in a chart moves the cursor there (and selects
//! the packet at or before it); the wheel changes the span. All state is
//! the core's: this panel sends commands.

use eframe::egui;
use egui::{Align2, Color32, FontId, Rect, Sense, Stroke, Ui, pos2, vec2};
use rocescope_core::signals::chart::{Column, columns, marker_columns};
use rocescope_core::signals::{Chosen, Radix, Signals};
use rocescope_core::{Command, Model};
use rocescope_replay::wave::signals::MarkerKind;

use super::{CYAN, DIM, GREEN, PanelState, YELLOW};

const CHART_H: f32 = 26.0;
/// An ILA capture's trigger, and a capture window's start, on the charts.
const TRIGGER: Color32 = Color32::from_rgb(0xff, 0x55, 0x55);
const WINDOW: Color32 = Color32::from_rgb(0x88, 0x88, 0xaa);

pub fn show(ui: &mut Ui, model: &Model, s: &Signals, st: &mut PanelState, out: &mut Vec<Command>) {
    ui.horizontal_top(|ui| {
        ui.vertical(|ui| {
            ui.set_width(280.0);
            browser(ui, s, st, out);
        });
        ui.separator();
        ui.vertical(|ui| charts(ui, model, s, out));
    });
}

fn browser(ui: &mut Ui, s: &Signals, st: &mut PanelState, out: &mut Vec<Command>) {
    if st.signal_search != s.search() && !st.signal_search_edited {
        st.signal_search = s.search().to_owned();
    }
    st.signal_search_edited = false;
    let edit = ui.add(
        egui::TextEdit::singleline(&mut st.signal_search)
            .hint_text("search signals (words of the path)")
            .desired_width(270.0),
    );
    if edit.changed() {
        st.signal_search_edited = true;
        out.push(Command::SignalSearch(st.signal_search.clone()));
    }
    let matches: Vec<_> = s.matches().collect();
    ui.weak(format!(
        "{} of {} signals; click one to show it",
        matches.len(),
        s.hierarchy().len()
    ));
    let row_h = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
    egui::ScrollArea::vertical()
        .id_salt("signal-browser")
        .auto_shrink([false, false])
        .show_rows(ui, row_h, matches.len(), |ui, range| {
            for sig in &matches[range] {
                let shown = s.chosen().iter().any(|c| c.path == sig.path);
                let width = sig
                    .width_bits
                    .map_or_else(|| "real/string".into(), |w| w.to_string());
                let text = egui::RichText::new(format!("{}  {width}", sig.path));
                let text = if shown { text.color(GREEN) } else { text };
                let r = ui.add(egui::Label::new(text).sense(Sense::click()).truncate());
                if r.clicked() && !shown {
                    out.push(Command::AddSignal(sig.path.clone()));
                }
            }
        });
}

fn charts(ui: &mut Ui, model: &Model, s: &Signals, out: &mut Vec<Command>) {
    let cursor = model.wave_cursor_ns().unwrap_or(0);
    if s.chosen().is_empty() {
        ui.weak("No signals shown: search on the left and click a signal.");
        return;
    }
    let width_px = (ui.available_width() - 8.0).max(40.0);
    let span = s.span_ns().max(1);
    // Whole nanoseconds per column; at deep zoom a column is wider than a pixel.
    let ncols = (width_px as u64).min(span).max(1) as usize;
    let per_col = span.div_ceil(ncols as u64).max(1);
    let col_w = width_px / ncols as f32;
    let start = cursor.saturating_sub(per_col * ncols as u64 / 2);
    ui.weak(format!(
        "cursor {cursor} ns, {start} .. {} ns; click a chart to move the cursor, wheel to zoom",
        start + per_col * ncols as u64
    ));
    if let Some(why) = s.streamed_because() {
        ui.label(
            egui::RichText::new(format!("Each signal is read from the file: {why}")).color(YELLOW),
        );
    }
    let marks = marker_columns(s.markers(), start, per_col, ncols);
    if !marks.is_empty() {
        ui.horizontal(|ui| {
            ui.label(egui::RichText::new("| trigger").color(TRIGGER));
            ui.label(
                egui::RichText::new("| a capture window starts (the time before it unknown)")
                    .color(WINDOW),
            );
        });
    }
    for c in s.chosen() {
        ui.horizontal(|ui| {
            ui.label(egui::RichText::new(c.label()).color(CYAN));
            let now = c.at(cursor).map_or_else(|| "-".into(), |v| c.text(v));
            ui.label(egui::RichText::new(format!("= {now}")).strong());
            egui::ComboBox::from_id_salt(("radix", &c.path))
                .selected_text(c.radix.word())
                .show_ui(ui, |ui| {
                    for r in Radix::ALL {
                        if ui.selectable_label(c.radix == r, r.word()).clicked() && c.radix != r {
                            out.push(Command::SignalFormat {
                                path: c.path.clone(),
                                radix: r,
                            });
                        }
                    }
                });
            if ui.small_button("remove").clicked() {
                out.push(Command::RemoveSignal(c.path.clone()));
            }
        });
        let (rect, resp) = ui.allocate_exact_size(vec2(width_px, CHART_H), Sense::click());
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 0.0, ui.visuals().extreme_bg_color);
        let cols = columns(c.changes(), start, per_col, ncols);
        paint(&painter, c, &cols, rect, col_w, ui.visuals().text_color());
        for &(col, kind) in &marks {
            let x = rect.left() + (col as f32 + 0.5) * col_w;
            let (color, width) = match kind {
                MarkerKind::Trigger => (TRIGGER, 2.0),
                MarkerKind::Window => (WINDOW, 1.0),
            };
            painter.line_segment(
                [pos2(x, rect.top()), pos2(x, rect.bottom())],
                Stroke::new(width, color),
            );
        }
        let x = rect.left() + ((cursor - start) / per_col) as f32 * col_w;
        painter.line_segment(
            [pos2(x, rect.top()), pos2(x, rect.bottom())],
            Stroke::new(1.5, Color32::YELLOW),
        );
        if resp.clicked()
            && let Some(p) = resp.interact_pointer_pos()
        {
            let t = start + (((p.x - rect.left()) / col_w).max(0.0) as u64) * per_col;
            out.push(Command::WaveCursor(t));
        }
        if resp.hovered() {
            let dy = ui.input(|i| i.smooth_scroll_delta.y);
            if dy != 0.0 {
                let k = (-(dy as f64) * 0.003).exp();
                out.push(Command::WaveSpan(((span as f64) * k).max(8.0) as u64));
            }
        }
    }
}

fn paint(
    painter: &egui::Painter,
    c: &Chosen,
    cols: &[Column],
    rect: Rect,
    col_w: f32,
    text: Color32,
) {
    let (hi, lo) = (rect.top() + 4.0, rect.bottom() - 4.0);
    let stroke = Stroke::new(1.5, GREEN);
    let x_of = |k: usize| rect.left() + k as f32 * col_w;
    if c.width_bits == 1 {
        for (k, col) in cols.iter().enumerate() {
            let y = |v: &rocescope_replay::wave::signals::Change| {
                if v.value & 1 == 1 { hi } else { lo }
            };
            match col {
                Column::Empty => {}
                Column::Held(v) => {
                    painter.line_segment([pos2(x_of(k), y(v)), pos2(x_of(k + 1), y(v))], stroke);
                }
                Column::Edge { end, .. } => {
                    painter.line_segment([pos2(x_of(k), hi), pos2(x_of(k), lo)], stroke);
                    painter
                        .line_segment([pos2(x_of(k), y(end)), pos2(x_of(k + 1), y(end))], stroke);
                }
            }
        }
        return;
    }
    // A bus: a band between edges, each edge an X, the value where it fits.
    let mid = (hi + lo) / 2.0;
    let mut k = 0;
    while k < cols.len() {
        if cols[k] == Column::Empty {
            k += 1;
            continue;
        }
        let from = k;
        let v = cols[k].value();
        if matches!(cols[k], Column::Edge { .. }) {
            painter.line_segment([pos2(x_of(k), hi), pos2(x_of(k) + 3.0, mid)], stroke);
            painter.line_segment([pos2(x_of(k), lo), pos2(x_of(k) + 3.0, mid)], stroke);
        }
        k += 1;
        while k < cols.len() && matches!(cols[k], Column::Held(_)) {
            k += 1;
        }
        let (x0, x1) = (x_of(from) + 3.0, x_of(k));
        painter.line_segment([pos2(x0, hi), pos2(x1, hi)], stroke);
        painter.line_segment([pos2(x0, lo), pos2(x1, lo)], stroke);
        if let Some(v) = v {
            let label = c.text(v);
            // About 7 px a character at 12 px.
            if (label.chars().count() as f32) * 7.0 + 6.0 < x1 - x0 {
                painter.text(
                    pos2(x0 + 3.0, mid),
                    Align2::LEFT_CENTER,
                    label,
                    FontId::monospace(12.0),
                    if v.known { text } else { DIM },
                );
            }
        }
    }
}
