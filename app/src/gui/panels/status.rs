//! The status bar and the command line (`:`) at the bottom of the window.

use super::super::Workbench;
use eframe::egui;
use rocescope_core::status::Tone;
use rocescope_core::{Command, Overlay, UiCommand, cmdline, status_line};

impl Workbench {
    pub(crate) fn status_bar(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        let m = &self.model;
        egui::TopBottomPanel::bottom("status").show(ctx, |ui| {
            ui.horizontal(|ui| {
                let playing = m.clock().state() == rocescope_replay::clock::PlayState::Playing;
                if ui
                    .button(if playing { "pause" } else { "play" })
                    .on_hover_text(UiCommand::TogglePlay.description())
                    .clicked()
                {
                    out.push(Command::TogglePlay);
                }
                // The core's status line, part by part, as the terminal shows it.
                for (i, part) in status_line(m).parts().into_iter().enumerate() {
                    if i > 0 {
                        ui.weak("|");
                    }
                    let text = egui::RichText::new(part.text);
                    let text = match part.tone {
                        Tone::Normal => text,
                        Tone::Good => text.strong().color(egui::Color32::LIGHT_GREEN),
                        Tone::Notice => text.color(egui::Color32::YELLOW),
                        Tone::Bad => text.strong().color(egui::Color32::LIGHT_RED),
                    };
                    ui.label(text);
                }
                if let Some(e) = &self.open_error {
                    ui.weak("|");
                    ui.colored_label(egui::Color32::LIGHT_RED, e);
                }
            });
        });
    }

    /// The command line (`:`): a text field at the bottom that has the
    /// keyboard while open; Tab completes, Enter runs, Esc closes.
    pub(crate) fn command_line(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        if self.model.overlay() != Overlay::CommandLine {
            self.cmdline_open = false;
            return;
        }
        let id = egui::Id::new("rocescope-cmdline");
        let opening = !std::mem::replace(&mut self.cmdline_open, true);
        let (tab, enter, esc) = ctx.input(|i| {
            (
                i.key_pressed(egui::Key::Tab),
                i.key_pressed(egui::Key::Enter),
                i.key_pressed(egui::Key::Escape),
            )
        });
        if esc {
            out.push(Command::CloseOverlay);
            ctx.memory_mut(|m| m.surrender_focus(id));
            return;
        }
        let mut text = self.model.cmdline().to_owned();
        if tab {
            text = cmdline::complete(&text).line;
        }
        if opening || tab {
            // Focus before the field is drawn, so that it takes this
            // frame's keys; the cursor after the text.
            ctx.memory_mut(|m| m.request_focus(id));
            let mut state = egui::text_edit::TextEditState::load(ctx, id).unwrap_or_default();
            let end = egui::text::CCursor::new(text.chars().count());
            state
                .cursor
                .set_char_range(Some(egui::text::CCursorRange::one(end)));
            state.store(ctx, id);
        }
        egui::TopBottomPanel::bottom("cmdline").show(ctx, |ui| {
            ui.horizontal(|ui| {
                ui.monospace(":");
                ui.add(
                    egui::TextEdit::singleline(&mut text)
                        .id(id)
                        .lock_focus(true)
                        .font(egui::TextStyle::Monospace)
                        .desired_width(ui.available_width() * 0.5),
                );
                let fits = cmdline::complete(&text).candidates;
                if fits.len() > 1 && !text.trim().is_empty() {
                    ui.weak(fits.join(" "));
                } else {
                    ui.weak(cmdline::hint());
                }
            });
        });
        if enter {
            out.push(Command::RunCommandLine(text));
            ctx.memory_mut(|m| m.surrender_focus(id));
        } else if text != self.model.cmdline() {
            out.push(Command::SetCommandLine(text));
        }
    }
}
