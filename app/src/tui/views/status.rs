//! The status line (the core's parts, styled) and the command line.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use rocescope_core::status::Tone;
use rocescope_core::{Model, Overlay, cmdline, status_line};

use super::{DIM, GREEN, RED, YELLOW};

pub(super) fn status_bar(f: &mut Frame<'_>, model: &Model, area: Rect) {
    if model.overlay() == Overlay::CommandLine {
        let fits = cmdline::complete(model.cmdline()).candidates;
        // Candidates once the user has typed something to narrow them.
        let hint = if fits.len() > 1 && !model.cmdline().trim().is_empty() {
            format!("▏  {}", fits.join(" "))
        } else {
            format!("▏  ({})", cmdline::hint())
        };
        let line = Line::from(vec![
            Span::styled(":", Style::default().fg(YELLOW)),
            Span::raw(model.cmdline().to_owned()),
            Span::styled(hint, Style::default().fg(DIM)),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let bar = Style::default().fg(Color::Black).bg(Color::Gray);
    let mut spans = vec![Span::raw(" ")];
    let width = usize::from(area.width.saturating_sub(1));
    for (i, part) in status_line(model)
        .parts_within(width)
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            spans.push(Span::raw(" | "));
        }
        let style = match part.tone {
            Tone::Normal => bar,
            Tone::Good => bar.bg(GREEN).add_modifier(Modifier::BOLD),
            Tone::Notice => bar.bg(YELLOW),
            Tone::Bad => bar.fg(Color::White).bg(RED).add_modifier(Modifier::BOLD),
        };
        spans.push(Span::styled(part.text, style));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
}
