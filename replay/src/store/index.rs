//! The file indexer: a reader thread that walks the capture and copies (or
//! decodes) frames into batches, and an append thread that decodes,
//! classifies, runs the analysis and appends them to the store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{TryRecvError, TrySendError};

use super::columns::CHUNK_ROWS;
use super::decoded::Decoded;
use super::ingest::{self, Analyzer, Appender, IngestFrame};
use super::slab::Slab;
use super::{Backing, Inner, PacketInfo, Store, StoreStats, Wide, frames};
use crate::capture::{CaptureItem, CaptureReader, FrameSink, TimeBase};
use crate::record::Record;
use rocescope_decoders::DecodeConfig;

/// A hand-over from the reader to the append thread: frames read but not
/// decoded yet (their bytes in one buffer), or, when the append thread is
/// behind, frames the reader decoded itself.
#[derive(Default)]
struct RawBatch {
    bytes: Vec<u8>,
    frames: Vec<RawFrame>,
    /// Frames decoded by the reader; then `frames` is empty.
    decoded: Decoded,
    /// The counters of `decoded`, one per `DECODE_CHUNK` of it (the
    /// reader counts what it decodes; the append thread adds them up).
    decoded_stats: Vec<StoreStats>,
    /// Records read with these frames that carry the diagnosis' evidence
    /// (a recording of the simulator's PFC pauses and DPI drops): the
    /// append thread hands them to the analyzer.
    evidence: Vec<Record>,
}

struct RawFrame {
    ts_ns: u64,
    file_offset: u64,
    origlen: u32,
    linktype: u32,
    start: u32,
    len: u32,
    port: u8,
    dir: Option<crate::record::Direction>,
}

/// The card port of a frame: its own, else its interface id (255 above).
fn frame_port(f: &crate::capture::CaptureFrame<'_>) -> u8 {
    f.port.unwrap_or(f.interface.min(255) as u8)
}

impl RawBatch {
    fn push(&mut self, f: &crate::capture::CaptureFrame<'_>, file_offset: u64) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(f.data);
        self.frames.push(RawFrame {
            ts_ns: f.ts_ns,
            file_offset,
            origlen: f.origlen,
            linktype: f.linktype.0,
            start,
            len: f.data.len() as u32,
            port: frame_port(f),
            dir: f.direction,
        });
    }

    /// Decode the frame here, straight from the reader's buffer, into the
    /// batch's next row; every `DECODE_CHUNK` rows, count them.
    #[inline(always)]
    fn push_decoded(
        &mut self,
        cfg: &DecodeConfig,
        f: &crate::capture::CaptureFrame<'_>,
        file_offset: u64,
    ) {
        ingest::decode_onto(
            &mut self.decoded,
            cfg,
            &IngestFrame {
                ts_ns: f.ts_ns,
                data: f.data,
                origlen: f.origlen,
                linktype: f.linktype.0,
                port: frame_port(f),
                dir: f.direction,
                file_offset,
            },
        );
        if self.decoded.rows.len().is_multiple_of(DECODE_CHUNK) {
            self.count_decoded();
        }
    }

    /// Counts the decoded rows not counted yet, one `StoreStats` per
    /// `DECODE_CHUNK` of them. A pass of its own over rows already in the
    /// batch, not a running sum as each is decoded: the running sum read
    /// each row back while its stores were still in flight (see
    /// `fast::decode_header_only`).
    fn count_decoded(&mut self) {
        let done = self.decoded_stats.len() * DECODE_CHUNK;
        for chunk in self
            .decoded
            .rows
            .get(done..)
            .unwrap_or(&[])
            .chunks(DECODE_CHUNK)
        {
            self.decoded_stats.push(ingest::count_rows(chunk));
        }
    }

    fn len(&self) -> usize {
        self.frames.len() + self.decoded.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.frames.clear();
        self.decoded.clear();
        self.decoded_stats.clear();
        self.evidence.clear();
    }
}

/// The reader's share of each frame of a buffered run, inlined into the
/// run's loop (see [`FrameSink`]).
struct Taker<'a> {
    store: &'a Store,
    batch: &'a mut RawBatch,
    noted: &'a mut frames::NotedPorts,
    decode_here: bool,
    cfg: &'a DecodeConfig,
    keep_bytes: bool,
}

