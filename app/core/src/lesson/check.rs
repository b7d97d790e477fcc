//! `lesson --check`: run a lesson's scenario headless (once per set of
//! parameters its predictions use) and evaluate every claim and question
//! on the analysis, naming the step that no longer holds.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rocescope_sim::Scenario;

use super::facts::{facts, holds};
use super::{AskKind, Lesson, LessonError, Value};
use crate::source::{Pace, spawn_sim_into};

/// Simulator parameters by name, as a prediction sets them.
pub type Params = BTreeMap<String, f64>;

/// The facts of one run.
pub type Facts = BTreeMap<String, Value>;

/// The lesson's scenario with `params` set: a shipped one, or a scenario
/// file beside a lesson read from a file.
pub fn scenario(lesson: &Lesson, params: &Params) -> Result<Scenario, LessonError> {
    let shipped = Scenario::builtin(&lesson.scenario)
        .map(Ok)
        .or_else(|| super::lesson_scenario(&lesson.scenario));
    let mut sc = match (shipped, &lesson.dir) {
        (Some(sc), _) => sc?,
        (None, Some(dir)) => {
            // As the course is laid out: a lesson's scenarios beside it.
            let name = &lesson.scenario;
            let file = format!("{name}.toml");
            let candidates = [
                dir.join(name),
                dir.join(&file),
                dir.join("scenarios").join(&file),
                dir.join("../scenarios").join(&file),
            ];
            let found = candidates.iter().find(|p| p.is_file()).ok_or_else(|| {
                LessonError::ScenarioNotFound {
                    lesson: lesson.title.clone(),
                    scenario: name.clone(),
                    tried: candidates.to_vec(),
                }
            })?;
            Scenario::load(found).map_err(|cause| LessonError::Scenario { cause })?
        }
        (None, None) => {
            return Err(LessonError::NoShippedScenario {
                lesson: lesson.title.clone(),
                scenario: lesson.scenario.clone(),
            });
        }
    };
    // A lesson is a clip: the scenario's finite run, whose steps the
    // lesson was written against, even when the scenario is a workload.
    let finite_ns = sc.duration_ns;
    sc.bound_to_ns(finite_ns);
    for (k, v) in params {
        sc.params
            .set_f64(k, *v)
            .map_err(|cause| LessonError::Param {
                scenario: lesson.scenario.clone(),
                cause,
            })?;
    }
    Ok(sc)
}

/// Run `sc` to its end as fast as the machine goes and return its facts:
/// with capture points, the first point's capture's and the points'.
pub fn run(sc: Scenario) -> Result<Facts, LessonError> {
    if !sc.points.is_empty() {
        let run = super::points::run(sc)?;
        let a = &run.points[0];
        let mut f = facts(&a.analysis.finish_report(), &a.store.stats());
        f.extend(super::facts::points_facts(&run.report));
        return Ok(f);
    }
    let limits = crate::session::SessionLimits::default();
    let store = limits
        .live_store(0)
        .map_err(|cause| LessonError::Store { cause })?;
    let (store, analysis, handle) = spawn_sim_into(store, sc, Pace::Fast, None);
    let status = handle.status();
    while !status.finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(2));
    }
    store.wait();
    if let Some(e) = status.error.lock().ok().and_then(|e| e.clone()) {
        return Err(LessonError::Run { message: e });
    }
    let report = analysis
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .report();
    Ok(facts(&report, &store.stats()))
}

/// One step's problems: claims that do not hold, questions whose answer
/// the run does not give.
#[derive(Debug, Clone, PartialEq)]
pub struct StepProblem {
    /// 1-based.
    pub step: usize,
    pub problem: String,
}

/// The runs a lesson's steps are shown on: the scenario as shipped, then
/// with each prediction's parameters added (answering one reruns it).
pub fn step_params(lesson: &Lesson) -> Vec<(Params, Option<Params>)> {
    let mut current = Params::new();
    let mut out = Vec::new();
    for s in &lesson.steps {
        let shown = current.clone();
        let asked = s.ask.as_ref().filter(|a| !a.params.is_empty()).map(|a| {
            current.extend(a.params.clone());
            current.clone()
        });
        out.push((shown, asked));
    }
    out
}

/// Check every step of `lesson`; empty when all of it holds.
pub fn check(lesson: &Lesson) -> Result<Vec<StepProblem>, LessonError> {
    let mut runs: BTreeMap<String, Facts> = BTreeMap::new();
    let mut facts_of = |p: &Params| -> Result<Facts, LessonError> {
        let key = format!("{p:?}");
        if let Some(f) = runs.get(&key) {
            return Ok(f.clone());
        }
        let f = run(scenario(lesson, p)?)?;
        runs.insert(key, f.clone());
        Ok(f)
    };
    let mut problems = Vec::new();
    for (i, (step, (shown, asked))) in lesson.steps.iter().zip(step_params(lesson)).enumerate() {
        let mut say = |problem: String| {
            problems.push(StepProblem {
                step: i + 1,
                problem,
            })
        };
        if let Some(f) = &step.filter
            && let Err(e) = crate::filter::Filter::parse(f)
        {
            say(format!("its filter {f:?} does not parse: {e}"));
        }
        let facts = facts_of(&shown)?;
        for c in &step.checks {
            if let Err(e) = holds(c, &facts) {
                say(e.to_string());
            }
        }
        let Some(a) = &step.ask else { continue };
        let facts = match &asked {
            Some(p) => facts_of(p)?,
            None => facts,
        };
        match (a.kind, &a.fact) {
            // A choice naming a fact: its answer is that fact's word.
            (AskKind::Choice, Some(fact)) => {
                let want = a.answer.clone().unwrap_or_default();
                match facts.get(fact) {
                    Some(Value::Text(t)) if *t == want => {}
                    Some(v) => say(format!(
                        "the question's answer is {want}, but its fact {fact} is {v}"
                    )),
                    None => say(format!(
                        "the question's answer {fact} is not a fact of the run"
                    )),
                }
            }
            (AskKind::Choice, None) => {}
            (_, Some(fact)) => match facts.get(fact) {
                Some(Value::Number(_)) => {}
                Some(v) => say(format!("the question's answer {fact} is {v}, not a number")),
                None => say(format!(
                    "the question's answer {fact} is not a fact of the run"
                )),
            },
            (_, None) => say("the question names no fact".into()),
        }
    }
    Ok(problems)
}
