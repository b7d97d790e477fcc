//! The "Export view" window: a form over `Command::Export`.

use eframe::egui;
use std::path::{Path, PathBuf};

use super::Workbench;
use rocescope_core::{Command, Model, Table};

/// The "Export view" window: a path (the format comes from its
/// extension) and a table, sent to the model as `Command::Export`.
#[derive(Debug, Default)]
pub struct ExportDialog {
    pub open: bool,
    pub path: String,
    /// `None`: the current view's table.
    pub table: Option<Table>,
    /// Write hive-style Parquet partitions into the folder `path`.
    pub partition: bool,
    /// The partitions' time window, as typed (`1s`, `100ms`).
    pub window: String,
    /// The path the window last proposed (replaced when the view changes).
    proposed: String,
    /// An export was sent from the window: show its outcome there.
    pub sent: bool,
    /// Give the path field the keyboard on the next frame.
    focus: bool,
}

impl ExportDialog {
    /// Open, proposing `TABLE.parquet` unless the user typed a path.
    pub fn show(&mut self, model: &Model) {
        let proposal = format!("{}.parquet", self.table.unwrap_or(model.export_table()));
        if self.path.is_empty() || self.path == self.proposed {
            self.path.clone_from(&proposal);
        }
        self.proposed = proposal;
        self.open = true;
        self.sent = false;
        self.focus = true;
    }

    /// The partitions' window in ns, when partitions are asked for.
    fn window_ns(&self) -> Option<Result<u64, String>> {
        self.partition.then(|| {
            if self.window.trim().is_empty() {
                Ok(rocescope_core::model::PARTITION_WINDOW_NS)
            } else {
                use rocescope_decoders::units::{HOUR_NS, parse_duration_ns};
                parse_duration_ns(&self.window, HOUR_NS).map_err(|e| e.to_string())
            }
        })
    }

    /// What is wrong with the form, if anything.
    fn problem(&self) -> Option<String> {
        let format = rocescope_data::Format::from_path(Path::new(self.path.trim()));
        match self.window_ns() {
            None => format
                .err()
                .map(|_| "name the file .parquet, .csv or .jsonl".into()),
            Some(Err(e)) => Some(e),
            Some(Ok(_)) if self.path.trim().is_empty() => Some("name the folder".into()),
            Some(Ok(_)) => matches!(
                format,
                Ok(rocescope_data::Format::Csv | rocescope_data::Format::Jsonl)
            )
            .then(|| "partitions are Parquet: name a folder".into()),
        }
    }

    /// The command the Export button sends.
    pub fn command(&self) -> Command {
        Command::Export {
            table: self.table,
            path: PathBuf::from(self.path.trim()),
            partition_window_ns: self.window_ns().and_then(Result::ok),
        }
    }
}

impl Workbench {
    pub(crate) fn export_window(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        if !self.export.open {
            return;
        }
        if ctx.input(|i| i.key_pressed(egui::Key::Escape)) {
            self.export.open = false;
            return;
        }
        let m = &self.model;
        let d = &mut self.export;
        let mut open = true;
        let mut send = false;
        egui::Window::new("Export view")
            .open(&mut open)
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_TOP, [0.0, 80.0])
            .show(ctx, |ui| {
                let this_view = m.export_table();
                egui::Grid::new("export-form")
                    .num_columns(2)
                    .show(ui, |ui| {
                        ui.label("table");
                        egui::ComboBox::from_id_salt("export-table")
                            .selected_text(d.table.map_or_else(
                                || format!("this view ({this_view})"),
                                |t| t.name().to_owned(),
                            ))
                            .show_ui(ui, |ui| {
                                ui.selectable_value(
                                    &mut d.table,
                                    None,
                                    format!("this view ({this_view})"),
                                );
                                for t in Table::ALL {
                                    ui.selectable_value(&mut d.table, Some(t), t.name());
                                }
                            });
                        ui.end_row();
                        ui.label("file");
                        let r = ui.add(
                            egui::TextEdit::singleline(&mut d.path)
                                .hint_text("packets.parquet")
                                .desired_width(360.0),
                        );
                        if std::mem::take(&mut d.focus) {
                            r.request_focus();
                        }
                        send |= r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                        ui.end_row();
                        // The window on a row of its own: beside the
                        // checkbox it ran past the window's edge.
                        ui.label("partitions");
                        ui.checkbox(
                            &mut d.partition,
                            "hive-style Parquet folders by time window",
                        );
                        ui.end_row();
                        ui.label("window");
                        ui.horizontal(|ui| {
                            ui.add_enabled(
                                d.partition,
                                egui::TextEdit::singleline(&mut d.window)
                                    .hint_text("1s")
                                    .desired_width(80.0),
                            );
                            ui.weak("of capture time a folder (1s, 100ms, 500us)");
                        });
                        ui.end_row();
                    });
                let table = d.table.unwrap_or(this_view);
                let problem = d.problem();
                let rows = if table == Table::Packets {
                    "the rows the view shows (the display filter's matches, the ladder's QP)"
                } else {
                    "the whole table"
                };
                match &problem {
                    None if d.partition => ui.weak(format!(
                        "{table} as Parquet partitions by capture and time window; {rows}"
                    )),
                    None => ui.weak(format!(
                        "{table} as {:?}; {rows}",
                        rocescope_data::Format::from_path(Path::new(d.path.trim()))
                            .unwrap_or(rocescope_data::Format::Parquet)
                    )),
                    Some(p) => ui.colored_label(egui::Color32::LIGHT_RED, p),
                };
                ui.horizontal(|ui| {
                    let busy = m.exporting();
                    send |= ui
                        .add_enabled(problem.is_none() && !busy, egui::Button::new("Export"))
                        .clicked();
                    if busy {
                        ui.spinner();
                    }
                });
                if d.sent {
                    match &m.last_export() {
                        _ if m.exporting() => ui.label(m.status()),
                        Some(Err(_)) => ui.colored_label(egui::Color32::LIGHT_RED, m.status()),
                        _ => ui.label(m.status()),
                    };
                }
            });
        if send && d.problem().is_none() {
            out.push(d.command());
            d.sent = true;
        }
        if !open {
            d.open = false;
        }
    }
}
