//! The desktop workbench: egui + eframe over the same core model as the TUI.
//!
//! Each frame: tick the model, turn keys (from the one `UiCommand` list),
//! palette picks, dropped files and panel clicks into `Command`s, draw the
//! dockable panels from read-only model queries, then apply the commands
//! through `Model::apply`. Sources run on their own threads; the UI thread
//! only reads the store.

use eframe::egui;
pub mod layout;
pub mod panels;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod headless;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use egui_dock::{DockArea, DockState, NodeIndex, TabViewer};
use rocescope_core::command::View;
use rocescope_core::session::SessionLimits;
use rocescope_core::source;
use rocescope_core::status::Tone;
use rocescope_core::{Command, Model, Overlay, Table, UiCommand, cmdline, status_line};

pub use panels::PanelState;

/// `rocescope gui [FILE | --attach URL | --sim SCENARIO]`.
#[derive(Debug, clap::Args)]
pub struct GuiArgs {
    /// Capture file to open (pcap, pcapng, BALBOA sniffer dump).
    pub file: Option<PathBuf>,
    /// Attach to a live source: tcp://HOST:PORT, - (stdin) or file:PATH[?follow].
    #[arg(long, value_name = "URL", conflicts_with_all = ["file", "sim"])]
    pub attach: Option<String>,
    /// Run a simulator scenario (default when no file is given: `default`).
    #[arg(long, value_name = "SCENARIO", conflicts_with = "file")]
    pub sim: Option<String>,
    /// Extra UDP destination port to decode as RoCEv2; repeatable.
    #[arg(long = "roce-port", value_name = "N")]
    pub roce_ports: Vec<u16>,
    /// Memory a live session may hold, e.g. 512MiB (default: 2 GiB, or a
    /// quarter of the machine's memory where less); older frames and rows
    /// move to disk segments and stay queryable.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// Disk a live session's segments may take; past it the oldest are
    /// deleted (a ring), counted and shown.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_disk: Option<u64>,
    /// Close the window after this many seconds (smoke tests, demos).
    #[arg(long, value_name = "SECONDS", hide = true)]
    pub exit_after: Option<f64>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    rocescope_core::units::parse_size_bytes(s)
}

impl GuiArgs {
    fn limits(&self) -> SessionLimits {
        SessionLimits {
            max_memory_bytes: self
                .max_memory
                .unwrap_or_else(rocescope_core::session::default_max_memory_bytes),
            max_disk_bytes: self.max_disk,
            dir: None,
        }
    }
}

/// Open a capture as `rocescope open` does: a new store indexing in the
/// background and a new model over it.
pub fn open_file(path: &Path, roce_ports: Vec<u16>) -> anyhow::Result<Model> {
    let decode = rocescope_decoders::DecodeConfig {
        extra_roce_ports: roce_ports,
    };
    let spec = source::SourceSpec::File {
        path: path.to_path_buf(),
        decode,
    };
    use rocescope_replay::CaptureError;
    use rocescope_replay::store::StoreError;
    match source::open(spec, &SessionLimits::default()) {
        Ok(m) => Ok(m),
        // These already name the path.
        Err(source::OpenError::File {
            source: e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_)),
            ..
        }) => Err(e.into()),
        Err(e) => Err(e.into()),
    }
}

/// A simulator run paced as the terminal workbench paces it.
pub fn sim_model(scenario: &str) -> anyhow::Result<Model> {
    sim_model_within(scenario, &SessionLimits::default())
}

/// [`sim_model`] under the session's limits.
pub fn sim_model_within(scenario: &str, limits: &SessionLimits) -> anyhow::Result<Model> {
    let sc = rocescope_sim::Scenario::resolve(scenario).map_err(|e| anyhow::anyhow!("{e}"))?;
    let pace = source::Pace::for_duration(sc.duration_ns);
    let spec = source::SourceSpec::Sim {
        scenario: Box::new(sc),
        pace,
        record: None,
    };
    Ok(source::open(spec, limits)?)
}

/// The default layout: overview and packets side by side, the detail views
/// below, every view a tab.
pub fn default_dock() -> DockState<View> {
    let mut dock = DockState::new(vec![View::Overview, View::Qps, View::Lessons]);
    let surface = dock.main_surface_mut();
    let [left, right] =
        surface.split_right(NodeIndex::root(), 0.5, vec![View::Packets, View::Explain]);
    let [_, _] = surface.split_below(
        left,
        0.55,
        vec![View::Profiler, View::Retransmissions, View::Slots],
    );
    let [_, _] = surface.split_below(right, 0.6, vec![View::Ladder]);
    dock
}

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
                rocescope_core::units::parse_duration_ns(&self.window)
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

/// The whole desktop workbench, drivable headless (tests, benchmark).
pub struct Workbench {
    pub model: Model,
    pub dock: DockState<View>,
    pub panels: PanelState,
    pub palette: Palette,
    pub export: ExportDialog,
    /// The command line was open last frame (it takes the keyboard when
    /// it opens).
    cmdline_open: bool,
    last_view: View,
    /// Last error opening a dropped file.
    pub open_error: Option<String>,
}

