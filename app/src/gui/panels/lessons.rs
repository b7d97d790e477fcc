//! Lessons: the list and the open lesson's step.

use eframe::egui;

use egui::{Color32, Ui};
use rocescope_core::command::View;
use rocescope_core::lesson::AskKind;
use rocescope_core::{Command, Model};

use super::{select_item, selected_item};

pub fn lessons(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let all = rocescope_core::lesson::builtin();
    let sel = selected_item(model, View::Lessons);
    ui.strong("Lessons (double-click to open; n / p move through the steps)");
    for (i, l) in all.iter().enumerate() {
        let r = ui.selectable_label(
            sel == Some(i),
            rocescope_core::query::lesson_list_line(model, i, l),
        );
        if r.clicked() {
            select_item(model, View::Lessons, i, out);
        }
        if r.double_clicked() {
            out.push(Command::OpenSelectedQp);
        }
    }
    ui.add_space(8.0);
    ui.weak(format!(
        "Opening a lesson starts the scenario it was written for; L leaves it, back to this source: {}.",
        model.source().name
    ));
}

/// The current lesson step, docked at the bottom while a lesson is open.
pub fn lesson_box(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let Some(l) = &model.lesson() else { return };
    let n = l.steps.len();
    let i = model.lesson_step().min(n.saturating_sub(1));
    ui.horizontal(|ui| {
        ui.strong(format!("Lesson: {} — step {}/{}", l.title, i + 1, n));
        if ui.button("previous (p)").clicked() {
            out.push(Command::PrevLessonStep);
        }
        if ui.button("next (n)").clicked() {
            out.push(Command::NextLessonStep);
        }
        if let Some(name) = model.previous_source_name()
            && ui.button(format!("leave (L), back to {name}")).clicked()
        {
            out.push(Command::LeaveLesson);
        }
        ui.weak(format!("on {}", model.source().name));
    });
    let Some(step) = l.steps.get(i) else { return };
    ui.label(&step.text);
    let Some(a) = &step.ask else { return };
    ui.add_space(4.0);
    ui.colored_label(
        Color32::from_rgb(230, 200, 80),
        format!("Question: {}", a.question),
    );
    ui.horizontal_wrapped(|ui| match a.kind {
        AskKind::Packet => {
            let frame = model.selected().map(|r| r + 1);
            let label = frame.map_or_else(
                || "select a packet".to_owned(),
                |f| format!("answer: frame {f} (a)"),
            );
            if ui
                .add_enabled(frame.is_some(), egui::Button::new(label))
                .clicked()
            {
                out.push(Command::AnswerLesson(String::new()));
            }
        }
        AskKind::Choice => {
            for c in &a.choices {
                if ui.button(c).clicked() {
                    out.push(Command::AnswerLesson(c.clone()));
                }
            }
        }
        AskKind::Number => {
            let id = ui.id().with("lesson-answer");
            let mut text: String = ui.data_mut(|d| d.get_temp(id).unwrap_or_default());
            let r = ui.add(egui::TextEdit::singleline(&mut text).desired_width(120.0));
            let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button("answer").clicked() || enter) && !text.trim().is_empty() {
                out.push(Command::AnswerLesson(text.clone()));
            }
            ui.data_mut(|d| d.insert_temp(id, text));
        }
    });
    ui.horizontal(|ui| {
        if ui.button("hint (h)").clicked() {
            out.push(Command::LessonHint);
        }
        if model.lesson_hint_shown() {
            ui.label(format!("Hint: {}", a.hint));
        }
    });
    if model.lesson_answer_pending() {
        ui.weak("Your answer is judged when the run has ended…");
    }
    if let Some(v) = model.lesson_verdict() {
        let color = if v.right {
            Color32::from_rgb(90, 200, 120)
        } else {
            Color32::from_rgb(230, 90, 80)
        };
        ui.colored_label(color, &v.text);
    }
}
