//! The help overlay: the keymap from `UiCommand::ALL`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use rocescope_core::{Model, UiCommand};

use super::{DIM, YELLOW, title};

pub(super) fn help(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let offered: Vec<UiCommand> = UiCommand::ALL
        .into_iter()
        .filter(|c| model.offers(*c))
        .collect();
    let w = area.width.min(90);
    let h = area.height.min(offered.len() as u16 + 4);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    let mut lines: Vec<Line<'_>> = offered
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
