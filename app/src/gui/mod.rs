//! The desktop workbench: egui + eframe over the same core model as the TUI.
//!
//! Each frame: tick the model, turn keys (from the one `UiCommand` list),
//! palette picks, dropped files and panel clicks into `Command`s, draw the
//! dockable panels from read-only model queries, then apply the commands
//! through `Model::apply`. Sources run on their own threads; the UI thread
//! only reads the store.

use eframe::egui;
mod export_window;
mod keys;
pub mod layout;
mod palette;
pub mod panels;

pub use export_window::ExportDialog;
pub use keys::{command_for_key, key_names};
pub use palette::{Palette, PaletteItem};

#[cfg(test)]
mod golden;
#[cfg(test)]
mod headless;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::{Duration, Instant};

use egui_dock::{DockArea, DockState, NodeIndex, TabViewer};
use rocescope_core::command::View;
use rocescope_core::session::SessionLimits;
use rocescope_core::source;
use rocescope_core::{Command, Model, UiCommand};

pub use panels::PanelState;

/// Open a capture as `rocescope open` does: a new store indexing in the
/// background and a new model over it.
pub fn open_file(
    path: &Path,
    roce_ports: Vec<u16>,
    wave: &rocescope_replay::wave::WaveOptions,
    limits: &SessionLimits,
) -> anyhow::Result<Model> {
    let decode = rocescope_decoders::DecodeConfig {
        extra_roce_ports: roce_ports,
    };
    let spec = source::SourceSpec::File {
        path: path.to_path_buf(),
        decode,
        wave: wave.clone(),
    };
    use rocescope_replay::CaptureError;
    use rocescope_replay::store::StoreError;
    match source::open(spec, limits) {
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

/// `dock` fitted to the session: the Losses tab beside the
/// retransmissions where there are capture points, none where there are
/// not (a layout saved by a session of points).
fn fit_dock(dock: &mut DockState<View>, model: &Model) {
    let has = dock.find_tab(&View::Losses);
    match (model.points().is_some(), has) {
        (true, None) => {
            // Beside the retransmissions, as a tab that waits its turn (a
            // layout without them gets it when the view is asked for).
            let Some((s, n, _)) = dock.find_tab(&View::Retransmissions) else {
                return;
            };
            let focused = dock.focused_leaf();
            dock.set_focused_node_and_surface((s, n));
            let active = dock.find_active_focused().map(|(_, v)| *v);
            dock.push_to_focused_leaf(View::Losses);
            if let Some(at) = active.and_then(|v| dock.find_tab(&v)) {
                dock.set_active_tab(at);
            }
            if let Some(f) = focused {
                dock.set_focused_node_and_surface(f);
            }
        }
        (false, Some(at)) => {
            dock.remove_tab(at);
        }
        _ => {}
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
pub(crate) const DEFAULT_PAGE_ROWS: i64 = 20;

impl Workbench {
    pub fn new(model: Model, dock: Option<DockState<View>>) -> Workbench {
        let last_view = model.view();
        let mut dock = dock.unwrap_or_else(default_dock);
        fit_dock(&mut dock, &model);
        Workbench {
            model,
            dock,
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
        // So are its partitions: they finish without holding up the window.
        model.keep_finishing_partitions(&mut self.model);
        self.model = model;
        fit_dock(&mut self.dock, &self.model);
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
            // A dropped file takes the default cap (the window does not
            // keep the command line's).
            match open_file(&path, Vec::new(), &Default::default(), &Default::default()) {
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
                    for v in self.model.views() {
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
                        fit_dock(&mut self.dock, &self.model);
                        ui.close();
                    }
                });
                ui.menu_button("Replay", |ui| {
                    for c in UiCommand::REPLAY {
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

/// Keep the memory of a frame's meshes in the process from one frame to
/// the next. epaint builds each frame's meshes in new vectors (the
/// throughput plot's alone is about 2 MB at 1920x1080) and drops them
/// after drawing; glibc gave them back to the system every frame
/// (`munmap`, or `brk` trimming the heap) and took the pages again, one
/// fault each: 650-900 page faults a frame with 20 M packets, about a
/// third of the frame (`perf record -e page-faults`). Blocks under 32 MiB
/// now come from the heap, and its top is given back past 64 MiB free:
/// the values glibc's own sliding thresholds stop at, fixed from the start
/// (the index's chunks are mapped by the store itself, not by malloc).
pub fn keep_frame_memory() {
    use crate::malloc::{Tune, tune};
    tune(&[Tune::MmapThreshold(32 << 20), Tune::TrimThreshold(64 << 20)]);
}

/// Run the desktop workbench on `model` until its window closes (or
/// `exit_after` seconds, for smoke tests and demos).
pub fn run(model: Model, exit_after: Option<f64>) -> anyhow::Result<()> {
    keep_frame_memory();
    let exit_at = exit_after.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
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
