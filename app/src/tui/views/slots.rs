//! Service slots: the slot decisions.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Paragraph, Row as TRow, Table, Wrap};
use rocescope_core::Model;
use rocescope_core::query::rel_time;

use super::{CYAN, RED, UiState, title};

pub(super) fn slots(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let recs = model.slots();
    let cursor = model.cursor_ns();
    let h = area.height.saturating_sub(3) as usize;
    let visible: Vec<_> = recs.iter().filter(|s| s.ts_ns <= cursor).collect();
    let first = model
        .list_index()
        .min(visible.len().saturating_sub(1))
        .saturating_sub(h.saturating_sub(1));
    let mut drops = 0u64;
    let mut total = 0u64;
    let rows: Vec<TRow<'_>> = visible
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            total += 1;
            if matches!(s.verdict, rocescope_replay::record::Verdict::Drop) {
                drops += 1;
            }
            if i < first || i >= first + h {
                return None;
            }
            let style = match s.verdict {
                rocescope_replay::record::Verdict::Drop => Style::default().fg(RED),
                rocescope_replay::record::Verdict::Transformed => Style::default().fg(CYAN),
                rocescope_replay::record::Verdict::Pass => Style::default(),
            };
            let style = if i == model.list_index() {
                style.add_modifier(Modifier::REVERSED)
            } else {
                style
            };
            Some(
                TRow::new(vec![
                    rel_time(model, s.ts_ns),
                    format!("{:?}", s.slot),
                    rocescope_replay::text::qpn(s.qpn),
                    s.psn.to_string(),
                    format!("{:?}", s.verdict),
                    format!("{} ns", s.latency_ns),
                ])
                .style(style),
            )
        })
        .collect();
    let t = Table::new(
        rows,
        [
            Constraint::Length(12),
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Length(9),
        ],
    )
    .header(
        TRow::new(vec!["time", "slot", "QP", "PSN", "verdict", "latency"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(title(format!(
        "Service-slot decisions: {total} up to the cursor, {drops} dropped"
    )));
    ui.items = Rect::new(
        area.x + 1,
        area.y + 2,
        area.width.saturating_sub(2),
        h as u16,
    );
    ui.items_first = first;
    if recs.is_empty() {
        f.render_widget(Paragraph::new("No service-slot records in this source (run a scenario with slots, e.g. `rocescope sim --scenario aes` or `dpi-drop`).").wrap(Wrap { trim: true }).block(title("Service slots")), area);
    } else {
        f.render_widget(t, area);
    }
}
