//! A capture opened for a command: indexed in the store as the workbench
//! does (with the RC analysis where asked), and what could not be read,
//! told the same way by every command.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rocescope_data::Source;
use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::{AnalysisConfig, Report};
use rocescope_replay::CaptureError;
use rocescope_replay::CaptureWarning;
use rocescope_replay::store::{Analyzer, RcAnalyzer, Store, StoreError};
use rocescope_replay::wave::WaveOptions;
use serde_json::{Value, json};

use super::args::DecodeOpts;
use rocescope_core::session::SessionLimits;

/// Open `file` in a store and wait for the index, drawing a progress bar on
/// a terminal when indexing takes a while.
pub fn open_store(
    file: &Path,
    cfg: DecodeConfig,
    analyzer: Box<dyn Analyzer>,
    limits: &SessionLimits,
) -> anyhow::Result<Arc<Store>> {
    open_store_with(file, cfg, analyzer, &WaveOptions::default(), limits)
}

/// [`open_store`] with how a waveform or ILA capture is read. The index
/// stays within `limits` (older rows on disk past its share).
pub fn open_store_with(
    file: &Path,
    cfg: DecodeConfig,
    analyzer: Box<dyn Analyzer>,
    wave: &WaveOptions,
    limits: &SessionLimits,
) -> anyhow::Result<Arc<Store>> {
    let store = match limits.open_file(file, cfg, analyzer, wave) {
        Ok(s) => s,
        // The open error already names the path; the others say where in it.
        Err(e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_))) => {
            return Err(e.into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(file.display().to_string())),
    };
    if let Some(k) = store.index_dir_status() {
        for line in [k.stale_line(), k.analysis_stale_line()]
            .into_iter()
            .flatten()
        {
            eprintln!("rocescope: {line}");
        }
    }
    wait_indexed(&store);
    if let Some(k) = store.index_dir_status().filter(|k| k.error.is_some()) {
        eprintln!("rocescope: warning: {}: {}", file.display(), k.summary());
    }
    Ok(store)
}

/// Open `file` as the workbench does, with the RC analysis (its time by
/// state when `time_by_state`), and take its report once indexing is done.
pub fn open_analysed(
    file: &Path,
    roce_ports: Vec<u16>,
    limits: &SessionLimits,
    time_by_state: bool,
) -> anyhow::Result<(std::sync::Arc<rocescope_replay::store::Store>, Report)> {
    let analysis = AnalysisConfig {
        time_by_state,
        ..AnalysisConfig::default()
    };
    let (store, analysis) =
        index_analysed(file, roce_ports, &WaveOptions::default(), analysis, limits)?;
    Ok((store, analysis.finish_report()))
}

/// `file` indexed with the RC analysis under `config` (its link rate 0
/// for the source's or the fastest the capture shows), and the analysis.
pub fn index_analysed(
    file: &Path,
    roce_ports: Vec<u16>,
    wave: &WaveOptions,
    config: AnalysisConfig,
    limits: &SessionLimits,
) -> anyhow::Result<(std::sync::Arc<rocescope_replay::store::Store>, RcAnalyzer)> {
    let analysis = RcAnalyzer::with_config(config);
    let cfg = DecodeConfig {
        extra_roce_ports: roce_ports,
    };
    let store = open_store_with(file, cfg, Box::new(analysis.clone()), wave, limits)?;
    Ok((store, analysis))
}

/// The capture `file` aligned with the waveform `wave` (`--wave`), when
/// one is given; an error names both.
pub fn align_wave(
    file: &Path,
    wave: Option<&Path>,
    options: &WaveOptions,
) -> anyhow::Result<Option<rocescope_replay::wave::Alignment>> {
    use anyhow::Context as _;
    wave.map(|w| {
        rocescope_replay::wave::align(file, w, options)
            .with_context(|| format!("aligning {} with {}", w.display(), file.display()))
    })
    .transpose()
}

/// Says on stderr what of `file` could not be read (a cut record, a
/// damaged block): the whole frames before it were read and are what the
/// command shows. (Indexing that stopped early is the command's error:
/// [`indexing_error`].)
pub fn warn_unread(file: &Path, warnings: &[CaptureWarning]) {
    for w in warnings {
        eprintln!(
            "rocescope: warning: {}: {} (at byte {})",
            file.display(),
            w.message,
            w.offset
        );
    }
}

/// The store's reader warnings, told on stderr once indexing is done.
pub fn warn_store(file: &Path, store: &Store) {
    warn_unread(file, &store.warnings());
}

