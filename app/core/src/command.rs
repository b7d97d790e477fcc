//! The one command enum. Key bindings, GUI widgets, CLI flags and scripts
//! all produce these values; [`crate::Model::apply`] is the only place that
//! changes state.

use std::path::PathBuf;

use rocescope_data::Table;
use serde::{Deserialize, Serialize};

/// The workbench's views (tabs in the TUI, panels in the GUI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum View {
    Overview,
    Packets,
    Qps,
    Ladder,
    Retransmissions,
    Slots,
    Profiler,
    Explain,
    Lessons,
    /// Lost frames by segment, with their evidence (capture points only).
    Losses,
}

impl View {
    /// Every view; [`crate::Model::views`] the ones a session offers.
    pub const ALL: [View; 10] = [
        View::Overview,
        View::Packets,
        View::Qps,
        View::Ladder,
        View::Retransmissions,
        View::Slots,
        View::Profiler,
        View::Explain,
        View::Lessons,
        View::Losses,
    ];

    /// Shown only in a session of several capture points.
    pub fn needs_points(self) -> bool {
        self == View::Losses
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Packets => "Packets",
            View::Qps => "QPs",
            View::Ladder => "Ladder",
            View::Retransmissions => "Retransmissions",
            View::Slots => "Slots",
            View::Profiler => "Profiler",
            View::Explain => "Explain",
            View::Lessons => "Lessons",
            View::Losses => "Losses",
        }
    }

    /// The key that shows it.
    pub fn key(self) -> &'static str {
        match self {
            View::Overview => "1",
            View::Packets => "2",
            View::Qps => "3",
            View::Ladder => "4",
            View::Retransmissions => "5",
            View::Slots => "6",
            View::Profiler => "7",
            View::Explain => "8",
            View::Lessons => "9",
            View::Losses => "0",
        }
    }

    /// What it shows, for the help and the palette.
    pub fn description(self) -> &'static str {
        match self {
            View::Overview => "overview: throughput, counters, findings",
            View::Packets => "packets: list, filter, detail, hex",
            View::Qps => "QPs: one row per QP conversation",
            View::Ladder => "ladder: sequence diagram of one QP",
            View::Retransmissions => "retransmission episodes",
            View::Slots => "service-slot decisions (AES, DPI, app)",
            View::Profiler => "per-cycle profiler probes",
            View::Explain => "explain the selected packet",
            View::Lessons => "guided lessons",
            View::Losses => "losses by segment, with their evidence (capture points)",
        }
    }
}

