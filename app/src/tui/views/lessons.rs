//! Lessons: the list and the open lesson's step.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use rocescope_core::Model;

use super::{DIM, UiState, title};

pub(super) fn lessons(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let all = rocescope_core::lesson::builtin();
    let mut lines = Vec::new();
    for (i, l) in all.iter().enumerate() {
        let style = if i == model.list_index() {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(
            format!(
                "{}. {} — {} (scenario: {})",
                i + 1,
                l.title,
                l.summary,
                l.scenario
            ),
            style,
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        format!("Enter opens the lesson and starts the scenario it was written for; n / p move through its steps; L leaves it, back to this source: {}.", model.source().name),
        Style::default().fg(DIM),
    )));
    ui.items = Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        all.len() as u16,
    );
    ui.items_first = 0;
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(title("Lessons")),
        area,
    );
}

pub(super) fn lesson_box(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let Some(l) = &model.lesson() else { return };
    let step = &l.steps[model.lesson_step().min(l.steps.len().saturating_sub(1))];
    // The status line names the source leaving goes back to.
    let back = if model.previous().is_some() {
        ", L leave"
    } else {
        ""
    };
    f.render_widget(
        Paragraph::new(step.text.clone())
            .wrap(Wrap { trim: true })
            .block(title(format!(
                "Lesson: {} — step {}/{} on {} (n next, p previous{back})",
                l.title,
                model.lesson_step() + 1,
                l.steps.len(),
                model.source().name
            ))),
        area,
    );
}
