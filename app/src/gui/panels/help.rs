//! The help window: every key binding from the one `UiCommand` list.

use super::super::Workbench;
use eframe::egui;
use rocescope_core::{Command, Overlay, UiCommand};

impl Workbench {
    pub(crate) fn help_window(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        if self.model.overlay() != Overlay::Help {
            return;
        }
        let mut open = true;
        egui::Window::new("Keys")
            .open(&mut open)
            .collapsible(false)
            .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
            .show(ctx, |ui| {
                egui::Grid::new("keys").striped(true).show(ui, |ui| {
                    for c in UiCommand::ALL.into_iter().filter(|c| self.model.offers(*c)) {
                        ui.monospace(c.key());
                        ui.label(c.description());
                        ui.end_row();
                    }
                    ui.monospace("Ctrl+P");
                    ui.label("command palette");
                    ui.end_row();
                });
            });
        if !open {
            out.push(Command::CloseOverlay);
        }
    }
}
