//! QPs: each conversation's time by state as a stacked bar, then one row
//! per conversation.

use eframe::egui;

use egui::{Color32, Rect, RichText, Sense, Ui, Vec2, pos2};
use egui_extras::{Column, TableBuilder};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model};
use rocescope_decoders::analysis::TimeState;

use super::{ROW_H, select_item, selected_item};

/// Each QP's time by state as a stacked bar (hover a part for its state
/// and share), and the states' legend.
fn time_bars(ui: &mut Ui, model: &Model) {
    let report = model.report();
    ui.strong("time by state (from each QP's first request)");
    let width = (ui.available_width() - 340.0).max(120.0);
    for q in &report.qps {
        ui.horizontal(|ui| {
            ui.label(RichText::new(rocescope_replay::text::qpn(q.dest_qp)).monospace());
            let (rect, resp) = ui.allocate_exact_size(Vec2::new(width, 14.0), Sense::hover());
            let painter = ui.painter_at(rect);
            let span: u64 = q.states.totals_ns.iter().sum();
            let mut x = rect.left();
            let mut hovered = None;
            for state in TimeState::ALL {
                let ns = q.states.totals_ns[state as usize];
                if ns == 0 || span == 0 {
                    continue;
                }
                let w = width * ns as f32 / span as f32;
                let part = Rect::from_min_size(pos2(x, rect.top()), Vec2::new(w, rect.height()));
                let [r, g, b] = query::state_rgb(state);
                painter.rect_filled(part, 0.0, Color32::from_rgb(r, g, b));
                if resp.hover_pos().is_some_and(|p| part.contains(p)) {
                    hovered = Some((state, ns as f64 / span as f64));
                }
                x += w;
            }
            if let Some((state, share)) = hovered {
                resp.on_hover_text_at_pointer(format!("{} {:.1}%", state.name(), share * 100.0));
            }
            ui.label(RichText::new(query::time_by_state_text(q)).small());
        });
    }
    ui.horizontal_wrapped(|ui| {
        for state in TimeState::ALL {
            let [r, g, b] = query::state_rgb(state);
            ui.label(RichText::new("■").color(Color32::from_rgb(r, g, b)));
            ui.label(RichText::new(state.name()).small());
        }
    });
}

pub fn qps(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    time_bars(ui, model);
    ui.separator();
    ui.strong("QP conversations (click: select, double-click: ladder)");
    let sel = selected_item(model, View::Qps);
    let heads = query::QP_COLUMNS;
    let rows = query::qp_rows(model);
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
            body.rows(ROW_H, rows.len(), |mut row| {
                let i = row.index();
                row.set_selected(sel == Some(i));
                let cells = rows[i].clone();
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
