//! Retransmissions: the episodes and why each happened.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Paragraph, Row as TRow, Table, Wrap};
use rocescope_core::query::{EPISODE_COLUMNS, episode_row};
use rocescope_core::{Model, explain};

use super::{UiState, title};

pub(super) fn retransmissions(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let chunks = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(5), Constraint::Length(4)])
        .split(area);
    let h = chunks[0].height.saturating_sub(3) as usize;
    let first = model.list_index().saturating_sub(h.saturating_sub(1));
    let rows: Vec<TRow<'_>> = report
        .episodes
        .iter()
        .enumerate()
        .skip(first)
        .take(h)
        .map(|(i, e)| {
            let style = if i == model.list_index() {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            TRow::new(episode_row(model, e).to_vec()).style(style)
        })
        .collect();
    let t = Table::new(
        rows,
        [
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Length(12),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(10),
            Constraint::Length(12),
        ],
    )
    .header(
        TRow::new(EPISODE_COLUMNS.to_vec()).style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(title(format!(
        "Retransmission episodes: {} (Enter: show in ladder)",
        report.episodes.len()
    )));
    f.render_widget(t, chunks[0]);
    ui.items = Rect::new(
        chunks[0].x + 1,
        chunks[0].y + 2,
        chunks[0].width.saturating_sub(2),
        h as u16,
    );
    ui.items_first = first;
    let text = report
        .episodes
        .get(model.list_index())
        .map_or("", |e| explain::episode(e.cause));
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(title("Why")),
        chunks[1],
    );
}
