//! The status line as data: what the source is doing, where the time
//! cursor is, what the store holds, and what went wrong. The TUI and the
//! GUI only lay it out and style it, so both say the same thing.

use std::sync::atomic::Ordering;

use rocescope_replay::clock::PlayState;
use rocescope_replay::store::SpillStats;

use crate::Model;
use crate::source::SourceKind;
use rocescope_decoders::units::size_text;

/// What the source and the views are doing, in one word and a reason.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceState {
    /// A live source is producing and the views follow it.
    Live,
    /// The views stand still (the source may be feeding the store underneath).
    Paused,
    /// The replay clock runs at `speed` times capture time.
    Replaying { speed: f64 },
    /// A file is still being indexed: `percent` of its bytes, when known.
    Indexing { percent: Option<u64>, rows: u64 },
    /// The source produces no more (a simulation at its end, a finished
    /// stream).
    Ended { reason: String },
    /// A live link is down (the reason says whether it retries).
    Disconnected { reason: String },
}

impl SourceState {
    /// The state as the status line prints it.
    pub fn text(&self) -> String {
        match self {
            SourceState::Live => "LIVE".into(),
            SourceState::Paused => "paused".into(),
            SourceState::Replaying { speed } => format!("replaying x{speed}"),
            SourceState::Indexing {
                percent: Some(p), ..
            } => format!("indexing {p}%"),
            SourceState::Indexing { rows, .. } => format!("indexing: {rows} rows"),
            SourceState::Ended { reason } => format!("ended: {reason}"),
            SourceState::Disconnected { reason } => format!("disconnected: {reason}"),
        }
    }

    /// How the front ends colour it.
    pub fn tone(&self) -> Tone {
        match self {
            SourceState::Live => Tone::Good,
            SourceState::Paused | SourceState::Replaying { .. } => Tone::Normal,
            SourceState::Indexing { .. } | SourceState::Ended { .. } => Tone::Notice,
            SourceState::Disconnected { .. } => Tone::Bad,
        }
    }
}

/// How serious a part of the status line is, for styling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Normal,
    Good,
    Notice,
    Bad,
}

/// Everything the status line shows.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusLine {
    pub source: String,
    pub state: SourceState,
    /// The time cursor, relative to the first packet.
    pub cursor: String,
    pub packets: u64,
    /// Rows the packet list shows (up to the clock, through the filter).
    pub shown: u64,
    pub roce_packets: u64,
    /// How far the display filter's scan has come, while it runs.
    pub filtering_percent: Option<u64>,
    /// Frames lost between the source and the store.
    pub dropped: u64,
    pub reconnects: u64,
    /// The source's error (a recording that failed, a fatal link error).
    pub error: Option<String>,
    /// What of the capture could not be read (a cut file, a damaged
    /// block): the first reader warning, and how many more.
    pub unread: Option<String>,
    /// What a bounded store holds on disk and what its ring deleted (rows
    /// on disk, segment bytes and the cap, rows deleted, records dropped
    /// past the records' share): the store's own figures.
    pub spill: SpillStats,
    /// Filter matches dropped past the match list's bound (the oldest).
    pub matches_let_go: u64,
    /// Live partitions being written, while a writer runs.
    pub partitions: Option<PartitionsLine>,
    /// A paced simulation slower than its pace, while it runs.
    pub behind: Option<Behind>,
    /// The model's message (a command's outcome or error).
    pub message: String,
}

/// A paced simulation that cannot keep its pace: the scenario is heavier
/// than the machine simulates and analyses at that pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Behind {
    /// Wall time the simulation is behind its schedule.
    pub wall_ns: u64,
    /// How fast it ran of late, as a fraction of its pace (`None` before
    /// a first reading).
    pub of_pace: Option<f64>,
    /// The pace asked, a fraction of real time.
    pub factor: f64,
}

/// How far behind its schedule a paced simulation must be before the
/// status line says so: more than a start's or a step's jitter.
const BEHIND_SHOWN_NS: u64 = 500_000_000;

