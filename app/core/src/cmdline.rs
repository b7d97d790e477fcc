//! The command line both workbenches open with `:`: the words it takes,
//! what Tab completes, and the hint drawn beside it. The model runs the
//! line ([`crate::Command::RunCommandLine`]) through [`parse`].

use std::path::PathBuf;

use rocescope_data::Table;

use crate::Command;

/// The command words, with what each takes.
pub const VERBS: [(&str, &str); 15] = [
    ("set", "KEY=VALUE"),
    ("sniffer", "0xWORD"),
    ("speed", "X"),
    ("goto", "µs"),
    ("filter", "EXPR"),
    ("export", "PATH [TABLE] [--partition[=WINDOW]]"),
    ("partitions", "DIR [WINDOW] [CAPTURE] | off"),
    ("answer", "FRAME|NUMBER|CHOICE"),
    ("hint", ""),
    ("signals", "WORDS"),
    ("show", "SIGNAL|#N"),
    ("hide", "SIGNAL|#N"),
    ("fmt", "SIGNAL|#N bin|hex|dec|signed|opcode|psn|aeth"),
    ("cursor", "µs"),
    ("whatif", "set KEY=VALUE... | clear"),
];

/// The hint beside the open command line.
pub fn hint() -> String {
    let words: Vec<String> = VERBS
        .iter()
        .map(|(v, a)| format!("{v} {a}").trim_end().to_owned())
        .collect();
    format!(
        "{}; Tab completes, Enter runs, Esc closes",
        words.join(", ")
    )
}

/// What Tab makes of a line: the completed line, and the words that
/// still fit what was typed (more than one: the line is completed to
/// their common beginning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub line: String,
    pub candidates: Vec<String>,
}

/// Complete the command word, or the parameter name after `set` (the
/// simulator's parameters, as `rocescope sim --list-params` lists them).
pub fn complete(line: &str) -> Completion {
    let unchanged = || Completion {
        line: line.to_owned(),
        candidates: Vec::new(),
    };
    let start = line.len() - line.trim_start().len();
    let (lead, body) = line.split_at(start);
    match body.split_once(' ') {
        None => {
            let verbs: Vec<&str> = VERBS.iter().map(|(v, _)| *v).collect();
            finish(lead, body, &verbs, " ")
        }
        Some(("set", rest)) if !rest.contains('=') => {
            let names: Vec<&str> = rocescope_sim::Params::list()
                .into_iter()
                .map(|p| p.name)
                .collect();
            let key = rest.trim_start();
            finish(&format!("{lead}set "), key, &names, "=")
        }
        // `whatif set K=V K`: the last key among the what-if's keys.
        Some(("whatif", rest)) if rest.trim_start().starts_with("set ") => {
            let (done, key) = rest.rsplit_once(' ').unwrap_or(("", rest));
            if key.contains('=') {
                return unchanged();
            }
            let mut names: Vec<&str> = rocescope_sim::Params::list()
                .into_iter()
                .map(|p| p.name)
                .collect();
            names.push(rocescope_sim::whatif::LOSSES_KEY);
            finish(&format!("{lead}whatif {done} "), key, &names, "=")
        }
        Some(_) => unchanged(),
    }
}

/// `prefix` + the completion of `word` among `words` (+ `then` when only
/// one fits).
fn finish(prefix: &str, word: &str, words: &[&str], then: &str) -> Completion {
    let fits: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| w.starts_with(word))
        .collect();
    let line = match fits.as_slice() {
        [] => format!("{prefix}{word}"),
        [one] => format!("{prefix}{one}{then}"),
        many => format!("{prefix}{}", common_prefix(many)),
    };
    Completion {
        line,
        candidates: fits.iter().map(|w| (*w).to_owned()).collect(),
    }
}

fn common_prefix<'a>(words: &[&'a str]) -> &'a str {
    let first = words[0];
    let mut n = first.len();
    for w in &words[1..] {
        n = n.min(
            first
                .char_indices()
                .zip(w.chars())
                .take_while(|((_, a), b)| a == b)
                .count(),
        );
    }
    let end = first.char_indices().nth(n).map_or(first.len(), |(i, _)| i);
    &first[..end]
}

