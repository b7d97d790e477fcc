//! A lesson's predictions asked about a user's own capture (`rocescope
//! lesson NAME --capture FILE`). The capture's twin is derived and held
//! against it as `rocescope whatif` does, and refused in its words when it
//! does not hold; each prediction's parameters (those of the steps before
//! it too, as the lesson runs them) are set on the twin as `whatif --set`
//! sets them, and the answer is judged against the facts of that changed
//! run. In every run the facts number the capture's requester QPs `qp1`,
//! `qp2`, ... in the order `rocescope stats` lists them. The other steps
//! are about the lesson's own scenario and are not asked.

use std::path::Path;

use rocescope_decoders::analysis::Report;
use rocescope_sim::whatif::{self, Derived, QpKey, RunOutcome};

use super::answer::{self, AnswerError, Verdict};
use super::check::{Facts, step_params};
use super::facts::facts;
use super::{Ask, AskKind, Lesson, LessonError, Value};

/// A step whose question predicts a change, to be asked about the capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// 1-based.
    pub step: usize,
    pub text: String,
    pub ask: Ask,
    /// The changes as `whatif --set` takes them: the earlier predictions'
    /// and this one's, as the lesson's run has them.
    pub sets: Vec<String>,
}

/// What of a lesson can be asked about a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub predictions: Vec<Prediction>,
    /// Steps about the lesson's own scenario (1-based): not asked, their
    /// checks not run.
    pub scenario_steps: Vec<usize>,
    /// Predictions that cannot be asked about a capture: step and why.
    pub refused: Vec<(usize, String)>,
}

/// Whether a step's question is a prediction (it names parameters).
fn predicts(ask: Option<&Ask>) -> bool {
    ask.is_some_and(|a| !a.params.is_empty())
}

/// The shipped lessons that ask a prediction, by file stem.
pub fn lessons_with_predictions() -> Vec<&'static str> {
    super::builtin_files()
        .iter()
        .zip(super::builtin())
        .filter(|(_, l)| l.steps.iter().any(|s| predicts(s.ask.as_ref())))
        .map(|((stem, _), _)| *stem)
        .collect()
}

/// The lesson's predictions as they are put to a capture; `name` names the
/// lesson in errors. A lesson without a prediction, or none of whose
/// predictions whatif can run, is refused saying which and why.
pub fn plan(lesson: &Lesson, name: &str) -> Result<Plan, LessonError> {
    let mut plan = Plan {
        predictions: Vec::new(),
        scenario_steps: Vec::new(),
        refused: Vec::new(),
    };
    for (i, (step, (_, asked))) in lesson.steps.iter().zip(step_params(lesson)).enumerate() {
        let n = i + 1;
        let (Some(ask), Some(params)) = (step.ask.as_ref(), asked) else {
            plan.scenario_steps.push(n);
            continue;
        };
        if ask.kind == AskKind::Choice && ask.fact.is_none() {
            plan.refused.push((
                n,
                format!(
                    "its answer ({}) is written for scenario {} and names no fact a run of the capture could give",
                    ask.answer.as_deref().unwrap_or("-"),
                    lesson.scenario
                ),
            ));
            continue;
        }
        let sets: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        // Each change on its own: the refusal names the one whatif cannot set.
        if let Some(e) = sets
            .iter()
            .find_map(|s| whatif::check_sets(std::slice::from_ref(s)).err())
        {
            plan.refused
                .push((n, format!("whatif cannot make that change: {e}")));
            continue;
        }
        plan.predictions.push(Prediction {
            step: n,
            text: step.text.clone(),
            ask: ask.clone(),
            sets,
        });
    }
    if plan.predictions.is_empty() {
        if plan.refused.is_empty() {
            return Err(LessonError::NoPrediction {
                lesson: name.to_owned(),
                with: lessons_with_predictions(),
            });
        }
        return Err(LessonError::NoPredictionOnCapture {
            lesson: name.to_owned(),
            why: plan
                .refused
                .iter()
                .map(|(n, why)| format!("step {n}: {why}"))
                .collect(),
        });
    }
    Ok(plan)
}

/// A capture whose twin holds, ready to run predictions on.
#[derive(Debug)]
pub struct OnCapture {
    pub derived: Derived,
    /// The capture's own facts, its QPs numbered as in every run.
    pub capture_facts: Facts,
}