/// Every state change of the workbench.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    ShowView(View),
    NextView,
    PrevView,
    /// Move the packet selection by this many (filtered) rows.
    MoveSelection(i64),
    /// Select a row by its number in the store.
    SelectRow(u64),
    SelectFirst,
    SelectLast,
    /// Replace the display filter (empty: show everything).
    SetFilter(String),
    /// Open the filter bar for typing.
    EditFilter,
    /// Pick the QP conversation the ladder and QP views show.
    SelectQp(u32),
    /// Open the selected QP (ladder view).
    OpenSelectedQp,
    TogglePlay,
    Play,
    Pause,
    /// Pause and move to the next packet (replay) / next row.
    StepPacket,
    /// Pause and move to the next analysis event (retransmission, NAK, CNP...).
    StepEvent,
    SpeedUp,
    SlowDown,
    SetSpeed(f64),
    /// Move the time cursor to a capture time.
    JumpToTime(u64),
    JumpNextRetransmission,
    JumpNextFinding,
    /// Follow the newest data of a live source.
    FollowLive,
    ShowHelp,
    CloseOverlay,
    /// Change a simulator parameter by name (sent to the simulator source).
    SetSimParam {
        key: String,
        value: String,
    },
    /// Set the card's sniffer filter word (sent to the agent).
    SetSnifferFilter(u64),
    NextLessonStep,
    PrevLessonStep,
    /// Open the shipped lesson with this index (`lesson::builtin()`): the
    /// source layer starts the scenario it was written for.
    OpenLesson(usize),
    /// Close the lesson and go back to the source open before it.
    LeaveLesson,
    /// Answer the step's question: a frame number, a number or a choice
    /// (empty: the selected packet).
    AnswerLesson(String),
    /// Show the step's hint.
    LessonHint,
    /// Open the command line (`set KEY=VALUE`, `sniffer 0xWORD`, `speed X`, `goto µs`,
    /// `whatif set KEY=VALUE`, ...: [`crate::cmdline::VERBS`]).
    EditCommandLine,
    /// Replace the command line's text while typing.
    SetCommandLine(String),
    /// Run a command line.
    RunCommandLine(String),
    /// Move the field selection in the detail tree (and hex highlight).
    MoveField(i64),
    /// Open the command line with `export ` typed, for the user to name a file.
    EditExport,
    /// Write a table to `path` (.parquet, .csv, .jsonl) on a background
    /// thread: `table`, or the current view's when `None`. Packets are the
    /// rows the view shows (the display filter's matches, the ladder's QP).
    /// With `partition_window_ns`, `path` is a folder of hive-style Parquet
    /// partitions by capture and time window, as `rocescope export
    /// --partition` writes.
    Export {
        #[serde(with = "table_name")]
        table: Option<Table>,
        path: PathBuf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition_window_ns: Option<u64>,
    },
    /// Write the session's packets as hive-style Parquet partitions under
    /// `dir` as each `window_ns` of capture time closes (on a thread of
    /// its own; the other tables when stopped), as `attach --partitions`
    /// does. `capture` names the partition (default `live-UNIX_SECONDS`).
    WritePartitions {
        dir: PathBuf,
        window_ns: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capture: Option<String>,
    },
    /// Stop writing partitions: the open window and the other tables are
    /// written, then the status line says what was.
    StopPartitions,
    /// Show a message in the status line (what a source found at open,
    /// such as a waveform's alignment with the capture).
    Notify(String),
    /// Show a waveform's signals beside the packets: read its hierarchy and
    /// the selection saved for it. `offset_ns` is capture time minus
    /// waveform time (0 for a waveform opened alone).
    OpenSignals {
        path: PathBuf,
        offset_ns: i64,
        /// An ILA capture's sample clock (Hz; the card's 250 MHz when
        /// `None`): where its samples are in time.
        sample_clock_hz: Option<u64>,
        /// What its body may take held in memory (`--max-memory`; the
        /// default cap when `None`): past it each signal reads the file.
        max_held_bytes: Option<u64>,
    },
    /// The hierarchy browser's search (words a signal's path must hold).
    SignalSearch(String),
    /// Show a signal (its full path), loaded on a thread.
    AddSignal(String),
    RemoveSignal(String),
    /// How a shown signal's values are written.
    SignalFormat {
        path: String,
        radix: crate::signals::Radix,
    },
    /// Move the waveform cursor to a capture time; the packet at or before
    /// it is selected.
    WaveCursor(u64),
    /// The time the signals' charts span (ns).
    WaveSpan(u64),
    /// Rerun the capture file's workload in the simulator as captured (the
    /// twin) and with these `KEY=VALUE` changes, on a thread of its own;
    /// the Overview and QPs views then show the runs beside the capture.
    WhatIf(Vec<String>),
    /// Take the what-if's runs out of the views.
    ClearWhatIf,
    Quit,
}

/// Tables travel by name: the data crate's `Table` has no serde (it has a
/// name and `from_name`, which is what a script would write anyway).
mod table_name {
    use rocescope_data::Table;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<Table>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(t.name()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Table>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|n| Table::from_name(&n).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// The commands a user can bind to keys: listable, so that the help overlay,
/// the GUI's command palette and the keymap come from one list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UiCommand {
    NextView,
    PrevView,
    /// Show one view (its key and description are the view's).
    Show(View),
    Up,
    Down,
    PageUp,
    PageDown,
    First,
    Last,
    Filter,
    Open,
    TogglePlay,
    StepPacket,
    StepEvent,
    SpeedUp,
    SlowDown,
    NextRetransmission,
    NextFinding,
    FollowLive,
    NextLessonStep,
    PrevLessonStep,
    LeaveLesson,
    AnswerLesson,
    LessonHint,
    NextField,
    PrevField,
    CommandLine,
    Export,
    Help,
    Close,
    Quit,
}

impl UiCommand {
    /// The replay's commands (the GUI's Replay menu).
    pub const REPLAY: [UiCommand; 8] = [
        UiCommand::TogglePlay,
        UiCommand::StepPacket,
        UiCommand::StepEvent,
        UiCommand::SpeedUp,
        UiCommand::SlowDown,
        UiCommand::NextRetransmission,
        UiCommand::NextFinding,
        UiCommand::FollowLive,
    ];

