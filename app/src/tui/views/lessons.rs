//! Lessons: the list and the open lesson's step.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use rocescope_core::Model;
use rocescope_core::lesson::{AskKind, Step};

use super::{DIM, GREEN, RED, UiState, YELLOW, title};

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
            rocescope_core::query::lesson_list_line(model, i, l),
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
    let mut lines = vec![Line::from(step.text.clone())];
    lines.extend(question_lines(model, step));
    f.render_widget(
        Paragraph::new(lines)
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

/// The step's question, how to answer, the hint when asked for and the
/// verdict once answered.
fn question_lines(model: &Model, step: &Step) -> Vec<Line<'static>> {
    let Some(a) = &step.ask else {
        return Vec::new();
    };
    let mut lines = vec![
        Line::from(""),
        Line::from(Span::styled(
            format!("Question: {}", a.question),
            Style::default().fg(YELLOW).add_modifier(Modifier::BOLD),
        )),
    ];
    for (i, c) in a.choices.iter().enumerate() {
        lines.push(Line::from(format!("  {}. {c}", i + 1)));
    }
    let how = match a.kind {
        AskKind::Packet => "select the packet and press a (or :answer FRAME)",
        AskKind::Number => "type :answer N",
        AskKind::Choice => "type :answer and the choice or its number",
    };
    lines.push(Line::from(Span::styled(
        format!("Answer: {how}; h shows a hint."),
        Style::default().fg(DIM),
    )));
    if model.lesson_hint_shown() {
        lines.push(Line::from(format!("Hint: {}", a.hint)));
    }
    if model.lesson_answer_pending() {
        lines.push(Line::from(Span::styled(
            "Your answer is judged when the run has ended…",
            Style::default().fg(DIM),
        )));
    }
    if let Some(v) = model.lesson_verdict() {
        let color = if v.right { GREEN } else { RED };
        lines.push(Line::from(Span::styled(
            v.text.clone(),
            Style::default().fg(color),
        )));
    }
    lines
}