impl OnCapture {
    /// Analyse the capture at `path`, derive its twin and hold it against
    /// the capture; refused as `rocescope whatif` refuses.
    pub fn open(path: &Path) -> Result<OnCapture, LessonError> {
        let name = path.display().to_string();
        let cap = whatif::analyse_capture(path).map_err(|cause| LessonError::WhatIf { cause })?;
        let derived = whatif::derive(&cap, &name).map_err(|cause| LessonError::WhatIf { cause })?;
        let twin = whatif::run(&derived.scenario);
        let mismatches = whatif::check(
            &RunOutcome::of(&cap, &derived.qp_keys, true),
            &RunOutcome::of(&twin, &derived.qp_keys, false),
        );
        if !mismatches.is_empty() {
            return Err(LessonError::TwinDoesNotHold {
                capture: name,
                why: whatif::refusal_text(&mismatches),
            });
        }
        let capture_facts = numbered(
            facts(&cap.report, &cap.store.stats()),
            &cap.report,
            &derived.qp_keys,
            true,
        );
        Ok(OnCapture {
            derived,
            capture_facts,
        })
    }

    /// The facts of the twin run with `sets` (`KEY=VALUE`, as `whatif
    /// --set` takes them).
    pub fn changed_facts(&self, sets: &[String]) -> Result<Facts, LessonError> {
        let sc = whatif::changed(&self.derived.scenario, sets)
            .map_err(|cause| LessonError::WhatIf { cause })?;
        let run = whatif::run(&sc);
        Ok(numbered(
            facts(&run.report, &run.store.stats()),
            &run.report,
            &self.derived.qp_keys,
            false,
        ))
    }

    /// `QP 0x100 10.0.0.1 -> 10.0.0.2`: the capture's `qpN` (1-based).
    pub fn qp_name(&self, n: usize) -> Option<String> {
        let k = self.derived.qp_keys.get(n.checked_sub(1)?)?;
        Some(format!("QP {:#x} {} -> {}", k.dest_qp, k.src_ip, k.dst_ip))
    }

    /// Which of the capture's QPs `fact` of the changed run (`changed`) is
    /// about, in words.
    pub fn about(&self, fact: &str, changed: &Facts) -> String {
        let qp = |n: usize| match self.qp_name(n) {
            Some(q) => format!("qp{n}, the capture's {q}"),
            None => format!(
                "qp{n}, which the capture does not have (it has {})",
                self.derived.qp_keys.len()
            ),
        };
        if let Some((n, _)) = qp_fact(fact) {
            return qp(n);
        }
        let all = self.derived.qp_keys.len();
        for (kind, cause) in [("episode", "cause"), ("finding", "cause")] {
            let Some(rest) = fact.strip_prefix(kind) else {
                continue;
            };
            let Some((n, _)) = rest.split_once('.') else {
                continue;
            };
            let on = match changed.get(&format!("{kind}{n}.qp")) {
                Some(Value::Number(q)) => qp(*q as usize),
                _ => format!("any of the capture's {all} QP(s)"),
            };
            let what = match changed.get(&format!("{kind}{n}.{cause}")) {
                Some(c) => format!("a {c} {kind}"),
                None => format!("a {kind}"),
            };
            return format!("{kind}{n} of the changed run, {what} on {on}");
        }
        format!("the capture's {all} QP(s) together")
    }
}

/// `qp3.counters.acks` as (3, `counters.acks`).
fn qp_fact(fact: &str) -> Option<(usize, &str)> {
    let rest = fact.strip_prefix("qp")?;
    let (n, field) = rest.split_once('.')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((n.parse().ok()?, field))
}

/// The facts of a run with its QPs numbered as the capture's are (`keys`'
/// order): `qpN.*`, and the QP an episode or finding is on. A QP of the run
/// that is none of the capture's has no facts; the QPs keep the capture's
/// addresses and numbers.
fn numbered(f: Facts, report: &Report, keys: &[QpKey], capture: bool) -> Facts {
    // The run's QP (0-based, as `facts` numbers them) to the capture's.
    let to_key: Vec<Option<usize>> = report
        .qps
        .iter()
        .map(|q| keys.iter().position(|k| k.is(q, capture)))
        .collect();
    renumbered(f, &to_key, keys)
}

/// `f` with the run's `qpN` (and an episode's or finding's QP) the
/// capture's `to_key[N - 1] + 1`, and the capture's names for its QPs.
fn renumbered(f: Facts, to_key: &[Option<usize>], keys: &[QpKey]) -> Facts {
    let renumber = |n: usize| {
        n.checked_sub(1)
            .and_then(|i| to_key.get(i).copied().flatten())
            .map(|j| j + 1)
    };
    let mut out = Facts::new();
    for (k, v) in f {
        if let Some((n, field)) = qp_fact(&k) {
            if let Some(m) = renumber(n) {
                out.insert(format!("qp{m}.{field}"), v);
            }
            continue;
        }
        let on_qp = k.ends_with(".qp") && (k.starts_with("episode") || k.starts_with("finding"));
        match (on_qp, &v) {
            (true, Value::Number(n)) => {
                if let Some(m) = renumber(*n as usize) {
                    out.insert(k, Value::Number(m as f64));
                }
            }
            _ => {
                out.insert(k, v);
            }
        }
    }
    for (j, key) in keys.iter().enumerate() {
        let p = format!("qp{}", j + 1);
        for (field, v) in [
            ("src_ip", Value::Text(key.src_ip.clone())),
            ("dst_ip", Value::Text(key.dst_ip.clone())),
            ("dest_qp", Value::Number(f64::from(key.dest_qp))),
        ] {
            if let Some(slot) = out.get_mut(&format!("{p}.{field}")) {
                *slot = v;
            }
        }
    }
    out
}

