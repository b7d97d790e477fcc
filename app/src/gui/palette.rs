//! The command palette (Ctrl+P): every `UiCommand` and the GUI's own actions.

use super::{DEFAULT_PAGE_ROWS, Workbench, default_dock};
use eframe::egui;
use rocescope_core::{Command, UiCommand};

/// The command palette (Ctrl+P): every `UiCommand`, filtered as you type.
#[derive(Debug, Default)]
pub struct Palette {
    pub open: bool,
    pub query: String,
    pub pick: usize,
}

/// Entries the palette lists: the UI commands, then the GUI's own actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaletteItem {
    Ui(UiCommand),
    ResetLayout,
}

impl PaletteItem {
    pub fn all() -> Vec<PaletteItem> {
        let mut v: Vec<PaletteItem> = UiCommand::ALL.iter().map(|c| PaletteItem::Ui(*c)).collect();
        v.push(PaletteItem::ResetLayout);
        v
    }

    pub fn label(self) -> (&'static str, &'static str) {
        match self {
            PaletteItem::Ui(c) => (c.key(), c.description()),
            PaletteItem::ResetLayout => ("", "reset the panel layout"),
        }
    }

    fn matches(self, q: &str) -> bool {
        let (k, d) = self.label();
        let q = q.to_lowercase();
        q.split_whitespace()
            .all(|w| d.to_lowercase().contains(w) || k.to_lowercase() == w)
    }
}

impl Workbench {
    pub(crate) fn palette_window(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        if !self.palette.open {
            return;
        }
        let items: Vec<PaletteItem> = PaletteItem::all()
            .into_iter()
            .filter(|p| p.matches(&self.palette.query))
            .filter(|p| match p {
                PaletteItem::Ui(c) => self.model.offers(*c),
                PaletteItem::ResetLayout => true,
            })
            .collect();
        let (up, down, enter, esc) = ctx.input(|i| {
            (
                i.key_pressed(egui::Key::ArrowUp),
                i.key_pressed(egui::Key::ArrowDown),
                i.key_pressed(egui::Key::Enter),
                i.key_pressed(egui::Key::Escape),
            )
        });
        if esc {
            self.palette.open = false;
            return;
        }
        if down {
            self.palette.pick = (self.palette.pick + 1).min(items.len().saturating_sub(1));
        }
        if up {
            self.palette.pick = self.palette.pick.saturating_sub(1);
        }
        self.palette.pick = self.palette.pick.min(items.len().saturating_sub(1));
        let mut chosen = enter
            .then(|| items.get(self.palette.pick).copied())
            .flatten();
        egui::Window::new("Commands")
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
            .fixed_size([460.0, 420.0])
            .show(ctx, |ui| {
                let r = ui.add(
                    egui::TextEdit::singleline(&mut self.palette.query)
                        .hint_text("type to filter commands")
                        .desired_width(f32::INFINITY),
                );
                r.request_focus();
                if r.changed() {
                    self.palette.pick = 0;
                }
                egui::ScrollArea::vertical().show(ui, |ui| {
                    for (i, item) in items.iter().enumerate() {
                        let (key, desc) = item.label();
                        let resp = ui.add(
                            egui::Button::selectable(i == self.palette.pick, desc)
                                .shortcut_text(key)
                                .min_size(egui::vec2(ui.available_width(), 0.0)),
                        );
                        if i == self.palette.pick && (up || down) {
                            resp.scroll_to_me(None);
                        }
                        if resp.clicked() {
                            chosen = Some(*item);
                        }
                    }
                });
            });
        if let Some(item) = chosen {
            self.palette.open = false;
            match item {
                PaletteItem::Ui(c) => {
                    let cmd = c.command(DEFAULT_PAGE_ROWS);
                    if cmd == Command::EditFilter {
                        self.panels.focus_filter = true;
                    }
                    if cmd == Command::EditExport {
                        self.export.show(&self.model);
                    } else {
                        out.push(cmd);
                    }
                }
                PaletteItem::ResetLayout => {
                    self.dock = default_dock();
                    super::fit_dock(&mut self.dock, &self.model);
                }
            }
        }
    }
}
