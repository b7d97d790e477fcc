//! The panels: each reads the model (the same queries as the TUI's views)
//! and pushes the `Command`s its widgets produce; none changes state.

mod explain;
mod help;
mod ladder;
mod lessons;
mod losses;
mod overview;
mod packets;
pub(super) mod profiler;
mod qps;
mod retransmissions;
mod signals;
mod slots;
mod status;

use eframe::egui;

use egui::{Color32, Ui};
use rocescope_core::command::View;
use rocescope_core::model::Selected;
use rocescope_core::query::{self, RowClass};
use rocescope_core::{Command, Model};
use rocescope_replay::store::Flags;

pub use explain::explain_panel;
#[cfg(test)]
pub(crate) use ladder::LOST_MARK;
pub use ladder::ladder;
pub use lessons::{lesson_box, lessons};
pub use losses::losses;
#[cfg(test)]
pub(crate) use overview::EPISODE_MARK;
pub use overview::overview;
pub use packets::packets;
use profiler::WaveState;
pub use qps::qps;
pub use retransmissions::retransmissions;
pub use slots::slots;

pub const RED: Color32 = Color32::from_rgb(0xf0, 0x50, 0x50);
pub const YELLOW: Color32 = Color32::from_rgb(0xf0, 0xc0, 0x30);
pub const MAGENTA: Color32 = Color32::from_rgb(0xd0, 0x60, 0xd0);
pub const CYAN: Color32 = Color32::from_rgb(0x40, 0xc8, 0xe0);
pub const GREEN: Color32 = Color32::from_rgb(0x60, 0xd0, 0x60);
pub const DIM: Color32 = Color32::from_gray(130);

/// Colours of the QPs' throughput lines.
pub const QP_COLORS: [Color32; 8] = [
    GREEN,
    CYAN,
    YELLOW,
    MAGENTA,
    Color32::from_rgb(0x60, 0x90, 0xff),
    RED,
    Color32::from_gray(220),
    Color32::from_rgb(0xa0, 0xf0, 0x80),
];

pub fn class_color(f: Flags, normal: Color32) -> Color32 {
    match query::row_class(f) {
        RowClass::Error => RED,
        RowClass::Retransmission => YELLOW,
        RowClass::OutOfOrder => MAGENTA,
        RowClass::Congestion => CYAN,
        RowClass::NotRoce => DIM,
        RowClass::Normal => normal,
    }
}

/// GUI-side view state: scroll positions, zoom, caches. Never model state.
#[derive(Debug, Default)]
pub struct PanelState {
    /// First visible position in the packet list.
    pub packets_first: u64,
    /// Rows the packet list shows (for PageUp/PageDown).
    pub page_rows: u64,
    scroll_accum: f32,
    last_selected: Option<u64>,
    /// The selection moved since the last frame (lists scroll to it).
    pub(super) selection_moved: bool,
    /// (packet, field) the detail tree last scrolled to.
    /// and for how many frames (the first frame's layout is not final).
    detail_scrolled: Option<(u64, usize, u8)>,
    filter_buf: String,
    filter_buf_for: Option<String>,
    /// Give the filter field the keyboard (the `/` key, the palette).
    pub focus_filter: bool,
    sel_cache: Option<Selected>,
    pub wave: WaveState,
    /// The signal browser's search field (sent to the core as typed).
    signal_search: String,
    signal_search_edited: bool,
    /// The Overview's throughput lines and ceiling.
    throughput: overview::ThroughputCache,
}

impl PanelState {
    /// Called once a frame before the panels draw.
    pub fn begin_frame(&mut self, model: &Model) {
        self.selection_moved = model.selected() != self.last_selected;
        self.last_selected = model.selected();
        if self.sel_cache.as_ref().map(|s| s.index) != model.selected() {
            self.sel_cache = model.selected_packet();
        }
        if self.filter_buf_for.as_deref() != Some(model.filter_text()) {
            self.filter_buf = model.filter_text().to_owned();
            self.filter_buf_for = Some(model.filter_text().to_owned());
        }
    }

