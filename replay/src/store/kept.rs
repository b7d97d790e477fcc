//! A capture file's index kept in `--index-dir`: the capture's folder
//! there, a saved index read back instead of indexing, and the index just
//! made written out (the format is `saved.rs`'s).

use super::*;

impl Store {
    /// The capture's folder in `dir`, made and written to once (a folder
    /// that cannot take the index fails the open, naming it).
    pub(super) fn index_folder(
        path: &Path,
        dir: &Path,
        analysed: bool,
    ) -> Result<saved::SaveTo, StoreError> {
        let id = saved::CaptureId::of(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let folder = id.folder_in(dir);
        let err = |source| StoreError::IndexDir {
            path: dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&folder).map_err(err)?;
        let probe = folder.join(format!(".probe-{}", std::process::id()));
        std::fs::write(&probe, b"").map_err(err)?;
        let _ = std::fs::remove_file(&probe);
        Ok(saved::SaveTo {
            folder,
            id,
            analysed,
        })
    }

    /// A store whose rows come from a saved index: every row at once, read
    /// back from its rows file as spilled chunks are. A costly analysis
    /// comes back from beside it when kept there under the same settings;
    /// otherwise it reads the frames in the background (the store is
    /// complete when it is done) and is kept there for the next open.
    pub(super) fn reopen(
        (path, file, reader): (&Path, File, CaptureReader<File>),
        cfg: DecodeConfig,
        mut analyzer: Box<dyn Analyzer>,
        spill: Option<SpillConfig>,
        loaded: saved::Loaded,
        mut status: IndexDirStatus,
        started: std::time::Instant,
    ) -> Arc<Store> {
        let m = loaded.manifest;
        let id = m.capture.clone();
        let mut read_frames = analyzer.is_costly();
        if let (true, Some(id)) = (read_frames && analyzer.keeps_state(), &id) {
            match saved_analysis::load(&status.folder, id, |r| analyzer.restore_state(r)) {
                Ok(Some(bytes)) => {
                    read_frames = false;
                    status.analysis.reused = true;
                    status.saved_bytes = status.saved_bytes.map(|b| b + bytes);
                }
                // None kept yet (a first open stopped before it): not stale.
                Ok(None) => {}
                Err(why) => status.analysis.stale = Some(why),
            }
        }
        // Chunks that cannot be read back say so through the spill (as a
        // spilled index's would), which also says how much is on disk.
        let spill = spill::Spill::for_file(spill.unwrap_or_else(|| SpillConfig {
            dir: status.folder.clone(),
            max_memory_bytes: u64::MAX,
            max_disk_bytes: None,
            remove_on_drop: false,
        }));
        let hot_rows: u64 = loaded
            .hot
            .iter()
            .map(|(k, _)| m.cols.chunks[*k].len as u64)
            .sum();
        spill
            .rows_on_disk
            .store(m.cols.len - hot_rows, Ordering::Relaxed);
        spill.disk_bytes.store(loaded.bytes, Ordering::Relaxed);
        let bytes_total = m.capture.as_ref().map_or(0, |c| c.size);
        let store = Arc::new(Store::new(
            Backing::File {
                file,
                path: path.to_path_buf(),
            },
            Some(reader.format()),
            m.time_base.unwrap_or_else(|| reader.time_base()),
            bytes_total,
            Some(Arc::clone(&spill)),
        ));
        {
            let mut inner = store.inner.write().unwrap_or_else(|e| e.into_inner());
            inner.cols = Columns::from_saved(
                m.cols,
                loaded.hot,
                Arc::new(loaded.rows),
                &loaded.rows_path,
                spill,
            );
            inner.convs = ConvTable::from_list(m.convs);
            inner.stats = m.stats;
            inner.decode = cfg.clone();
        }
        *store.warnings.lock().unwrap_or_else(|e| e.into_inner()) = m.warnings;
        *store.links.write().unwrap_or_else(|e| e.into_inner()) = m.links;
        *store.records.lock().unwrap_or_else(|e| e.into_inner()) = m.records.into();
        let folder = status.folder.clone();
        *store.index_dir.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
        store
            .elapsed_ns
            .store(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let analyse = read_frames.then(|| {
            let worker = Arc::clone(&store);
            let save = id.map(|id| saved::SaveTo {
                folder,
                id,
                analysed: true,
            });
            std::thread::Builder::new()
                .name("rocescope-analysis".into())
                .spawn(move || {
                    worker.index_told(reader, cfg, analyzer, index::IndexMode::Analysis { save })
                })
        });
        if !matches!(analyse, Some(Ok(_))) {
            // Nothing to analyse (or no thread for it): the rows are all.
            store.bytes_done.store(m.bytes_done, Ordering::Relaxed);
            if let Some(Err(e)) = analyse {
                *store.error.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("cannot start the analysis: {e}"));
            }
            store.mark_complete();
        }
        store
    }

    /// Write the index just made into its folder of `--index-dir`; what
    /// happened goes into [`Store::index_dir_status`]. An index of a file
    /// not read to its end is not kept.
    pub(super) fn save_index(&self, to: &saved::SaveTo) {
        let stopped = self
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        let mut status = self.index_dir.lock().unwrap_or_else(|e| e.into_inner());
        let Some(status) = status.as_mut() else {
            return;
        };
        if stopped {
            status.error = Some("the file was not read to its end".into());
            return;
        }
        let inner = self.read();
        let manifest = saved::Manifest {
            capture: Some(to.id.clone()),
            roce_ports: inner.decode.extra_roce_ports.clone(),
            analysed: to.analysed,
            time_base: Some(self.time_base()),
            convs: inner.convs.list.clone(),
            stats: inner.stats,
            warnings: self.warnings(),
            links: self.links.read().unwrap_or_else(|e| e.into_inner()).clone(),
            records: self
                .records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned()
                .collect(),
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            ..saved::Manifest::default()
        };
        match saved::save(&to.folder, manifest, |w| inner.cols.save(w)) {
            Ok(bytes) => status.saved_bytes = Some(bytes),
            Err(e) => {
                status.error = Some(format!("cannot write {}: {e}", to.folder.display()));
            }
        }
    }

    /// Keep the analysis just made beside the saved index (`analyzer`, back
    /// from the indexer's threads); what happened goes into
    /// [`Store::index_dir_status`]. One of a file not read to its end, or
    /// beside an index that could not be written, is not kept.
    pub(super) fn save_analysis(&self, to: &saved::SaveTo, analyzer: Option<&dyn Analyzer>) {
        let Some(analyzer) = analyzer else {
            return;
        };
        if self
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return;
        }
        let mut status = self.index_dir.lock().unwrap_or_else(|e| e.into_inner());
        let Some(status) = status.as_mut().filter(|s| s.error.is_none()) else {
            return;
        };
        match saved_analysis::save(&to.folder, &to.id, |w| analyzer.save_state(w)) {
            Ok(bytes) => status.saved_bytes = status.saved_bytes.map(|b| b + bytes),
            Err(e) => {
                status.error = Some(format!(
                    "cannot write the analysis into {}: {e}",
                    to.folder.display()
                ));
            }
        }
    }
}
