//! The model's side of lessons: opening one on its scenario, its steps,
//! its questions and their verdicts, the progress kept between runs, the
//! model it replaced and the way back.

use super::*;
use crate::lesson::answer::{Verdict, judge};
use crate::lesson::progress::Progress;
use crate::lesson::{AskKind, Step, facts};

/// The open lesson's questions: the verdict shown, the hint, an answer
/// waiting for its run to end, and the progress file.
#[derive(Debug, Default)]
pub struct Tutor {
    /// The verdict on the step (0-based) it answers.
    pub(crate) verdict: Option<(usize, Verdict)>,
    pub(crate) hint_shown: bool,
    /// An answer judged once the run ends (a prediction's rerun, or a
    /// paced run still going).
    pending: Option<String>,
    /// The step whose prediction's parameters this run has.
    rerun_for: Option<usize>,
    progress: Option<Progress>,
    /// Progress is not read or written (a fixed picture, a test).
    forget: bool,
}

impl Tutor {
    fn progress(&mut self, status: &mut String) -> &mut Progress {
        let forget = self.forget;
        self.progress.get_or_insert_with(|| {
            if forget {
                return Progress::default();
            }
            let (p, problem) = Progress::load();
            if let Some(e) = problem {
                *status = format!("lesson progress: {e}");
            }
            p
        })
    }
}

impl Model {
    /// Take over `old`'s lesson (its source was replaced by this model's)
    /// and apply its step here, the cursor once this run has data.
    pub(crate) fn adopt_lesson(&mut self, old: &mut Model) {
        self.previous = old.previous.take();
        self.lesson = old.lesson.take();
        self.lesson_step = old.lesson_step;
        self.tutor = std::mem::take(&mut old.tutor);
        old.lesson_cursor_due = false;
        if self.lesson.is_some() {
            self.enter_lesson_step();
        }
    }

    /// Keep `old` to go back to when the lesson is left, unless this model
    /// already holds the one from before the first lesson. Its simulator
    /// pauses meanwhile, so that it resumes where the user left it.
    pub(crate) fn keep_previous(&mut self, mut old: Model) {
        if self.previous.is_some() {
            return;
        }
        let st = old.source.status();
        if old.source.kind == crate::source::SourceKind::Sim
            && !st.finished.load(Ordering::Acquire)
            && !st.paused.load(Ordering::Acquire)
        {
            old.source.send(crate::source::SourceCtl::Pause);
            old.resume_on_return = true;
        }
        self.previous = Some(Box::new(old));
    }

    /// The model a lesson replaced, which leaving it goes back to.
    pub fn previous(&self) -> Option<&Model> {
        self.previous.as_deref()
    }

    /// The source a lesson replaced.
    pub fn previous_source_name(&self) -> Option<&str> {
        self.previous().map(|m| m.source.name.as_str())
    }

    /// Go back to the model the lesson replaced (as it was left: view,
    /// filter, selection), keeping the exports still being written.
    pub(crate) fn return_from_lesson(&mut self) {
        let Some(mut prev) = self.previous.take() else {
            return;
        };
        prev.adopt_exports(self);
        if std::mem::take(&mut prev.resume_on_return) {
            prev.source.send(crate::source::SourceCtl::Resume);
        }
        prev.status = format!("lesson left: back to {}", prev.source.name);
        *self = *prev;
    }

    /// Open shipped lesson `i`: the source layer (`source::steer`) starts
    /// its scenario and applies its first step to that run.
    pub(super) fn open_lesson(&mut self, i: usize) {
        let Some(l) = crate::lesson::builtin().get(i).cloned() else {
            self.status = format!("no lesson {}", i + 1);
            return;
        };
        self.status = format!("lesson: starting {}", l.scenario);
        self.lesson = Some(l);
        self.lesson_step = 0;
        self.tutor.verdict = None;
        self.tutor.pending = None;
        self.tutor.rerun_for = None;
        self.lesson_cursor_due = false;
        self.outbox.push(Command::OpenLesson(i));
    }

    pub(super) fn lesson_move(&mut self, d: i64) {
        let Some(lesson) = &self.lesson else {
            self.status = "open a lesson first (9, then Enter)".into();
            return;
        };
        let n = lesson.steps.len();
        if n == 0 {
            return;
        }
        // The steps after a prediction are about the run it asks for: the
        // student predicts before seeing it, and the lesson goes on there.
        if d > 0
            && let Some(a) = self.current_ask().filter(|a| !a.params.is_empty())
            && self.lesson_verdict().is_none()
            && self.tutor.pending.is_none()
        {
            let set: Vec<String> = a.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            self.status = format!(
                "predict first (:answer, h for a hint): the next steps are on the run with {}",
                set.join(", ")
            );
            return;
        }
        self.lesson_step = (self.lesson_step as i64 + d).clamp(0, n as i64 - 1) as usize;
        self.tutor.hint_shown = false;
        self.enter_lesson_step();
        self.rerun_for_step();
    }