impl Behind {
    /// What the status of a simulator paced at `factor` of real time
    /// says, when it is behind enough to tell.
    fn of(src: &crate::source::SourceStatus, factor: f64) -> Option<Behind> {
        let wall_ns = src.behind_wall_ns.load(Ordering::Relaxed);
        if wall_ns < BEHIND_SHOWN_NS {
            return None;
        }
        let of_pace = f64::from_bits(src.pace_kept_bits.load(Ordering::Relaxed));
        Some(Behind {
            wall_ns,
            of_pace: (of_pace > 0.0).then_some(of_pace),
            factor,
        })
    }

    /// "simulating at 0.68x real time, 3.2 s behind" (at real time), "...
    /// at 0.68 of its pace (0.001x real time), ..." otherwise.
    pub fn text(&self) -> String {
        let behind = rocescope_decoders::units::duration_text(self.wall_ns);
        let real_time = self.factor == 1.0;
        // Two figures that say something: 0.68, 0.012, 6.1e-5.
        let ratio = |r: f64| match r {
            r if r >= 0.1 => format!("{r:.2}"),
            r if r >= 0.001 => format!("{r:.3}"),
            r => format!("{r:.1e}"),
        };
        match self.of_pace {
            Some(r) if real_time => {
                format!("simulating at {}x real time, {behind} behind", ratio(r))
            }
            Some(r) => format!(
                "simulating at {} of its pace ({}x real time), {behind} behind",
                ratio(r),
                self.factor
            ),
            None if real_time => format!("simulating slower than real time, {behind} behind"),
            None => format!("simulating slower than its pace, {behind} behind"),
        }
    }
}

/// The live partitions' writer as the status line shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionsLine {
    /// What so far (windows, rows, rows the disk ring deleted before
    /// they were written).
    pub summary: String,
    /// Rows the writer missed.
    pub missed: u64,
    /// The writer's last failed write (it tries again a second later).
    pub error: Option<String>,
}

/// The facts the state is decided from (gathered by [`status_line`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub kind: Option<SourceKind>,
    pub finished: bool,
    pub end_reason: Option<String>,
    pub disconnected: Option<String>,
    /// The source itself is paused (not only the views).
    pub source_paused: bool,
    /// A file's indexing: done, and the share of its bytes when known.
    pub indexed: bool,
    pub indexed_percent: Option<u64>,
    pub rows: u64,
    pub playing: bool,
    pub speed: f64,
    pub follow_live: bool,
}

/// The state for these facts. LIVE only while a source produces and the
/// views follow it; an ended source says so even while the views follow.
pub fn state(f: &Facts) -> SourceState {
    let replaying = SourceState::Replaying { speed: f.speed };
    match f.kind {
        Some(SourceKind::File) | None => {
            if f.playing {
                replaying
            } else if !f.indexed {
                SourceState::Indexing {
                    percent: f.indexed_percent,
                    rows: f.rows,
                }
            } else {
                SourceState::Paused
            }
        }
        Some(kind @ (SourceKind::Sim | SourceKind::Link)) => {
            if f.finished {
                if f.playing && !f.follow_live {
                    replaying
                } else {
                    let reason = f.end_reason.clone().unwrap_or_else(|| match kind {
                        SourceKind::Sim => "simulation ended".into(),
                        _ => "source ended".into(),
                    });
                    SourceState::Ended { reason }
                }
            } else if let Some(reason) = &f.disconnected {
                SourceState::Disconnected {
                    reason: reason.clone(),
                }
            } else if f.source_paused {
                SourceState::Paused
            } else if f.follow_live {
                SourceState::Live
            } else if f.playing {
                replaying
            } else {
                SourceState::Paused
            }
        }
    }
}