impl FrameSink for Taker<'_> {
    /// The reader's share of one frame: its bytes kept (a store without a
    /// file), its link type noted, then into the batch, decoded here when
    /// the append thread is behind.
    #[inline(always)]
    fn frame(&mut self, f: &crate::capture::CaptureFrame<'_>) {
        let file_offset = if self.keep_bytes {
            self.store.keep(f.data)
        } else {
            f.file_offset
        };
        let port = frame_port(f);
        if self.noted.first_time(port) {
            self.store.note_link(port, f.linktype.0);
        }
        if self.decode_here {
            self.batch.push_decoded(self.cfg, f, file_offset);
        } else {
            self.batch.push(f, file_offset);
        }
    }
}

/// The index's next whole chunk (`CHUNK_ROWS` rows, mapped and faulted
/// in: about half a millisecond of page faults), made by whichever
/// indexing thread would otherwise wait: the reader when the hand-over
/// queue is full, the append thread when it is empty. A thread of its own
/// for it ran on the append thread's core in every run profiled, also
/// when that core was the busier one and the reader's idled.
#[derive(Default)]
struct SpareChunk {
    state: std::sync::Mutex<SpareState>,
}

#[derive(Default)]
enum SpareState {
    /// The columns have a spare, or do not fill whole chunks yet.
    #[default]
    Idle,
    /// The columns will take one; nobody is making it.
    Wanted,
    /// A thread is making it.
    Making,
    Ready(Slab),
}

impl SpareChunk {
    fn lock(&self) -> std::sync::MutexGuard<'_, SpareState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The append thread, before each chunk of rows: hands the columns a
    /// spare made ready, or notes that they want one.
    fn offer(&self, cols: &mut super::columns::Columns) {
        if !cols.wants_spare() {
            return;
        }
        let mut state = self.lock();
        match std::mem::take(&mut *state) {
            SpareState::Ready(slab) => cols.give_spare(slab),
            SpareState::Idle => *state = SpareState::Wanted,
            busy => *state = busy,
        }
    }

    /// Either thread, with nothing else to do: makes the spare the
    /// columns want, if nobody is making it. Returns whether it did.
    fn make_if_wanted(&self) -> bool {
        {
            let mut state = self.lock();
            if !matches!(*state, SpareState::Wanted) {
                return false;
            }
            *state = SpareState::Making;
        }
        let slab = Slab::new(CHUNK_ROWS);
        *self.lock() = SpareState::Ready(slab);
        true
    }
}

impl RawFrame {
    fn frame<'b>(&self, bytes: &'b [u8]) -> IngestFrame<'b> {
        let start = self.start as usize;
        IngestFrame {
            ts_ns: self.ts_ns,
            data: bytes.get(start..start + self.len as usize).unwrap_or(&[]),
            origlen: self.origlen,
            linktype: self.linktype,
            port: self.port,
            dir: self.dir,
            file_offset: self.file_offset,
        }
    }
}

/// Frames appended per hold of the store's write lock. The append thread
/// makes several passes over a chunk's rows (conversations, the analysis,
/// the counters, each column): 128 rows of 128 bytes stay in the L1 cache
/// between them, where 1,024 did not (0.94-0.95x wall with the analysis,
/// BENCHMARKS.md "Why the indexer is built so": the hand-over). The lock is
/// held that much shorter too.
const DECODE_CHUNK: usize = 128;

/// Frames in the first hand-over: small, so that the first rows show at
/// once.
const FIRST_BATCH_ROWS: usize = 256;
/// Frames per hand-over from the file indexer's reader to its append
/// thread: up to six batches are in flight (four queued, one filling, one
/// appending), so their size sets the indexer's transient memory; half a
/// live batch costs nothing measurable in hand-overs.
const INDEX_BATCH_ROWS: usize = 8 * 1024;