    /// Rerun the scenario when the step is about another run than this
    /// one: a step before a prediction is on the run without its
    /// parameters, the prediction's own step (once answered) and those
    /// after it on the run with them.
    fn rerun_for_step(&mut self) {
        let Some(l) = &self.lesson else { return };
        let plan = crate::lesson::check::step_params(l);
        let Some((shown, asked)) = plan.get(self.lesson_step) else {
            return;
        };
        let want = match asked {
            Some(asked) if self.tutor.rerun_for == Some(self.lesson_step) => asked,
            _ => shown,
        };
        let (Ok(base), Some(run)) = (
            crate::lesson::check::scenario(l, &Default::default()),
            self.source.scenario(),
        ) else {
            return;
        };
        let keys: std::collections::BTreeSet<&String> = plan
            .iter()
            .flat_map(|(s, a)| s.keys().chain(a.iter().flat_map(|a| a.keys())))
            .collect();
        let mut changes = Vec::new();
        for k in keys {
            let Some(target) = want.get(k).copied().or_else(|| base.params.get(k)) else {
                continue;
            };
            if run.params.get(k) != Some(target) {
                changes.push(format!("{k}={target}"));
                self.outbox.push(Command::SetSimParam {
                    key: k.clone(),
                    value: target.to_string(),
                });
            }
        }
        if !changes.is_empty() {
            self.status = format!(
                "this step is about another run: rerunning with {}",
                changes.join(", ")
            );
        }
    }

    /// The open lesson's current question, if its step asks one.
    fn current_ask(&self) -> Option<&crate::lesson::Ask> {
        self.lesson
            .as_ref()?
            .steps
            .get(self.lesson_step)?
            .ask
            .as_ref()
    }

    /// The step asks for a packet and is not answered yet: the student
    /// picks it; the lesson selects nothing for them (the packet at its
    /// cursor is often the answer).
    pub(crate) fn lesson_awaits_pick(&self) -> bool {
        self.current_ask()
            .is_some_and(|a| a.kind == AskKind::Packet)
            && self.lesson_verdict().is_none()
    }

    /// Apply the current step's view and filter; its time cursor follows
    /// in `tick`, once the run has reached that time.
    pub(super) fn enter_lesson_step(&mut self) {
        let Some(step) = self
            .lesson
            .as_ref()
            .and_then(|l| l.steps.get(self.lesson_step))
            .cloned()
        else {
            return;
        };
        if let Some(v) = step.view {
            self.view = v;
        }
        if let Some(f) = &step.filter {
            self.set_filter(f.clone());
        }
        if self.lesson_awaits_pick() {
            self.selected = None;
            self.field_index = None;
        }
        self.lesson_cursor_due = step.until_us.is_some();
        self.place_lesson_cursor();
        let step = self.lesson_step + 1;
        self.note_progress(|p| p.reached = p.reached.max(step));
    }

    /// The open lesson's step and its question.
    fn current_step(&self) -> Option<Step> {
        self.lesson.as_ref()?.steps.get(self.lesson_step).cloned()
    }

    /// The verdict on the current step's question, if answered.
    pub fn lesson_verdict(&self) -> Option<&Verdict> {
        self.tutor
            .verdict
            .as_ref()
            .filter(|(s, _)| *s == self.lesson_step)
            .map(|(_, v)| v)
    }

    /// The hint is shown (asked for on this step).
    pub fn lesson_hint_shown(&self) -> bool {
        self.tutor.hint_shown
    }

    /// An answer waits for the run to end.
    pub fn lesson_answer_pending(&self) -> bool {
        self.tutor.pending.is_some()
    }

    /// `reached/steps, right/asked` of a shipped lesson, from the progress
    /// kept between runs.
    pub fn lesson_progress(&self, l: &Lesson) -> String {
        let questions = l.steps.iter().filter(|s| s.ask.is_some()).count();
        self.tutor.progress.as_ref().map_or_else(String::new, |p| {
            p.summary(&l.title, l.steps.len(), questions)
        })
    }

    /// Start from no progress and keep none (golden images, tests).
    pub fn forget_lesson_progress(&mut self) {
        self.tutor.forget = true;
        self.tutor.progress = Some(Progress::default());
    }

    /// Read the progress kept between runs (once per session).
    pub(super) fn load_lesson_progress(&mut self) {
        let mut status = String::new();
        self.tutor.progress(&mut status);
        if !status.is_empty() {
            self.status = status;
        }
    }