/// What is wrong with a command line: the usage of the word typed, or
/// the argument refused (quoted as typed). Shown in the status line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CmdlineError {
    #[error("usage: set KEY=VALUE (see rocescope sim --list-params)")]
    SetUsage,
    #[error("sniffer: {text:?} is not a 64-bit filter word (e.g. 0x80000000)")]
    NotAFilterWord { text: String },
    #[error(
        "speed: {text:?} is not a replay speed; usage: speed X ({} .. {})",
        rocescope_replay::clock::MIN_SPEED,
        rocescope_replay::clock::MAX_SPEED
    )]
    NotASpeed { text: String },
    #[error(
        "goto: {text:?} is not a time; usage: goto MICROSECONDS (0 or more, from the first packet)"
    )]
    NotATime { text: String },
    #[error("usage: cursor MICROSECONDS (0 or more, from the first packet)")]
    CursorUsage,
    /// `show` or `hide` without a signal.
    #[error("usage: {verb} SIGNAL|#N (a full path, or the Nth signal listed)")]
    SignalUsage { verb: String },
    #[error("fmt: {text:?} is not one of {}", radix_words())]
    NotARadix { text: String },
    #[error("usage: fmt SIGNAL|#N {}", radix_words())]
    FmtUsage,
    /// `export` without a path; `view_table` is the table it would write.
    #[error(
        "usage: export PATH.{{parquet,csv,jsonl}} [TABLE] [--partition[=WINDOW]] \
         (this view: {view_table}); quote a path with spaces at its ends or ending in a \
         table's name"
    )]
    ExportUsage { view_table: Table },
    /// `export --partition=WINDOW` with a window that is not a duration.
    #[error("export --partition: {cause}")]
    ExportWindow {
        cause: rocescope_decoders::units::UnitError,
    },
    #[error("{}", PARTITIONS_USAGE)]
    PartitionsUsage,
    /// `partitions DIR WINDOW` with a window that is not a duration.
    #[error("partitions: {cause}; {}", PARTITIONS_USAGE)]
    PartitionsWindow {
        cause: rocescope_decoders::units::UnitError,
    },
    #[error(
        "usage: whatif set KEY=VALUE... (e.g. window_packets=32; see rocescope sim --list-params, and losses=none) | whatif clear"
    )]
    WhatIfUsage,
    #[error("unknown command {word:?}: try {}", VERBS.map(|(v, _)| v).join(", "))]
    UnknownCommand { word: String },
}

/// The formats `fmt` takes, as its usage lists them.
fn radix_words() -> String {
    crate::signals::Radix::ALL.map(|r| r.word()).join("|")
}

const PARTITIONS_USAGE: &str =
    "usage: partitions DIR [WINDOW, e.g. 1m, 10s] [CAPTURE] | partitions off";

