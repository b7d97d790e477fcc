//! Losses: the lost frames of a session of capture points, segment by
//! segment, each with its evidence; Enter shows the frame in the packet
//! list.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};
use rocescope_core::Model;
use rocescope_core::query::{LOSS_VIEW_COLUMNS, LossItem, loss_evidence, loss_row, losses_heading};

use super::{DIM, ListTable, UiState, YELLOW, title};

pub(super) fn losses(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let Some(r) = model.points() else {
        return;
    };
    let items = model.loss_items();
    let chunks = Layout::vertical([Constraint::Min(5), Constraint::Length(5)]).split(area);
    let h = chunks[0].height.saturating_sub(3) as usize;
    let first = model.list_index().saturating_sub(h.saturating_sub(1));
    let shown: Vec<LossItem> = items.iter().skip(first).take(h).copied().collect();
    let cells: Vec<Vec<String>> = shown
        .iter()
        .map(|&i| loss_row(model, r, i).to_vec())
        .collect();
    ListTable {
        columns: &LOSS_VIEW_COLUMNS,
        cells: &cells,
        min: &[8, 0, 0, 8, 0, 0, 0, 20],
        drop_order: &[2, 6, 4, 7],
    }
    .draw(
        f,
        ui,
        chunks[0],
        (first, model.list_index()),
        |k| match shown[k] {
            LossItem::Missed(_) => Style::default().fg(DIM),
            LossItem::Placed(_) => Style::default(),
        },
        (
            &format!("Losses by segment: {}", losses_heading(r)),
            "Enter: show in packets",
        ),
    );
    let lines: Vec<Line<'_>> = match items.get(model.list_index()) {
        Some(&i) => loss_evidence(r, i).into_iter().map(Line::from).collect(),
        None => vec![Line::from(
            "No frame was lost between the points, and no point missed one.",
        )],
    };
    f.render_widget(
        Paragraph::new(lines)
            .style(Style::default().fg(YELLOW))
            .wrap(Wrap { trim: true })
            .block(title("Evidence")),
        chunks[1],
    );
}
