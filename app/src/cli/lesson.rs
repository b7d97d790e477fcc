//! `rocescope lesson`: list the course, open a lesson in the workbench,
//! check that every step still holds on its scenario, list a scenario's
//! facts for a teacher writing a step, export a lesson's run for a
//! Wireshark assignment, and ask a lesson's predictions about the user's
//! own capture.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rocescope_core::lesson::{self, Lesson, check};
use rocescope_core::source::{self, Pace, SourceSpec, steer};
use rocescope_replay::text::counted;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A shipped lesson (`03-go-back-n`, `go-back-n` or `3`) or a lesson TOML file.
    name: Option<String>,
    /// List the lessons with their scenario and topic.
    #[arg(long)]
    list: bool,
    /// Run the lesson headless and check every claim and question of its
    /// steps against the analysis; fails naming the step that does not hold.
    #[arg(long)]
    check: bool,
    /// With --check: every shipped lesson.
    #[arg(long)]
    all: bool,
    /// Print every fact of the lesson's scenario run (what a step can check or ask).
    #[arg(long)]
    facts: bool,
    /// Write the lesson's run as pcapng and its report into DIR.
    #[arg(long, value_name = "DIR")]
    export: Option<PathBuf>,
    /// Ask the lesson's predictions about this capture instead of its
    /// scenario: each is judged on the capture's twin (as `rocescope
    /// whatif` derives it) run with the question's parameters. Answers are
    /// given with --answer, then read a line each from standard input
    /// (`hint` shows the hint); the other steps, about the lesson's
    /// scenario, are not asked.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["list", "check", "all", "facts", "export"])]
    capture: Option<PathBuf>,
    /// With --capture: the answer to the next prediction, in order;
    /// repeatable (for scripts).
    #[arg(long, value_name = "ANSWER", requires = "capture")]
    answer: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.list {
        let all: Vec<(&str, &Lesson)> = lesson::builtin_files()
            .iter()
            .map(|(stem, _)| *stem)
            .zip(lesson::builtin())
            .collect();
        let stem_w = all.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
        let title_w = all
            .iter()
            .map(|(_, l)| l.title.chars().count())
            .max()
            .unwrap_or(0);
        let scenario_w = all.iter().map(|(_, l)| l.scenario.len()).max().unwrap_or(0);
        for (stem, l) in &all {
            let asks = l.steps.iter().filter(|s| s.ask.is_some()).count();
            writeln!(
                out,
                "{stem:<stem_w$}  {:<title_w$}  scenario {:<scenario_w$}  {}, {}: {}",
                l.title,
                l.scenario,
                counted(l.steps.len() as u64, "step", "steps"),
                counted(asks as u64, "question", "questions"),
                l.topic
            )?;
        }
        return Ok(());
    }
    if args.check && args.all {
        let mut failed = 0;
        for (i, (stem, _)) in lesson::builtin_files().iter().enumerate() {
            let Some(l) = lesson::builtin().get(i) else {
                bail!("assets/lessons/{stem}.toml does not parse");
            };
            failed += report_check(&mut out, stem, l)?;
        }
        if failed > 0 {
            bail!("{failed} step(s) of the course no longer hold");
        }
        return Ok(());
    }
    let Some(name) = &args.name else {
        bail!("name a lesson (rocescope lesson --list), or use --list or --check --all");
    };
    let (index, l) = find(name)?;
    if let Some(capture) = &args.capture {
        // A shipped lesson by its file stem, whichever way it was named.
        let label = index
            .and_then(|i| lesson::builtin_files().get(i))
            .map_or(name.as_str(), |(stem, _)| *stem);
        let mut input = Answers {
            given: args.answer.iter(),
            rest: std::io::stdin().lock(),
        };
        return on_capture(label, &l, capture, &mut input, &mut out);
    }
    if args.check {
        if report_check(&mut out, name, &l)? > 0 {
            bail!(
                "{name}: the lesson no longer holds on scenario {}",
                l.scenario
            );
        }
        return Ok(());
    }
    if args.facts {
        let facts =
            check::run(check::scenario(&l, &Default::default()).map_err(anyhow::Error::msg)?)
                .map_err(anyhow::Error::msg)?;
        for (k, v) in facts {
            writeln!(out, "{k} = {v}")?;
        }
        return Ok(());
    }
    if let Some(dir) = &args.export {
        return export(&l, dir, &mut out);
    }
    let Some(index) = index else {
        bail!(
            "{name}: a lesson file is checked (--check) or listed (--facts); the workbench opens shipped lessons"
        );
    };
    open(&l, index)
}

