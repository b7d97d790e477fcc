//! QPs: one row per conversation.

use eframe::egui;

use egui::{RichText, Sense, Ui};
use egui_extras::{Column, TableBuilder};
use rocescope_core::command::View;
use rocescope_core::query::{self};
use rocescope_core::{Command, Model};

use super::{ROW_H, select_item, selected_item};

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
