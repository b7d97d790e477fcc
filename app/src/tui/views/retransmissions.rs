//! Retransmissions: the episodes and why each happened.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Paragraph, Wrap};
use rocescope_core::query::{EPISODE_COLUMNS, episode_row, rel_time};
use rocescope_core::{Model, explain};
use rocescope_replay::text::{CAUSES, cause_short};

use super::{ListTable, UiState, title};

pub(super) fn retransmissions(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let chunks = Layout::vertical([Constraint::Min(5), Constraint::Length(4)]).split(area);
    let h = chunks[0].height.saturating_sub(3) as usize;
    let first = model.list_index().saturating_sub(h.saturating_sub(1));
    let cells: Vec<Vec<String>> = report
        .episodes
        .iter()
        .skip(first)
        .take(h)
        .map(|e| episode_row(model, e).to_vec())
        .collect();
    // Times, causes and recoveries as wide as their longest, so that the
    // columns stand still while the list scrolls.
    let time_w = rel_time(model, model.store().stats().last_ts_ns.unwrap_or(0))
        .chars()
        .count() as u16;
    let cause_w = CAUSES
        .iter()
        .map(|c| cause_short(*c).len())
        .max()
        .unwrap_or(0) as u16;
    ListTable {
        columns: &EPISODE_COLUMNS,
        cells: &cells,
        min: &[0, time_w, 8, cause_w, 8, 0, 8, 0],
        drop_order: &[6, 5, 4, 0],
    }
    .draw(
        f,
        ui,
        chunks[0],
        (first, model.list_index()),
        |_| Style::default(),
        (
            &format!("Retransmission episodes: {}", report.episodes.len()),
            "Enter: show in ladder",
        ),
    );
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
