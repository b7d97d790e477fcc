//! The workbench model: everything the TUI and GUI show, changed only by
//! [`Model::apply`]. Views read it and return [`Command`]s.

mod access;
mod exports;
mod lessons;
mod partitions;
mod signals;
mod whatif;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rocescope_decoders::analysis::Report;
use rocescope_decoders::{DecodeConfig, LinkLayer, Packet, decode};
use rocescope_replay::TimeBase;
use rocescope_replay::clock::{PlayState, PlaybackClock};
use rocescope_replay::record::SlotDecision;
use rocescope_replay::store::{Flags, RcAnalyzer, Row, Store};

use rocescope_data::{DataError, ExportSummary, Format, Table};

use crate::command::{Command, View};
use crate::export::{ExportError, ExportJob, ExportRequest, PacketRows};
use crate::filter::{Filter, FilterError};
use crate::lesson::Lesson;
use crate::records::{Derived, Probe};
use crate::source::SourceHandle;

pub use whatif::{WhatIfState, changes_text as whatif_changes_text};

/// An overlay drawn over the views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    /// The filter bar has the keyboard.
    FilterEdit,
    /// The command line has the keyboard.
    CommandLine,
}

pub use crate::cmdline::PARTITION_WINDOW_NS;
pub(crate) use crate::scan::Matches;
use crate::scan::spawn_scan;

/// How often the analysis report is rebuilt for the views.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// The workbench state.
pub struct Model {
    pub(crate) store: Arc<Store>,
    pub(crate) analysis: RcAnalyzer,
    pub(crate) source: SourceHandle,
    pub(crate) view: View,
    pub(crate) overlay: Overlay,
    /// Text in the filter bar (may not compile yet).
    pub(crate) filter_text: String,
    pub(crate) filter_error: Option<FilterError>,
    filter: Option<Filter>,
    matches: Arc<Matches>,
    /// The selected row (store index).
    pub(crate) selected: Option<u64>,
    /// Replay clock of recordings; live sources follow the newest data.
    pub(crate) clock: PlaybackClock,
    pub(crate) follow_live: bool,
    pub(crate) selected_qp: Option<u32>,
    /// Selection in list views (QPs, episodes, findings, slots).
    pub(crate) list_index: usize,
    pub(crate) lesson: Option<Lesson>,
    pub(crate) lesson_step: usize,
    /// The step's time cursor waits for the run to reach its time.
    lesson_cursor_due: bool,
    /// The model a lesson replaced, to go back to when it is left.
    previous: Option<Box<Model>>,
    /// This model's simulator was paused for a lesson: resume it on return.
    resume_on_return: bool,
    /// The open lesson's answers, hint and the progress kept between runs.
    pub(crate) tutor: lessons::Tutor,
    /// Selected field of the detail tree (index into the field walk);
    /// `None` selects the packet's BTH (or its first header).
    pub(crate) field_index: Option<usize>,
    /// One-line status for the user (errors of commands, hints).
    pub(crate) status: String,
    pub(crate) quit: bool,
    report: Report,
    report_at: Option<Instant>,
    /// Bumped each time `report` is made again (views cache what they
    /// derive from it by this).
    report_generation: u64,
    /// The report was made from a final analysis: not made again.
    report_final: bool,
    /// Slots and probes, derived with the report.
    records: Derived,
    now: Instant,
    /// Commands that go to the source (simulator parameters, sniffer filter).
    pub(crate) outbox: Vec<Command>,
    /// Text of the command line while it is open.
    pub(crate) cmdline: String,
    /// Exports running on their own threads.
    exports: Vec<ExportJob>,
    /// The outcome of the last export that finished (also in `status`).
    pub(crate) last_export: Option<Result<ExportSummary, ExportError>>,
    /// A waveform's signals beside the packets, once opened.
    pub(crate) signals: Option<crate::signals::Signals>,
    /// Several capture points' analysis, when the capture shown is the
    /// first of them (`open --point`, `gui --point`).
    points: Option<Arc<rocescope_replay::points::PointsReport>>,
    /// The Losses view's lines, in its order (from `points`).
    loss_items: Vec<crate::query::LossItem>,
    /// The writer of live partitions, while one runs. Declared after
    /// `source`: a model dropped stops its source before the writer
    /// writes the last window.
    partitions: Option<crate::partitions::LiveWriter>,
    /// Writers asked to stop, still writing their last window.
    partitions_done: Vec<crate::partitions::LiveWriter>,
    /// The what-if beside the capture (`:whatif set KEY=VALUE`): running on
    /// its thread, or its runs.
    whatif: Option<whatif::WhatIfRun>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("view", &self.view)
            .field("selected", &self.selected)
            .finish_non_exhaustive()
    }
}

