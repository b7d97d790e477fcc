//! The help overlay: the keymap from `UiCommand::ALL`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use rocescope_core::UiCommand;

use super::{DIM, YELLOW, title};

pub(super) fn help(f: &mut Frame<'_>, area: Rect) {
    let w = area.width.min(90);
    let h = area.height.min(UiCommand::ALL.len() as u16 + 4);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    let mut lines: Vec<Line<'_>> = UiCommand::ALL
        .iter()
        .map(|c| {
            Line::from(vec![
                Span::styled(format!("{:>9}  ", c.key()), Style::default().fg(YELLOW)),
                Span::raw(c.description()),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled(
        "     mouse  click a tab or a row; wheel scrolls",
        Style::default().fg(DIM),
    )));
    f.render_widget(Paragraph::new(lines).block(title("Keys (Esc closes)")), r);
}
