//! Partitions as a workbench session goes: a thread of its own writes the
//! packets table of the live store window by window as each window closes
//! (`rocescope_data::LivePartitions`), and the other tables when it is
//! stopped. The UIs never wait for it: they read its [`PartitionStatus`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocescope_data::{ExportOptions, LivePartitions, Source, Table, export};
use rocescope_decoders::analysis::Report;
use rocescope_replay::store::{RcAnalyzer, Store};

/// How often closed windows are looked for.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often the thread looks at its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// What the writer has done, for the status line (shared with its thread).
#[derive(Debug, Default)]
pub struct PartitionStatus {
    /// Part files of the packets table written (one per closed window,
    /// more for a window seen again).
    pub files_written: AtomicU64,
    pub rows_written: AtomicU64,
    /// Rows the store's disk ring deleted before they were written.
    pub rows_missed: AtomicU64,
    /// Rows not written when the writer was stopped by a deadline (it was
    /// behind), and the capture time they span.
    pub rows_unwritten: AtomicU64,
    pub unwritten_span_ns: Mutex<Option<(u64, u64)>>,
    /// The last write that failed (the window is tried again a second
    /// later); cleared by the next write that succeeds.
    pub error: Mutex<Option<String>>,
    /// The thread has written the last window and the other tables.
    pub finished: AtomicBool,
    /// The packets table is done (written or abandoned).
    pub packets_done: AtomicBool,
    /// The thread failed (a panic, told in `error`): what it wrote of
    /// the session is incomplete.
    pub failed: AtomicBool,
}

/// What a writer was started with.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionSpec {
    pub dir: PathBuf,
    pub window_ns: u64,
    /// The `capture` partition's name (made a safe string by the data crate).
    pub capture: String,
    /// Reruns of the simulator after a parameter change: each run is its
    /// own capture, `NAME-runN`.
    pub run: u32,
}

impl PartitionSpec {
    /// The capture name this run's partitions take.
    pub fn capture_name(&self) -> String {
        if self.run == 0 {
            self.capture.clone()
        } else {
            format!("{}-run{}", self.capture, self.run)
        }
    }
}

/// A running writer. Dropping it stops it and waits for the open window
/// and the other tables to be written.
#[derive(Debug)]
pub struct LiveWriter {
    pub spec: PartitionSpec,
    status: Arc<PartitionStatus>,
    stop: Arc<AtomicBool>,
    /// Abandons the write under way (its file removed) and what is left.
    cancel: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveWriter {
    /// Start writing `store`'s packets under `spec.dir`.
    pub fn start(
        store: Arc<Store>,
        analysis: RcAnalyzer,
        spec: PartitionSpec,
    ) -> std::io::Result<LiveWriter> {
        let status = Arc::new(PartitionStatus::default());
        let stop = Arc::new(AtomicBool::new(false));
        let cancel = Arc::new(AtomicBool::new(false));
        let thread = {
            let (status, stop, cancel, spec) = (
                Arc::clone(&status),
                Arc::clone(&stop),
                Arc::clone(&cancel),
                spec.clone(),
            );
            std::thread::Builder::new()
                .name("rocescope-partitions".into())
                .spawn(move || {
                    // A panic here is told (the error, the writer finished
                    // as failed), never a writer left "finishing" or a
                    // session taken as written in full.
                    let ran = rocescope_replay::contain::contain(|| {
                        run(&store, &analysis, &spec, &status, &stop, cancel)
                    });
                    if let Err(why) = ran {
                        status.failed.store(true, Ordering::Release);
                        set_error(
                            &status,
                            Some(format!(
                                "partitions under {}: the writer failed ({why}; a rocescope bug: please report it), what it wrote is incomplete",
                                spec.dir.display()
                            )),
                        );
                        status.finished.store(true, Ordering::Release);
                    }
                })?
        };
        Ok(LiveWriter {
            spec,
            status,
            stop,
            cancel,
            thread: Some(thread),
        })
    }

    pub fn status(&self) -> &PartitionStatus {
        &self.status
    }

    /// Ask the thread to write what is left and end (without waiting).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub fn finished(&self) -> bool {
        self.status.finished.load(Ordering::Acquire)
    }

    /// One line of what has been written, for the status line.
    pub fn summary(&self) -> String {
        let s = &*self.status;
        let files = s.files_written.load(Ordering::Relaxed);
        let mut text = format!(
            "partitions {} (capture={}): {} window{} ({} rows)",
            self.spec.dir.display(),
            rocescope_data::partition_capture_name(&self.spec.capture_name()),
            files,
            if files == 1 { "" } else { "s" },
            s.rows_written.load(Ordering::Relaxed)
        );
        let missed = s.rows_missed.load(Ordering::Relaxed);
        if missed > 0 {
            text.push_str(&format!(", {missed} rows MISSED (disk ring)"));
        }
        let unwritten = s.rows_unwritten.load(Ordering::Relaxed);
        if unwritten > 0 {
            text.push_str(&format!(", {unwritten} rows NOT WRITTEN (stopped behind)"));
        }
        if s.failed.load(Ordering::Acquire) {
            text.push_str(", FAILED");
        } else if self.finished() {
            text.push_str(", done");
        } else if self.stopping() {
            text.push_str(", finishing");
        }
        text
    }

