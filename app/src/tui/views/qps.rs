//! QPs: one row per conversation, each one's time by state as a stacked
//! bar, the selected one's sparkline.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline, Wrap};
use rocescope_core::Model;
use rocescope_core::query::{QP_COLUMNS, qp_rows, state_rgb, time_bar, time_by_state_text};
use rocescope_decoders::analysis::{Series, TimeState};

use rocescope_decoders::analysis::QpState;

use super::{GREEN, ListTable, UiState, title};

fn sparkline_data(s: &Series, n: usize) -> Vec<u64> {
    let start = s.bins.len().saturating_sub(n);
    s.bins[start..].iter().map(|b| b.wire_bytes).collect()
}

/// Each QP's time by state as a stacked bar: a line per QP (as many as
/// fit), then the states' legend.
fn time_bars(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let report = model.report();
    let name_w = 10usize;
    let share_w = 22usize;
    let cells = usize::from(area.width.saturating_sub(2)).saturating_sub(name_w + share_w + 2);
    let mut lines: Vec<Line<'_>> = Vec::new();
    let room = usize::from(area.height.saturating_sub(3));
    let first = model.list_index().saturating_sub(room.saturating_sub(1));
    for q in report.qps.iter().skip(first).take(room) {
        let mut spans = vec![Span::raw(format!(
            "{:<name_w$}",
            rocescope_replay::text::qpn(q.dest_qp)
        ))];
        for (state, n) in time_bar(q, cells) {
            spans.push(Span::styled(
                "█".repeat(n),
                Style::default().fg(color(state)),
            ));
        }
        let text = time_by_state_text(q);
        let lead: String = text
            .split(", ")
            .next()
            .unwrap_or_default()
            .chars()
            .take(share_w)
            .collect();
        spans.push(Span::raw(format!("  {lead}")));
        lines.push(Line::from(spans));
    }
    let legend: Vec<Span<'_>> = TimeState::ALL
        .iter()
        .flat_map(|&s| {
            [
                Span::styled("■", Style::default().fg(color(s))),
                Span::raw(format!("{} ", s.name())),
            ]
        })
        .collect();
    lines.push(Line::from(legend));
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(title("time by state (from each QP's first request)")),
        area,
    );
}

/// A time state's colour in the terminal: the one both workbenches use.
pub(super) fn color(s: TimeState) -> Color {
    let [r, g, b] = state_rgb(s);
    Color::Rgb(r, g, b)
}

pub(super) fn qps(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let bars = (report.qps.len().min(6) as u16 + 4).min(area.height / 3);
    let chunks = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(bars),
        Constraint::Length(5),
    ])
    .split(area);
    let cells: Vec<Vec<String>> = qp_rows(model).into_iter().map(|c| c.to_vec()).collect();
    // The state column as wide as its longest word, so that it does not
    // jump as the cursor moves; the least needed columns go first.
    let state_w = QpState::NAMES.iter().map(|n| n.len()).max().unwrap_or(0) as u16;
    // Every QP is listed from the first: the list scrolls no further.
    ListTable {
        columns: &QP_COLUMNS,
        cells: &cells,
        min: &[0, 0, state_w],
        drop_order: &[4, 9, 3, 6, 10, 8, 7],
    }
    .draw(
        f,
        ui,
        chunks[0],
        (0, model.list_index()),
        |_| Style::default(),
        ("QP conversations", "Enter: ladder"),
    );
    time_bars(f, model, chunks[1]);
    if let Some(q) = report.qps.get(model.list_index()) {
        let data = sparkline_data(&q.series, usize::from(chunks[2].width.saturating_sub(2)));
        f.render_widget(
            Sparkline::default()
                .data(&data)
                .style(Style::default().fg(GREEN))
                .block(title(format!(
                    "{} wire bytes per bin ({} ns bins)",
                    rocescope_replay::text::qp_name(q),
                    q.series.bin_ns
                ))),
            chunks[2],
        );
    }
}