/// The status line of the model now.
pub fn status_line(model: &Model) -> StatusLine {
    let src = model.source.status();
    let progress = model.store.progress();
    let lock =
        |m: &std::sync::Mutex<Option<String>>| m.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let facts = Facts {
        kind: Some(model.source.kind),
        finished: src.finished.load(Ordering::Acquire),
        end_reason: lock(&src.end_reason),
        disconnected: lock(&src.disconnected),
        source_paused: src.paused.load(Ordering::Relaxed),
        indexed: progress.complete,
        indexed_percent: (progress.bytes_total > 0)
            .then(|| (progress.bytes_done * 100 / progress.bytes_total).min(100)),
        rows: progress.rows,
        playing: model.clock.state() == PlayState::Playing,
        speed: model.clock.speed(),
        follow_live: model.follow_live && model.source.live,
    };
    let stats = model.store.stats();
    let filtering_percent = model.filter().and_then(|_| {
        let (scanned, len) = model.filter_progress();
        (scanned < len).then(|| scanned * 100 / len.max(1))
    });
    StatusLine {
        source: model.source.name.clone(),
        state: state(&facts),
        cursor: crate::query::rel_time(model, model.cursor_ns()),
        packets: stats.packets,
        shown: model.visible_len(),
        roce_packets: stats.roce_packets,
        filtering_percent,
        dropped: src.dropped.load(Ordering::Relaxed),
        reconnects: src.reconnects.load(Ordering::Relaxed),
        error: lock(&src.error)
            .or(progress.error.map(|e| format!("indexing stopped: {e}")))
            .or(model.store.spill_error())
            .or(model.filter_failed()),
        unread: model.store.first_warning().map(|(w, n)| match n {
            1 => format!("{} (byte {})", w.message, w.offset),
            n => format!(
                "{} (byte {}) and {} more warnings",
                w.message,
                w.offset,
                n - 1
            ),
        }),
        spill: model.store.spill_stats().unwrap_or_default(),
        matches_let_go: model.filter_matches_let_go(),
        behind: model
            .source
            .pace_factor()
            .filter(|_| !facts.finished && !facts.source_paused)
            .and_then(|factor| Behind::of(src, factor)),
        partitions: model.partitions().map(|w| PartitionsLine {
            summary: w.summary(),
            missed: w.status().rows_missed.load(Ordering::Relaxed),
            error: w.error(),
        }),
        message: model.status.clone(),
    }
}

/// `n` and the noun for it: `one` when `n` is 1, else `many`.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One part of the status line: its text and how serious it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub text: String,
    pub tone: Tone,
}

impl StatusLine {
    /// The parts in the order both front ends show them.
    pub fn parts(&self) -> Vec<Part> {
        self.parts_with(false)
    }

    /// [`StatusLine::parts`], what the bounded store holds on disk and let
    /// go in one short part where `compact_store`.
    fn parts_with(&self, compact_store: bool) -> Vec<Part> {
        let part = |text: String, tone| Part { text, tone };
        let mut out = vec![
            part(self.source.clone(), Tone::Normal),
            part(self.state.text(), self.state.tone()),
            part(format!("t={}", self.cursor), Tone::Normal),
            part(
                format!(
                    "{} pkts ({} shown) | {} RoCE",
                    self.packets, self.shown, self.roce_packets
                ),
                Tone::Normal,
            ),
        ];
        if let Some(b) = &self.behind {
            out.push(part(b.text(), Tone::Notice));
        }
        if let Some(p) = self.filtering_percent {
            out.push(part(format!("filtering {p}%"), Tone::Notice));
        }
        if self.dropped > 0 {
            out.push(part(format!("{} DROPPED", self.dropped), Tone::Bad));
        }
        if self.reconnects > 0 {
            out.push(part(
                counted(self.reconnects, "reconnect", "reconnects"),
                Tone::Notice,
            ));
        }
        out.extend(self.store_parts(compact_store));
        if self.matches_let_go > 0 {
            out.push(part(
                format!(
                    "{} dropped (list full)",
                    counted(
                        self.matches_let_go,
                        "oldest filter match",
                        "oldest filter matches"
                    )
                ),
                Tone::Notice,
            ));
        }
        if let Some(p) = &self.partitions {
            let tone = if p.missed > 0 {
                Tone::Bad
            } else {
                Tone::Normal
            };
            out.push(part(p.summary.clone(), tone));
            if let Some(e) = &p.error {
                out.push(part(e.clone(), Tone::Bad));
            }
        }
        if let Some(e) = &self.error {
            out.push(part(e.clone(), Tone::Bad));
        }
        if let Some(u) = &self.unread {
            out.push(part(u.clone(), Tone::Notice));
        }
        if !self.message.is_empty() {
            out.push(part(self.message.clone(), Tone::Normal));
        }
        out
    }