/// Packet bytes of one row, decoded: for the detail tree, hex view, explain.
#[derive(Debug, Clone)]
pub struct Selected {
    pub index: u64,
    pub row: Row,
    pub bytes: Vec<u8>,
    /// How the capture port frames its packets.
    pub link: LinkLayer,
    /// The settings the store indexed with (the user's RoCE ports).
    pub decode: DecodeConfig,
}

impl Selected {
    pub fn packet(&self) -> Packet<'_> {
        decode(&self.bytes, self.link, &self.decode)
    }
}

impl Model {
    pub fn new(store: Arc<Store>, analysis: RcAnalyzer, source: SourceHandle) -> Model {
        let live = source.live;
        let mut m = Model {
            store,
            analysis,
            source,
            view: View::Overview,
            overlay: Overlay::None,
            filter_text: String::new(),
            filter_error: None,
            filter: None,
            matches: Arc::new(Matches::default()),
            selected: None,
            clock: PlaybackClock::new(0, 0),
            follow_live: live,
            selected_qp: None,
            list_index: 0,
            lesson: None,
            lesson_step: 0,
            lesson_cursor_due: false,
            previous: None,
            resume_on_return: false,
            tutor: lessons::Tutor::default(),
            field_index: None,
            status: String::new(),
            quit: false,
            report: Report::default(),
            report_at: None,
            report_generation: 0,
            report_final: false,
            records: Derived::default(),
            now: Instant::now(),
            outbox: Vec::new(),
            cmdline: String::new(),
            exports: Vec::new(),
            last_export: None,
            signals: None,
            points: None,
            loss_items: Vec::new(),
            partitions: None,
            partitions_done: Vec::new(),
            whatif: None,
        };
        m.load_lesson_progress();
        m.tick(Instant::now());
        if !live {
            // A recording opens showing everything; play restarts it.
            m.clock.seek(u64::MAX, m.now);
        }
        m
    }