/// A shipped lesson by name, or a lesson file.
fn find(name: &str) -> anyhow::Result<(Option<usize>, Lesson)> {
    if let Some((i, l)) = lesson::find(name) {
        return Ok((Some(i), l));
    }
    let path = Path::new(name);
    if path.extension().is_some_and(|e| e == "toml") {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut l = lesson::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        l.dir = path.parent().map(Path::to_path_buf);
        return Ok((None, l));
    }
    bail!("no lesson {name:?}: see rocescope lesson --list")
}

/// Check one lesson and print the outcome; the number of failing steps.
fn report_check(out: &mut impl Write, name: &str, l: &Lesson) -> anyhow::Result<usize> {
    let problems = check::check(l).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let claims: usize = l
        .steps
        .iter()
        .map(|s| s.checks.len() + usize::from(s.ask.is_some()))
        .sum();
    if problems.is_empty() {
        writeln!(
            out,
            "{name}: ok ({} steps, {claims} checks on {})",
            l.steps.len(),
            l.scenario
        )?;
    }
    for p in &problems {
        writeln!(out, "{name}: step {}: {}", p.step, p.problem)?;
    }
    Ok(problems.len())
}

/// The lesson's run as pcapng (Wireshark opens it) and its report.
fn export(l: &Lesson, dir: &Path, out: &mut impl Write) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let pcapng = dir.join(format!("{}.pcapng", l.scenario));
    let sc = check::scenario(l, &Default::default()).map_err(anyhow::Error::msg)?;
    let file = std::fs::File::create(&pcapng)
        .with_context(|| format!("cannot create {}", pcapng.display()))?;
    let writer = rocescope_replay::PcapngWriter::new(std::io::BufWriter::new(file))
        .with_context(|| format!("writing {}", pcapng.display()))?;
    let (store, _, handle) = source::spawn_sim(sc, Pace::Fast, Some(writer));
    let status = handle.status();
    while !status.finished.load(std::sync::atomic::Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    store.wait();
    if let Some(e) = status.error.lock().ok().and_then(|e| e.clone()) {
        bail!("scenario {}: {e}", l.scenario);
    }
    drop(handle);
    // The report is of the file as written: what the student will open.
    let analysis = rocescope_replay::store::RcAnalyzer::default();
    let store = crate::cli::capture::open_store(
        &pcapng,
        Default::default(),
        Box::new(analysis.clone()),
        &Default::default(),
    )?;
    let report = analysis
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .report();
    let name = pcapng.display().to_string();
    let input = rocescope_report::Input {
        name: &name,
        store: &store,
        report: &report,
        points: None,
    };
    let report_dir = dir.join("report");
    let written = rocescope_report::write(&input, &report_dir)
        .with_context(|| format!("writing the report into {}", report_dir.display()))?;
    writeln!(out, "{}", pcapng.display())?;
    writeln!(out, "{}", written.index_html.display())?;
    Ok(())
}

/// The answers to a lesson's predictions: those given on the command line,
/// then a line each from `rest`.
struct Answers<'a, R> {
    given: std::slice::Iter<'a, String>,
    rest: R,
}

impl<R: std::io::BufRead> Answers<'_, R> {
    /// The next answer, shown after the prompt when it was given on the
    /// command line (the terminal shows a typed one); `None` at the end.
    fn next(&mut self, out: &mut impl Write) -> anyhow::Result<Option<String>> {
        write!(out, "> ")?;
        if let Some(a) = self.given.next() {
            writeln!(out, "{a}")?;
            return Ok(Some(a.clone()));
        }
        out.flush()?;
        let mut line = String::new();
        if self.rest.read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(None);
        }
        Ok(Some(line))
    }
}

