//! Retransmissions: the episodes and why each happened.

use eframe::egui;

use egui::{RichText, Ui};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model, explain};

use super::{list_table, select_item, selected_item};

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
    let clicked = list_table(
        ui,
        "episodes",
        &heads,
        report.episodes.len(),
        table_h,
        sel,
        (60.0, None),
        |i, row| {
            for cell in query::episode_row(model, &report.episodes[i]) {
                row.col(|ui| {
                    ui.label(RichText::new(cell).monospace());
                });
            }
        },
    );
    if let Some((i, once, twice)) = clicked {
        if once {
            select_item(model, View::Retransmissions, i, out);
            out.push(Command::SelectRow(report.episodes[i].first_index));
        }
        if twice {
            out.push(Command::OpenSelectedQp);
        }
    }
    ui.separator();
    if let Some(e) = sel.and_then(|i| report.episodes.get(i)) {
        ui.label(explain::episode(e.cause));
    } else {
        ui.weak("select an episode to see why it happened");
    }
}