    /// Advance to wall time `now`: extend the clock over new rows, follow a
    /// live source, refresh the analysis report now and then.
    pub fn tick(&mut self, now: Instant) {
        self.now = now;
        let stats = self.store.stats();
        if let (Some(a), Some(b)) = (stats.first_ts_ns, stats.last_ts_ns) {
            if self.clock_span() == (0, 0) {
                self.clock = if self.store.time_base() == TimeBase::Ordinal {
                    PlaybackClock::ordinal(a, b, 1000.0)
                } else {
                    PlaybackClock::new(a, b)
                };
                if !self.source.live {
                    self.clock.seek(b, now);
                }
            }
            // A file shows all of itself while it is indexed: a clock
            // paused at the old end moves with the end (replay starts only
            // when the user asks), else the rows past the first screen's
            // end would stay hidden from the list and the filters.
            let at_end = !self.source.live
                && self.clock.state() == PlayState::Paused
                && self.clock.at_end(now);
            self.clock.set_end(b);
            if at_end {
                self.clock.seek(b, now);
            }
        }
        if self.follow_live && self.source.live {
            self.clock.seek(u64::MAX, now);
        }
        // A live session of points: its links' state, and its analysis
        // each time it is made again.
        let status = self.source.status_arc();
        if let Some(r) = self
            .source
            .live_points
            .as_mut()
            .and_then(|l| l.poll(&status))
        {
            self.set_points_shared(r);
        }
        // A lesson's run at its capture points: their analysis, once.
        if let Some(r) = self.source.points_report.take() {
            self.set_points(r);
        }
        if !self.report_final
            && self
                .report_at
                .is_none_or(|t| now.duration_since(t) >= REPORT_EVERY)
        {
            // A file indexed to its end has its analysis final (the store
            // is complete only once the analysis' thread is done): the
            // report made now is the last (a rebuild is ~36 M instructions
            // at 20 M packets, a 10 ms frame four times a second).
            let final_analysis = !self.source.live && self.store.is_complete();
            self.report = self
                .analysis
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .report();
            self.records.refresh(&self.store);
            self.report_at = Some(now);
            self.report_generation += 1;
            self.report_final = final_analysis;
        }
        if self.selected.is_none() && self.horizon() > 0 && !self.lesson_awaits_pick() {
            self.selected = Some(self.store.first_row());
        }
        self.place_lesson_cursor();
        self.judge_pending_answer();
        self.poll_exports();
        if let Some(s) = &mut self.signals {
            s.poll();
        }
        self.poll_partitions();
        self.poll_whatif();
    }

    fn clock_span(&self) -> (u64, u64) {
        // The clock clamps to its span: now_ns at an impossible seek tells it.
        let mut probe = self.clock;
        probe.seek(0, self.now);
        let a = probe.now_ns(self.now);
        probe.seek(u64::MAX, self.now);
        (a, probe.now_ns(self.now))
    }

    /// The analysis report (rebuilt every 250 ms while the analysis can
    /// still change).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// How many times the report has been made: a view's cache of what it
    /// derives from [`Model::report`] is current while this is unchanged.
    pub fn report_generation(&self) -> u64 {
        self.report_generation
    }

    /// Shows the capture as the first of several points, with their
    /// analysis (clocks, segment latency, losses by segment).
    pub fn set_points(&mut self, report: rocescope_replay::points::PointsReport) {
        self.set_points_shared(Arc::new(report));
    }

    /// [`Model::set_points`] with a report shared (a live session's, made
    /// again as frames arrive: the Losses view keeps its place).
    pub fn set_points_shared(&mut self, report: Arc<rocescope_replay::points::PointsReport>) {
        self.loss_items = crate::query::loss_items(&report);
        self.points = Some(report);
    }

    /// A live session of points: each point's link and why there is no
    /// analysis yet, as the Overview shows them (empty otherwise).
    pub fn point_link_lines(&self) -> Vec<String> {
        self.source
            .live_points
            .as_ref()
            .map(|l| l.lines())
            .unwrap_or_default()
    }

    /// The Losses view's lines (empty without points).
    pub fn loss_items(&self) -> &[crate::query::LossItem] {
        &self.loss_items
    }

    /// The views this session offers: the Losses view only with capture
    /// points, so that a single capture's workbench is as it was.
    pub fn views(&self) -> Vec<View> {
        View::ALL
            .into_iter()
            .filter(|v| !v.needs_points() || self.points.is_some())
            .collect()
    }

    /// Whether a key's command is offered now (help, palette, keys).
    pub fn offers(&self, c: crate::command::UiCommand) -> bool {
        !c.needs_points() || self.points.is_some()
    }

    /// The points' analysis, when the capture is the first of several.
    pub fn points(&self) -> Option<&rocescope_replay::points::PointsReport> {
        self.points.as_deref()
    }

    /// The service slots' decisions (derived with the report).
    pub fn slots(&self) -> &[SlotDecision] {
        self.records.slots()
    }

    /// The profiler's probes with their samples (derived with the report).
    pub fn probes(&self) -> &[Probe] {
        self.records.probes()
    }

