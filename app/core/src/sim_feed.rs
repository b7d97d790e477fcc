//! The in-process simulator's records on their way to the store, over two
//! threads: the simulator's thread only simulates and copies what it emits
//! into a [`SimBatch`]; the ingest thread notes the records and appends the
//! rows (RC analysis, the store). A batch's frames are made into rows and
//! their bytes kept ([`SimBatch::stage`] into a [`StagedBatch`]) by the
//! ingest thread, or by the simulator's when it would wait for the ingest
//! thread (`line-rate`, whose replayed periods cost the simulator little).
//! On one thread the simulator plus ingest did not keep up with real time.
//!
//! The ingest thread makes the calls the one thread made, in the same
//! order (every record noted and pushed before the rows not yet published,
//! the rows published in the same cuts: a full batch, a step's end), so the
//! store and the analysis come out the same, whichever thread made the
//! rows. A header-only frame's row is taken from the fields its bytes are
//! written from (`Staged::push_roce_v4`), the row the decoder gives them
//! (checked in debug builds and by the test below), not decoded again.

use std::sync::atomic::Ordering;

use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{Cut, Ingest, IngestFrame, RcAnalyzer, Staged, Store};
use rocescope_replay::{Direction, PcapngWriter, Record};
use rocescope_sim::{FrameRef, HeaderFrame, RecordSink};

use crate::source::SourceStatus;

/// One thing the simulator emitted, in order. A frame's item is 32 bytes:
/// the rare other records are boxed, or every frame would be written and
/// read back at the size of the largest record (88 bytes).
#[derive(Debug)]
enum Item {
    /// A frame whose bytes are `bytes[start..start + len]` of the batch.
    Frame {
        ts_ns: u64,
        start: usize,
        orig_len: u32,
        len: u32,
        port: u8,
        dir: Option<Direction>,
    },
    /// The next of the batch's header-only frames (`headers`), written
    /// on the ingest thread.
    Header,
    Record(Box<Record>),
    /// A simulation step ended at this simulated time: publish the rows.
    StepEnd {
        sim_time_ns: u64,
    },
}

/// What the simulator emitted over some steps, with the frames' bytes back
/// to back; batches are recycled, so the simulator allocates nothing per
/// frame once they have grown.
#[derive(Debug, Default)]
pub(crate) struct SimBatch {
    bytes: Vec<u8>,
    items: Vec<Item>,
    /// Header-only frames as their fields, in order: the simulator's
    /// thread only copies the fields, the ingest thread writes the bytes.
    headers: Vec<HeaderFrame>,
    frames: usize,
}