    /// The last error, if the last write failed.
    pub fn error(&self) -> Option<String> {
        self.status
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl LiveWriter {
    /// Stop and wait for the thread to write what is left.
    pub fn wait(&mut self) {
        self.request_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Stop, and wait for the thread to write what is left until
    /// `deadline`; past it the window being written is abandoned (its file
    /// removed, so only whole files remain) and the rest counted as not
    /// written. The other tables are written either way. True when every
    /// row was written.
    pub fn finish_by(&mut self, deadline: Instant) -> bool {
        self.request_stop();
        while !self.writing_done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !self.writing_done() {
            self.cancel.store(true, Ordering::Release);
        }
        self.wait();
        self.status.rows_unwritten.load(Ordering::Relaxed) == 0
            && !self.status.failed.load(Ordering::Acquire)
    }

    /// The packets table is written (or abandoned); the small tables follow.
    fn writing_done(&self) -> bool {
        self.finished() || self.status.packets_done.load(Ordering::Acquire)
    }
}

impl Drop for LiveWriter {
    fn drop(&mut self) {
        self.wait();
    }
}

fn set_error(status: &PartitionStatus, e: Option<String>) {
    *status.error.lock().unwrap_or_else(|e| e.into_inner()) = e;
}

fn run(
    store: &Store,
    analysis: &RcAnalyzer,
    spec: &PartitionSpec,
    status: &PartitionStatus,
    stop: &AtomicBool,
    cancel: Arc<AtomicBool>,
) {
    // The tests' failing writer (a capture of this name exists only there).
    #[cfg(test)]
    if spec.capture == tests::PANICS {
        panic!("a writer's failure, for the test");
    }
    let capture = spec.capture_name();
    let mut live = LivePartitions::new(&spec.dir, &capture, spec.window_ns);
    live.cancel_on(Arc::clone(&cancel));
    // The packets table needs no report (its verdicts are in the rows).
    let no_report = Report::default();
    // The windows closed already are written at once.
    let mut last: Option<Instant> = None;
    loop {
        let end = stop.load(Ordering::Acquire);
        if end || last.is_none_or(|t| t.elapsed() >= FLUSH_EVERY) {
            last = Some(Instant::now());
            let src = Source {
                store,
                report: &no_report,
                capture: &capture,
                extra_profiler: &[],
                points: None,
            };
            let r = live.flush(&src, end);
            status
                .files_written
                .store(live.files_written, Ordering::Relaxed);
            status
                .rows_written
                .store(live.rows_written, Ordering::Relaxed);
            status
                .rows_missed
                .store(live.rows_missed, Ordering::Relaxed);
            match r {
                Ok(_) => set_error(status, None),
                Err(rocescope_data::DataError::Cancelled) => {}
                Err(e) => set_error(
                    status,
                    Some(format!("partitions under {}: {e}", spec.dir.display())),
                ),
            }
            if end || cancel.load(Ordering::Acquire) {
                break;
            }
        }
        std::thread::sleep(POLL);
    }
    let (unwritten, span) = live.unwritten(store);
    status.rows_unwritten.store(unwritten, Ordering::Relaxed);
    *status
        .unwritten_span_ns
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = span;
    status.packets_done.store(true, Ordering::Release);
    // The other tables of the session, as `export --partition` writes them.
    let report = analysis
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .report();
    let src = Source {
        store,
        report: &report,
        capture: &capture,
        extra_profiler: &[],
        points: None,
    };
    let opts = ExportOptions {
        partition_window_ns: Some(spec.window_ns),
        ..ExportOptions::default()
    };
    for table in Table::ALL
        .into_iter()
        .filter(|t| *t != Table::Packets && !t.of_points())
    {
        if let Err(e) = export(&src, table, &spec.dir, &opts) {
            set_error(
                status,
                Some(format!("{table} under {}: {e}", spec.dir.display())),
            );
        }
    }
    status.finished.store(true, Ordering::Release);
}

/// A capture name for a session that names none: `live-UNIX_SECONDS`.
pub fn default_capture_name() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("live-{secs}")
}

/// The spec for `dir` with the defaults of a session.
pub fn spec(dir: &Path, window_ns: u64, capture: Option<&str>) -> PartitionSpec {
    PartitionSpec {
        dir: dir.to_path_buf(),
        window_ns: window_ns.max(1),
        capture: capture.map_or_else(default_capture_name, str::to_owned),
        run: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const PANICS: &str = "test-writer-panics";

    /// A writer whose thread panics finishes as failed: its error says so
    /// (with the panic's words), the status line says FAILED, and a quit
    /// that waits for it is told that not every row was written.
    #[test]
    fn a_writer_that_fails_says_so() {
        let dir = rocescope_testkit::temp_dir("writer-panics");
        let store = Store::live(rocescope_replay::capture::TimeBase::Nanoseconds);
        let analysis = RcAnalyzer::with_config(Default::default());
        let spec = PartitionSpec {
            dir: dir.path().to_path_buf(),
            window_ns: 1_000_000_000,
            capture: PANICS.into(),
            run: 0,
        };
        let mut w = LiveWriter::start(store, analysis, spec).expect("the writer starts");
        assert!(!w.finish_by(Instant::now() + Duration::from_secs(30)));
        assert!(w.finished());
        assert!(w.summary().ends_with(", FAILED"), "{}", w.summary());
        let e = w.error().expect("the failure is told");
        assert!(e.contains("the writer failed"), "{e}");
        assert!(e.contains("a writer's failure, for the test"), "{e}");
    }
}