    /// What a bounded store holds on disk, what its ring deleted and the
    /// records it let go: a part each, or one short part (`compact`).
    fn store_parts(&self, compact: bool) -> Vec<Part> {
        let spill = &self.spill;
        let lost = spill.rows_deleted > 0 || spill.records_deleted > 0;
        if compact {
            let mut said = Vec::new();
            if spill.rows_on_disk > 0 {
                said.push(format!("{} rows on disk", spill.rows_on_disk));
            }
            if spill.rows_deleted > 0 {
                said.push(format!("{} deleted", spill.rows_deleted));
            }
            if spill.records_deleted > 0 {
                said.push(format!("{} records let go", spill.records_deleted));
            }
            return (!said.is_empty())
                .then(|| Part {
                    text: said.join(", "),
                    tone: if lost { Tone::Notice } else { Tone::Normal },
                })
                .into_iter()
                .collect();
        }
        let part = |text: String, tone| Part { text, tone };
        let mut out = Vec::new();
        if spill.rows_on_disk > 0 {
            out.push(part(
                match spill.max_disk_bytes {
                    Some(cap) => format!(
                        "{} rows on disk ({} of {})",
                        spill.rows_on_disk,
                        size_text(spill.disk_bytes),
                        size_text(cap)
                    ),
                    // A capture file's index: no ring, every row kept.
                    None => format!(
                        "{} rows on disk ({})",
                        spill.rows_on_disk,
                        size_text(spill.disk_bytes)
                    ),
                },
                Tone::Normal,
            ));
        }
        if spill.rows_deleted > 0 {
            out.push(part(
                format!("{} rows deleted by the disk ring", spill.rows_deleted),
                Tone::Notice,
            ));
        }
        if spill.records_deleted > 0 {
            out.push(part(
                format!(
                    "{} dropped (memory cap)",
                    counted(
                        spill.records_deleted,
                        "oldest probe/slot record",
                        "oldest probe/slot records"
                    )
                ),
                Tone::Notice,
            ));
        }
        out
    }

    /// The parts that fit in `width` characters (with ` | ` between
    /// them): the counts, then the cursor, give way first, so that the
    /// state and the message stay in sight on a narrow terminal.
    pub fn parts_within(&self, width: usize) -> Vec<Part> {
        let len = |ps: &[Part]| {
            ps.iter().map(|p| p.text.chars().count()).sum::<usize>()
                + 3 * ps.len().saturating_sub(1)
        };
        let mut parts = self.parts();
        // A long live session's store notes, in one part first: the counts
        // and the cursor stay in sight longer.
        if len(&parts) > width {
            parts = self.parts_with(true);
        }
        // Indices 3 and 2: the counts and the cursor (see `parts`).
        for drop in [3, 2] {
            if len(&parts) <= width {
                break;
            }
            parts.remove(drop);
        }
        parts
    }

