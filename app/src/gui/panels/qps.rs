//! QPs: one row per conversation.

use eframe::egui;

use egui::{RichText, Sense, Ui};
use egui_extras::{Column, TableBuilder};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model};

use super::{ROW_H, select_item, selected_item};

pub fn qps(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
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
