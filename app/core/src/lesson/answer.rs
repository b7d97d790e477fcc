//! Judging an answer to a step's question against the run's facts.

use super::check::Facts;
use super::{Ask, AskKind, Value};

/// What the student is told after answering.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub right: bool,
    /// `Right.` / `Not quite: the answer is 103.`, then the explanation.
    pub text: String,
}

/// Why an answer could not be judged (the student is told, and may
/// answer again).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    #[error("select the packet, then answer (a), or type its frame number")]
    NoPacket,
    #[error("type the number: answer N")]
    NoNumber,
    #[error("answer one of: {}", choices.join(", "))]
    NoChoice { choices: Vec<String> },
    #[error("{given:?} is not one of: {}", choices.join(", "))]
    NotAChoice { given: String, choices: Vec<String> },
    /// The run has not yet produced the fact the question is about.
    #[error("the run has not shown {fact} yet")]
    NotShown { fact: String },
    #[error("{given:?} is not a number")]
    NotANumber { given: String },
}

/// Judge `given` (a frame number, a number, or a choice's text or its
/// 1-based number) against `facts`.
pub fn judge(ask: &Ask, facts: &Facts, given: &str) -> Result<Verdict, AnswerError> {
    let given = given.trim();
    if given.is_empty() {
        return Err(match ask.kind {
            AskKind::Packet => AnswerError::NoPacket,
            AskKind::Number => AnswerError::NoNumber,
            AskKind::Choice => AnswerError::NoChoice {
                choices: ask.choices.clone(),
            },
        });
    }
    let (right, expected) = match ask.kind {
        AskKind::Choice => {
            let picked = given
                .parse::<usize>()
                .ok()
                .and_then(|n| ask.choices.get(n.checked_sub(1)?))
                .cloned()
                .or_else(|| {
                    ask.choices
                        .iter()
                        .find(|c| c.eq_ignore_ascii_case(given))
                        .cloned()
                })
                .ok_or_else(|| AnswerError::NotAChoice {
                    given: given.to_owned(),
                    choices: ask.choices.clone(),
                })?;
            let want = ask.answer.clone().unwrap_or_default();
            (picked == want, want)
        }
        AskKind::Packet | AskKind::Number => {
            let fact = ask.fact.as_deref().unwrap_or("");
            let Some(Value::Number(want)) = facts.get(fact) else {
                return Err(AnswerError::NotShown {
                    fact: fact.to_owned(),
                });
            };
            let n: f64 = given
                .trim_start_matches('#')
                .replace('_', "")
                .parse()
                .map_err(|_| AnswerError::NotANumber {
                    given: given.to_owned(),
                })?;
            let slack = (want.abs() * ask.tolerance_pct / 100.0).max(1e-9);
            ((n - want).abs() <= slack, Value::Number(*want).to_string())
        }
    };
    let lead = if right {
        "Right.".to_owned()
    } else {
        let what = match ask.kind {
            AskKind::Packet => format!("frame {expected}"),
            _ => expected,
        };
        format!("Not quite: the answer is {what}.")
    };
    Ok(Verdict {
        right,
        text: format!("{lead} {}", ask.explain),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(kind: AskKind) -> Ask {
        Ask {
            question: "q".into(),
            kind,
            fact: Some("episode1.from_psn".into()),
            choices: vec!["alice".into(), "bob".into()],
            answer: Some("bob".into()),
            tolerance_pct: 0.0,
            params: Default::default(),
            hint: "h".into(),
            explain: "Because.".into(),
        }
    }

    fn facts() -> Facts {
        [("episode1.from_psn".to_owned(), Value::Number(102.0))].into()
    }

    #[test]
    fn numbers_are_judged_against_the_fact() {
        let a = ask(AskKind::Number);
        assert!(judge(&a, &facts(), "102").unwrap().right);
        let v = judge(&a, &facts(), "101").unwrap();
        assert!(!v.right);
        assert_eq!(v.text, "Not quite: the answer is 102. Because.");
        assert_eq!(
            judge(&a, &facts(), "lots"),
            Err(AnswerError::NotANumber {
                given: "lots".into()
            })
        );
        assert_eq!(
            judge(&a, &facts(), " ").unwrap_err().to_string(),
            "type the number: answer N"
        );
        let mut wide = a.clone();
        wide.tolerance_pct = 5.0;
        assert!(judge(&wide, &facts(), "99").unwrap().right);
    }

    #[test]
    fn choices_by_name_or_number() {
        let a = ask(AskKind::Choice);
        assert!(judge(&a, &facts(), "Bob").unwrap().right);
        assert!(judge(&a, &facts(), "2").unwrap().right);
        assert!(!judge(&a, &facts(), "1").unwrap().right);
        let e = judge(&a, &facts(), "carol").unwrap_err();
        assert!(
            matches!(&e, AnswerError::NotAChoice { given, .. } if given == "carol"),
            "{e}"
        );
    }

    #[test]
    fn a_fact_the_run_has_not_reached_is_said() {
        let a = ask(AskKind::Packet);
        let e = judge(&a, &Facts::new(), "5").unwrap_err();
        assert_eq!(
            e,
            AnswerError::NotShown {
                fact: "episode1.from_psn".into()
            }
        );
        assert_eq!(e.to_string(), "the run has not shown episode1.from_psn yet");
    }
}
