//! `rocescope lesson`: list the course, open a lesson in the workbench,
//! check that every step still holds on its scenario, list a scenario's
//! facts for a teacher writing a step, and export a lesson's run for a
//! Wireshark assignment.

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
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.list {
        let all: Vec<(&str, Lesson)> = lesson::builtin_files()
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
            let Some(l) = lesson::builtin().into_iter().nth(i) else {
                bail!("assets/lessons/{stem}.toml does not parse");
            };
            failed += report_check(&mut out, stem, &l)?;
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