impl SimBatch {
    pub(crate) fn frames(&self) -> usize {
        self.frames
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn step_end(&mut self, sim_time_ns: u64) {
        self.items.push(Item::StepEnd { sim_time_ns });
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.headers.clear();
        self.frames = 0;
    }

    /// Either thread's side: every frame made into its row, its bytes
    /// kept, in the cuts the one thread's flushes made (a full batch of
    /// rows, a step's end), records in order between them; leaves the
    /// batch empty for reuse.
    pub(crate) fn stage(&mut self, out: &mut StagedBatch) {
        // Frames are counted per step, not per frame: one shared counter
        // touched 4,096 times a batch cost the ingest thread for nothing.
        let mut frames = 0u64;
        let mut headers = self.headers.iter();
        let mut header_bytes = [0u8; HeaderFrame::MAX_BYTES];
        let StagedBatch { staged, marks } = out;
        for item in self.items.drain(..) {
            match item {
                Item::Frame {
                    ts_ns,
                    port,
                    dir,
                    orig_len,
                    start,
                    len,
                } => {
                    staged.push(&IngestFrame {
                        ts_ns,
                        data: self.bytes.get(start..start + len as usize).unwrap_or(&[]),
                        origlen: orig_len,
                        linktype: 1,
                        port,
                        dir,
                        file_offset: 0,
                    });
                    frames += 1;
                }
                Item::Header => {
                    // One header per item, pushed together by `Feed`.
                    let Some(h) = headers.next() else { continue };
                    let frame = IngestFrame {
                        ts_ns: h.ts_ns,
                        data: h.write(&mut header_bytes),
                        origlen: h.orig_len,
                        linktype: 1,
                        port: 0,
                        dir: h.direction,
                        file_offset: 0,
                    };
                    // The simulator knows the fields: the row is taken
                    // from them, the bytes not decoded again.
                    match h.roce_v4() {
                        Some(fields) => staged.push_roce_v4(&frame, &fields),
                        None => staged.push(&frame),
                    }
                    frames += 1;
                }
                Item::Record(r) => {
                    marks.push(Mark::Record(r));
                    continue;
                }
                Item::StepEnd { sim_time_ns } => {
                    marks.push(Mark::StepEnd {
                        cut: staged.cut(),
                        sim_time_ns: Some(sim_time_ns),
                        frames: std::mem::take(&mut frames),
                    });
                    continue;
                }
            }
            if staged.cut_due() {
                marks.push(Mark::Cut(staged.cut()));
            }
        }
        // A batch is handed over after a step's end: nothing is left uncut
        // but frames of a batch that ends otherwise are still appended.
        debug_assert!(staged.uncut() == 0 && frames == 0);
        if staged.uncut() > 0 || frames > 0 {
            marks.push(Mark::StepEnd {
                cut: staged.cut(),
                sim_time_ns: None,
                frames,
            });
        }
        self.clear();
    }
}

/// A batch handed to the ingest thread: as the simulator emitted it (the
/// ingest thread makes its rows), or made into rows by the simulator's
/// thread in the time it would have waited for the ingest thread.
#[derive(Debug)]
pub(crate) enum Handed {
    Raw(SimBatch),
    Staged(StagedBatch),
}

/// A batch as rows (its frames' rows and bytes in a [`Staged`]) and, in
/// order, what the ingest thread does: note records, append cuts.
#[derive(Debug)]
pub(crate) struct StagedBatch {
    staged: Staged,
    marks: Vec<Mark>,
}

#[derive(Debug)]
enum Mark {
    /// Noted by the analysis and kept, before the rows not yet cut.
    Record(Box<Record>),
    /// A full batch of rows, published as `Store::ingest` does.
    Cut(Cut),
    /// A step's end: its rows published, the time and frames told (no
    /// time: the rows of a batch that did not end with a step).
    StepEnd {
        cut: Cut,
        sim_time_ns: Option<u64>,
        frames: u64,
    },
}

impl Default for StagedBatch {
    fn default() -> StagedBatch {
        StagedBatch {
            staged: Staged::new(DecodeConfig::default()),
            marks: Vec::new(),
        }
    }
}

impl StagedBatch {
    /// The store's side: every mark in order, as the one thread did it
    /// (`ingest` decodes with `DecodeConfig::default()`, as the rows
    /// were); leaves the batch empty for reuse.
    pub(crate) fn apply(
        &mut self,
        store: &Store,
        ingest: &mut Ingest,
        analysis: &RcAnalyzer,
        status: &SourceStatus,
    ) {
        for mark in self.marks.drain(..) {
            match mark {
                Mark::Record(r) => {
                    analysis.note_record(&r);
                    store.push_record(*r);
                    status.records.fetch_add(1, Ordering::Relaxed);
                }
                Mark::Cut(cut) => store.append_staged(ingest, &mut self.staged, cut),
                Mark::StepEnd {
                    cut,
                    sim_time_ns,
                    frames,
                } => {
                    store.append_staged(ingest, &mut self.staged, cut);
                    status.frames.fetch_add(frames, Ordering::Relaxed);
                    if let Some(t) = sim_time_ns {
                        status.sim_time_ns.store(t, Ordering::Relaxed);
                    }
                }
            }
        }
        self.staged.clear();
    }
}

/// The simulator's sink: the optional recording, then the batch.
pub(crate) struct Feed<'a> {
    pub(crate) record: &'a mut Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
    pub(crate) write_error: &'a mut Option<String>,
    pub(crate) batch: &'a mut SimBatch,
}