    /// The selected packet (bytes read once per selection).
    pub fn selected(&self) -> Option<&Selected> {
        self.sel_cache.as_ref()
    }
}

/// Draw the panel of `view`.
pub fn show(view: View, ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    if matches!(view, View::Overview | View::Qps) {
        whatif_group(ui, model);
    }
    match view {
        View::Overview => overview(ui, model, st, out),
        View::Packets => packets(ui, model, st, out),
        View::Qps => qps(ui, model, out),
        View::Ladder => ladder(ui, model, out),
        View::Retransmissions => retransmissions(ui, model, out),
        View::Slots => slots(ui, model, out),
        View::Profiler => profiler::show(ui, model, st, out),
        View::Explain => explain_panel(ui, model, st),
        View::Lessons => lessons(ui, model, out),
        View::Losses => losses(ui, model, out),
    }
}

/// The what-if's runs (`:whatif set KEY=VALUE`) above the Overview and
/// the QPs, A/B per QP, as the TUI shows them; nothing without a what-if.
fn whatif_group(ui: &mut Ui, model: &Model) {
    let Some((name, lines)) = query::whatif_lines(model) else {
        return;
    };
    ui.group(|ui| {
        ui.strong(name);
        for l in lines {
            ui.label(egui::RichText::new(l).monospace());
        }
    });
    ui.separator();
}

/// Select item `i` of a list view: the list index belongs to the model's
/// current view, so a click in another view's list switches to it first.
fn select_item(model: &Model, view: View, i: usize, out: &mut Vec<Command>) {
    if model.view() != view && !out.contains(&Command::ShowView(view)) {
        out.push(Command::ShowView(view));
    }
    let base = if model.view() == view {
        model.list_index()
    } else {
        0
    };
    out.push(Command::MoveSelection(i as i64 - base as i64));
}

/// A list view's table: `heads` over `n` rows, each column at least
/// `min_w` wide and the last the rest of the width (at least `last_w`)
/// when given, row `sel` marked, `cells` drawing row `i`'s columns.
/// Returns the row clicked, whether once (`clicked`) and whether twice.
#[allow(clippy::too_many_arguments)]
fn list_table(
    ui: &mut Ui,
    id: &str,
    heads: &[&str],
    n: usize,
    height: f32,
    sel: Option<usize>,
    (min_w, last_w): (f32, Option<f32>),
    mut cells: impl FnMut(usize, &mut egui_extras::TableRow<'_, '_>),
) -> Option<(usize, bool, bool)> {
    use egui_extras::{Column, TableBuilder};
    let mut clicked = None;
    ui.allocate_ui(egui::vec2(ui.available_width(), height), |ui| {
        let fixed = heads.len() - usize::from(last_w.is_some());
        let mut t = TableBuilder::new(ui)
            .id_salt(id)
            .striped(true)
            .sense(egui::Sense::click())
            .max_scroll_height(height)
            .columns(Column::auto().at_least(min_w).resizable(true), fixed);
        if let Some(w) = last_w {
            t = t.column(Column::remainder().at_least(w));
        }
        t.header(20.0, |mut h| {
            for t in heads {
                h.col(|ui| {
                    ui.strong(*t);
                });
            }
        })
        .body(|body| {
            body.rows(ROW_H, n, |mut row| {
                let i = row.index();
                row.set_selected(sel == Some(i));
                cells(i, &mut row);
                let r = row.response();
                if r.clicked() || r.double_clicked() {
                    clicked = Some((i, r.clicked(), r.double_clicked()));
                }
            });
        });
    });
    clicked
}

fn selected_item(model: &Model, view: View) -> Option<usize> {
    (model.view() == view).then_some(model.list_index())
}

/// Milliseconds since the first packet (the plots' x axis).
fn ms_since_start(model: &Model, ts_ns: u64) -> f64 {
    let t0 = model.store().stats().first_ts_ns.unwrap_or(0);
    (ts_ns as f64 - t0 as f64) / 1e6
}

const ROW_H: f32 = 18.0;