impl Store {
    /// Index a capture on two threads: this one reads frames and copies
    /// their bytes into a batch; a scoped one decodes, classifies, runs the
    /// analysis and appends. When the append thread falls behind (two
    /// batches waiting), the reader decodes the next batch itself, straight
    /// from its read buffer: the two cores share the decoding in whatever
    /// proportion keeps both busy (decode-only indexing leaves the append
    /// thread little else to do). A costly analysis (the RC analysis) keeps
    /// the append thread the busier one throughout: the reader then decodes
    /// every batch after the first. Batches go back and forth through
    /// bounded channels, so memory stays flat.
    ///
    /// `mode`: the rows appended (and the index saved at the end, when
    /// asked), or, for a store whose rows came from a saved index, the
    /// analysis alone over the frames.
    pub(super) fn index<R: std::io::Read>(
        &self,
        mut reader: CaptureReader<R>,
        cfg: DecodeConfig,
        analyzer: Box<dyn Analyzer>,
        mode: IndexMode,
    ) {
        let start = std::time::Instant::now();
        let analysis_only = matches!(mode, IndexMode::Analysis { .. });
        // The analyzer comes back from its thread only to be kept beside a
        // saved index.
        let keep_state = analyzer.keeps_state()
            && match &mode {
                IndexMode::Rows { save } | IndexMode::Analysis { save } => {
                    save.as_ref().is_some_and(|to| to.analysed)
                }
            };
        let keep_bytes = matches!(self.backing, Backing::Memory(_));
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<(RawBatch, u64, TimeBase)>(4);
        let (empty_tx, empty_rx) = std::sync::mpsc::channel::<RawBatch>();
        // Batches sent and not yet appended.
        let backlog = AtomicUsize::new(0);
        let reader_cfg = cfg.clone();
        // With the RC analysis the append thread is the busier one even
        // when the reader decodes everything (CPU 0.96-0.98x and 4-5 MiB
        // less memory than deciding per batch); decode-only, deciding by
        // the backlog is faster (BENCHMARKS.md, "Why the indexer is built
        // so": the reader decodes every batch).
        let always_decode_here = analyzer.is_costly();
        // The index's next whole chunk is mapped and faulted in one chunk
        // ahead of the append thread, by whichever thread would otherwise
        // wait (`SpareChunk`); asked for once the rows fill whole chunks,
        // so a small capture maps nothing more.
        let spare = SpareChunk::default();
        let analyzer = std::thread::scope(|scope| {
            let backlog = &backlog;
            let spare = &spare;
            let appender_thread = std::thread::Builder::new()
                .name("rocescope-append".into())
                // Its panic comes back as its words, for the error below.
                .spawn_scoped(scope, move || {
                    crate::contain::contain(move || {
                        let mut appender = Appender::new(analyzer);
                        let mut infos = Decoded::with_capacity(DECODE_CHUNK);
                        // The analysis alone: the conversations interned
                        // apart, the rows counted, nothing appended.
                        let mut convs = super::conv::ConvTable::default();
                        let mut analysed_rows = 0u64;
                        loop {
                            let (mut raw, bytes_done, time_base) = match full_rx.try_recv() {
                                Ok(next) => next,
                                // Nothing to append: make the next chunk now.
                                Err(TryRecvError::Empty) if spare.make_if_wanted() => continue,
                                Err(TryRecvError::Empty) => match full_rx.recv() {
                                    Ok(next) => next,
                                    Err(_) => break,
                                },
                                Err(TryRecvError::Disconnected) => break,
                            };
                            for r in &raw.evidence {
                                appender.record(r);
                            }
                            // One chunk of rows: analysed alone, or appended
                            // under the write lock (`counted`: their counters,
                            // when the reader made them).
                            let mut take =
                                |rows: &mut [PacketInfo],
                                 wide: &[Wide],
                                 counted: Option<&StoreStats>| {
                                    if analysis_only {
                                        appender.analyse(analysed_rows, rows, wide, &mut convs);
                                        analysed_rows += rows.len() as u64;
                                        return;
                                    }
                                    let mut inner =
                                        self.inner.write().unwrap_or_else(|e| e.into_inner());
                                    let Inner {
                                        cols, convs, stats, ..
                                    } = &mut *inner;
                                    spare.offer(cols);
                                    appender
                                        .append_counted(rows, wide, counted, cols, convs, stats);
                                };
                            // A chunk at a time, so that the infos stay in cache
                            // and the write lock is short.
                            let Decoded { rows, wide } = &mut raw.decoded;
                            for (k, chunk) in rows.chunks_mut(DECODE_CHUNK).enumerate() {
                                take(chunk, wide, raw.decoded_stats.get(k));
                            }
                            for chunk in raw.frames.chunks(DECODE_CHUNK) {
                                infos.clear();
                                for f in chunk {
                                    ingest::decode_onto(&mut infos, &cfg, &f.frame(&raw.bytes));
                                }
                                let Decoded { rows, wide } = &mut infos;
                                take(rows, wide, None);
                            }
                            // A bounded index moves its older chunks to disk
                            // once a batch is in (a walk of the chunk list).
                            self.bound();
                            *self.time_base.write().unwrap_or_else(|e| e.into_inner()) = time_base;
                            self.bytes_done.store(bytes_done, Ordering::Relaxed);
                            self.elapsed_ns
                                .store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                            backlog.fetch_sub(1, Ordering::Relaxed);
                            raw.clear();
                            let _ = empty_tx.send(raw);
                        }
                        appender.finish();
                        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
                        inner.cols.drop_spare();
                        drop(inner);
                        keep_state.then(|| appender.into_analyzer())
                    })
                });
            // A full queue means the append thread is behind: make the next
            // chunk before waiting.
            let hand_over = |msg| match full_tx.try_send(msg) {
                Ok(()) => true,
                Err(TrySendError::Full(msg)) => {
                    spare.make_if_wanted();
                    full_tx.send(msg).is_ok()
                }
                Err(TrySendError::Disconnected(_)) => false,
            };
            let mut batch = RawBatch::default();
            let mut batch_limit = FIRST_BATCH_ROWS;
            let mut decode_here = false;
            let mut noted = frames::NotedPorts::default();
            loop {
                // Every record (pcap) or EPB (pcapng) already whole in the
                // read buffer in one tight loop, up to the batch's end.
                let room = batch_limit.saturating_sub(batch.len());
                let mut taker = Taker {
                    store: self,
                    batch: &mut batch,
                    noted: &mut noted,
                    decode_here,
                    cfg: &reader_cfg,
                    keep_bytes,
                };
                let n = reader.sink_buffered_frames(room, &mut taker);
                if n == 0 {
                    match reader.next_item() {
                        Ok(Some(CaptureItem::Record(r))) => {
                            if ingest::for_analysis(&r) {
                                taker.batch.evidence.push(r.clone());
                            }
                            // A saved index brought the records back.
                            if !analysis_only {
                                self.records
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push_back(r);
                            }
                        }
                        Ok(Some(CaptureItem::Frame(f))) => taker.frame(&f),
                        Ok(None) => break,
                        Err(e) => {
                            *self.error.lock().unwrap_or_else(|e| e.into_inner()) =
                                Some(e.to_string());
                            break;
                        }
                    }
                }
                if batch.len() >= batch_limit {
                    batch.count_decoded();
                    // A new batch has room for a whole one from the start,
                    // rather than copying its rows at every doubling.
                    let next = empty_rx.try_recv().unwrap_or_else(|_| RawBatch {
                        decoded: Decoded::with_capacity(if always_decode_here {
                            INDEX_BATCH_ROWS
                        } else {
                            0
                        }),
                        ..RawBatch::default()
                    });
                    let full = std::mem::replace(&mut batch, next);
                    backlog.fetch_add(1, Ordering::Relaxed);
                    if !hand_over((full, reader.bytes_read(), reader.time_base())) {
                        break;
                    }
                    batch_limit = INDEX_BATCH_ROWS;
                    decode_here = always_decode_here || backlog.load(Ordering::Relaxed) >= 2;
                }
            }
            backlog.fetch_add(1, Ordering::Relaxed);
            batch.count_decoded();
            hand_over((batch, reader.bytes_read(), reader.time_base()));
            drop(full_tx);
            let failed = match appender_thread.map(|t| t.join()) {
                Ok(Ok(Ok(analyzer))) => return analyzer,
                Ok(Ok(Err(why))) => {
                    format!("the append thread failed ({why}; a rocescope bug: please report it)")
                }
                Ok(Err(_)) => "the append thread failed".to_owned(),
                // Nothing was appended: never a complete store with no rows.
                Err(e) => format!("cannot start the append thread: {e}"),
            };
            self.error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(failed);
            None
        });
        // Written before the store is complete: a command that exits once
        // it is (`info`, `stats`) leaves the index behind.
        match mode {
            IndexMode::Rows { save } => {
                *self.warnings.lock().unwrap_or_else(|e| e.into_inner()) =
                    reader.warnings().to_vec();
                *self.ila.lock().unwrap_or_else(|e| e.into_inner()) =
                    reader.wave().and_then(|w| w.ila().cloned());
                if let Some(to) = save {
                    self.save_index(&to);
                    self.save_analysis(&to, analyzer.as_deref());
                }
            }
            IndexMode::Analysis { save } => {
                if let Some(to) = save {
                    self.save_analysis(&to, analyzer.as_deref());
                }
            }
        }
        self.elapsed_ns
            .store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.mark_complete();
    }
}

