//! Lessons: the list and the open lesson's step.

use eframe::egui;

use egui::Ui;
use rocescope_core::command::View;
use rocescope_core::{Command, Model};

use super::{select_item, selected_item};

pub fn lessons(ui: &mut Ui, model: &Model, out: &mut Vec<Command>) {
    let all = rocescope_core::lesson::builtin();
    let sel = selected_item(model, View::Lessons);
    ui.strong("Lessons (double-click to open; n / p move through the steps)");
    for (i, l) in all.iter().enumerate() {
        let r = ui.selectable_label(
            sel == Some(i),
            format!(
                "{}. {} — {} (scenario: {})",
                i + 1,
                l.title,
                l.summary,
                l.scenario
            ),
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
    if let Some(step) = l.steps.get(i) {
        ui.label(&step.text);
    }
}
