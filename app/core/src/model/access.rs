//! Read access to the model's state.

use super::*;

/// Read access to the state; changes go through [`Model::apply`].
impl Model {
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn analysis(&self) -> &RcAnalyzer {
        &self.analysis
    }

    pub fn source(&self) -> &SourceHandle {
        &self.source
    }

    pub fn view(&self) -> View {
        self.view
    }

    pub fn overlay(&self) -> Overlay {
        self.overlay
    }

    pub fn filter_text(&self) -> &str {
        &self.filter_text
    }

    pub fn filter_error(&self) -> &Option<FilterError> {
        &self.filter_error
    }

    pub fn selected(&self) -> Option<u64> {
        self.selected
    }

    pub fn clock(&self) -> &PlaybackClock {
        &self.clock
    }

    pub fn follow_live(&self) -> bool {
        self.follow_live
    }

    pub fn selected_qp(&self) -> Option<u32> {
        self.selected_qp
    }

    pub fn list_index(&self) -> usize {
        self.list_index
    }

    pub fn lesson(&self) -> &Option<Lesson> {
        &self.lesson
    }

    pub fn lesson_step(&self) -> usize {
        self.lesson_step
    }

    pub fn field_index(&self) -> Option<usize> {
        self.field_index
    }

    pub fn status(&self) -> &str {
        &self.status
    }

    pub fn quit(&self) -> bool {
        self.quit
    }

    pub fn outbox(&self) -> &[Command] {
        &self.outbox
    }

    pub fn cmdline(&self) -> &str {
        &self.cmdline
    }

    pub fn last_export(&self) -> &Option<Result<ExportSummary, ExportError>> {
        &self.last_export
    }

    /// Commands queued for the source layer, taken (`source::steer` and
    /// tests drain them).
    pub fn take_outbox(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.outbox)
    }
}
