//! Waveform signals beside packets: the hierarchy browser (the search's
//! matches, numbered for `:show #N`) and the chosen signals' step charts
//! around the waveform cursor (one-bit signals as a line, buses as value
//! segments).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use rocescope_core::Model;
use rocescope_core::signals::chart::{Column, columns, marker_columns};
use rocescope_core::signals::{Chosen, Signals};
use rocescope_replay::wave::signals::MarkerKind;

use super::{CYAN, DIM, GREEN, YELLOW, title};

pub(super) fn signals(f: &mut Frame<'_>, model: &Model, s: &Signals, area: Rect) {
    let left = (area.width * 2 / 5).clamp(20, 60);
    let parts = Layout::horizontal([Constraint::Length(left), Constraint::Min(10)]).split(area);
    browser(f, s, parts[0]);
    charts(f, model, s, parts[1]);
}

fn browser(f: &mut Frame<'_>, s: &Signals, area: Rect) {
    let rows = usize::from(area.height.saturating_sub(2));
    let total = s.matches().count();
    let mut lines: Vec<Line> = Vec::new();
    for (i, sig) in s.matches().take(rows).enumerate() {
        let shown = s.chosen().iter().any(|c| c.path == sig.path);
        let width = sig
            .width_bits
            .map_or_else(|| "real/string".into(), |w| format!("{w}"));
        let style = if shown {
            Style::default().fg(GREEN)
        } else {
            Style::default()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("#{:<3}", i + 1), Style::default().fg(DIM)),
            Span::styled(sig.path.clone(), style),
            Span::styled(format!(" {width}"), Style::default().fg(DIM)),
        ]));
    }
    if total > rows {
        lines.pop();
        lines.push(Line::styled(
            format!("... {} more: narrow the search", total - rows + 1),
            Style::default().fg(DIM),
        ));
    }
    let head = if s.search().is_empty() {
        format!("Signals: {total} (:signals WORDS, :show #N)")
    } else {
        format!(
            "Signals: {total} of {} match {:?} (:show #N)",
            s.hierarchy().len(),
            s.search()
        )
    };
    f.render_widget(Paragraph::new(lines).block(title(head)), area);
}

fn charts(f: &mut Frame<'_>, model: &Model, s: &Signals, area: Rect) {
    let cursor = model.wave_cursor_ns().unwrap_or(0);
    let inner = title("").inner(area);
    let width = usize::from(inner.width.max(1));
    // Whole nanoseconds per column: the span shown rounds up to them.
    let per_col = s.span_ns().div_ceil(width as u64).max(1);
    let start = cursor.saturating_sub(per_col * width as u64 / 2);
    let marks = marker_columns(s.markers(), start, per_col, width);
    // What the ruler's marks mean, when it has any.
    let legend = if marks.is_empty() {
        ""
    } else {
        "; T trigger, ¦ window start"
    };
    // Loads slower than from memory say why.
    let streamed = s.streamed_because().map_or_else(String::new, |why| {
        format!("; each signal read from the file: {why}")
    });
    let head = format!(
        "Waveform: cursor {cursor} ns, {} ns shown{legend}{streamed}",
        per_col * width as u64
    );
    f.render_widget(title(head), area);
    if s.chosen().is_empty() {
        f.render_widget(
            Paragraph::new(
                "No signals shown: search with :signals WORDS, then :show #N; \
                 :fmt #N bin|hex|dec|signed|opcode|psn|aeth, :hide #N, :cursor µs.",
            )
            .wrap(ratatui::widgets::Wrap { trim: true }),
            inner,
        );
        return;
    }
    let cursor_col = ((cursor - start) / per_col) as usize;
    // The ruler: the window's ends and the cursor's column.
    let mut ruler: Vec<char> = vec![' '; width];
    let ends = format!("{start} ns");
    for (cell, ch) in ruler.iter_mut().zip(ends.chars()) {
        *cell = ch;
    }
    let end = format!("{} ns", start + per_col * width as u64);
    let at = width.saturating_sub(end.chars().count());
    for (cell, ch) in ruler[at..].iter_mut().zip(end.chars()) {
        *cell = ch;
    }
    for &(col, kind) in &marks {
        if let Some(c) = ruler.get_mut(col) {
            *c = match kind {
                MarkerKind::Trigger => 'T',
                MarkerKind::Window => '¦',
            };
        }
    }
    if let Some(c) = ruler.get_mut(cursor_col) {
        *c = '▼';
    }
    let mut lines: Vec<Line> = vec![Line::styled(
        ruler.into_iter().collect::<String>(),
        Style::default().fg(DIM),
    )];
    for (i, c) in s.chosen().iter().enumerate() {
        let now = c.at(cursor).map_or_else(|| "-".into(), |v| c.text(v));
        lines.push(Line::from(vec![
            Span::styled(format!("#{} ", i + 1), Style::default().fg(DIM)),
            Span::raw(c.label()),
            Span::styled(format!(" = {now}"), Style::default().fg(YELLOW)),
        ]));
        let cols = columns(c.changes(), start, per_col, width);
        lines.push(chart_line(c, &cols, cursor_col));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// One chart row: a line for one bit, value segments for a bus.
fn chart_line(c: &Chosen, cols: &[Column], cursor_col: usize) -> Line<'static> {
    let mut cells: Vec<char> = vec![' '; cols.len()];
    if c.width_bits == 1 {
        for (cell, col) in cells.iter_mut().zip(cols) {
            *cell = match col {
                Column::Empty => ' ',
                Column::Edge { .. } => '│',
                Column::Held(v) if !v.known => 'x',
                Column::Held(v) if v.value & 1 == 1 => '▔',
                Column::Held(_) => '▁',
            };
        }
    } else {
        // Segments between edges, each labelled with its value where it fits.
        let mut k = 0;
        while k < cols.len() {
            match cols[k] {
                Column::Empty => {
                    k += 1;
                }
                Column::Edge { .. } if k > 0 => {
                    cells[k] = '╳';
                    k += 1;
                }
                _ => {
                    let from = k;
                    let v = cols[k].value();
                    k += 1;
                    while k < cols.len() && matches!(cols[k], Column::Held(_)) {
                        k += 1;
                    }
                    let text: Vec<char> =
                        v.map(|v| c.text(v)).unwrap_or_default().chars().collect();
                    let len = k - from;
                    for cell in &mut cells[from..k] {
                        *cell = '═';
                    }
                    if text.len() + 2 <= len {
                        let at = from + 1;
                        cells[at..at + text.len()].copy_from_slice(&text);
                    }
                }
            }
        }
    }
    let text: String = cells.iter().collect();
    let mut spans = Vec::new();
    let (a, b) = split_at_char(&text, cursor_col);
    spans.push(Span::styled(a, Style::default().fg(CYAN)));
    let mut rest = b.chars();
    if let Some(ch) = rest.next() {
        spans.push(Span::styled(
            ch.to_string(),
            Style::default().fg(YELLOW).add_modifier(Modifier::REVERSED),
        ));
    }
    spans.push(Span::styled(
        rest.collect::<String>(),
        Style::default().fg(CYAN),
    ));
    Line::from(spans)
}

fn split_at_char(s: &str, n: usize) -> (String, String) {
    let a: String = s.chars().take(n).collect();
    let b: String = s.chars().skip(n).collect();
    (a, b)
}
