//! Keys: from egui input to the one `UiCommand` list, as the TUI maps them.

use super::{DEFAULT_PAGE_ROWS, Workbench};
use eframe::egui;
use rocescope_core::{Command, Overlay, UiCommand};

impl Workbench {
    /// Keyboard shortcuts from the one `UiCommand` list; Ctrl+P opens the palette.
    pub(crate) fn keys(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        if ctx.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::P)) {
            self.palette.open = !self.palette.open;
            self.palette.query.clear();
            self.palette.pick = 0;
            return;
        }
        if self.palette.open || self.export.open || self.model.overlay() == Overlay::CommandLine {
            return;
        }
        if ctx.wants_keyboard_input() {
            // The filter field has the keys; Esc/Enter leave it.
            if self.model.overlay() == Overlay::FilterEdit
                && ctx
                    .input(|i| i.key_pressed(egui::Key::Escape) || i.key_pressed(egui::Key::Enter))
            {
                out.push(Command::CloseOverlay);
                ctx.memory_mut(|m| m.stop_text_input());
            }
            return;
        }
        let page = self.panels.page_rows.max(1).min(i64::MAX as u64) as i64;
        let page = if page <= 1 { DEFAULT_PAGE_ROWS } else { page };
        let names = ctx.input(key_names);
        for (i, name) in names.iter().enumerate() {
            let name = name.as_str();
            if self.model.overlay() == Overlay::Help && (name == "?" || name == "Esc") {
                out.push(Command::CloseOverlay);
                continue;
            }
            if let Some(c) = command_for_key(name, page) {
                // What follows `:` in the same frame is typed into the line.
                if c == Command::EditCommandLine {
                    out.push(c);
                    let rest: String = names[i + 1..]
                        .iter()
                        .filter_map(|n| match n.as_str() {
                            "Space" => Some(" "),
                            n if n.chars().count() == 1 => Some(n),
                            _ => None,
                        })
                        .collect();
                    out.push(Command::SetCommandLine(rest));
                    return;
                }
                if c == Command::EditFilter {
                    self.panels.focus_filter = true;
                }
                // The GUI asks for the path in a window, not a command line.
                if c == Command::EditExport {
                    self.export.show(&self.model);
                    return;
                }
                out.push(c);
            }
        }
    }
}

/// Names (as `UiCommand::key` spells them) of the keys pressed this frame.
pub fn key_names(i: &egui::InputState) -> Vec<String> {
    let mut names = Vec::new();
    for ev in &i.events {
        match ev {
            egui::Event::Key {
                key,
                pressed: true,
                modifiers,
                ..
            } if !modifiers.command && !modifiers.alt => {
                let n = match key {
                    egui::Key::Tab if modifiers.shift => "BackTab",
                    egui::Key::Tab => "Tab",
                    egui::Key::ArrowUp => "Up",
                    egui::Key::ArrowDown => "Down",
                    egui::Key::PageUp => "PageUp",
                    egui::Key::PageDown => "PageDown",
                    egui::Key::Home => "Home",
                    egui::Key::End => "End",
                    egui::Key::Enter => "Enter",
                    egui::Key::Escape => "Esc",
                    egui::Key::Space => "Space",
                    _ => continue,
                };
                names.push(n.to_owned());
            }
            // Printable keys come as text, so that `>`, `?`, `F` follow the layout.
            egui::Event::Text(t) if t != " " => {
                names.extend(t.chars().map(|c| c.to_string()));
            }
            _ => {}
        }
    }
    names
}

/// The command for a key name, from the one list (with the TUI's j/k aliases).
pub fn command_for_key(name: &str, page_rows: i64) -> Option<Command> {
    let name = match name {
        "j" => "Down",
        "k" => "Up",
        n => n,
    };
    UiCommand::ALL
        .iter()
        .find(|c| c.key() == name)
        .map(|c| c.command(page_rows))
}
