//! Ladder: the selected QP's packets as a message sequence.

use eframe::egui;

use egui::{Align2, FontId, Pos2, Rect, Sense, Stroke, Ui, Vec2, pos2};
use rocescope_core::model::Selected;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model, explain};
use rocescope_replay::store::Row;

use super::{DIM, class_color};

pub fn ladder(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let Some(q) = query::ladder_qp(model) else {
        ui.weak("no QP yet");
        return;
    };
    ui.strong(format!(
        "{} — hover an arrow for its explanation, click to select",
        query::ladder_title(model).unwrap_or_default()
    ));
    let (rect, resp) = ui.allocate_exact_size(ui.available_size(), Sense::click());
    let painter = ui.painter_at(rect);
    let step = 26.0;
    let head = 22.0;
    let count = (((rect.height() - head) / step).floor() as usize).max(1);
    let rows = query::ladder_rows(model, q, count);
    let time_w = 100.0;
    // The requester's state band, left of the times.
    let band_w = 10.0;
    let left = rect.left() + band_w + time_w + 20.0;
    let right = rect.right() - 20.0;
    let text = ui.visuals().text_color();
    let lane = Stroke::new(2.0, DIM);
    let f = FontId::proportional(12.0);
    // A session of capture points: one lane per point, in path order.
    let lanes = query::ladder_lanes(model);
    let lane_x = |k: usize, n: usize| left + (right - left) * k as f32 / (n.max(2) - 1) as f32;
    // A lane: its line down from under the heads, its label on top.
    let draw_lane = |x: f32, align: Align2, label: String| {
        painter.line_segment([pos2(x, rect.top() + head), pos2(x, rect.bottom())], lane);
        painter.text(pos2(x, rect.top() + 2.0), align, label, f.clone(), text);
    };
    match &lanes {
        Some(names) => {
            for (k, name) in names.iter().enumerate() {
                let align = if k == 0 {
                    Align2::LEFT_TOP
                } else if k + 1 == names.len() {
                    Align2::RIGHT_TOP
                } else {
                    Align2::CENTER_TOP
                };
                draw_lane(lane_x(k, names.len()), align, format!("point {name}"));
            }
        }
        None => {
            let requester = format!("requester {}", query::addr(q.requester));
            draw_lane(left, Align2::CENTER_TOP, requester);
            draw_lane(
                right,
                Align2::RIGHT_TOP,
                format!("responder {}", query::addr(q.responder)),
            );
        }
    }
    let hover = resp.hover_pos();
    let mut hovered: Option<&query::LadderRow> = None;
    let mut band_hover = None;
    let mut last_ts: Option<u64> = None;
    for (k, lr) in rows.iter().enumerate() {
        let y = rect.top() + head + (k as f32 + 0.5) * step;
        // Arrows slant down: the time a packet spends on the wire. Across
        // the points' lanes, from the first on its way to the last that saw
        // it; where it vanished, half way to the next, and an x.
        let span = lanes.as_ref().map(|names| {
            let n = names.len();
            lr.lane_span(model).unwrap_or(query::LaneSpan {
                from: if lr.rightward { 0 } else { n - 1 },
                to: if lr.rightward { n - 1 } else { 0 },
                rightward: lr.rightward,
                vanished: false,
            })
        });
        let (a, b, vanished) = match (span, &lanes) {
            (Some(s), Some(names)) => {
                let n = names.len();
                let (xa, xr) = (lane_x(s.from, n), lane_x(s.to, n));
                let next = s.to as i64 + if s.rightward { 1 } else { -1 };
                let xb = if !s.vanished {
                    xr
                } else if (0..n as i64).contains(&next) {
                    (xr + lane_x(next as usize, n)) / 2.0
                } else {
                    xr + if s.rightward { 24.0 } else { -24.0 }
                };
                (pos2(xa, y - 6.0), pos2(xb, y + 6.0), s.vanished)
            }
            _ if lr.rightward => (pos2(left, y - 6.0), pos2(right, y + 6.0), false),
            _ => (pos2(right, y - 6.0), pos2(left, y + 6.0), false),
        };
        let mut color = class_color(lr.row.flags, text);
        let selected = Some(lr.index) == model.selected();
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
            if resp.clicked() && lr.unseen.is_none() {
                out.push(Command::SelectRow(lr.index));
            }
        }
        if let Some(prev) = last_ts
            && lr.row.ts_ns.saturating_sub(prev) > 20_000
        {
            painter.text(
                pos2((left + right) / 2.0, y - step / 2.0),
                Align2::CENTER_CENTER,
                format!(
                    "… {} silent …",
                    rocescope_decoders::units::duration_text(lr.row.ts_ns - prev)
                ),
                FontId::proportional(10.0),
                DIM,
            );
        }
        // The band: the requester's time state from this row to the next.
        if let Some(state) = query::ladder_state(model, lr.row.ts_ns) {
            let [r, g, b] = query::state_rgb(state);
            let cell = Rect::from_min_max(
                pos2(rect.left() + 1.0, y - step / 2.0),
                pos2(rect.left() + band_w - 2.0, y + step / 2.0),
            );
            painter.rect_filled(cell, 0.0, egui::Color32::from_rgb(r, g, b));
            if hover.is_some_and(|p| cell.contains(p)) {
                band_hover = Some(state);
            }
        }
        last_ts = Some(lr.row.ts_ns);
        painter.text(
            pos2(rect.left() + band_w + 2.0, y),
            Align2::LEFT_CENTER,
            query::rel_time(model, lr.row.ts_ns),
            FontId::monospace(11.0),
            DIM,
        );
        let stroke = Stroke::new(if selected { 2.5 } else { 1.5 }, color);
        if vanished {
            painter.line_segment([a, b], stroke);
            painter.text(
                b,
                Align2::CENTER_CENTER,
                LOST_MARK,
                FontId::proportional(14.0),
                super::RED,
            );
        } else {
            arrow(&painter, a, b, stroke);
        }
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
            pos2((a.x + b.x) / 2.0, y - 4.0),
            Align2::CENTER_BOTTOM,
            label,
            f.clone(),
            color,
        );
    }
    if let Some(state) = band_hover {
        resp.on_hover_text_at_pointer(format!(
            "the requester's time state here: {} (the QPs view has the legend)",
            state.name()
        ));
        return;
    }
    if let Some(lr) = hovered {
        let lr = *lr;
        resp.on_hover_ui_at_pointer(|ui| {
            ui.set_max_width(420.0);
            if lr.unseen.is_some() {
                // No row of this capture: the points that saw it tell.
                ui.label(format!(
                    "{} PSN {}: lost before it reached this capture's point (the Losses view has its evidence)",
                    rocescope_replay::text::short_opcode(lr.row.opcode),
                    lr.row.psn
                ));
            } else {
                explain_row(ui, model, lr.index, &lr.row);
            }
        });
    }
}

/// Where a frame vanished, at its arrow's end.
pub const LOST_MARK: &str = "×";

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
    let Ok(bytes) = model.store().frame_bytes(index) else {
        return;
    };
    let sel = Selected {
        index,
        row: *row,
        bytes,
        link: model
            .store()
            .link_layer(row.port)
            .unwrap_or(rocescope_decoders::LinkLayer::Ethernet),
        decode: model.store().decode_config(),
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
