//! Live partitions from the model: `Command::WritePartitions` starts a
//! writer on its own thread over the session's store, `StopPartitions`
//! asks it to finish; the status line reads what it has written.

use super::*;
use crate::partitions::{LiveWriter, PartitionSpec};

impl Model {
    /// Start writing partitions of this session under `dir` (a writer
    /// already running is stopped first: one session, one writer).
    pub(super) fn start_partitions(&mut self, dir: &Path, window_ns: u64, capture: Option<&str>) {
        let capture = capture.map_or_else(
            || match self.source.live {
                true => crate::partitions::default_capture_name(),
                // A file's partitions are named after it, as `export` names them.
                false => crate::export::capture_name(&self.source.name),
            },
            str::to_owned,
        );
        let spec = crate::partitions::spec(&crate::paths::resolve(dir), window_ns, Some(&capture));
        self.stop_partitions();
        self.spawn_partitions(spec);
    }

    fn spawn_partitions(&mut self, spec: PartitionSpec) {
        match LiveWriter::start(Arc::clone(&self.store), self.analysis.clone(), spec) {
            Ok(w) => {
                self.status = format!(
                    "writing partitions under {} every {} of capture time (capture={})",
                    w.spec.dir.display(),
                    crate::units::format_duration_ns(w.spec.window_ns),
                    rocescope_data::partition_capture_name(&w.spec.capture_name()),
                );
                self.partitions = Some(w);
            }
            Err(e) => self.status = format!("partitions: cannot start the writer: {e}"),
        }
    }

    /// Ask the running writer to finish (its last window, the other
    /// tables); it is reported when done.
    pub(super) fn stop_partitions(&mut self) {
        if let Some(w) = self.partitions.take() {
            w.request_stop();
            self.status = w.summary();
            self.partitions_done.push(w);
        }
    }

    /// Say what a finished writer wrote, and let it go.
    pub(super) fn poll_partitions(&mut self) {
        let mut i = 0;
        while i < self.partitions_done.len() {
            if self.partitions_done[i].finished() {
                let w = self.partitions_done.swap_remove(i);
                self.status = match w.error() {
                    Some(e) => format!("{}; {e}", w.summary()),
                    None => w.summary(),
                };
            } else {
                i += 1;
            }
        }
    }

    /// The writer of this session's partitions, while one runs.
    pub fn partitions(&self) -> Option<&LiveWriter> {
        self.partitions.as_ref()
    }

    /// Whether partitions are still being written (running or finishing).
    pub fn writing_partitions(&self) -> bool {
        self.partitions.is_some() || !self.partitions_done.is_empty()
    }

    /// Stop the source and wait for every writer to write what is left
    /// (at quit), and say what each wrote.
    pub fn finish_partitions(&mut self) -> Vec<String> {
        if !self.writing_partitions() {
            return Vec::new();
        }
        // The source stops first, so that the last window and the tables
        // written after it tell the same session.
        self.source.stop();
        self.source.link = None;
        self.stop_partitions();
        self.partitions_done
            .drain(..)
            .map(|w| {
                // Dropping a writer waits for its thread.
                let mut w = w;
                w.wait();
                match w.error() {
                    Some(e) => format!("{}; {e}", w.summary()),
                    None => w.summary(),
                }
            })
            .collect()
    }

    /// Another source replaced `old` (a file dropped on the window): its
    /// writer finishes there without holding up the front end.
    pub fn keep_finishing_partitions(&mut self, old: &mut Model) {
        old.stop_partitions();
        self.partitions_done.append(&mut old.partitions_done);
    }

    /// A rerun of the simulator (a parameter change) replaced `old`: its
    /// writer finishes that run's partitions and this model's run is
    /// written as the next capture, `NAME-runN`, beside it.
    pub fn adopt_partitions(&mut self, old: &mut Model) {
        self.partitions_done.append(&mut old.partitions_done);
        if let Some(w) = old.partitions.take() {
            w.request_stop();
            let spec = PartitionSpec {
                run: w.spec.run + 1,
                ..w.spec.clone()
            };
            self.partitions_done.push(w);
            self.spawn_partitions(spec);
        }
    }
}
