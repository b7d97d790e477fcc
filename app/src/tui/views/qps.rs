//! QPs: one row per conversation, the selected one's sparkline.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Row as TRow, Sparkline, Table};
use rocescope_core::Model;
use rocescope_core::query::{QP_COLUMNS, qp_rows};
use rocescope_decoders::analysis::Series;

use rocescope_decoders::analysis::QpState;

use super::{Fitted, GREEN, UiState, title};

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
    let cells: Vec<Vec<String>> = qp_rows(model).into_iter().map(|c| c.to_vec()).collect();
    // The state column as wide as its longest word, so that it does not
    // jump as the cursor moves; the least needed columns go first.
    let state_w = QpState::NAMES.iter().map(|n| n.len()).max().unwrap_or(0) as u16;
    let fit = Fitted::new(
        &QP_COLUMNS,
        &cells,
        &[0, 0, state_w],
        &[4, 9, 3, 6, 10, 8, 7],
        chunks[0].width.saturating_sub(2),
    );
    let rows: Vec<TRow<'_>> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let style = if i == model.list_index() {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            TRow::new(fit.cells(c)).style(style)
        })
        .collect();
    let header: Vec<&str> = fit.keep.iter().map(|&i| QP_COLUMNS[i]).collect();
    let t = Table::new(rows, fit.widths.clone())
        .column_spacing(fit.gap)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(title(fit.title("QP conversations", "Enter: ladder")));
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
