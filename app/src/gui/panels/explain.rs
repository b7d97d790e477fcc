//! Explain: the selected packet in words.

use eframe::egui;

use egui::Ui;
use rocescope_core::{Model, explain};

use super::PanelState;

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
