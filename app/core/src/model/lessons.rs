//! The model's side of lessons: opening one on its scenario, its steps,
//! the model it replaced and the way back.

use super::*;

impl Model {
    /// Take over `old`'s lesson (its source was replaced by this model's)
    /// and apply its step here, the cursor once this run has data.
    pub(crate) fn adopt_lesson(&mut self, old: &mut Model) {
        self.previous = old.previous.take();
        self.lesson = old.lesson.take();
        self.lesson_step = old.lesson_step;
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
        let Some(l) = crate::lesson::builtin().into_iter().nth(i) else {
            self.status = format!("no lesson {}", i + 1);
            return;
        };
        self.status = format!("lesson: starting {}", l.scenario);
        self.lesson = Some(l);
        self.lesson_step = 0;
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
        self.lesson_step = (self.lesson_step as i64 + d).clamp(0, n as i64 - 1) as usize;
        self.enter_lesson_step();
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
        self.lesson_cursor_due = step.until_us.is_some();
        self.place_lesson_cursor();
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
        if h > 0 {
            self.select_row(h - 1);
        }
    }
}