    pub(super) fn lesson_hint(&mut self) {
        match self.current_step().and_then(|s| s.ask) {
            Some(a) => {
                self.tutor.hint_shown = true;
                self.status = format!("hint: {}", a.hint);
            }
            None => self.status = "this step asks nothing".into(),
        }
    }

    /// Answer the step's question: judged on this run's analysis once it
    /// has ended; a prediction first reruns the scenario with the
    /// parameters it is about.
    pub(super) fn answer_lesson(&mut self, given: String) {
        let Some(a) = self.current_step().and_then(|s| s.ask) else {
            self.status = if self.lesson.is_some() {
                "this step asks nothing".into()
            } else {
                "open a lesson first (9, then Enter)".into()
            };
            return;
        };
        let given = match (a.kind, given.trim().is_empty(), self.selected) {
            (AskKind::Packet, true, Some(row)) => (row + 1).to_string(),
            _ => given,
        };
        if given.trim().is_empty() {
            self.status = match a.kind {
                AskKind::Packet => "select the packet first, then answer (a)".into(),
                AskKind::Number => "type it: :answer N".into(),
                AskKind::Choice => format!("type it: :answer with one of {}", a.choices.join(", ")),
            };
            return;
        }
        if !a.params.is_empty() && self.tutor.rerun_for != Some(self.lesson_step) {
            for (key, value) in &a.params {
                self.outbox.push(Command::SetSimParam {
                    key: key.clone(),
                    value: value.to_string(),
                });
            }
            let set: Vec<String> = a.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            self.status = format!(
                "your answer: {given}; rerunning with {} to see",
                set.join(", ")
            );
            self.tutor.rerun_for = Some(self.lesson_step);
            self.tutor.pending = Some(given);
            return;
        }
        self.tutor.pending = Some(given);
        if !self.judge_pending_answer() {
            self.status = "answer noted: judged when the run has ended".into();
        }
    }

    /// Judge the waiting answer if the run has ended; whether it was.
    pub(super) fn judge_pending_answer(&mut self) -> bool {
        if self.tutor.pending.is_none() {
            return false;
        }
        // The run has ended and every row of it is in the store.
        if !self.store.progress().complete {
            return false;
        }
        let Some(given) = self.tutor.pending.take() else {
            return false;
        };
        let Some(a) = self.current_step().and_then(|s| s.ask) else {
            return false;
        };
        let report = self
            .analysis
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .report();
        let facts = facts::facts(&report, &self.store.stats());
        match judge(&a, &facts, &given) {
            Ok(v) => {
                let step = self.lesson_step + 1;
                let right = v.right;
                self.status = v.text.clone();
                self.tutor.verdict = Some((self.lesson_step, v));
                // The first answer's verdict is the one kept: wrong, then
                // right, is not right first time.
                self.note_progress(|p| {
                    let first = *p.answers.entry(step).or_insert(right);
                    if right && !first {
                        p.right_later.insert(step);
                    }
                });
            }
            Err(e) => self.status = e.to_string(),
        }
        true
    }

    /// Change the open lesson's progress and keep it.
    fn note_progress(&mut self, change: impl FnOnce(&mut crate::lesson::progress::LessonProgress)) {
        let Some(title) = self.lesson.as_ref().map(|l| l.title.clone()) else {
            return;
        };
        let mut status = String::new();
        let forget = self.tutor.forget;
        let p = self.tutor.progress(&mut status);
        let before = p.clone();
        change(p.lessons.entry(title).or_default());
        if *p != before
            && !forget
            && let Err(e) = p.save()
        {
            status = format!("lesson progress not kept: {e}");
        }
        if !status.is_empty() {
            self.status = status;
        }
    }

    /// Move the time cursor to the step's time once the store holds it (a
    /// paced run gets there later than the step is opened).
    pub(super) fn place_lesson_cursor(&mut self) {
        if !self.lesson_cursor_due {
            return;
        }
        let Some(us) = self
            .lesson
            .as_ref()
            .and_then(|l| l.steps.get(self.lesson_step))
            .and_then(|s| s.until_us)
        else {
            self.lesson_cursor_due = false;
            return;
        };
        let stats = self.store.stats();
        let (Some(t0), Some(last)) = (stats.first_ts_ns, stats.last_ts_ns) else {
            return;
        };
        let t = t0 + (us * 1000.0) as u64;
        // A row at or past `t` means every row before it is in.
        let reached =
            last >= t || !self.source.live || self.source.status().finished.load(Ordering::Acquire);
        if !reached {
            return;
        }
        self.lesson_cursor_due = false;
        self.follow_live = false;
        self.clock.set_end(last);
        self.clock.pause(self.now);
        self.clock.seek(t, self.now);
        let h = self.horizon();
        if h > 0 && !self.lesson_awaits_pick() {
            self.select_row(h - 1);
        }
    }
}
