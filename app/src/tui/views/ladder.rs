//! Ladder: the selected QP's packets as a message sequence.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use rocescope_core::Model;
use rocescope_core::query::{addr, flag_text, ladder_qp, ladder_rows, rel_time, short_opcode};

use super::qps::color;
use super::{DIM, flag_style, title};
use rocescope_core::query::ladder_state;

/// The state band: the requester's time state at `ts_ns` as a coloured
/// block (the QPs view's legend names the colours).
fn band(model: &Model, ts_ns: u64) -> Span<'static> {
    match ladder_state(model, ts_ns) {
        Some(s) => Span::styled("█ ", Style::default().fg(color(s))),
        None => Span::raw("  "),
    }
}

pub(super) fn ladder(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let Some(q) = ladder_qp(model) else {
        f.render_widget(Paragraph::new("no QP yet").block(title("Ladder")), area);
        return;
    };
    let h = area.height.saturating_sub(3) as usize;
    let rows = ladder_rows(model, q, h);
    let w = area.width.saturating_sub(2) as usize;
    // Two columns of the requester's state band, then the time.
    let lane = w.saturating_sub(17).max(20);
    let mut lines = vec![Line::from(Span::styled(
        {
            let left = format!("requester {}", addr(q.requester));
            let right = format!("responder {}", addr(q.responder));
            format!(
                "  {:<14}{left}{right:>w$}",
                "time",
                w = lane.saturating_sub(left.chars().count())
            )
        },
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    let mut last_ts: Option<u64> = None;
    for lr in &rows {
        let (index, r, rightward) = (&lr.index, &lr.row, lr.rightward);
        let label = format!(" {} PSN {} ", short_opcode(r.opcode), r.psn);
        let flags = flag_text(r.flags);
        let label = if flags.is_empty() {
            label
        } else {
            format!("{label}[{flags}] ")
        };
        let body_len = lane.saturating_sub(3);
        let label: String = label.chars().take(body_len).collect();
        let pad = body_len.saturating_sub(label.chars().count());
        let (a, b) = (pad / 2, pad - pad / 2);
        let arrow = if rightward {
            format!("|{}{label}{}▶|", "─".repeat(a), "─".repeat(b))
        } else {
            format!("|◀{}{label}{}|", "─".repeat(a), "─".repeat(b))
        };
        // A silence of more than 20 µs is drawn, so timeouts show.
        if let Some(prev) = last_ts
            && r.ts_ns.saturating_sub(prev) > 20_000
        {
            lines.push(Line::from(vec![
                band(model, prev + (r.ts_ns - prev) / 2),
                Span::styled(
                    format!(
                        "{:<14}|{:^lane$}|",
                        "",
                        format!("… {} µs silent …", (r.ts_ns - prev) / 1000)
                    ),
                    Style::default().fg(DIM),
                ),
            ]));
        }
        last_ts = Some(r.ts_ns);
        let mut style = flag_style(r.flags);
        if Some(*index) == model.selected() {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::from(vec![
            band(model, r.ts_ns),
            Span::styled(
                format!("{:<14}", rel_time(model, r.ts_ns)),
                Style::default().fg(DIM),
            ),
            Span::styled(arrow, style),
        ]));
    }
    // The keys below, so that the heading keeps the QP and its state.
    let t = format!(
        "Ladder: {}",
        rocescope_core::query::ladder_title_within(model, w.saturating_sub(10)).unwrap_or_default()
    );
    let keys = Line::from(Span::styled(
        " ↑↓ move, r next retransmission ",
        Style::default().fg(DIM),
    ))
    .right_aligned();
    f.render_widget(
        Paragraph::new(lines).block(title(&t).title_bottom(keys)),
        area,
    );
}