/// The reader warnings, for a `--json` output: `[{offset, message}]`.
pub fn warnings_json(warnings: &[CaptureWarning]) -> Value {
    warnings
        .iter()
        .map(|w| json!({"offset": w.offset, "message": w.message}))
        .collect::<Vec<_>>()
        .into()
}

/// Why indexing `file` stopped before its end, naming the file, `None`
/// when it read to the end: the command fails with it, after its output
/// of what was read.
pub fn indexing_error(file: &Path, store: &Store) -> Option<String> {
    let e = store.progress().error?;
    let name = file.display().to_string();
    Some(if e.contains(&name) {
        e
    } else {
        format!("{name}: indexing stopped early: {e}")
    })
}

/// An ILA capture's windows as JSON (`info`, `stats`).
pub fn ila_json(ila: &rocescope_replay::wave::ila::IlaSummary) -> Value {
    json!({
        "sample_clock_hz": ila.sample_clock_hz,
        "windows": ila.windows.iter().map(|w| json!({
            "first_sample": w.first_sample, "samples": w.samples,
            "first_ns": ila.sample_ns(w.first_sample),
            "trigger_sample": w.trigger_sample,
        })).collect::<Vec<_>>(),
        "triggers_ns": ila.triggers_ns(),
        "cut_at_window_start": ila.cut_at_start,
        "cut_at_window_end": ila.cut_at_end,
        "between_windows": "unknown: the windows' samples are placed end to end",
        "summary": ila.describe(),
    })
}

/// A capture opened with the RC analysis, as the workbench opens it.
pub struct Opened {
    pub store: Arc<Store>,
    pub report: Report,
    pub name: String,
    /// Why indexing stopped early: the command fails after its output.
    pub failed: Option<String>,
}

impl Opened {
    /// `file` opened with the RC analysis; its QPs' time by state only
    /// when `time_by_state` (what reads it: the `qps`, `qp_states` and
    /// `findings` tables, [`rocescope_data::Table::reads_time_by_state`]),
    /// which costs 1.2-1.6x the indexing (BENCHMARKS.md, "Time by state").
    pub fn open(
        file: &Path,
        decode: &DecodeOpts,
        limits: &SessionLimits,
        time_by_state: bool,
    ) -> anyhow::Result<Opened> {
        let (store, report) =
            open_analysed(file, decode.roce_ports.clone(), limits, time_by_state)?;
        warn_store(file, &store);
        let failed = indexing_error(file, &store);
        let name = file
            .file_stem()
            .map_or_else(|| "capture".into(), |s| s.to_string_lossy().into_owned());
        Ok(Opened {
            store,
            report,
            name,
            failed,
        })
    }

    /// Ok when the whole file was read, else its error (after the output
    /// of what was read).
    pub fn finished(&self) -> anyhow::Result<()> {
        self.failed
            .as_ref()
            .map_or(Ok(()), |e| Err(anyhow::anyhow!(e.clone())))
    }

    pub fn source(&self) -> Source<'_> {
        Source {
            store: &self.store,
            report: &self.report,
            capture: &self.name,
            extra_profiler: &[],
            points: None,
        }
    }
}

/// Several capture points opened as one session: each file indexed as the
/// workbench indexes it (its own store and RC analysis), then the points
/// analysis over all of them.
pub struct OpenedPoints {
    pub points: Vec<rocescope_replay::points::Point>,
    pub files: Vec<std::path::PathBuf>,
    pub report: rocescope_replay::points::PointsReport,
    /// The first point's own analysis (what `stats` shows for one
    /// capture), once [`OpenedPoints::finish`] took it.
    pub first: Report,
    /// Why indexing a point stopped early: the command fails after its
    /// output.
    pub failed: Option<String>,
}

