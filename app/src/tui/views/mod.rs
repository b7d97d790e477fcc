//! Drawing: each view reads the model and draws only what is visible.

mod explain;
mod help;
mod ladder;
mod lessons;
mod losses;
mod overview;
mod packets;
mod profiler;
mod qps;
mod retransmissions;
mod signals;
mod slots;
mod status;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Row as TRow, Table, Tabs};
use rocescope_core::command::View;
use rocescope_core::query::{RowClass, row_class};
use rocescope_core::{Command, Model, Overlay};
use rocescope_replay::store::Flags;

use explain::explain_view;
use help::help;
use ladder::ladder;
use lessons::lesson_box;
use lessons::lessons;
use losses::losses;
use overview::overview;
use packets::packets;
use profiler::profiler;
use qps::qps;
use retransmissions::retransmissions;
use slots::slots;
use status::status_bar;

/// Where things were drawn, for mouse clicks and paging.
#[derive(Debug, Default, Clone)]
pub struct UiState {
    tabs: Vec<(Rect, View)>,
    /// Packet list: area of the rows and the store index on each line.
    list: Rect,
    list_rows: Vec<u64>,
    /// Lines of the list-style views (QPs, episodes, findings, lessons).
    items: Rect,
    items_first: usize,
    pub page_rows: u16,
}

impl UiState {
    /// Commands for a left click at (x, y).
    pub fn click(&self, x: u16, y: u16) -> Vec<Command> {
        let inside = |r: &Rect| x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height;
        if let Some((_, v)) = self.tabs.iter().find(|(r, _)| inside(r)) {
            return vec![Command::ShowView(*v)];
        }
        if inside(&self.list)
            && let Some(row) = self.list_rows.get(usize::from(y - self.list.y))
        {
            return vec![Command::SelectRow(*row)];
        }
        if inside(&self.items) {
            let i = self.items_first + usize::from(y - self.items.y);
            return vec![Command::SelectFirst, Command::MoveSelection(i as i64)];
        }
        Vec::new()
    }
}

fn flag_style(f: Flags) -> Style {
    match row_class(f) {
        RowClass::Error => Style::default().fg(RED),
        RowClass::Retransmission => Style::default().fg(YELLOW),
        RowClass::OutOfOrder => Style::default().fg(MAGENTA),
        RowClass::Congestion => Style::default().fg(CYAN),
        RowClass::NotRoce => Style::default().fg(DIM),
        RowClass::Normal => Style::default(),
    }
}

const RED: Color = Color::Red;
const YELLOW: Color = Color::Yellow;
const CYAN: Color = Color::Cyan;
const GREEN: Color = Color::Green;
const MAGENTA: Color = Color::Magenta;
const DIM: Color = Color::DarkGray;

/// A list view's table: its column headings, its rows' cells, the least
/// width of each column and the order whole columns are left out in when
/// they do not all fit.
struct ListTable<'a> {
    columns: &'a [&'static str],
    cells: &'a [Vec<String>],
    min: &'a [u16],
    drop_order: &'a [usize],
}

impl ListTable<'_> {
    /// The table fitted to and drawn in `area`, made the list the mouse
    /// reads (`ui.items`): row `k` in `style(k)` and reversed where it is
    /// the model's selection (`first` the list index of the first row),
    /// titled `name (hint)`.
    fn draw(
        &self,
        f: &mut Frame<'_>,
        ui: &mut UiState,
        area: Rect,
        selection: (usize, usize),
        style: impl Fn(usize) -> Style,
        titles: (&str, &str),
    ) {
        let fit = Fitted::new(self, area.width.saturating_sub(2));
        fit.draw_list(f, ui, area, self, selection, style, titles);
    }
}

/// A table's columns laid out in `width` cells: each as wide as its
/// widest text (heading or cell, at least `min`), whole columns left out in
/// `drop_order` when they do not all fit (`query::fit_columns`), never a
/// cell cut short.
struct Fitted {
    /// The columns shown, by index, and their widths.
    keep: Vec<usize>,
    widths: Vec<Constraint>,
    /// The headings of the columns left out.
    hidden: Vec<&'static str>,
    /// Cells between columns: more where the width has room for it.
    gap: u16,
}

