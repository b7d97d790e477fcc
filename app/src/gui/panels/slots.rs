//! Service slots: the slot decisions.

use eframe::egui;

use egui::{Color32, RichText, Sense, Ui};
use egui_extras::{Column, TableBuilder};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model};
use rocescope_replay::record::Verdict;

use super::{CYAN, RED, ROW_H, select_item, selected_item};

pub fn slots(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let all = model.slots();
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
                    rocescope_replay::text::qpn(s.qpn),
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