impl OpenedPoints {
    pub fn open(
        args: &super::args::PointArgs,
        decode: &DecodeOpts,
        wave: &WaveOptions,
        limits: &SessionLimits,
    ) -> anyhow::Result<OpenedPoints> {
        use rocescope_replay::points::{Point, PointsError, analyse_points};
        if let Some(dir) = &limits.index_dir {
            eprintln!(
                "rocescope: warning: --index-dir {} is not taken with --point: each point's capture is indexed",
                dir.display()
            );
        }
        let mut points = Vec::new();
        // The points share the cap: each index gets its part.
        let n = args.points.len().max(1) as u64;
        for spec in &args.points {
            if points.iter().any(|p: &Point| p.name == spec.name) {
                anyhow::bail!(
                    "--point {}: the name {} is given twice",
                    spec.name,
                    spec.name
                );
            }
            let point = match Point::open(
                &spec.name,
                &spec.file,
                decode.config(),
                wave,
                spec.offset_ns,
                AnalysisConfig {
                    // 0: the source's rate, else the fastest the capture
                    // shows.
                    link_gbps: args.link_gbps.unwrap_or(0.0),
                    ..AnalysisConfig::default()
                },
                Some({
                    let c = limits.file_spill_config();
                    rocescope_replay::store::SpillConfig {
                        max_memory_bytes: c.max_memory_bytes / n,
                        ..c
                    }
                }),
            ) {
                Ok(p) => p,
                Err(e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_))) => {
                    return Err(anyhow::Error::new(e).context(format!("--point {}", spec.name)));
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!(
                        "--point {}: {}",
                        spec.name,
                        spec.file.display()
                    )));
                }
            };
            points.push(point);
        }
        let mut failed = None;
        for (p, spec) in points.iter().zip(&args.points) {
            wait_indexed(&p.store);
            warn_store(&spec.file, &p.store);
            if failed.is_none() {
                failed = indexing_error(&spec.file, &p.store);
            }
        }
        let report = analyse_points(&points, &args.config()).map_err(|e| match e {
            // Name the files as well as the points.
            PointsError::NothingShared(_) => {
                let named: Vec<String> = args
                    .points
                    .iter()
                    .map(|p| format!("{} ({})", p.name, p.file.display()))
                    .collect();
                anyhow::anyhow!(
                    "{} share no traffic: not the same exchange? (no frame was seen at two of them)",
                    named.join(" and ")
                )
            }
            other => anyhow::Error::new(other),
        })?;
        // The first point's analysis is kept whole until asked for (a
        // workbench reads it as it goes; `stats`, `export` and `report`
        // take it once: `finish`).
        Ok(OpenedPoints {
            files: args.points.iter().map(|p| p.file.clone()).collect(),
            points,
            report,
            first: Report::default(),
            failed,
        })
    }

    /// [`OpenedPoints::open`] then [`OpenedPoints::finish`], for a command
    /// that reports once and reads no waveforms (`export`, `report`).
    pub fn open_finished(
        args: &super::args::PointArgs,
        decode: &DecodeOpts,
        limits: &SessionLimits,
    ) -> anyhow::Result<OpenedPoints> {
        Ok(Self::open(args, decode, &WaveOptions::default(), limits)?.finish())
    }

    /// The first point's own analysis moved out into `first` (its source
    /// has ended), for a command that reports once.
    pub fn finish(mut self) -> OpenedPoints {
        if let Some(p) = self.points.first() {
            self.first = p.analysis.finish_report();
        }
        self
    }

    /// Ok when every file was read whole, else the first one's error.
    pub fn finished(&self) -> anyhow::Result<()> {
        self.failed
            .as_ref()
            .map_or(Ok(()), |e| Err(anyhow::anyhow!(e.clone())))
    }

    /// A workbench's model of the first point's capture, with the points'
    /// analysis beside it (`open --point`, `gui --point`).
    pub fn into_model(self) -> rocescope_core::Model {
        let OpenedPoints {
            mut points,
            files,
            mut report,
            failed,
            ..
        } = self;
        // A point read only in part: the Overview says so beside what was
        // read.
        report.warnings.extend(failed);
        let first = points.swap_remove(0);
        let name = files
            .first()
            .map_or_else(|| first.name.clone(), |f| f.display().to_string());
        let mut source = rocescope_core::source::SourceHandle::file(name);
        source.path = files.first().cloned();
        let mut model = rocescope_core::Model::new(first.store, first.analysis, source);
        model.set_points(report);
        model
    }

    /// The first point's tables, with the points' own (`losses`,
    /// `paths`).
    pub fn source(&self) -> Source<'_> {
        Source {
            store: &self.points[0].store,
            report: &self.first,
            capture: &self.points[0].name,
            extra_profiler: &[],
            points: Some(&self.report),
        }
    }
}

/// Wait for a store's index, drawing a progress bar on a terminal.
fn wait_indexed(store: &Store) {
    let tty = std::io::stderr().is_terminal();
    let mut drew = false;
    // Woken at the end, not at the next tick: a 100 ms sleep made every
    // `info` and `stats` take a whole number of ticks.
    while !store.wait_timeout(Duration::from_millis(100)) {
        let p = store.progress();
        if tty && !p.complete && p.bytes_total > 0 {
            let pct = p.bytes_done as f64 * 100.0 / p.bytes_total as f64;
            let width = 30;
            let filled = ((pct / 100.0) * width as f64) as usize;
            eprint!(
                "\rindexing [{}{}] {pct:5.1}% {} packets",
                "#".repeat(filled.min(width)),
                " ".repeat(width - filled.min(width)),
                p.rows
            );
            drew = true;
        }
    }
    if drew {
        eprint!("\r{}\r", " ".repeat(70));
    }
}
