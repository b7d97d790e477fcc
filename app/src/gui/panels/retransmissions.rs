//! Retransmissions: the episodes and why each happened.

use eframe::egui;

use egui::{RichText, Sense, Ui, vec2};
use egui_extras::{Column, TableBuilder};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model, explain};

use super::{ROW_H, select_item, selected_item};

pub fn retransmissions(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let report = model.report();
    ui.strong(format!(
        "Retransmission episodes: {} (click: select, double-click: ladder)",
        report.episodes.len()
    ));
    let sel = selected_item(model, View::Retransmissions);
    let why_h = 70.0;
    let heads = query::EPISODE_COLUMNS;
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
                    let cells = query::episode_row(model, e);
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
