//! The capture report: one self-contained `index.html` (inline CSS, no
//! script, no network) with the summary, the per-QP table, the findings and
//! the retransmission episodes, and plots beside it as PNG (for the page)
//! and SVG (for print and zoom): throughput per QP, episodes on the
//! timeline, the ACK round-trip distribution, window occupancy and a ladder
//! diagram of the worst episode.
//!
//! UI-free: it reads a [`Store`] and the RC analysis [`Report`], and writes
//! files. `rocescope report FILE -o DIR` is the command that drives it.

mod html;
mod ladder;
mod plots;
mod tables;
mod view;

use std::path::{Path, PathBuf};

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::Report;
use rocescope_replay::store::{RcAnalyzer, Store, StoreError};

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Open(#[from] StoreError),
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot draw the {plot} plot: {message}")]
    Plot { plot: &'static str, message: String },
    #[error("the bundled plot font did not load")]
    Font,
}

/// What a report is made from.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// What the page calls the capture (its path as given).
    pub name: &'a str,
    /// The indexed capture: rows for the ladder, counters for the summary.
    pub store: &'a Store,
    /// The RC analysis of the same capture.
    pub report: &'a Report,
    /// A session of several capture points, this capture the first: the
    /// page gets a section of its own (clocks, segments, losses).
    pub points: Option<&'a rocescope_replay::points::PointsReport>,
}

/// The files a report consists of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub index_html: PathBuf,
    /// Every image the page links, PNG and SVG.
    pub images: Vec<PathBuf>,
}

/// Write the report for `input` into `out_dir` (created if missing).
pub fn write(input: &Input<'_>, out_dir: &Path) -> Result<Written, ReportError> {
    std::fs::create_dir_all(out_dir).map_err(|source| ReportError::Write {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let view = view::View::new(input);
    let figures = plots::render_all(&view, out_dir)?;
    let page = html::page(&view, &figures);
    let index_html = out_dir.join("index.html");
    std::fs::write(&index_html, page).map_err(|source| ReportError::Write {
        path: index_html.clone(),
        source,
    })?;
    let images = figures
        .iter()
        .filter_map(|s| s.figure.as_ref())
        .flat_map(|f| [out_dir.join(&f.png), out_dir.join(&f.svg)])
        .collect();
    Ok(Written { index_html, images })
}

/// Open `capture`, index and analyse it in full, and write its report into
/// `out_dir`.
pub fn from_file(
    capture: &Path,
    cfg: DecodeConfig,
    out_dir: &Path,
) -> Result<Written, ReportError> {
    let analysis = RcAnalyzer::default();
    let store = Store::open(capture, cfg, Box::new(analysis.clone()))?;
    // A capture cut short still gets a report of what was read; the page
    // says where indexing stopped.
    store.wait();
    let report = analysis.finish_report();
    let name = capture.display().to_string();
    write(
        &Input {
            name: &name,
            store: &store,
            report: &report,
            points: None,
        },
        out_dir,
    )
}
