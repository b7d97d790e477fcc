//! Losses: the lost frames of a session of capture points, segment by
//! segment, each with its evidence; a double click shows the frame in the
//! packet list.

use eframe::egui;

use egui::{RichText, Ui};
use rocescope_core::command::View;
use rocescope_core::query::{self, LossItem};
use rocescope_core::{Command, Model};

use super::{DIM, YELLOW, list_table, select_item, selected_item};

pub fn losses(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let Some(r) = model.points() else {
        ui.weak("the Losses view needs several capture points (--point NAME=FILE ...)");
        return;
    };
    let items = model.loss_items();
    ui.strong(format!(
        "Losses by segment: {} (click: select, double-click: show in packets)",
        query::losses_heading(r)
    ));
    let sel = selected_item(model, View::Losses);
    let why_h = 80.0;
    let heads = query::LOSS_VIEW_COLUMNS;
    let table_h = (ui.available_height() - why_h).max(60.0);
    let clicked = list_table(
        ui,
        "losses",
        &heads,
        items.len(),
        table_h,
        sel,
        (50.0, Some(120.0)),
        |i, row| {
            let item = items[i];
            let missed = matches!(item, LossItem::Missed(_));
            let cells = query::loss_row(model, r, item);
            let last = cells.len() - 1;
            for (k, cell) in cells.into_iter().enumerate() {
                row.col(|ui| {
                    let t = RichText::new(cell).monospace();
                    let t = if missed { t.color(DIM) } else { t };
                    // One line each (the evidence cut to its column, whole
                    // below); not selectable: a click is the row's.
                    let label = egui::Label::new(t).selectable(false);
                    ui.add(if k == last {
                        label.truncate()
                    } else {
                        label.extend()
                    });
                });
            }
        },
    );
    if let Some((i, _, twice)) = clicked {
        select_item(model, View::Losses, i, out);
        if twice {
            out.push(Command::OpenSelectedQp);
        }
    }
    ui.separator();
    match sel.and_then(|i| items.get(i)) {
        Some(&item) => {
            for line in query::loss_evidence(r, item) {
                ui.label(RichText::new(line).color(YELLOW));
            }
        }
        None if items.is_empty() => {
            ui.weak("No frame was lost between the points, and no point missed one.");
        }
        None => {
            ui.weak("select a loss to see its evidence");
        }
    }
}
