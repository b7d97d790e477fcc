//! A capture opened for a command: indexed in the store as the workbench
//! does (with the RC analysis where asked), and what could not be read,
//! told the same way by every command.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rocescope_data::Source;
use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::Report;
use rocescope_replay::CaptureError;
use rocescope_replay::CaptureWarning;
use rocescope_replay::store::{Analyzer, RcAnalyzer, Store, StoreError};
use serde_json::{Value, json};

use super::args::DecodeOpts;

/// Open `file` in a store and wait for the index, drawing a progress bar on
/// a terminal when indexing takes a while.
pub fn open_store(
    file: &Path,
    cfg: DecodeConfig,
    analyzer: Box<dyn Analyzer>,
) -> anyhow::Result<Arc<Store>> {
    let store = match Store::open(file, cfg, analyzer) {
        Ok(s) => s,
        // The open error already names the path; the others say where in it.
        Err(e @ StoreError::Capture(CaptureError::Open { .. } | CaptureError::Wave(_))) => {
            return Err(e.into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(file.display().to_string())),
    };
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
    Ok(store)
}

/// Open `file` as the workbench does, with the RC analysis, and take its
/// report once indexing is done.
pub fn open_analysed(
    file: &Path,
    roce_ports: Vec<u16>,
) -> anyhow::Result<(std::sync::Arc<rocescope_replay::store::Store>, Report)> {
    let (store, analysis) = index_analysed(file, roce_ports)?;
    Ok((store, analysis.finish_report()))
}

/// `file` indexed with the RC analysis, and the analysis.
pub fn index_analysed(
    file: &Path,
    roce_ports: Vec<u16>,
) -> anyhow::Result<(std::sync::Arc<rocescope_replay::store::Store>, RcAnalyzer)> {
    let analysis = RcAnalyzer::default();
    let cfg = DecodeConfig {
        extra_roce_ports: roce_ports,
    };
    let store = open_store(file, cfg, Box::new(analysis.clone()))?;
    Ok((store, analysis))
}

/// Says on stderr what of `file` could not be read (a cut record, a
/// damaged block, indexing stopped early): the whole frames before it were
/// read and are what the command shows.
pub fn warn_unread(file: &Path, warnings: &[CaptureWarning], error: Option<&str>) {
    for w in warnings {
        eprintln!(
            "rocescope: warning: {}: {} (at byte {})",
            file.display(),
            w.message,
            w.offset
        );
    }
    if let Some(e) = error {
        eprintln!(
            "rocescope: warning: {}: indexing stopped early: {e}",
            file.display()
        );
    }
}

/// The store's reading problems, told on stderr once indexing is done.
pub fn warn_store(file: &Path, store: &Store) {
    warn_unread(file, &store.warnings(), store.progress().error.as_deref());
}

/// What could not be read, for a `--json` output: `warnings` (offset,
/// message) and `error` (why indexing stopped early, or null).
pub fn unread_json(warnings: &[CaptureWarning], error: Option<&str>) -> (Value, Value) {
    (
        warnings
            .iter()
            .map(|w| json!({"offset": w.offset, "message": w.message}))
            .collect::<Vec<_>>()
            .into(),
        error.map_or(Value::Null, |e| e.into()),
    )
}

/// A capture opened with the RC analysis, as the workbench opens it.
pub struct Opened {
    pub store: Arc<Store>,
    pub report: Report,
    pub name: String,
}

impl Opened {
    pub fn open(file: &Path, decode: &DecodeOpts) -> anyhow::Result<Opened> {
        let (store, report) = open_analysed(file, decode.roce_ports.clone())?;
        warn_store(file, &store);
        let name = file
            .file_stem()
            .map_or_else(|| "capture".into(), |s| s.to_string_lossy().into_owned());
        Ok(Opened {
            store,
            report,
            name,
        })
    }

    pub fn source(&self) -> Source<'_> {
        Source {
            store: &self.store,
            report: &self.report,
            capture: &self.name,
            extra_profiler: &[],
        }
    }
}