    /// Every command, in the order the help lists them: the views, moving
    /// about, the replay, the lessons, the rest.
    pub const ALL: [UiCommand; 40] = {
        let mut all = [UiCommand::Quit; 40];
        let mut k = 0;
        let head = [UiCommand::NextView, UiCommand::PrevView];
        let moves = [
            UiCommand::Up,
            UiCommand::Down,
            UiCommand::PageUp,
            UiCommand::PageDown,
            UiCommand::First,
            UiCommand::Last,
            UiCommand::Filter,
            UiCommand::Open,
        ];
        let rest = [
            UiCommand::NextLessonStep,
            UiCommand::PrevLessonStep,
            UiCommand::LeaveLesson,
            UiCommand::AnswerLesson,
            UiCommand::LessonHint,
            UiCommand::NextField,
            UiCommand::PrevField,
            UiCommand::CommandLine,
            UiCommand::Export,
            UiCommand::Help,
            UiCommand::Close,
            UiCommand::Quit,
        ];
        let mut views = [UiCommand::Quit; View::ALL.len()];
        let mut v = 0;
        while v < views.len() {
            views[v] = UiCommand::Show(View::ALL[v]);
            v += 1;
        }
        let groups: [&[UiCommand]; 5] = [&head, &views, &moves, &UiCommand::REPLAY, &rest];
        let mut g = 0;
        while g < groups.len() {
            let mut i = 0;
            while i < groups[g].len() {
                all[k] = groups[g][i];
                k += 1;
                i += 1;
            }
            g += 1;
        }
        // Every slot filled: the groups and the length agree.
        assert!(k == all.len());
        all
    };

    /// The key that runs it, as shown in help (the TUI maps these names).
    pub fn key(self) -> &'static str {
        match self {
            UiCommand::NextView => "Tab",
            UiCommand::PrevView => "BackTab",
            UiCommand::Show(v) => v.key(),
            UiCommand::Up => "Up",
            UiCommand::Down => "Down",
            UiCommand::PageUp => "PageUp",
            UiCommand::PageDown => "PageDown",
            UiCommand::First => "Home",
            UiCommand::Last => "End",
            UiCommand::Filter => "/",
            UiCommand::Open => "Enter",
            UiCommand::TogglePlay => "Space",
            UiCommand::StepPacket => ".",
            UiCommand::StepEvent => ">",
            UiCommand::SpeedUp => "+",
            UiCommand::SlowDown => "-",
            UiCommand::NextRetransmission => "r",
            UiCommand::NextFinding => "f",
            UiCommand::FollowLive => "F",
            UiCommand::NextLessonStep => "n",
            UiCommand::PrevLessonStep => "p",
            UiCommand::LeaveLesson => "L",
            UiCommand::AnswerLesson => "a",
            UiCommand::LessonHint => "h",
            UiCommand::NextField => "]",
            UiCommand::PrevField => "[",
            UiCommand::CommandLine => ":",
            UiCommand::Export => "E",
            UiCommand::Help => "?",
            UiCommand::Close => "Esc",
            UiCommand::Quit => "q",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            UiCommand::NextView => "next view",
            UiCommand::PrevView => "previous view",
            UiCommand::Show(v) => v.description(),
            UiCommand::Up => "select the previous row",
            UiCommand::Down => "select the next row",
            UiCommand::PageUp => "one page up",
            UiCommand::PageDown => "one page down",
            UiCommand::First => "first row",
            UiCommand::Last => "last row",
            UiCommand::Filter => "edit the display filter",
            UiCommand::Open => "open the selection (QP -> ladder, episode -> packet)",
            UiCommand::TogglePlay => "play / pause the replay",
            UiCommand::StepPacket => "step one packet",
            UiCommand::StepEvent => "step to the next event (resend, NAK, CNP, loss)",
            UiCommand::SpeedUp => "replay faster (x2)",
            UiCommand::SlowDown => "replay slower (/2)",
            UiCommand::NextRetransmission => "jump to the next retransmission",
            UiCommand::NextFinding => "jump to the next diagnosis finding",
            UiCommand::FollowLive => "follow the newest data",
            UiCommand::NextLessonStep => "lesson: next step",
            UiCommand::PrevLessonStep => "lesson: previous step",
            UiCommand::LeaveLesson => "leave the lesson, back to the source open before it",
            UiCommand::AnswerLesson => "lesson: answer with the selected packet (or :answer X)",
            UiCommand::LessonHint => "lesson: show the hint of the step's question",
            UiCommand::NextField => "next field in the detail tree (highlighted in hex)",
            UiCommand::PrevField => "previous field in the detail tree",
            UiCommand::CommandLine => {
                "command line: set, goto, export, whatif set KEY=VALUE, ... (Tab completes)"
            }
            UiCommand::Export => "export the view's rows to a file (.parquet, .csv, .jsonl)",
            UiCommand::Help => "this help",
            UiCommand::Close => "close the overlay / filter bar",
            UiCommand::Quit => "quit",
        }
    }

