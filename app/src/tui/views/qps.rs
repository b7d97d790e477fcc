//! QPs: one row per conversation, the selected one's sparkline.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Row as TRow, Sparkline, Table};
use rocescope_core::Model;
use rocescope_core::query::{QP_COLUMNS, qp_rows};
use rocescope_decoders::analysis::Series;

use super::{GREEN, UiState, title};

fn sparkline_data(s: &Series, n: usize) -> Vec<u64> {
    let start = s.bins.len().saturating_sub(n);
    s.bins[start..].iter().map(|b| b.wire_bytes).collect()
}

pub(super) fn qps(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let chunks = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(5), Constraint::Length(5)])
        .split(area);
    let rows: Vec<TRow<'_>> = qp_rows(model)
        .into_iter()
        .enumerate()
        .map(|(i, cells)| {
            let style = if i == model.list_index() {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            TRow::new(cells.to_vec()).style(style)
        })
        .collect();
    let widths = [
        Constraint::Length(8),
        Constraint::Length(24),
        Constraint::Length(11),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(9),
    ];
    let t = Table::new(rows, widths)
        .header(TRow::new(QP_COLUMNS.to_vec()).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(title("QP conversations (Enter: ladder)"));
    f.render_widget(t, chunks[0]);
    ui.items = Rect::new(
        chunks[0].x + 1,
        chunks[0].y + 2,
        chunks[0].width.saturating_sub(2),
        chunks[0].height.saturating_sub(3),
    );
    ui.items_first = 0;
    if let Some(q) = report.qps.get(model.list_index()) {
        let data = sparkline_data(&q.series, usize::from(chunks[1].width.saturating_sub(2)));
        f.render_widget(
            Sparkline::default()
                .data(&data)
                .style(Style::default().fg(GREEN))
                .block(title(format!(
                    "{} wire bytes per bin ({} ns bins)",
                    rocescope_replay::text::qp_name(q),
                    q.series.bin_ns
                ))),
            chunks[1],
        );
    }
}
