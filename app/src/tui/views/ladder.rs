//! Ladder: the selected QP's packets as a message sequence.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use rocescope_core::Model;
use rocescope_core::query::{
    LaneSpan, addr, flag_text, ladder_lanes, ladder_qp, ladder_rows, rel_time, short_opcode,
};

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
    let lanes = ladder_lanes(model);
    let heading = match &lanes {
        // One lane per capture point, named above it.
        Some(names) => format!("  {:<14}{}", "time", lane_names(names, lane)),
        None => {
            let left = format!("requester {}", addr(q.requester));
            let right = format!("responder {}", addr(q.responder));
            format!(
                "  {:<14}{left}{right:>w$}",
                "time",
                w = lane.saturating_sub(left.chars().count())
            )
        }
    };
    let mut lines = vec![Line::from(Span::styled(
        heading,
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
        let arrow = match &lanes {
            Some(names) => {
                let span = lr.lane_span(model).unwrap_or(LaneSpan {
                    from: if rightward { 0 } else { names.len() - 1 },
                    to: if rightward { names.len() - 1 } else { 0 },
                    rightward,
                    vanished: false,
                });
                lanes_arrow(names.len(), lane, span, &label)
            }
            None => {
                let body_len = lane.saturating_sub(3);
                let label: String = label.chars().take(body_len).collect();
                let pad = body_len.saturating_sub(label.chars().count());
                let (a, b) = (pad / 2, pad - pad / 2);
                if rightward {
                    format!("|{}{label}{}▶|", "─".repeat(a), "─".repeat(b))
                } else {
                    format!("|◀{}{label}{}|", "─".repeat(a), "─".repeat(b))
                }
            }
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
                        format!(
                            "… {} silent …",
                            rocescope_decoders::units::duration_text(r.ts_ns - prev)
                        )
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

/// Where lane `k` of `n` is in a line of `width` cells.
fn lane_at(k: usize, n: usize, width: usize) -> usize {
    k * width.saturating_sub(1) / n.saturating_sub(1).max(1)
}

/// The lanes' names, each over its lane (the last ending at it).
fn lane_names(names: &[&str], width: usize) -> String {
    let mut line = vec![' '; width];
    for (k, name) in names.iter().enumerate() {
        let at = lane_at(k, names.len(), width);
        let len = name.chars().count();
        let start = if k + 1 == names.len() {
            (at + 1).saturating_sub(len)
        } else if k == 0 {
            at
        } else {
            at.saturating_sub(len / 2)
        };
        for (i, c) in name.chars().enumerate() {
            if let Some(cell) = line.get_mut(start + i) {
                *cell = c;
            }
        }
    }
    line.into_iter().collect()
}

/// An arrow across `n` lanes in `width` cells: from its first lane to the
/// last that saw it, `x` half way to the next lane where it vanished, its
/// label inside where it fits.
fn lanes_arrow(n: usize, width: usize, span: LaneSpan, label: &str) -> String {
    let mut line = vec![' '; width];
    for k in 0..n {
        line[lane_at(k, n, width)] = '|';
    }
    let start = lane_at(span.from, n, width) as i64;
    let reached = lane_at(span.to, n, width) as i64;
    let dir: i64 = if span.rightward { 1 } else { -1 };
    let end = if span.vanished {
        let next = span.to as i64 + dir;
        if (0..n as i64).contains(&next) {
            (reached + lane_at(next as usize, n, width) as i64) / 2
        } else {
            reached + dir * 3
        }
    } else {
        reached
    }
    .clamp(0, width as i64 - 1);
    let (lo, hi) = (start.min(end), start.max(end));
    for x in lo + 1..hi {
        line[x as usize] = if line[x as usize] == '|' {
            '┼'
        } else {
            '─'
        };
    }
    if span.vanished {
        line[end as usize] = 'x';
    } else if hi - lo >= 2 {
        line[(end - dir) as usize] = if span.rightward { '▶' } else { '◀' };
    }
    // The label in the middle of the arrow's body, cut where it is short.
    let room = (hi - lo - 3).max(0) as usize;
    let label: Vec<char> = label.chars().take(room).collect();
    let at = (lo + 2) as usize + (room - label.len()) / 2;
    for (i, c) in label.into_iter().enumerate() {
        line[at + i] = c;
    }
    line.into_iter().collect()
}