/// The command a command line asks for (`None` for an empty line), or the
/// message to show when it cannot run: its usage or what is wrong with it.
/// `t0_ns` is the first packet's time (`goto` counts from it), `view_table`
/// the table `export` writes when it names none.
pub fn parse(line: &str, t0_ns: u64, view_table: Table) -> Result<Option<Command>, CmdlineError> {
    let mut words = line.split_whitespace();
    let verb = words.next().unwrap_or("");
    let rest: Vec<&str> = words.collect();
    let arg = rest.join(" ");
    match verb {
        "" => Ok(None),
        "set" => match arg.split_once('=') {
            Some((k, v)) => Ok(Some(Command::SetSimParam {
                key: k.trim().to_owned(),
                value: v.trim().to_owned(),
            })),
            None => Err(CmdlineError::SetUsage),
        },
        "sniffer" => {
            let t = arg.trim();
            let word = t.strip_prefix("0x").map_or_else(
                || t.parse::<u64>().ok(),
                |h| u64::from_str_radix(h, 16).ok(),
            );
            match word {
                Some(w) => Ok(Some(Command::SetSnifferFilter(w))),
                None => Err(CmdlineError::NotAFilterWord { text: t.to_owned() }),
            }
        }
        // A value out of range is refused, not clamped: an invalid
        // command changes nothing.
        "speed" => match arg.trim().trim_start_matches('x').parse::<f64>() {
            Ok(s)
                if (rocescope_replay::clock::MIN_SPEED..=rocescope_replay::clock::MAX_SPEED)
                    .contains(&s) =>
            {
                Ok(Some(Command::SetSpeed(s)))
            }
            _ => Err(CmdlineError::NotASpeed {
                text: arg.trim().to_owned(),
            }),
        },
        "goto" => match micros(&arg) {
            Some(us) => Ok(Some(Command::JumpToTime(t0_ns + (us * 1000.0) as u64))),
            None => Err(CmdlineError::NotATime {
                text: arg.trim().to_owned(),
            }),
        },
        "filter" => Ok(Some(Command::SetFilter(arg))),
        "signals" => Ok(Some(Command::SignalSearch(arg))),
        "show" if !arg.is_empty() => Ok(Some(Command::AddSignal(arg))),
        "hide" if !arg.is_empty() => Ok(Some(Command::RemoveSignal(arg))),
        "show" | "hide" => Err(CmdlineError::SignalUsage {
            verb: verb.to_owned(),
        }),
        "fmt" => match rest.as_slice() {
            [path, r] => match crate::signals::Radix::from_word(r) {
                Some(radix) => Ok(Some(Command::SignalFormat {
                    path: (*path).to_owned(),
                    radix,
                })),
                None => Err(CmdlineError::NotARadix {
                    text: (*r).to_owned(),
                }),
            },
            _ => Err(CmdlineError::FmtUsage),
        },
        "cursor" => match micros(&arg) {
            Some(us) => Ok(Some(Command::WaveCursor(t0_ns + (us * 1000.0) as u64))),
            None => Err(CmdlineError::CursorUsage),
        },
        "export" => {
            let raw = line.trim_start().strip_prefix("export").unwrap_or("");
            let (raw, partition) = partition_arg(raw)?;
            let (path, table) = export_args(&raw);
            if path.is_empty() {
                Err(CmdlineError::ExportUsage { view_table })
            } else {
                Ok(Some(Command::Export {
                    table,
                    path: PathBuf::from(path),
                    partition_window_ns: partition,
                }))
            }
        }
        "partitions" => partitions_args(&rest),
        "answer" => Ok(Some(Command::AnswerLesson(arg))),
        "hint" => Ok(Some(Command::LessonHint)),
        "whatif" => match rest.as_slice() {
            [] | ["clear"] => Ok(Some(Command::ClearWhatIf)),
            ["set", sets @ ..] if !sets.is_empty() => Ok(Some(Command::WhatIf(
                sets.iter().map(|s| (*s).to_owned()).collect(),
            ))),
            _ => Err(CmdlineError::WhatIfUsage),
        },
        other => Err(CmdlineError::UnknownCommand {
            word: other.to_owned(),
        }),
    }
}

/// A time in µs after the first packet (`12`, `12us`, `12 µs`): finite and
/// not negative, or `None`.
fn micros(arg: &str) -> Option<f64> {
    let us = arg
        .trim()
        .trim_end_matches("us")
        .trim_end_matches("µs")
        .trim()
        .parse::<f64>()
        .ok()?;
    (us.is_finite() && us >= 0.0).then_some(us)
}

/// `partitions DIR [WINDOW] [CAPTURE]` starts writing live partitions
/// (window 1 m by default, as `attach --partitions`); `partitions off`
/// stops.
fn partitions_args(words: &[&str]) -> Result<Option<Command>, CmdlineError> {
    match words {
        [] => Err(CmdlineError::PartitionsUsage),
        ["off"] => Ok(Some(Command::StopPartitions)),
        [dir, more @ ..] if more.len() <= 2 => {
            let window_ns = match more.first() {
                Some(w) => rocescope_decoders::units::parse_duration_ns(
                    w,
                    rocescope_decoders::units::HOUR_NS,
                )
                .map_err(|cause| CmdlineError::PartitionsWindow { cause })?,
                None => LIVE_PARTITION_WINDOW_NS,
            };
            Ok(Some(Command::WritePartitions {
                dir: PathBuf::from(dir),
                window_ns,
                capture: more.get(1).map(|c| (*c).to_owned()),
            }))
        }
        _ => Err(CmdlineError::PartitionsUsage),
    }
}