impl Store {
    /// [`Store::index`] on the thread it runs on: a panic in it (the
    /// reader's, the analysis', a bug) is the store's error, and the store
    /// complete with the rows before it, never a store indexing for good
    /// (`stats` waiting on it forever, the status line at a percent).
    pub(super) fn index_told<R: std::io::Read>(
        &self,
        reader: CaptureReader<R>,
        cfg: DecodeConfig,
        analyzer: Box<dyn Analyzer>,
        mode: IndexMode,
    ) {
        let ran = crate::contain::contain(|| self.index(reader, cfg, analyzer, mode));
        if let Err(why) = ran {
            let failed = format!(
                "the indexing failed ({why}; a rocescope bug: please report it): the frames after row {} are not in the index",
                self.len()
            );
            self.end_failed(failed);
        }
    }
}

/// What [`Store::index`] does with the frames it reads.
pub(super) enum IndexMode {
    /// Append them as rows; then save the index into this capture's folder
    /// of `--index-dir`, when given.
    Rows { save: Option<super::saved::SaveTo> },
    /// Feed the analysis only: the rows came from a saved index; then keep
    /// the analysis beside it, when asked.
    Analysis { save: Option<super::saved::SaveTo> },
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rocescope_decoders::{Opcode, PacketBuilder};