/// The lesson's predictions asked about `capture`, answered from `input`.
fn on_capture(
    name: &str,
    l: &Lesson,
    capture: &Path,
    input: &mut Answers<'_, impl std::io::BufRead>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    use rocescope_core::lesson::capture::{self, OnCapture};
    // The lesson is refused before the capture is read and its twin run.
    let plan = capture::plan(l, name)?;
    writeln!(
        out,
        "{}: its predictions asked about {} (the lesson's scenario is {})",
        l.title,
        capture.display(),
        l.scenario
    )?;
    // Its errors name the capture.
    let on = OnCapture::open(capture)?;
    writeln!(
        out,
        "The capture's twin holds (per QP goodput within {:.0}% and the same episodes by cause): each prediction runs it with the question's changes, as `rocescope whatif --set` does.",
        rocescope_sim::whatif::TWIN_GOODPUT_TOLERANCE * 100.0
    )?;
    writeln!(
        out,
        "The lesson's qp1, qp2, ... are the capture's QPs in the order `rocescope stats` lists them:"
    )?;
    for n in 1..=on.derived.qp_keys.len() {
        if let Some(q) = on.qp_name(n) {
            writeln!(out, "  qp{n} = {q}")?;
        }
    }
    let steps = |v: &[usize]| {
        v.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !plan.scenario_steps.is_empty() {
        writeln!(
            out,
            "Not asked: step(s) {} are about scenario {}, not your capture; their checks are not run (`rocescope lesson {name}` shows them).",
            steps(&plan.scenario_steps),
            l.scenario
        )?;
    }
    for (n, why) in &plan.refused {
        writeln!(out, "Not asked: step {n}'s prediction: {why}.")?;
    }
    let mut right = 0;
    let mut judged = 0;
    for p in &plan.predictions {
        writeln!(out)?;
        writeln!(out, "Step {}: {}", p.step, p.text.trim())?;
        let fact = p.ask.fact.as_deref().unwrap_or("");
        let changed = on.changed_facts(&p.sets)?;
        let changes = p.sets.join(", ");
        if !changed.contains_key(fact) {
            writeln!(
                out,
                "  Not asked: the run of your capture's twin with {changes} has no fact {fact} to judge it by."
            )?;
            continue;
        }
        writeln!(out, "  About {}.", on.about(fact, &changed))?;
        if let Some(now) = on.capture_facts.get(fact) {
            writeln!(out, "  On your capture, {fact} is {now}.")?;
        }
        writeln!(out, "  {}", p.ask.question)?;
        writeln!(
            out,
            "  (on your capture's twin with {changes}; {}, or `hint`)",
            match p.ask.kind {
                lesson::AskKind::Choice => format!("one of: {}", p.ask.choices.join(", ")),
                _ => "a number".to_owned(),
            }
        )?;
        loop {
            let Some(line) = input.next(out)? else {
                bail!(
                    "step {}: no answer (standard input ended); {right} of {judged} answered right",
                    p.step
                );
            };
            if matches!(line.trim(), "hint" | "?") {
                writeln!(out, "  hint: {}", p.ask.hint)?;
                continue;
            }
            match capture::judge(&p.ask, &changed, &line) {
                Ok(j) => {
                    judged += 1;
                    right += usize::from(j.verdict.right);
                    writeln!(out, "  {}", j.verdict.text)?;
                    let within = match p.ask.kind {
                        lesson::AskKind::Choice => String::new(),
                        _ if p.ask.tolerance_pct > 0.0 => {
                            format!(", within {}%", p.ask.tolerance_pct)
                        }
                        _ => String::new(),
                    };
                    writeln!(
                        out,
                        "  Judged on your capture's twin with {changes}: {} is {}{within}.",
                        j.fact, j.value
                    )?;
                    writeln!(
                        out,
                        "  The lesson explains, for its scenario {}: {}",
                        l.scenario,
                        p.ask.explain.trim()
                    )?;
                    break;
                }
                // The student may answer again.
                Err(e) => writeln!(out, "  {e}")?,
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "{right} of {judged} prediction(s) on {} right.",
        capture.display()
    )?;
    Ok(())
}

/// The terminal workbench with the lesson open on its scenario.
fn open(l: &Lesson, index: usize) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        bail!("the workbench needs a terminal; for scripts use `rocescope lesson NAME --check`");
    }
    let sc = check::scenario(l, &Default::default()).map_err(anyhow::Error::msg)?;
    let spec = SourceSpec::Sim {
        pace: Pace::for_duration(sc.duration_ns),
        scenario: Box::new(sc),
        record: None,
    };
    let mut model = source::open(spec, &Default::default())?;
    model.apply(rocescope_core::Command::OpenLesson(index));
    steer(&mut model);
    crate::tui::run(model)
}
