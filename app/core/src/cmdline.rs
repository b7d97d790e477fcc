//! The command line both workbenches open with `:`: the words it takes,
//! what Tab completes, and the hint drawn beside it. The model runs the
//! line ([`crate::Command::RunCommandLine`]).

/// The command words, with what each takes.
pub const VERBS: [(&str, &str); 6] = [
    ("set", "KEY=VALUE"),
    ("sniffer", "0xWORD"),
    ("speed", "X"),
    ("goto", "µs"),
    ("filter", "EXPR"),
    ("export", "PATH [TABLE] [--partition[=WINDOW]]"),
];

/// The hint beside the open command line.
pub fn hint() -> String {
    let words: Vec<String> = VERBS.iter().map(|(v, a)| format!("{v} {a}")).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_completes_the_command_word() {
        assert_eq!(complete("se").line, "set ");
        assert_eq!(complete("s").line, "s", "set, sniffer and speed fit");
        assert_eq!(complete("s").candidates, ["set", "sniffer", "speed"]);
        assert_eq!(complete("sn").line, "sniffer ");
        assert_eq!(complete("").candidates.len(), VERBS.len());
        let none = complete("frob");
        assert_eq!(none.line, "frob");
        assert!(none.candidates.is_empty());
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
    fn the_hint_names_every_command_word() {
        let h = hint();
        for (v, _) in VERBS {
            assert!(h.contains(v), "{v}");
        }
    }
}
