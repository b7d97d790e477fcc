//! Guided lessons (assets/lessons/*.toml): steps that move the time cursor
//! through a run of the lesson's own scenario, set the filter and switch
//! views; steps that ask (find a packet, type a number, pick an answer,
//! predict a parameter change) and check the answer against the analysis;
//! and checks that keep every claim a step makes true (`lesson --check`).
//! The format is documented for teachers in assets/lessons/README.md.

pub mod answer;
pub mod capture;
pub mod check;
pub mod facts;
pub mod points;
pub mod progress;

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::command::View;

/// Why a lesson could not be read, set up or run.
#[derive(Debug, thiserror::Error)]
pub enum LessonError {
    /// The lesson file is not a lesson (TOML syntax, a missing or unknown key).
    #[error("{cause}")]
    Toml { cause: toml::de::Error },
    /// A step's question cannot be answered as written.
    #[error("step {step}: the question {needs}")]
    Question { step: usize, needs: &'static str },
    /// A step's check bounds nothing.
    #[error("step {step}: the check of {fact} says neither equals, at_least nor at_most")]
    Unbounded { step: usize, fact: String },
    /// A scenario (shipped with the lessons, or a file beside one) does not load.
    #[error("{cause}")]
    Scenario { cause: rocescope_sim::ScenarioError },
    /// A lesson read from a file names a scenario found nowhere.
    #[error(
        "lesson {lesson}: scenario {scenario} is neither shipped nor a file ({})",
        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    ScenarioNotFound {
        lesson: String,
        scenario: String,
        tried: Vec<std::path::PathBuf>,
    },
    /// A shipped lesson names a scenario that is not shipped.
    #[error("lesson {lesson}: no shipped scenario {scenario}")]
    NoShippedScenario { lesson: String, scenario: String },
    /// A prediction sets a parameter the scenario refuses.
    #[error("scenario {scenario}: {cause}")]
    Param {
        scenario: String,
        cause: rocescope_sim::ParamError,
    },
    /// The run's packet store could not be made.
    #[error("{cause}")]
    Store {
        cause: rocescope_replay::store::StoreError,
    },
    /// The simulator stopped with an error (its source thread's words).
    #[error("{message}")]
    Run { message: String },
    /// Asked about a capture, a lesson that predicts nothing.
    #[error(
        "lesson {lesson} asks no prediction (a question with `params`) to put to a capture; the lessons that do: {}",
        with.join(", ")
    )]
    NoPrediction {
        lesson: String,
        with: Vec<&'static str>,
    },
    /// Asked about a capture, a lesson none of whose predictions can run on one.
    #[error("lesson {lesson}: no prediction of it can be asked about a capture: {}", why.join("; "))]
    NoPredictionOnCapture { lesson: String, why: Vec<String> },
    /// The capture cannot be modelled, or a change not made (whatif's words).
    #[error("{cause}")]
    WhatIf {
        cause: rocescope_sim::whatif::WhatIfError,
    },
    /// The capture's twin does not reproduce it: no prediction from it.
    #[error("{capture}: {why}")]
    TwinDoesNotHold { capture: String, why: String },
}

/// One lesson.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    pub title: String,
    /// The simulator scenario the lesson is written for.
    pub scenario: String,
    /// What it teaches, one phrase (`lesson --list`).
    pub topic: String,
    pub summary: String,
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
    /// The folder of a lesson read from a file: a `scenario` that is not a
    /// shipped one is a scenario file there.
    #[serde(skip)]
    pub dir: Option<std::path::PathBuf>,
}

/// One step: text to read, where to take the workbench, what it claims
/// and what it asks.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub text: String,
    /// Move the time cursor to this many µs after the first packet.
    pub until_us: Option<f64>,
    /// Replace the display filter ("" clears it).
    pub filter: Option<String>,
    /// Switch to this view.
    pub view: Option<View>,
    /// The claims the text makes about the scenario, as facts of its
    /// analysis (`lesson NAME --check` fails when one stops holding).
    #[serde(default, rename = "check")]
    pub checks: Vec<Check>,
    /// A question the student answers before going on.
    pub ask: Option<Ask>,
}

/// A claim: `fact` (a name from [`facts::facts`]) equals a value, or lies
/// within bounds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub fact: String,
    pub equals: Option<Value>,
    pub at_least: Option<f64>,
    pub at_most: Option<f64>,
}

/// A fact's value: a count or measure, or a word (a cause, a state).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Number(f64),
    Text(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => write!(f, "{}", *n as i64),
            Value::Number(n) => write!(f, "{n:.3}"),
            Value::Text(t) => f.write_str(t),
        }
    }
}

/// How a question is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    /// Select a packet (its frame number is the answer).
    Packet,
    /// Type a number (a PSN, a count, a rate).
    Number,
    /// Pick one of `choices`.
    Choice,
}