    /// Capture time of the time cursor.
    pub fn cursor_ns(&self) -> u64 {
        self.clock.now_ns(self.now)
    }

    /// Rows visible now: all of them, or those up to the replay clock.
    pub fn horizon(&self) -> u64 {
        let len = self.store.len();
        if self.clock.state() == PlayState::Paused
            && self.clock.now_ns(self.now) >= self.store.stats().last_ts_ns.unwrap_or(0)
        {
            return len;
        }
        self.store
            .seek_time(self.clock.now_ns(self.now).saturating_add(1))
            .min(len)
    }

    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// Number of rows the packet list shows. Rows a live session's disk
    /// ring deleted are not listed (the status line counts them).
    pub fn visible_len(&self) -> u64 {
        let h = self.horizon();
        let first = self.store.first_row();
        match &self.filter {
            None => h.saturating_sub(first),
            Some(_) => {
                let rows = self.matches.rows.read().unwrap_or_else(|e| e.into_inner());
                (rows.partition_point(|r| *r < h) - rows.partition_point(|r| *r < first)) as u64
            }
        }
    }

    /// Progress of the filter scan: (rows scanned, rows stored).
    pub fn filter_progress(&self) -> (u64, u64) {
        (
            self.matches.scanned.load(Ordering::Relaxed),
            self.store.len(),
        )
    }

    /// The tests' scan (one made to fail).
    #[cfg(test)]
    pub(crate) fn set_matches(&mut self, matches: Arc<Matches>) {
        self.matches = matches;
    }

