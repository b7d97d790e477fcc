//! Exports of the current view from the model: started on a thread of
//! their own, their outcome taken into the status line.

use super::*;

impl Model {
    /// Take the outcome of finished exports into the status line.
    pub(super) fn poll_exports(&mut self) {
        let mut i = 0;
        while i < self.exports.len() {
            let Some(outcome) = self.exports[i].poll() else {
                i += 1;
                continue;
            };
            let job = self.exports.swap_remove(i);
            self.status = match &outcome {
                Ok(s) => format!(
                    "exported {} rows of {} to {} in {:.2} s",
                    s.rows,
                    s.table,
                    match s.files.as_slice() {
                        [one] => one.display().to_string(),
                        files => format!("{} files under {}", files.len(), job.path.display()),
                    },
                    s.elapsed.as_secs_f64()
                ),
                Err(e) => e.to_string(),
            };
            self.last_export = Some(outcome);
        }
    }

    /// Keep reporting the exports `old` started (its source was replaced
    /// by this model's): their files are still being written.
    pub fn adopt_exports(&mut self, old: &mut Model) {
        self.exports.append(&mut old.exports);
    }

    /// Whether an export is still running.
    pub fn exporting(&self) -> bool {
        !self.exports.is_empty()
    }

    /// The table an export without a named table writes: the current view's.
    pub fn export_table(&self) -> Table {
        crate::export::view_table(self.view)
    }

    /// Start an export of `table` (the view's by default) to `path`; the
    /// status line says what is being written and, later, what was.
    pub(super) fn start_export(
        &mut self,
        table: Option<Table>,
        path: &Path,
        partition: Option<u64>,
    ) {
        let table = table.unwrap_or_else(|| self.export_table());
        let path = crate::paths::resolve(path);
        // Checked here so that a bad name is told at once, not by a thread.
        let format = Format::from_path(&path);
        let bad_name = match partition {
            // Partitions go to a folder (any name but a CSV or JSON file's).
            Some(_) => matches!(format, Ok(Format::Csv | Format::Jsonl))
                .then(|| DataError::PartitionNeedsParquet { path: path.clone() }),
            None => format.err(),
        };
        if let Some(e) = bad_name {
            self.status = format!("export of {table}: {e}");
            return;
        }
        if table.of_points() && self.points.is_none() {
            self.status =
                format!("export of {table}: it needs capture points (open --point NAME=FILE ...)");
            return;
        }
        let horizon = self.horizon();
        let (rows, what) = if table != Table::Packets {
            (PacketRows::All { horizon }, String::new())
        } else if self.view == View::Ladder {
            // The ladder shows one QP: its two directions.
            let q = crate::query::ladder_qp(self);
            let convs = q.map(|q| crate::query::qp_conversations(self, q));
            let name = q.map_or_else(String::new, |q| {
                format!(" of {}", rocescope_replay::text::qp_name(q))
            });
            let convs: Vec<u32> = convs
                .map(|(a, b)| a.into_iter().chain(b).collect())
                .unwrap_or_default();
            (PacketRows::Conversations { convs, horizon }, name)
        } else if let Some(f) = &self.filter {
            let rows = PacketRows::Matches {
                matches: Arc::clone(&self.matches),
                horizon,
            };
            // The running filter: the bar may hold text that does not parse.
            (rows, format!(" matching {:?}", f.text))
        } else {
            (PacketRows::All { horizon }, String::new())
        };
        let clock = if table == Table::Packets && horizon < self.store.len() {
            " up to the replay clock"
        } else {
            ""
        };
        let req = ExportRequest {
            store: Arc::clone(&self.store),
            analysis: self.analysis.clone(),
            capture: crate::export::capture_name(&self.source.name),
            table,
            path: path.clone(),
            rows,
            partition_window_ns: partition,
            extra_profiler: match (&self.signals, table) {
                (Some(s), Table::Profiler) => s.profiler_records(),
                _ => Vec::new(),
            },
            points: self.points.clone(),
        };
        let partitions = partition.map_or_else(String::new, |w| {
            format!(
                " as Parquet partitions of {}",
                rocescope_decoders::units::duration_arg(w)
            )
        });
        match ExportJob::spawn(req) {
            Ok(job) => {
                self.status = format!(
                    "exporting {table}{what}{clock}{partitions} to {}…",
                    path.display()
                );
                self.exports.push(job);
            }
            Err(e) => self.status = e.to_string(),
        }
    }
}