/// How an answer to a prediction on a capture was judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub verdict: Verdict,
    /// The fact and its value in the changed run.
    pub fact: String,
    pub value: Value,
}

/// Judge `given` against the changed run's `facts`: a number against the
/// question's fact (within its tolerance), a choice against the fact's word
/// (the lesson's own `answer` is its scenario's). The verdict's text is the
/// lead only (`Right.`, `Not quite: the answer is 3.4.`): the lesson's
/// explanation is written for its scenario.
pub fn judge(ask: &Ask, facts: &Facts, given: &str) -> Result<Judged, AnswerError> {
    let fact = ask.fact.clone().unwrap_or_default();
    let Some(value) = facts.get(&fact).cloned() else {
        return Err(AnswerError::NotShown { fact });
    };
    let mut on_run = ask.clone();
    on_run.explain.clear();
    if ask.kind == AskKind::Choice {
        on_run.answer = Some(value.to_string());
    }
    let mut verdict = answer::judge(&on_run, facts, given)?;
    verdict.text = verdict.text.trim_end().to_owned();
    Ok(Judged {
        verdict,
        fact,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: &str, qpn: u32) -> QpKey {
        QpKey {
            src_ip: src.into(),
            dst_ip: "192.168.0.9".into(),
            dest_qp: qpn,
            sim_src: [0; 16],
            sim_dst: [0; 16],
            sim_dest_qp: qpn,
        }
    }

    #[test]
    fn a_run_s_qps_are_numbered_as_the_capture_s() {
        let keys = [key("192.168.0.1", 0x11), key("192.168.0.2", 0x22)];
        let f: Facts = [
            ("qp1.requests".to_owned(), Value::Number(7.0)),
            ("qp2.requests".to_owned(), Value::Number(3.0)),
            ("qp1.src_ip".to_owned(), Value::Text("10.0.0.2".into())),
            ("episode1.qp".to_owned(), Value::Number(1.0)),
            ("qps".to_owned(), Value::Number(2.0)),
        ]
        .into();
        // The run lists the capture's second QP first.
        let out = renumbered(f, &[Some(1), Some(0)], &keys);
        assert_eq!(out.get("qp2.requests"), Some(&Value::Number(7.0)));
        assert_eq!(out.get("qp1.requests"), Some(&Value::Number(3.0)));
        assert_eq!(
            out.get("qp2.src_ip"),
            Some(&Value::Text("192.168.0.2".into()))
        );
        assert_eq!(out.get("episode1.qp"), Some(&Value::Number(2.0)));
        assert_eq!(out.get("qps"), Some(&Value::Number(2.0)));
    }

    #[test]
    fn steps_that_are_not_predictions_are_the_scenario_s() {
        let (_, l) = super::super::find("13-window").unwrap();
        let p = plan(&l, "13-window").unwrap();
        assert_eq!(p.scenario_steps, vec![1, 2, 4]);
        assert_eq!(p.predictions.len(), 1);
        assert_eq!(p.predictions[0].step, 3);
        assert_eq!(p.predictions[0].sets, vec!["window_packets=32"]);
        let (_, l) = super::super::find("01-write").unwrap();
        let e = plan(&l, "01-write").unwrap_err().to_string();
        assert!(e.contains("01-write"), "{e}");
        assert!(e.contains("13-window"), "{e}");
    }

    #[test]
    fn a_choice_is_judged_on_the_fact_not_the_lesson_s_answer() {
        let ask = Ask {
            question: "what holds it back most?".into(),
            kind: AskKind::Choice,
            fact: Some("qp1.time.most".into()),
            choices: vec!["window_full".into(), "host_limited".into()],
            answer: Some("host_limited".into()),
            tolerance_pct: 0.0,
            params: [("window_packets".to_owned(), 128.0)].into(),
            hint: "h".into(),
            explain: "Written for the scenario.".into(),
        };
        let facts: Facts = [(
            "qp1.time.most".to_owned(),
            Value::Text("window_full".into()),
        )]
        .into();
        let j = judge(&ask, &facts, "window_full").unwrap();
        assert!(j.verdict.right);
        assert_eq!(j.verdict.text, "Right.");
        let j = judge(&ask, &facts, "host_limited").unwrap();
        assert_eq!(j.verdict.text, "Not quite: the answer is window_full.");
        assert_eq!(
            judge(&ask, &Facts::new(), "1").unwrap_err(),
            AnswerError::NotShown {
                fact: "qp1.time.most".into()
            }
        );
    }
}