impl std::fmt::Debug for Workbench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workbench")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// Rows per page for PageUp/PageDown when the packet list has not been drawn.
const DEFAULT_PAGE_ROWS: i64 = 20;

impl Workbench {
    pub fn new(model: Model, dock: Option<DockState<View>>) -> Workbench {
        let last_view = model.view();
        Workbench {
            model,
            dock: dock.unwrap_or_else(default_dock),
            panels: PanelState::default(),
            palette: Palette::default(),
            export: ExportDialog::default(),
            cmdline_open: false,
            last_view,
            open_error: None,
        }
    }

    /// Replace the model (a dropped file), keeping the layout.
    pub fn replace_model(&mut self, mut model: Model) {
        // Exports of the old capture are still being written: keep telling.
        model.adopt_exports(&mut self.model);
        self.model = model;
        self.panels = PanelState::default();
        self.last_view = self.model.view();
    }

    /// One frame: tick, input, draw, apply.
    pub fn frame(&mut self, ctx: &egui::Context) {
        self.model.tick(Instant::now());
        let mut out: Vec<Command> = Vec::new();
        self.dropped_files(ctx);
        self.keys(ctx, &mut out);
        self.menu_bar(ctx, &mut out);
        self.command_line(ctx, &mut out);
        self.status_bar(ctx, &mut out);
        if self.model.lesson().is_some() {
            egui::TopBottomPanel::bottom("lesson")
                .resizable(true)
                .show(ctx, |ui| panels::lesson_box(ui, &self.model, &mut out));
        }
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&ctx.style()).inner_margin(0.0))
            .show(ctx, |ui| {
                self.panels.begin_frame(&self.model);
                let mut viewer = Viewer {
                    model: &self.model,
                    st: &mut self.panels,
                    out: &mut out,
                };
                DockArea::new(&mut self.dock)
                    .show_leaf_collapse_buttons(false)
                    .show_leaf_close_all_buttons(false)
                    .show_inside(ui, &mut viewer);
            });
        self.palette_window(ctx, &mut out);
        self.export_window(ctx, &mut out);
        self.help_window(ctx, &mut out);
        self.drop_hint(ctx);
        for c in out {
            self.model.apply(c);
        }
        // A simulator parameter or the sniffer filter reruns the source.
        rocescope_core::source::steer(&mut self.model);
        self.sync_dock();
        if self.model.quit() {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }

    /// Show the tab of the model's current view (keys and `ShowView`
    /// commands switch views; the dock follows).
    fn sync_dock(&mut self) {
        let v = self.model.view();
        if v == self.last_view {
            return;
        }
        self.last_view = v;
        match self.dock.find_tab(&v) {
            Some((s, n, t)) => {
                self.dock.set_active_tab((s, n, t));
                self.dock.set_focused_node_and_surface((s, n));
            }
            None => self.dock.push_to_focused_leaf(v),
        }
    }

    fn dropped_files(&mut self, ctx: &egui::Context) {
        let dropped = ctx.input(|i| i.raw.dropped_files.clone());
        if let Some(path) = dropped.into_iter().find_map(|f| f.path) {
            match open_file(&path, Vec::new()) {
                Ok(m) => {
                    self.replace_model(m);
                    self.open_error = None;
                }
                Err(e) => self.open_error = Some(format!("{e:#}")),
            }
        }
    }

    fn drop_hint(&self, ctx: &egui::Context) {
        if ctx.input(|i| i.raw.hovered_files.is_empty()) {
            return;
        }
        let screen = ctx.screen_rect();
        let painter = ctx.layer_painter(egui::LayerId::new(
            egui::Order::Foreground,
            egui::Id::new("drop-hint"),
        ));
        painter.rect_filled(screen, 0.0, egui::Color32::from_black_alpha(160));
        painter.text(
            screen.center(),
            egui::Align2::CENTER_CENTER,
            "Drop a capture (pcap, pcapng, sniffer dump) to open it",
            egui::FontId::proportional(24.0),
            egui::Color32::WHITE,
        );
    }

    /// Keyboard shortcuts from the one `UiCommand` list; Ctrl+P opens the palette.
    fn keys(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
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

    fn menu_bar(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        egui::TopBottomPanel::top("menu").show(ctx, |ui| {
            egui::MenuBar::new().ui(ui, |ui| {
                ui.menu_button("File", |ui| {
                    let c = UiCommand::Export;
                    if ui
                        .add(egui::Button::new("Export view…").shortcut_text(c.key()))
                        .on_hover_text(c.description())
                        .clicked()
                    {
                        self.export.show(&self.model);
                        ui.close();
                    }
                });
                ui.menu_button("View", |ui| {
                    for v in View::ALL {
                        if ui.button(v.title()).clicked() {
                            out.push(Command::ShowView(v));
                            if self.dock.find_tab(&v).is_none() {
                                self.dock.push_to_focused_leaf(v);
                            }
                            ui.close();
                        }
                    }
                    ui.separator();
                    if ui.button("Reset layout").clicked() {
                        self.dock = default_dock();
                        ui.close();
                    }
                });
                ui.menu_button("Replay", |ui| {
                    for c in [
                        UiCommand::TogglePlay,
                        UiCommand::StepPacket,
                        UiCommand::StepEvent,
                        UiCommand::SpeedUp,
                        UiCommand::SlowDown,
                        UiCommand::NextRetransmission,
                        UiCommand::NextFinding,
                        UiCommand::FollowLive,
                    ] {
                        if ui
                            .add(egui::Button::new(c.description()).shortcut_text(c.key()))
                            .clicked()
                        {
                            out.push(c.command(DEFAULT_PAGE_ROWS));
                            ui.close();
                        }
                    }
                });
                if ui.button("Commands… (Ctrl+P)").clicked() {
                    self.palette.open = true;
                }
                if ui.button("Keys (?)").clicked() {
                    out.push(Command::ShowHelp);
                }
                ui.separator();
                ui.weak("drop a capture file on the window to open it");
            });
        });
    }

    fn status_bar(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
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
    fn command_line(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
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

    fn palette_window(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
        if !self.palette.open {
            return;
        }
        let items: Vec<PaletteItem> = PaletteItem::all()
            .into_iter()
            .filter(|p| p.matches(&self.palette.query))
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
                PaletteItem::ResetLayout => self.dock = default_dock(),
            }
        }
    }

    fn export_window(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
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
                        ui.label("partitions");
                        ui.horizontal(|ui| {
                            ui.checkbox(&mut d.partition, "hive-style Parquet folders, windows of");
                            ui.add_enabled(
                                d.partition,
                                egui::TextEdit::singleline(&mut d.window)
                                    .hint_text("1s")
                                    .desired_width(60.0),
                            );
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

    fn help_window(&mut self, ctx: &egui::Context, out: &mut Vec<Command>) {
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
                    for c in UiCommand::ALL {
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

/// The dock's tab viewer: one panel per view.
struct Viewer<'a> {
    model: &'a Model,
    st: &'a mut PanelState,
    out: &'a mut Vec<Command>,
}

impl TabViewer for Viewer<'_> {
    type Tab = View;

    fn title(&mut self, tab: &mut View) -> egui::WidgetText {
        tab.title().into()
    }

    fn id(&mut self, tab: &mut View) -> egui::Id {
        egui::Id::new(("rocescope-view", *tab))
    }

    fn on_tab_button(&mut self, tab: &mut View, response: &egui::Response) {
        if response.clicked() && self.model.view() != *tab {
            self.out.push(Command::ShowView(*tab));
        }
    }

    fn scroll_bars(&self, _tab: &View) -> [bool; 2] {
        [false, false]
    }

    fn ui(&mut self, ui: &mut egui::Ui, tab: &mut View) {
        // A click inside a panel makes its view the model's current one,
        // so that keys act on it as they do on the TUI's tab.
        if self.model.view() != *tab
            && ui.ui_contains_pointer()
            && ui.input(|i| i.pointer.primary_pressed())
        {
            self.out.push(Command::ShowView(*tab));
        }
        panels::show(*tab, ui, self.model, self.st, self.out);
    }
}

/// Run the desktop workbench until its window closes.
pub fn run(args: GuiArgs) -> anyhow::Result<()> {
    let model = if let Some(url) = &args.attach {
        let url = rocescope_device_link::AttachUrl::parse(url)?;
        source::open(
            source::SourceSpec::Attach(Box::new(rocescope_device_link::ClientConfig::new(url))),
            &args.limits(),
        )?
    } else if let Some(file) = &args.file {
        open_file(file, args.roce_ports.clone())?
    } else {
        sim_model_within(args.sim.as_deref().unwrap_or("default"), &args.limits())?
    };
    let exit_at = args
        .exit_after
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("rocescope")
            .with_app_id("rocescope")
            .with_inner_size([1600.0, 1000.0])
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Glow,
        ..Default::default()
    };
    eframe::run_native(
        "rocescope",
        options,
        Box::new(move |cc| {
            let dock = cc
                .storage
                .and_then(|s| eframe::get_value::<DockState<View>>(s, DOCK_KEY))
                .filter(|d| d.iter_all_tabs().next().is_some());
            let wb = Workbench::new(model, dock);
            Ok(Box::new(GuiApp { wb, exit_at }))
        }),
    )
    .map_err(|e| anyhow::anyhow!("cannot open the window: {e}"))
}

const DOCK_KEY: &str = "rocescope-dock";

struct GuiApp {
    wb: Workbench,
    exit_at: Option<Instant>,
}

impl eframe::App for GuiApp {
    fn update(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        self.wb.frame(ctx);
        if self.exit_at.is_some_and(|t| Instant::now() >= t) {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        // New data arrives without input events: redraw a few times a second.
        ctx.request_repaint_after(Duration::from_millis(100));
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, DOCK_KEY, &self.wb.dock);
    }
}