/// A question. The right answer is the fact `fact` of the analysis (a
/// packet's frame number, a PSN) or, for a choice, `answer`; a prediction
/// names the simulator `params` it is about, and is checked on a run with
/// them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    pub question: String,
    pub kind: AskKind,
    /// The fact holding the right answer (packet and number questions);
    /// a choice may name the fact whose word its `answer` is (`--check`
    /// holds them equal; on a user's capture the fact is the answer).
    pub fact: Option<String>,
    /// Choices, for `kind = "choice"`.
    #[serde(default)]
    pub choices: Vec<String>,
    /// The right choice (one of `choices`).
    pub answer: Option<String>,
    /// How far a typed number may be from the fact, in percent.
    #[serde(default)]
    pub tolerance_pct: f64,
    /// Simulator parameters the question is about: answering reruns the
    /// scenario with them and checks the answer on that run.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// Shown on request, before answering.
    pub hint: String,
    /// Shown after answering, right or wrong.
    pub explain: String,
}

const BUILTIN: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/lessons.rs"));

/// The scenarios written for the lessons (assets/lessons/scenarios/), by
/// name; not among the simulator's workloads (`sim --scenario` takes them
/// by path).
const SCENARIOS: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/lesson_scenarios.rs"));

/// A scenario written for a lesson, by name.
pub fn lesson_scenario(name: &str) -> Option<Result<rocescope_sim::Scenario, LessonError>> {
    let (_, text) = SCENARIOS.iter().find(|(n, _)| *n == name)?;
    Some(
        rocescope_sim::Scenario::from_toml(text, &format!("assets/lessons/scenarios/{name}.toml"))
            .map_err(|cause| LessonError::Scenario { cause }),
    )
}

/// The lessons shipped with rocescope, in order: (file stem, text).
pub fn builtin_files() -> &'static [(&'static str, &'static str)] {
    BUILTIN
}

/// The lessons shipped with rocescope, in order: parsed once (the
/// workbenches list them every frame). A shipped lesson that does not
/// parse is left out here and failed by the tests.
pub fn builtin() -> &'static [Lesson] {
    static LESSONS: std::sync::OnceLock<Vec<Lesson>> = std::sync::OnceLock::new();
    LESSONS.get_or_init(|| {
        BUILTIN
            .iter()
            .filter_map(|(_, text)| toml::from_str(text).ok())
            .collect()
    })
}

/// A shipped lesson by file stem (`03-go-back-n`), number (`3`) or the
/// stem without its number (`go-back-n`).
pub fn find(name: &str) -> Option<(usize, Lesson)> {
    let i = BUILTIN.iter().position(|(stem, _)| {
        *stem == name
            || stem.split_once('-').is_some_and(|(n, rest)| {
                rest == name || n.trim_start_matches('0') == name.trim_start_matches('0')
            })
    })?;
    builtin().get(i).cloned().map(|l| (i, l))
}

/// Parse a lesson file, with the error naming the problem, and check that
/// its questions are answerable.
pub fn parse(text: &str) -> Result<Lesson, LessonError> {
    let l: Lesson = toml::from_str(text).map_err(|cause| LessonError::Toml { cause })?;
    for (i, s) in l.steps.iter().enumerate() {
        if let Some(a) = &s.ask {
            let bad = match a.kind {
                AskKind::Packet | AskKind::Number if a.fact.is_none() => Some("needs `fact`"),
                AskKind::Choice if a.choices.len() < 2 => Some("needs two `choices` or more"),
                AskKind::Choice if !a.answer.as_ref().is_some_and(|x| a.choices.contains(x)) => {
                    Some("needs `answer`, one of its `choices`")
                }
                _ => None,
            };
            if let Some(needs) = bad {
                return Err(LessonError::Question { step: i + 1, needs });
            }
        }
        for c in &s.checks {
            if c.equals.is_none() && c.at_least.is_none() && c.at_most.is_none() {
                return Err(LessonError::Unbounded {
                    step: i + 1,
                    fact: c.fact.clone(),
                });
            }
        }
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_lesson_parses_and_names_a_shipped_scenario() {
        for (name, text) in BUILTIN {
            let l = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!l.steps.is_empty(), "{name}");
            if let Err(e) = check::scenario(&l, &Default::default()) {
                panic!("{name}: {e}");
            }
        }
        assert_eq!(builtin().len(), BUILTIN.len());
    }

    #[test]
    fn lessons_are_found_by_stem_number_and_name() {
        let (i, l) = find("03-go-back-n").unwrap();
        assert_eq!(find("3").unwrap().0, i);
        assert_eq!(find("go-back-n").unwrap().1, l);
        assert!(find("no-such-lesson").is_none());
    }

    #[test]
    fn a_question_without_its_answer_is_refused_naming_the_step() {
        let text = r#"
title = "t"
scenario = "teaching-basic"
topic = "x"
summary = "s"
[[step]]
text = "a"
[[step]]
text = "b"
[step.ask]
question = "which?"
kind = "choice"
choices = ["a", "b"]
answer = "c"
hint = "h"
explain = "e"
"#;
        let e = parse(text).unwrap_err();
        assert!(
            matches!(
                e,
                LessonError::Question {
                    step: 2,
                    needs: "needs `answer`, one of its `choices`"
                }
            ),
            "{e}"
        );
        assert!(e.to_string().starts_with("step 2:"), "{e}");
    }
}