    /// Offered only in a session of several capture points (the help,
    /// the palette and the keys leave it out otherwise).
    pub fn needs_points(self) -> bool {
        matches!(self, UiCommand::Show(v) if v.needs_points())
    }

    /// The command it sends, given the packet-page height for paging.
    pub fn command(self, page_rows: i64) -> Command {
        match self {
            UiCommand::NextView => Command::NextView,
            UiCommand::PrevView => Command::PrevView,
            UiCommand::Show(v) => Command::ShowView(v),
            UiCommand::Up => Command::MoveSelection(-1),
            UiCommand::Down => Command::MoveSelection(1),
            UiCommand::PageUp => Command::MoveSelection(-page_rows.max(1)),
            UiCommand::PageDown => Command::MoveSelection(page_rows.max(1)),
            UiCommand::First => Command::SelectFirst,
            UiCommand::Last => Command::SelectLast,
            UiCommand::Filter => Command::EditFilter,
            UiCommand::Open => Command::OpenSelectedQp,
            UiCommand::TogglePlay => Command::TogglePlay,
            UiCommand::StepPacket => Command::StepPacket,
            UiCommand::StepEvent => Command::StepEvent,
            UiCommand::SpeedUp => Command::SpeedUp,
            UiCommand::SlowDown => Command::SlowDown,
            UiCommand::NextRetransmission => Command::JumpNextRetransmission,
            UiCommand::NextFinding => Command::JumpNextFinding,
            UiCommand::FollowLive => Command::FollowLive,
            UiCommand::NextLessonStep => Command::NextLessonStep,
            UiCommand::PrevLessonStep => Command::PrevLessonStep,
            UiCommand::LeaveLesson => Command::LeaveLesson,
            UiCommand::AnswerLesson => Command::AnswerLesson(String::new()),
            UiCommand::LessonHint => Command::LessonHint,
            UiCommand::NextField => Command::MoveField(1),
            UiCommand::PrevField => Command::MoveField(-1),
            UiCommand::CommandLine => Command::EditCommandLine,
            UiCommand::Export => Command::EditExport,
            UiCommand::Help => Command::ShowHelp,
            UiCommand::Close => Command::CloseOverlay,
            UiCommand::Quit => Command::Quit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ui_command_has_a_unique_key_and_a_description() {
        let mut keys = std::collections::HashSet::new();
        for c in UiCommand::ALL {
            assert!(keys.insert(c.key()), "key {} bound twice", c.key());
            assert!(!c.description().is_empty());
        }
        assert_eq!(keys.len(), UiCommand::ALL.len());
    }

    #[test]
    fn commands_serialize() {
        let c = Command::SetSimParam {
            key: "window_packets".into(),
            value: "32".into(),
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Command>(&json).unwrap(), c);
        for (table, partition_window_ns) in [(None, None), (Some(Table::Episodes), Some(1_000))] {
            let c = Command::Export {
                table,
                path: "out.csv".into(),
                partition_window_ns,
            };
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Command>(&json).unwrap(), c);
        }
        let bad = r#"{"Export":{"table":"nope","path":"x.csv"}}"#;
        assert!(serde_json::from_str::<Command>(bad).is_err());
    }
}