    /// Why the filter's scan stopped before its end (its thread failed).
    pub fn filter_failed(&self) -> Option<String> {
        self.matches
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Matches before this position were deleted by the ring.
    /// Filter matches let go past the match list's bound (the oldest).
    pub fn filter_matches_let_go(&self) -> u64 {
        self.matches.let_go.load(Ordering::Relaxed)
    }

    fn matches_skipped(&self, rows: &[u64]) -> usize {
        let first = self.store.first_row();
        if first == 0 {
            0
        } else {
            rows.partition_point(|r| *r < first)
        }
    }

    /// Store index of the `pos`-th visible row.
    pub fn visible_row(&self, pos: u64) -> Option<u64> {
        match &self.filter {
            None => {
                let row = self.store.first_row() + pos;
                (row < self.horizon()).then_some(row)
            }
            Some(_) => {
                let rows = self.matches.rows.read().unwrap_or_else(|e| e.into_inner());
                rows.get(self.matches_skipped(&rows) + pos as usize)
                    .copied()
            }
        }
    }

    /// Position of a store row among the visible rows (or where it would be).
    pub fn visible_pos(&self, row: u64) -> u64 {
        match &self.filter {
            None => row.saturating_sub(self.store.first_row()),
            Some(_) => {
                let rows = self.matches.rows.read().unwrap_or_else(|e| e.into_inner());
                (rows.partition_point(|r| *r < row)).saturating_sub(self.matches_skipped(&rows))
                    as u64
            }
        }
    }

    /// Visible rows `range` (positions), with their store indices.
    pub fn visible_rows(&self, start: u64, count: usize) -> Vec<(u64, Row)> {
        let mut out = Vec::with_capacity(count);
        match &self.filter {
            None => {
                let start = self.store.first_row() + start;
                let end = (start + count as u64).min(self.horizon());
                let mut rows = Vec::with_capacity(count);
                self.store.rows(start..end, &mut rows);
                out.extend((start..).zip(rows));
            }
            Some(_) => {
                let idx: Vec<u64> = {
                    let m = self.matches.rows.read().unwrap_or_else(|e| e.into_inner());
                    let h = self.horizon();
                    m.iter()
                        .skip(self.matches_skipped(&m) + start as usize)
                        .take(count)
                        .copied()
                        .filter(|r| *r < h)
                        .collect()
                };
                out.extend(
                    idx.into_iter()
                        .filter_map(|i| self.store.row(i).map(|r| (i, r))),
                );
            }
        }
        out
    }

    /// The selected packet, read back and ready to decode.
    pub fn selected_packet(&self) -> Option<Selected> {
        let index = self.selected?;
        let row = self.store.row(index)?;
        let bytes = self.store.frame_bytes(index).ok()?;
        let link = self
            .store
            .link_layer(row.port)
            .unwrap_or(LinkLayer::Ethernet);
        Some(Selected {
            index,
            row,
            bytes,
            link,
            decode: self.store.decode_config(),
        })
    }

    /// The selected field's index in the selected packet's field walk, and
    /// how many fields there are.
    pub fn field_position(&self) -> (usize, usize) {
        let Some(sel) = self.selected_packet() else {
            return (0, 0);
        };
        let p = sel.packet();
        let mut names = Vec::new();
        p.for_each_field(&mut |f| names.push(f.name));
        let auto = names
            .iter()
            .position(|n| *n == "infiniband.bth")
            .unwrap_or(0);
        (
            self.field_index
                .unwrap_or(auto)
                .min(names.len().saturating_sub(1)),
            names.len(),
        )
    }

    /// Apply one command. The only place state changes.
    pub fn apply(&mut self, cmd: Command) {
        let now = self.now;
        match cmd {
            Command::ShowView(v) if v.needs_points() && self.points.is_none() => {
                self.status = format!(
                    "the {} view needs several capture points: open --point NAME=FILE --point NAME=FILE",
                    v.title()
                );
            }
            Command::ShowView(v) => {
                self.view = v;
                self.list_index = 0;
            }
            Command::NextView | Command::PrevView => {
                let views = self.views();
                let i = views.iter().position(|v| *v == self.view).unwrap_or(0);
                let n = views.len();
                let j = if cmd == Command::NextView {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.view = views[j];
                self.list_index = 0;
            }
            Command::MoveSelection(d) => match self.view {
                View::Packets | View::Explain | View::Ladder | View::Overview => {
                    self.move_selection(d)
                }
                _ => {
                    let n = self.list_len();
                    if n > 0 {
                        self.list_index =
                            (self.list_index as i64 + d).clamp(0, n as i64 - 1) as usize;
                    }
                }
            },
            Command::SelectRow(r) => self.select_row(r),
            Command::SelectFirst => {
                if let Some(r) = self.visible_row(0) {
                    self.select_row(r);
                }
                self.list_index = 0;
            }
            Command::SelectLast => {
                let n = self.visible_len();
                if let Some(r) = n.checked_sub(1).and_then(|p| self.visible_row(p)) {
                    self.select_row(r);
                }
                self.list_index = self.list_len().saturating_sub(1);
            }
            Command::SetFilter(text) => self.set_filter(text),
            Command::EditFilter => {
                self.overlay = Overlay::FilterEdit;
                self.view = View::Packets;
            }
            Command::SelectQp(q) => self.selected_qp = Some(q),
            Command::OpenSelectedQp => self.open_selection(),
            // Pausing freezes the views at the clock; a live source keeps
            // feeding the store underneath (pause-and-inspect).
            Command::TogglePlay => {
                self.follow_live = false;
                self.clock.toggle(now);
            }
            Command::Play => {
                self.follow_live = false;
                self.clock.play(now);
            }
            Command::Pause => {
                self.clock.pause(now);
                self.follow_live = false;
            }
            Command::StepPacket => {
                let h = self.horizon();
                if let Some(r) = self.store.row(h) {
                    self.clock.step_to(r.ts_ns);
                    self.follow_live = false;
                    self.select_row(h);
                }
            }
            Command::StepEvent => {
                let h = self.horizon();
                let events = Flags::RETRANSMISSION
                    | Flags::NAK
                    | Flags::CNP
                    | Flags::OUT_OF_SEQUENCE
                    | Flags::CAPTURE_LOSS
                    | Flags::ICRC_BAD;
                if let Some(i) = self.find_row(h, |r| r.flags.intersects(events)) {
                    if let Some(r) = self.store.row(i) {
                        self.clock.step_to(r.ts_ns);
                    }
                    self.follow_live = false;
                    self.select_row(i);
                }
            }
            Command::SpeedUp => self.set_speed(self.clock.speed() * 2.0),
            Command::SlowDown => self.set_speed(self.clock.speed() / 2.0),
            Command::SetSpeed(s) => self.set_speed(s),
            Command::JumpToTime(t) => {
                self.follow_live = false;
                self.clock.seek(t, now);
                let r = self.store.seek_time(t);
                if r < self.store.len() {
                    self.select_row(r);
                }
            }
            Command::JumpNextRetransmission => self.jump_next_retransmission(),
            Command::JumpNextFinding => {
                let cursor = self
                    .selected
                    .and_then(|s| self.store.row(s))
                    .map_or(0, |r| r.ts_ns);
                // Each drop of a grouped finding is a stop of its own.
                let next = self
                    .report
                    .findings
                    .iter()
                    .flat_map(|f| f.items.iter().map(move |i| (f.qp, i)))
                    .filter(|(_, i)| i.start_ns > cursor)
                    .min_by_key(|(_, i)| i.start_ns)
                    .map(|(qp, i)| (qp, i.clone()));
                match next {
                    Some((qp, f)) => {
                        let row = f
                            .first_index
                            .unwrap_or_else(|| self.store.seek_time(f.start_ns));
                        self.ensure_visible(row);
                        self.select_row(row);
                        self.selected_qp = Some(qp);
                        self.status = f.text.clone();
                    }
                    None => self.status = "no finding after the selection".into(),
                }
            }
            Command::FollowLive => {
                self.follow_live = true;
                if self.clock.state() == PlayState::Paused {
                    self.clock.play(now);
                }
                self.clock.seek(u64::MAX, now);
            }
            Command::ShowHelp => self.overlay = Overlay::Help,
            Command::CloseOverlay => self.overlay = Overlay::None,
            Command::SetSimParam { .. } | Command::SetSnifferFilter(_) => {
                self.status = format!("sent to the source: {cmd:?}");
                self.outbox.push(cmd);
            }
            Command::NextLessonStep => self.lesson_move(1),
            Command::PrevLessonStep => self.lesson_move(-1),
            Command::OpenLesson(i) => self.open_lesson(i),
            Command::AnswerLesson(given) => self.answer_lesson(given),
            Command::LessonHint => self.lesson_hint(),
            Command::LeaveLesson => {
                if self.lesson.take().is_none() && self.previous.is_none() {
                    self.status = "no lesson open".into();
                    return;
                }
                self.lesson_cursor_due = false;
                self.status = "lesson closed".into();
                self.outbox.push(cmd);
            }
            Command::EditCommandLine => {
                self.cmdline.clear();
                self.overlay = Overlay::CommandLine;
            }
            Command::SetCommandLine(s) => self.cmdline = s,
            Command::RunCommandLine(line) => {
                self.overlay = Overlay::None;
                self.run_command_line(&line);
            }
            Command::MoveField(d) => {
                let (current, count) = self.field_position();
                let last = count.saturating_sub(1) as i64;
                self.field_index = Some((current as i64 + d).clamp(0, last.max(0)) as usize);
            }
            Command::EditExport => {
                self.cmdline = "export ".into();
                self.overlay = Overlay::CommandLine;
            }
            Command::Export {
                table,
                path,
                partition_window_ns,
            } => self.start_export(table, &path, partition_window_ns),
            Command::WritePartitions {
                dir,
                window_ns,
                capture,
            } => self.start_partitions(&dir, window_ns, capture.as_deref()),
            Command::StopPartitions => {
                if self.partitions.is_some() {
                    self.stop_partitions();
                } else {
                    self.status = "partitions: none are being written".into();
                }
            }
            Command::Notify(message) => self.status = message,
            Command::OpenSignals { .. }
            | Command::SignalSearch(_)
            | Command::AddSignal(_)
            | Command::RemoveSignal(_)
            | Command::SignalFormat { .. }
            | Command::WaveCursor(_)
            | Command::WaveSpan(_) => self.apply_signals(cmd),
            Command::WhatIf(sets) => self.start_whatif(sets),
            Command::ClearWhatIf => self.clear_whatif(),
            Command::Quit => self.quit = true,
        }
    }

    /// Select the next resend after the selection. The ladder stays and
    /// looks in its own QP; the views that show the selected packet
    /// (packets, explain, profiler) stay; the others open the packet list.
    fn jump_next_retransmission(&mut self) {
        let from = self.selected.map_or(0, |s| s + 1);
        let ladder = (self.view == View::Ladder)
            .then(|| {
                let q = crate::query::ladder_qp(self)?;
                Some((
                    crate::query::qp_conversations(self, q),
                    rocescope_replay::text::qp_name(q),
                ))
            })
            .flatten();
        let found = match &ladder {
            Some(((req, resp), _)) => self.find_row(from, |r| {
                r.flags.contains(Flags::RETRANSMISSION)
                    && (Some(r.conversation) == *req || Some(r.conversation) == *resp)
            }),
            None => self.find_row(from, |r| r.flags.contains(Flags::RETRANSMISSION)),
        };
        match (found, ladder) {
            (Some(i), _) => {
                self.ensure_visible(i);
                self.select_row(i);
                if !matches!(
                    self.view,
                    View::Packets | View::Ladder | View::Explain | View::Profiler
                ) {
                    self.view = View::Packets;
                }
            }
            (None, Some((_, qp))) => {
                self.status = format!("no retransmission of {qp} after the selection")
            }
            (None, None) => self.status = "no retransmission after the selection".into(),
        }
    }

    fn run_command_line(&mut self, line: &str) {
        let t0_ns = self.store.stats().first_ts_ns.unwrap_or(0);
        match crate::cmdline::parse(line, t0_ns, self.export_table()) {
            Ok(Some(cmd)) => self.apply(cmd),
            Ok(None) => {}
            Err(e) => self.status = e.to_string(),
        }
    }

    fn set_speed(&mut self, s: f64) {
        let s = s.clamp(
            rocescope_replay::clock::MIN_SPEED,
            rocescope_replay::clock::MAX_SPEED,
        );
        if let Err(e) = self.clock.set_speed(s, self.now) {
            self.status = e.to_string();
        } else {
            self.status = format!("replay speed x{s}");
        }
    }

    /// Make row `i` visible: move the replay clock up to it.
    fn ensure_visible(&mut self, i: u64) {
        if i >= self.horizon()
            && let Some(r) = self.store.row(i)
        {
            self.clock.seek(r.ts_ns, self.now);
            self.follow_live = false;
        }
    }

    fn select_row(&mut self, r: u64) {
        self.selected = Some(r);
        // The waveform cursor follows the packet now.
        if let Some(s) = &mut self.signals {
            s.set_cursor(None);
        }
        self.field_index = None;
        if let Some(row) = self.store.row(r)
            && let Some(conv) = self.store.conversation(row.conversation)
        {
            let k = conv.key;
            // One lock: a guard held across a second lock() would deadlock.
            let an = self.analysis.0.lock().unwrap_or_else(|e| e.into_inner());
            let qp = an
                .qp_of(k.src, k.dst, k.dest_qp)
                .and_then(|slot| an.slot_to_report().get(slot as usize).copied());
            drop(an);
            self.selected_qp = qp.filter(|q| *q != u32::MAX);
        }
    }

    fn move_selection(&mut self, d: i64) {
        let n = self.visible_len();
        if n == 0 {
            return;
        }
        let pos = self.selected.map_or(0, |s| self.visible_pos(s)) as i64;
        let p = (pos + d).clamp(0, n as i64 - 1) as u64;
        if let Some(r) = self.visible_row(p) {
            self.select_row(r);
        }
    }

    /// First stored row at or after `from` that passes `pred` (bounded scan).
    fn find_row(&self, from: u64, pred: impl Fn(&Row) -> bool) -> Option<u64> {
        let len = self.store.len();
        let mut buf = Vec::with_capacity(4096);
        let mut start = from;
        while start < len {
            buf.clear();
            let end = (start + 4096).min(len);
            self.store.rows(start..end, &mut buf);
            if let Some(k) = buf.iter().position(&pred) {
                return Some(start + k as u64);
            }
            start = end;
        }
        None
    }

    fn list_len(&self) -> usize {
        match self.view {
            View::Qps => self.report.qps.len(),
            View::Retransmissions => self.report.episodes.len(),
            View::Overview => self.report.findings.len(),
            View::Slots => self.records.slots().len(),
            View::Lessons => crate::lesson::builtin().len(),
            View::Losses => self.loss_items.len(),
            _ => 0,
        }
    }

    fn open_selection(&mut self) {
        match self.view {
            View::Qps if self.list_index < self.report.qps.len() => {
                self.selected_qp = Some(self.list_index as u32);
                self.view = View::Ladder;
            }
            View::Retransmissions => {
                if let Some(e) = self.report.episodes.get(self.list_index).copied() {
                    self.ensure_visible(e.first_index);
                    self.select_row(e.first_index);
                    self.selected_qp = Some(e.qp);
                    self.view = View::Ladder;
                }
            }
            View::Overview => {
                if let Some(f) = self.report.findings.get(self.list_index).cloned() {
                    let row = f
                        .first_index
                        .unwrap_or_else(|| self.store.seek_time(f.start_ns));
                    self.ensure_visible(row);
                    self.select_row(row);
                    self.selected_qp = Some(f.qp);
                    self.view = View::Ladder;
                }
            }
            View::Lessons => self.open_lesson(self.list_index),
            View::Losses => self.open_loss(),
            View::Packets => self.view = View::Explain,
            _ => {}
        }
    }

    /// The selected loss's frame in the packet list: its row when the
    /// first point saw it, else the first point's frame at its time.
    fn open_loss(&mut self) {
        let (Some(r), Some(&item)) = (self.points.clone(), self.loss_items.get(self.list_index))
        else {
            return;
        };
        let first = r
            .points
            .first()
            .map_or("the first point", |p| p.name.as_str());
        let row = match crate::query::loss_first_row(&r, item) {
            Some(row) => {
                self.status = format!("{first}'s frame {} (the lost frame)", row + 1);
                row
            }
            None => {
                let ts = crate::query::loss_ts_ns(&r, item).unwrap_or(0);
                let row = self
                    .store
                    .seek_time(ts)
                    .min(self.store.len().saturating_sub(1));
                self.status = format!(
                    "{first} never saw this frame: its frame {} is the one at that time",
                    row + 1
                );
                row
            }
        };
        self.ensure_visible(row);
        self.select_row(row);
        self.view = View::Packets;
    }

    fn set_filter(&mut self, text: String) {
        self.filter_text = text;
        self.matches.cancel.store(true, Ordering::Relaxed);
        match Filter::parse(&self.filter_text) {
            Ok(f) => {
                self.filter_error = None;
                self.filter = f;
                self.matches = Arc::new(Matches::default());
                if let Some(f) = &self.filter {
                    spawn_scan(
                        Arc::clone(&self.store),
                        f.clone(),
                        Arc::clone(&self.matches),
                    );
                }
            }
            Err(e) => {
                // Keep the last good filter running; show the error inline.
                self.filter_error = Some(e);
            }
        }
    }
}