    /// The whole line as text, parts separated by ` | `.
    pub fn text(&self) -> String {
        self.parts()
            .into_iter()
            .map(|p| p.text)
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(kind: SourceKind) -> Facts {
        Facts {
            kind: Some(kind),
            indexed: kind != SourceKind::File,
            speed: 1.0,
            follow_live: kind != SourceKind::File,
            ..Facts::default()
        }
    }

    #[test]
    fn a_file_indexes_then_pauses_and_replays_when_asked() {
        let mut f = facts(SourceKind::File);
        f.indexed_percent = Some(40);
        assert_eq!(
            state(&f).text(),
            "indexing 40%",
            "a file still being indexed"
        );
        f.indexed_percent = None;
        f.rows = 5;
        assert_eq!(state(&f).text(), "indexing: 5 rows");
        f.indexed = true;
        assert_eq!(state(&f), SourceState::Paused, "complete, not playing");
        f.playing = true;
        f.speed = 2.0;
        assert_eq!(state(&f).text(), "replaying x2");
    }

    #[test]
    fn a_simulation_is_live_while_it_runs_and_ended_after() {
        let mut f = facts(SourceKind::Sim);
        assert_eq!(state(&f), SourceState::Live);
        f.follow_live = false;
        assert_eq!(state(&f), SourceState::Paused, "the user paused");
        f.source_paused = true;
        f.follow_live = true;
        assert_eq!(state(&f), SourceState::Paused, "the simulation paused");
        f.source_paused = false;
        f.finished = true;
        f.end_reason = Some("simulation ended at 10.0 ms".into());
        assert_eq!(
            state(&f).text(),
            "ended: simulation ended at 10.0 ms",
            "never LIVE after the end"
        );
        f.end_reason = None;
        assert_eq!(state(&f).text(), "ended: simulation ended");
        f.follow_live = false;
        f.playing = true;
        assert_eq!(state(&f).text(), "replaying x1", "replaying the run");
    }

    #[test]
    fn a_link_is_live_connected_and_says_why_it_is_down() {
        let mut f = facts(SourceKind::Link);
        assert_eq!(state(&f), SourceState::Live);
        f.disconnected = Some("connection refused; retrying in 0.4 s".into());
        let s = state(&f);
        assert_eq!(
            s.text(),
            "disconnected: connection refused; retrying in 0.4 s"
        );
        assert_eq!(s.tone(), Tone::Bad);
        f.finished = true;
        assert_eq!(state(&f).text(), "ended: source ended");
    }

    #[test]
    fn the_line_shows_drops_reconnects_errors_and_the_message() {
        let mut line = StatusLine {
            source: "attach:tcp://127.0.0.1:4790".into(),
            state: SourceState::Live,
            cursor: "0.000001000".into(),
            packets: 10,
            shown: 8,
            roce_packets: 9,
            filtering_percent: None,
            dropped: 0,
            reconnects: 0,
            error: None,
            unread: None,
            spill: SpillStats::default(),
            matches_let_go: 0,
            partitions: None,
            behind: None,
            message: String::new(),
        };
        assert_eq!(
            line.text(),
            "attach:tcp://127.0.0.1:4790 | LIVE | t=0.000001000 | 10 pkts (8 shown) | 9 RoCE"
        );
        line.filtering_percent = Some(50);
        line.dropped = 3;
        line.reconnects = 1;
        line.error = Some("recording stopped: disk full".into());
        line.message = "replay speed x2".into();
        let text = line.text();
        for want in [
            "filtering 50%",
            "3 DROPPED",
            "1 reconnect |",
            "recording stopped: disk full",
            "| replay speed x2",
        ] {
            assert!(text.contains(want), "{want:?} in {text}");
        }
        line.reconnects = 2;
        assert!(line.text().contains("2 reconnects"));
        line.spill = SpillStats {
            rows_on_disk: 65_536,
            disk_bytes: 3 << 30,
            max_disk_bytes: Some(8 << 30),
            rows_deleted: 131_072,
            records_deleted: 7,
            ..SpillStats::default()
        };
        let text = line.text();
        for want in [
            "65536 rows on disk (3.0 GiB of 8.0 GiB)",
            "131072 rows deleted by the disk ring",
            "7 oldest probe/slot records dropped (memory cap)",
        ] {
            assert!(text.contains(want), "{want:?} in {text}");
        }
        line.partitions = Some(PartitionsLine {
            summary: "partitions /f (capture=c_x): 3 windows (900 rows)".into(),
            missed: 5,
            error: Some("partitions under /f: disk full".into()),
        });
        let parts = line.parts();
        let p = parts.iter().find(|p| p.text.contains("3 windows")).unwrap();
        assert_eq!(p.tone, Tone::Bad, "rows missed are not hidden");
        assert!(
            parts
                .iter()
                .any(|p| p.text.ends_with("disk full") && p.tone == Tone::Bad)
        );
        // Narrow: the store's notes in one part, then the counts, then the
        // cursor, make room for the rest; nothing lost goes unsaid.
        let all = line.parts();
        let compact = line.parts_within(line.text().chars().count() - 1);
        assert_eq!(compact.len(), all.len() - 2);
        let store = compact
            .iter()
            .find(|p| p.text == "65536 rows on disk, 131072 deleted, 7 records let go")
            .expect("the store's notes in one part");
        assert_eq!(store.tone, Tone::Notice);
        assert!(compact.iter().any(|p| p.text.contains("pkts")));
        let width = |ps: &[Part]| ps.iter().map(|p| p.text.chars().count() + 3).sum::<usize>() - 3;
        let narrow = line.parts_within(width(&compact) - 1);
        assert_eq!(narrow.len(), compact.len() - 1);
        assert!(!narrow.iter().any(|p| p.text.contains("pkts")));
        let narrower = line.parts_within(40);
        assert_eq!(narrower.len(), compact.len() - 2);
        assert!(!narrower.iter().any(|p| p.text.starts_with("t=")));
        assert!(narrower.iter().any(|p| p.text.contains("records let go")));
        assert_eq!(narrower.last().unwrap().text, "replay speed x2");
        assert_eq!(line.parts_within(1000), all);
    }

    use std::time::Instant;

    use rocescope_replay::TimeBase;
    use rocescope_replay::store::{RcAnalyzer, Store};

    use crate::Command;
    use crate::source::{Pace, SourceHandle, spawn_sim};

    fn live_model(source: SourceHandle) -> Model {
        let store = Store::live(TimeBase::Nanoseconds);
        Model::new(store, RcAnalyzer::default(), source)
    }

    #[test]
    fn a_simulation_that_ran_out_says_ended_and_when() {
        let sc = rocescope_sim::Scenario::resolve("teaching-basic").unwrap();
        let (store, analysis, handle) = spawn_sim(sc, Pace::Fast, None);
        while !handle.status().finished.load(Ordering::Acquire) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let end_ns = handle.status().sim_time_ns.load(Ordering::Relaxed);
        let mut m = Model::new(store, analysis, handle);
        m.tick(Instant::now());
        assert!(m.follow_live, "the views still follow the source");
        let line = status_line(&m);
        assert_eq!(
            line.state.text(),
            format!(
                "ended: simulation ended at {}",
                rocescope_decoders::units::duration_text(end_ns)
            )
        );
        assert!(line.packets > 0);
        rocescope_testkit::assert_starts_with(&line.text(), "sim:teaching-basic | ended: ");
    }

    #[test]
    fn a_running_simulation_is_live_until_paused() {
        let sc = rocescope_sim::Scenario::resolve("teaching-basic").unwrap();
        // A millionth of real time: it runs for the whole test.
        let (store, analysis, handle) = spawn_sim(sc, Pace::RealTime(1e-6), None);
        let mut m = Model::new(store, analysis, handle);
        assert_eq!(status_line(&m).state, SourceState::Live);
        m.apply(Command::Pause);
        assert_eq!(status_line(&m).state, SourceState::Paused);
        m.apply(Command::SetSpeed(4.0));
        m.apply(Command::Play);
        assert_eq!(status_line(&m).state.text(), "replaying x4");
        m.apply(Command::FollowLive);
        assert_eq!(status_line(&m).state, SourceState::Live);
    }

    #[test]
    fn a_simulation_slower_than_its_pace_says_so() {
        let mut b = Behind {
            wall_ns: 3_200_000_000,
            of_pace: Some(0.6812),
            factor: 1.0,
        };
        assert_eq!(b.text(), "simulating at 0.68x real time, 3.2 s behind");
        b.factor = 0.001;
        assert_eq!(
            b.text(),
            "simulating at 0.68 of its pace (0.001x real time), 3.2 s behind"
        );
        b.of_pace = Some(6.1e-5);
        assert!(
            b.text().starts_with("simulating at 6.1e-5 of its pace"),
            "{}",
            b.text()
        );
        b.of_pace = None;
        assert_eq!(b.text(), "simulating slower than its pace, 3.2 s behind");
        // A real run asked for a thousand times real time, which no machine
        // simulates and analyses: told, while it runs and not paused.
        let sc = rocescope_sim::Scenario::resolve("default").unwrap();
        let (store, analysis, handle) = spawn_sim(sc, Pace::RealTime(1000.0), None);
        let m = Model::new(store, analysis, handle);
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        let behind = loop {
            if let Some(b) = status_line(&m).behind.filter(|b| b.of_pace.is_some()) {
                break b;
            }
            assert!(Instant::now() < deadline, "never said behind");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(behind.wall_ns >= BEHIND_SHOWN_NS, "{behind:?}");
        assert!(behind.of_pace.is_some_and(|r| r < 0.5), "{behind:?}");
        assert_eq!(behind.factor, 1000.0);
        let part = status_line(&m)
            .parts()
            .into_iter()
            .find(|p| p.text.starts_with("simulating at "));
        assert_eq!(part.map(|p| p.tone), Some(Tone::Notice));
        // A paused simulator (a lesson's, left for another) is not behind.
        m.source.send(crate::source::SourceCtl::Pause);
        while !m.source.status().paused.load(Ordering::Relaxed) {
            assert!(Instant::now() < deadline, "never paused");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(status_line(&m).behind, None, "paused: not behind");
    }

    #[test]
    fn a_simulation_that_keeps_its_pace_says_nothing_of_it() {
        let sc = rocescope_sim::Scenario::resolve("teaching-basic").unwrap();
        // A millionth of real time: always ahead, sleeping.
        let (store, analysis, handle) = spawn_sim(sc, Pace::RealTime(1e-6), None);
        let m = Model::new(store, analysis, handle);
        std::thread::sleep(std::time::Duration::from_millis(700));
        let line = status_line(&m);
        assert_eq!(line.state, SourceState::Live);
        assert_eq!(line.behind, None);
        assert!(!line.text().contains("behind"), "{}", line.text());
    }

    #[test]
    fn a_file_shows_indexing_until_complete() {
        let mut m = live_model(SourceHandle::file("growing.pcap".into()));
        assert_eq!(status_line(&m).state.text(), "indexing: 0 rows");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/captures/sample-write-read.pcap");
        let analysis = RcAnalyzer::default();
        let store = Store::open(
            &path,
            rocescope_decoders::DecodeConfig::default(),
            Box::new(analysis.clone()),
        )
        .unwrap();
        store.wait();
        m = Model::new(store, analysis, SourceHandle::file("sample.pcap".into()));
        let line = status_line(&m);
        assert_eq!(line.state, SourceState::Paused);
        assert_eq!((line.packets, line.shown), (15, 15));
        m.apply(Command::Play);
        assert_eq!(status_line(&m).state.text(), "replaying x1");
    }

    #[test]
    fn a_link_goes_down_comes_back_and_ends() {
        let m = live_model(SourceHandle::external("attach:tcp://127.0.0.1:1".into()));
        assert_eq!(status_line(&m).state, SourceState::Live);
        let st = m.source.status();
        st.set_disconnected(Some("connection refused; retrying in 0.2 s".into()));
        st.dropped.store(7, Ordering::Relaxed);
        st.reconnects.store(2, Ordering::Relaxed);
        let line = status_line(&m);
        assert_eq!(
            line.state.text(),
            "disconnected: connection refused; retrying in 0.2 s"
        );
        rocescope_testkit::assert_contains(&line.text(), "7 DROPPED | 2 reconnects");
        st.set_disconnected(None);
        assert_eq!(status_line(&m).state, SourceState::Live);
        st.end("source ended");
        assert_eq!(status_line(&m).state.text(), "ended: source ended");
    }
}
