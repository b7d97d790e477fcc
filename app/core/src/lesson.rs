//! Guided lessons (assets/lessons/*.toml): text steps that move the time
//! cursor through a simulator run, set the filter and switch views.

use serde::Deserialize;

use crate::command::View;

/// One lesson.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    pub title: String,
    /// The simulator scenario the lesson is written for.
    pub scenario: String,
    pub summary: String,
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
}

/// One step: text to read, and where to take the workbench.
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
}

const BUILTIN: &[(&str, &str)] = &[
    (
        "01-write",
        include_str!("../../../assets/lessons/01-write.toml"),
    ),
    (
        "02-read",
        include_str!("../../../assets/lessons/02-read.toml"),
    ),
    (
        "03-go-back-n",
        include_str!("../../../assets/lessons/03-go-back-n.toml"),
    ),
    (
        "04-window",
        include_str!("../../../assets/lessons/04-window.toml"),
    ),
    (
        "05-cnp-ecn",
        include_str!("../../../assets/lessons/05-cnp-ecn.toml"),
    ),
];

/// The lessons shipped with rocescope, in order.
pub fn builtin() -> Vec<Lesson> {
    BUILTIN
        .iter()
        .filter_map(|(_, text)| toml::from_str(text).ok())
        .collect()
}

/// Parse a lesson file, with the error naming the problem.
pub fn parse(text: &str) -> Result<Lesson, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_lesson_parses_and_names_a_shipped_scenario() {
        for (name, text) in BUILTIN {
            let l = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!l.steps.is_empty(), "{name}");
            assert!(
                rocescope_sim::Scenario::builtin(&l.scenario).is_some(),
                "{name}: scenario {}",
                l.scenario
            );
        }
        assert_eq!(builtin().len(), BUILTIN.len());
    }
}