/// The window of live partitions when none is named (`attach --window`'s
/// default).
pub const LIVE_PARTITION_WINDOW_NS: u64 = 60_000_000_000;

/// The time window of partitions when `export` is not given one.
pub const PARTITION_WINDOW_NS: u64 = 1_000_000_000;

/// `export`'s arguments without its `--partition[=WINDOW]` word, and the
/// window that word asks for (1 s when it names none).
pub(crate) fn partition_arg(raw: &str) -> Result<(String, Option<u64>), CmdlineError> {
    let mut window = None;
    let mut rest = Vec::new();
    for word in raw.split(' ') {
        match word
            .strip_prefix("--partition")
            .map(|w| (w, w.strip_prefix('=')))
        {
            Some(("", _)) => window = Some(PARTITION_WINDOW_NS),
            Some((_, Some(d))) => {
                window = Some(
                    rocescope_decoders::units::parse_duration_ns(
                        d,
                        rocescope_decoders::units::HOUR_NS,
                    )
                    .map_err(|cause| CmdlineError::ExportWindow { cause })?,
                );
            }
            _ => rest.push(word),
        }
    }
    Ok((rest.join(" "), window))
}

/// `export PATH [TABLE]`'s arguments: the path exactly as typed (inner
/// spaces kept), or in double quotes; a last word naming a table, after
/// the path, is the table.
pub(crate) fn export_args(raw: &str) -> (String, Option<Table>) {
    let raw = raw.trim();
    if let Some(quoted) = raw.strip_prefix('"')
        && let Some((path, rest)) = quoted.split_once('"')
    {
        let table = Table::from_name(&rest.trim().to_ascii_lowercase()).ok();
        return (path.to_owned(), table);
    }
    match raw.rsplit_once(char::is_whitespace) {
        Some((path, last)) => match Table::from_name(&last.to_ascii_lowercase()) {
            Ok(t) => (path.trim_end().to_owned(), Some(t)),
            Err(_) => (raw.to_owned(), None),
        },
        None => (raw.to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_completes_the_command_word() {
        assert_eq!(complete("se").line, "set ");
        assert_eq!(
            complete("s").line,
            "s",
            "set, sniffer, speed, signals, show fit"
        );
        assert_eq!(
            complete("s").candidates,
            ["set", "sniffer", "speed", "signals", "show"]
        );
        assert_eq!(complete("sig").line, "signals ");
        assert_eq!(complete("sn").line, "sniffer ");
        assert_eq!(complete("").candidates.len(), VERBS.len());
        let none = complete("frob");
        assert_eq!(none.line, "frob");
        assert!(none.candidates.is_empty());
    }

    #[test]
    fn the_signal_words() {
        let p = |l: &str| parse(l, 1_000, Table::Profiler);
        assert_eq!(
            p("signals rx psn"),
            Ok(Some(Command::SignalSearch("rx psn".into())))
        );
        assert_eq!(p("show #2"), Ok(Some(Command::AddSignal("#2".into()))));
        assert_eq!(
            p("hide tb.u.psn"),
            Ok(Some(Command::RemoveSignal("tb.u.psn".into())))
        );
        assert!(
            p("show")
                .unwrap_err()
                .to_string()
                .starts_with("usage: show")
        );
        assert_eq!(
            p("fmt #1 aeth"),
            Ok(Some(Command::SignalFormat {
                path: "#1".into(),
                radix: crate::signals::Radix::Syndrome
            }))
        );
        assert!(
            p("fmt #1")
                .unwrap_err()
                .to_string()
                .contains("bin|hex|dec|signed|opcode|psn|aeth")
        );
        assert_eq!(p("cursor 2.5"), Ok(Some(Command::WaveCursor(3_500))));
        assert!(p("cursor soon").is_err());
    }

    #[test]
    fn tab_completes_simulator_parameters_after_set() {
        assert_eq!(complete("set window_p").line, "set window_packets=");
        let c = complete("set pfc_");
        assert!(c.candidates.len() >= 2, "{c:?}");
        assert!(c.candidates.iter().all(|w| w.starts_with("pfc_")));
        assert!(c.line.starts_with("set pfc_"));
        // After `=` the value is the user's.
        assert_eq!(
            complete("set window_packets=3").line,
            "set window_packets=3"
        );
        assert_eq!(complete("goto 12").line, "goto 12");
    }

    #[test]
    fn partitions_starts_and_stops_live_partitions() {
        let t = Table::Packets;
        assert_eq!(
            parse("partitions fleet 10s rack-7", 0, t),
            Ok(Some(Command::WritePartitions {
                dir: PathBuf::from("fleet"),
                window_ns: 10_000_000_000,
                capture: Some("rack-7".into()),
            }))
        );
        assert_eq!(
            parse("partitions fleet", 0, t),
            Ok(Some(Command::WritePartitions {
                dir: PathBuf::from("fleet"),
                window_ns: LIVE_PARTITION_WINDOW_NS,
                capture: None,
            }))
        );
        assert_eq!(
            parse("partitions off", 0, t),
            Ok(Some(Command::StopPartitions))
        );
        assert!(
            parse("partitions", 0, t)
                .unwrap_err()
                .to_string()
                .starts_with("usage")
        );
        assert!(parse("partitions fleet soon", 0, t).is_err());
        assert!(parse("partitions a 1s b c", 0, t).is_err());
    }

    #[test]
    fn times_and_speeds_out_of_range_are_refused_not_clamped() {
        let t = Table::Packets;
        assert_eq!(
            parse("goto 2.5us", 1_000, t),
            Ok(Some(Command::JumpToTime(3_500)))
        );
        assert_eq!(
            parse("goto 0", 1_000, t),
            Ok(Some(Command::JumpToTime(1_000)))
        );
        for bad in [
            "goto -5",
            "goto -0.1",
            "goto inf",
            "goto NaN",
            "goto soon",
            "goto",
        ] {
            let e = parse(bad, 1_000, t).unwrap_err().to_string();
            assert!(e.contains("usage: goto MICROSECONDS"), "{bad}: {e}");
        }
        assert!(parse("cursor -1", 0, t).is_err());
        assert_eq!(parse("speed x4", 0, t), Ok(Some(Command::SetSpeed(4.0))));
        for bad in ["speed -1", "speed 0", "speed 1000", "speed fast"] {
            let e = parse(bad, 0, t).unwrap_err().to_string();
            assert!(e.contains("usage: speed X"), "{bad}: {e}");
        }
        let e = parse("frob", 0, t).unwrap_err().to_string();
        assert!(e.contains("signals") && e.contains("cursor"), "{e}");
    }

    #[test]
    fn a_bad_partition_window_names_the_word_and_why() {
        let t = Table::Packets;
        match parse("partitions fleet soon", 0, t) {
            Err(CmdlineError::PartitionsWindow { cause }) => {
                assert!(cause.to_string().contains("\"soon\""), "{cause}")
            }
            other => panic!("{other:?}"),
        }
        match parse("export out.csv --partition=fast", 0, t) {
            Err(e @ CmdlineError::ExportWindow { .. }) => {
                assert!(e.to_string().starts_with("export --partition: "), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse("export", 0, t),
            Err(CmdlineError::ExportUsage {
                view_table: Table::Packets
            })
        );
    }

    #[test]
    fn the_hint_names_every_command_word() {
        let h = hint();
        for (v, _) in VERBS {
            assert!(h.contains(v), "{v}");
        }
    }

    #[test]
    fn whatif_sets_clears_and_completes_its_keys() {
        let p = |l: &str| parse(l, 0, Table::Packets);
        assert_eq!(
            p("whatif set window_packets=32 losses=none"),
            Ok(Some(Command::WhatIf(vec![
                "window_packets=32".into(),
                "losses=none".into()
            ])))
        );
        assert_eq!(p("whatif"), Ok(Some(Command::ClearWhatIf)));
        assert_eq!(p("whatif clear"), Ok(Some(Command::ClearWhatIf)));
        assert_eq!(p("whatif set"), Err(CmdlineError::WhatIfUsage));
        assert_eq!(
            p("whatif window_packets=32"),
            Err(CmdlineError::WhatIfUsage)
        );
        assert_eq!(
            complete("whatif set window_p").line,
            "whatif set window_packets="
        );
        assert_eq!(
            complete("whatif set window_packets=32 loss").line,
            "whatif set window_packets=32 losses="
        );
    }
}