impl Fitted {
    fn new(table: &ListTable<'_>, width: u16) -> Fitted {
        let ListTable {
            columns: header,
            cells: rows,
            min,
            drop_order,
        } = *table;
        let need: Vec<u32> = header
            .iter()
            .enumerate()
            .map(|(i, h)| {
                rows.iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .chain([
                        h.chars().count(),
                        usize::from(min.get(i).copied().unwrap_or(0)),
                    ])
                    .max()
                    .unwrap_or(0) as u32
            })
            .collect();
        let total = |gap: u32| need.iter().sum::<u32>() + gap * need.len().saturating_sub(1) as u32;
        let gap = [3u16, 2]
            .into_iter()
            .find(|g| total(u32::from(*g)) <= u32::from(width))
            .unwrap_or(1);
        let mask =
            rocescope_core::query::fit_columns(&need, drop_order, u32::from(gap), u32::from(width));
        let keep: Vec<usize> = (0..header.len()).filter(|i| mask[*i]).collect();
        let widths = keep
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let w = need[i] as u16;
                // The last column takes what is left.
                if k + 1 == keep.len() {
                    Constraint::Min(w)
                } else {
                    Constraint::Length(w)
                }
            })
            .collect();
        let hidden = (0..header.len())
            .filter(|i| !mask[*i])
            .map(|i| header[i])
            .collect();
        Fitted {
            keep,
            widths,
            hidden,
            gap,
        }
    }

    /// The kept cells of a row.
    fn cells(&self, row: &[String]) -> Vec<String> {
        self.keep
            .iter()
            .map(|&i| row.get(i).cloned().unwrap_or_default())
            .collect()
    }

    /// The kept columns of `table` drawn as [`ListTable::draw`] says.
    #[allow(clippy::too_many_arguments)]
    fn draw_list(
        &self,
        f: &mut Frame<'_>,
        ui: &mut UiState,
        area: Rect,
        table: &ListTable<'_>,
        (first, selected): (usize, usize),
        style: impl Fn(usize) -> Style,
        (name, hint): (&str, &str),
    ) {
        let rows: Vec<TRow<'_>> = table
            .cells
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let mut s = style(k);
                if first + k == selected {
                    s = s.add_modifier(Modifier::REVERSED);
                }
                TRow::new(self.cells(c)).style(s)
            })
            .collect();
        let header: Vec<&str> = self.keep.iter().map(|&i| table.columns[i]).collect();
        let t = Table::new(rows, self.widths.clone())
            .column_spacing(self.gap)
            .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
            .block(title(self.title(name, hint)));
        f.render_widget(t, area);
        ui.items = Rect::new(
            area.x + 1,
            area.y + 2,
            area.width.saturating_sub(2),
            area.height.saturating_sub(3),
        );
        ui.items_first = first;
    }

    /// `NAME (HINT)`, with the columns this width leaves out.
    fn title(&self, name: &str, hint: &str) -> String {
        if self.hidden.is_empty() {
            format!("{name} ({hint})")
        } else {
            format!("{name} ({hint}; hidden: {})", self.hidden.join(", "))
        }
    }
}

fn title(s: impl AsRef<str>) -> Block<'static> {
    Block::bordered().title(Span::styled(
        format!(" {} ", s.as_ref()),
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// Draw the whole workbench.
pub fn draw(f: &mut Frame<'_>, model: &Model, ui: &mut UiState) {
    let area = f.area();
    // A step that asks needs room for its question, choices and verdict.
    let lesson_h = match model.lesson() {
        None => 0,
        Some(l) => l
            .steps
            .get(model.lesson_step())
            .and_then(|s| s.ask.as_ref())
            .map_or(7, |a| 12 + a.choices.len() as u16),
    };
    let chunks = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(lesson_h),
        Constraint::Length(1),
    ])
    .split(area);
    draw_tabs(f, model, ui, chunks[0]);
    let body = chunks[1];
    ui.list_rows.clear();
    ui.list = Rect::default();
    ui.items = Rect::default();
    let body = whatif_panel(f, model, body);
    match model.view() {
        View::Overview => overview(f, model, ui, body),
        View::Packets => packets(f, model, ui, body),
        View::Qps => qps(f, model, ui, body),
        View::Ladder => ladder(f, model, body),
        View::Retransmissions => retransmissions(f, model, ui, body),
        View::Slots => slots(f, model, ui, body),
        View::Profiler => profiler(f, model, body),
        View::Explain => explain_view(f, model, body),
        View::Lessons => lessons(f, model, ui, body),
        View::Losses => losses(f, model, ui, body),
    }
    if model.lesson().is_some() {
        lesson_box(f, model, chunks[2]);
    }
    status_bar(f, model, chunks[3]);
    if model.overlay() == Overlay::Help {
        help(f, model, area);
    }
}

/// The what-if's runs (`:whatif set KEY=VALUE`) above the Overview and
/// the QPs, A/B per QP; the rest of `body` is the view's. Without a
/// what-if, or in another view, `body` is the view's whole.
fn whatif_panel(f: &mut Frame<'_>, model: &Model, body: Rect) -> Rect {
    if !matches!(model.view(), View::Overview | View::Qps) {
        return body;
    }
    let Some((name, lines)) = rocescope_core::query::whatif_lines(model) else {
        return body;
    };
    let h = (lines.len() as u16 + 2).min(body.height / 2);
    let parts = Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).split(body);
    let text: Vec<Line<'_>> = lines.into_iter().map(Line::from).collect();
    f.render_widget(Paragraph::new(text).block(title(name)), parts[0]);
    parts[1]
}

fn draw_tabs(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    ui.tabs.clear();
    let mut spans = Vec::new();
    let mut x = area.x;
    for v in model.views().iter() {
        // The key that shows it (`1`..`9`, `0` for the Losses view).
        let key = rocescope_core::UiCommand::ALL
            .iter()
            .find(|c| c.command(1) == Command::ShowView(*v))
            .map_or("", |c| c.key());
        let label = if area.width < 100 {
            format!(" {key}:{} ", &v.title()[..v.title().len().min(4)])
        } else {
            format!(" {key}:{} ", v.title())
        };
        let w = label.chars().count() as u16;
        ui.tabs.push((Rect::new(x, area.y, w, 1), *v));
        x += w;
        let style = if *v == model.view() {
            Style::default()
                .fg(Color::Black)
                .bg(CYAN)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        spans.push(Span::styled(label, style));
    }
    let help = Span::styled(" ?:help q:quit", Style::default().fg(DIM));
    spans.push(help);
    f.render_widget(Tabs::new(vec![Line::from(spans)]).divider(""), area);
}