    use super::*;
    use crate::capture::{CaptureFrame, LinkType};

    /// An analysis that panics where it is asked to (a bug in it).
    struct Panics {
        /// In `keeps_state`, asked on the reading thread; else in `batch`,
        /// on the append thread.
        on_reader: bool,
    }

    impl Analyzer for Panics {
        fn batch(
            &mut self,
            _: u64,
            _: &mut [PacketInfo],
            _: &[Wide],
            _: &mut Vec<ingest::LateFlags>,
        ) {
            panic!("an analysis' failure, for the test");
        }
        fn keeps_state(&self) -> bool {
            if self.on_reader {
                panic!("a reader's failure, for the test");
            }
            false
        }
    }

    /// A panic on the indexing threads is the store's error with its words,
    /// and the store complete (a `stats` waiting on it ends), never a store
    /// indexing for good.
    #[test]
    fn an_indexing_that_fails_completes_with_its_error() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../assets/captures/sample-write-read.pcap");
        for (on_reader, starts, words) in [
            (
                true,
                "the indexing failed (",
                "a reader's failure, for the test",
            ),
            (
                false,
                "the append thread failed (",
                "an analysis' failure, for the test",
            ),
        ] {
            let store = Store::open(
                &path,
                DecodeConfig::default(),
                Box::new(Panics { on_reader }),
            )
            .unwrap();
            assert!(
                store.wait_timeout(std::time::Duration::from_secs(30)),
                "the store never completed"
            );
            let e = store.progress().error.expect("the failure is told");
            assert!(e.starts_with(starts), "{e}");
            assert!(e.contains(words), "{e}");
        }
    }

    /// The append thread asks for one spare chunk once the rows fill
    /// whole chunks; one thread makes it, once; the columns take it when
    /// it is ready, and ask again only after they used it.
    #[test]
    fn spares_are_asked_for_one_ahead() {
        let spare = SpareChunk::default();
        let mut cols = super::super::columns::Columns::new();
        let row = crate::store::Row::default();
        cols.extend(&vec![row; 1000]);
        spare.offer(&mut cols);
        assert!(!spare.make_if_wanted(), "a small capture asks for nothing");
        cols.extend(&vec![row; 40_000]);
        spare.offer(&mut cols);
        spare.offer(&mut cols);
        assert!(
            spare.make_if_wanted(),
            "asked once the first chunk is whole"
        );
        assert!(!spare.make_if_wanted(), "and made only once");
        assert!(cols.wants_spare(), "not handed over before the next offer");
        spare.offer(&mut cols);
        assert!(!cols.wants_spare(), "the spare was handed over");
        spare.offer(&mut cols);
        assert!(!spare.make_if_wanted(), "no second spare while one waits");
        cols.extend(&vec![row; CHUNK_ROWS]);
        spare.offer(&mut cols);
        assert!(
            spare.make_if_wanted(),
            "asked again once the spare was used"
        );
    }

    /// The two indexing threads racing for a wanted spare: exactly one
    /// makes it, whichever comes first.
    #[test]
    fn one_thread_makes_the_spare() {
        for _ in 0..20 {
            let spare = SpareChunk::default();
            *spare.lock() = SpareState::Wanted;
            let made: usize = std::thread::scope(|s| {
                let a = s.spawn(|| usize::from(spare.make_if_wanted()));
                let b = usize::from(spare.make_if_wanted());
                a.join().unwrap() + b
            });
            assert_eq!(made, 1);
            assert!(matches!(*spare.lock(), SpareState::Ready(_)));
        }
    }

    /// Counting a slice of rows at once gives what counting them one by
    /// one gives, for every combination of flags (the counted ones among
    /// all sixteen), any lengths and times in any order, and no rows.
    #[test]
    fn counting_rows_at_once_is_counting_each() {
        let mut rng = rocescope_testkit::Rng(0x9E37_79B9_7F4A_7C15u64);
        let mut next = move || rng.next_u64();
        for n in [0usize, 1, 2, 31, 128, 1000, 4095, 4096, 9000] {
            let rows: Vec<crate::store::Row> = (0..n)
                .map(|_| {
                    let r = next();
                    crate::store::Row {
                        ts_ns: r >> 20,
                        caplen: (r & 0xFFFF) as u32,
                        origlen: ((r >> 16) & 0x1_FFFF) as u32,
                        flags: crate::store::Flags((r >> 40) as u16),
                        ..Default::default()
                    }
                })
                .collect();
            let mut one_by_one = StoreStats::default();
            for r in &rows {
                ingest::count(&mut one_by_one, r);
            }
            assert_eq!(ingest::count_rows(&rows), one_by_one, "{n} rows");
        }
    }

    /// Rows the reader decodes are counted a chunk at a time, the last
    /// chunk when the batch is handed over: the counts add up to counting
    /// every row, whatever the batch's length, each chunk's counts are its
    /// own rows', and counting again counts nothing twice.
    #[test]
    fn the_reader_counts_its_rows_per_chunk() {
        let cfg = DecodeConfig::default();
        let mut cut = Vec::new();
        let b = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_ACK, 9, 1);
        b.build_headers_into(0, &mut cut);
        let whole = b.build(&[]);
        for n in [
            0,
            1,
            DECODE_CHUNK - 1,
            DECODE_CHUNK,
            DECODE_CHUNK + 1,
            3 * DECODE_CHUNK + 7,
        ] {
            let mut batch = RawBatch::default();
            let mut all = StoreStats::default();
            for i in 0..n {
                // Cut and whole frames, and one too short for its headers.
                let data: &[u8] = match i % 3 {
                    0 => &cut,
                    1 => &whole,
                    _ => &whole[..10],
                };
                let f = CaptureFrame {
                    index: i as u64,
                    ts_ns: 1_000 + (i as u64 * 7919) % 1_000,
                    caplen: data.len() as u32,
                    origlen: whole.len() as u32 + 4,
                    linktype: LinkType(1),
                    interface: 0,
                    file_offset: 100 * i as u64,
                    port: None,
                    direction: None,
                    data,
                };
                batch.push_decoded(&cfg, &f, f.file_offset);
                ingest::count(&mut all, &batch.decoded.rows[i].row);
            }
            for _ in 0..2 {
                batch.count_decoded();
                assert_eq!(
                    batch.decoded_stats.len(),
                    n.div_ceil(DECODE_CHUNK),
                    "{n} rows"
                );
                let mut summed = StoreStats::default();
                for (k, (s, rows)) in batch
                    .decoded_stats
                    .iter()
                    .zip(batch.decoded.rows.chunks(DECODE_CHUNK))
                    .enumerate()
                {
                    assert_eq!(s.packets, rows.len() as u64, "chunk {k} of {n} rows");
                    summed.merge(s);
                }
                assert_eq!(summed, all, "{n} rows");
            }
        }
    }
}