impl RecordSink for Feed<'_> {
    fn frame(&mut self, f: FrameRef<'_>) {
        if let Some(w) = self.record.as_mut()
            && let Err(e) = w.write_frame(f.ts_ns, f.port, f.direction, f.orig_len, f.data)
        {
            self.write_error
                .get_or_insert_with(|| format!("recording stopped: {e}"));
        }
        let b = &mut *self.batch;
        b.items.push(Item::Frame {
            ts_ns: f.ts_ns,
            start: b.bytes.len(),
            orig_len: f.orig_len,
            // A frame is at most its u32 original length (the simulator's
            // frames are a few kilobytes).
            len: u32::try_from(f.data.len()).unwrap_or(u32::MAX),
            port: f.port,
            dir: f.direction,
        });
        b.bytes.extend_from_slice(f.data);
        b.frames += 1;
    }

    fn header_frame(&mut self, h: &HeaderFrame) {
        if self.record.is_some() {
            // A recording needs the bytes here: written once, for both.
            h.lend(|f| self.frame(f));
            return;
        }
        let b = &mut *self.batch;
        b.items.push(Item::Header);
        b.headers.push(*h);
        b.frames += 1;
    }

    fn record(&mut self, r: Record) {
        if let Some(w) = self.record.as_mut()
            && let Err(e) = w.write_record(&r)
        {
            self.write_error
                .get_or_insert_with(|| format!("recording stopped: {e}"));
        }
        self.batch.items.push(Item::Record(Box::new(r)));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rocescope_sim::{Scenario, StoreSink};

    use super::*;
    use crate::source::{Pace, spawn_sim};

    #[test]
    fn a_frame_item_stays_small() {
        assert!(std::mem::size_of::<Item>() <= 32);
    }

    #[test]
    fn the_pipeline_stores_and_finds_what_one_thread_did() {
        // The pipeline replays the simulator's repeating periods (issue 51;
        // line-rate's from 351 us on), the one-thread run does not. Rows
        // made by either thread (the ingest thread's when it keeps up), and
        // all on the simulator's (as when the ingest thread is behind).
        let names = ["default", "incast", "lossy-link", "dpi-drop", "line-rate"];
        for (name, rows_here) in names.iter().flat_map(|n| [(*n, false), (*n, true)]) {
            let mut sc = Scenario::builtin(name).unwrap();
            if rows_here {
                sc.name.push_str(crate::source::tests::ROWS_HERE);
            }
            let name = sc.name.clone();
            sc.duration_ns = sc.duration_ns.min(1_000_000);
            let step_ns = (sc.duration_ns / 200).clamp(100, 20_000);

            // The one-thread pipeline as it was: every frame ingested as the
            // simulator emits it, records noted at once, a flush per step.
            let (store, analysis) = StoreSink::run_scenario(&sc, step_ns);

            let (two, two_analysis, handle) = spawn_sim(sc, Pace::Fast, None);
            while !handle.status().finished.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert!(store.len() > 100, "{name}: {} frames", store.len());
            assert_eq!(two.len(), store.len(), "{name}");
            assert_eq!(two.stats(), store.stats(), "{name}");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            store.rows(0..store.len(), &mut a);
            two.rows(0..two.len(), &mut b);
            assert!(a == b, "{name}: rows differ");
            assert_eq!(two.record_count(), store.record_count(), "{name}");
            assert_eq!(
                handle.status().frames.load(Ordering::Relaxed),
                store.len(),
                "{name}"
            );
            let report = |a: &RcAnalyzer| a.0.lock().unwrap().report();
            assert!(
                report(&two_analysis) == report(&analysis),
                "{name}: the analysis differs"
            );
        }
    }
}
