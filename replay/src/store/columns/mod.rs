//! The columnar, chunked row storage: 24 bytes per packet (32 in a chunk
//! whose times or offsets do not fit 32-bit steps), no reallocation.
//!
//! Columns grow in fixed chunks so that appending never copies what is
//! already stored (a doubling `Vec` would briefly hold twice the index) and
//! the slack is at most one chunk.

use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::row::{AsRow, ESCAPED_LENS, Flags, LEN_ESCAPE, NO_CONVERSATION, Row};
use super::slab::{Cols, Layout, STEP_ROW_BYTES, Slab};
use super::spill::Spill;

/// Rows per chunk: 1.5 MiB of index (2 MiB wide).
pub(crate) const CHUNK_ROWS: usize = 1 << 16;

struct Chunk {
    /// The rows' columns: the time and the file offset (see `Layout`), and
    /// the packed words of `Row::packed_lens`, `packed_psn_opcode` and
    /// `packed_meta`.
    slab: Slab,
    len: usize,
    /// Largest timestamp in the chunk, for time searches on unsorted captures.
    max_ts_ns: u64,
}

/// The first chunk starts this small (and grows by doubling) so that small
/// captures do not pay for a whole chunk.
const FIRST_CHUNK_ROWS: usize = 1024;

impl Chunk {
    /// An empty chunk with room for `rows`; a whole chunk is faulted in at
    /// once, not a page at a time as rows arrive.
    fn new(rows: usize) -> Chunk {
        Chunk::from_slab(Slab::new(rows))
    }

    fn from_slab(slab: Slab) -> Chunk {
        Chunk {
            slab,
            len: 0,
            max_ts_ns: 0,
        }
    }

    fn heap_bytes(&self) -> u64 {
        self.slab.bytes() as u64
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The rows stored, a slice per column.
    fn cols(&self) -> Cols<'_> {
        fn head<T>(col: &[T], n: usize) -> &[T] {
            col.get(..n).unwrap_or(col)
        }
        let c = self.slab.cols();
        let n = self.len;
        Cols {
            ts_ns: c.ts_ns.range(0, n.min(c.ts_ns.len())),
            file_offset: c.file_offset.range(0, n.min(c.file_offset.len())),
            lens: head(c.lens, n),
            conversation: head(c.conversation, n),
            psn_opcode: head(c.psn_opcode, n),
            meta: head(c.meta, n),
        }
    }

    /// Room for `rows` in every column: a bigger slab, the rows copied over.
    fn reserve_to(&mut self, rows: usize) {
        if rows <= self.slab.cap() {
            return;
        }
        let mut bigger = Slab::with_layout(rows, self.slab.layout());
        self.slab.copy_into(&mut bigger, self.len);
        self.slab = bigger;
    }

    /// Makes room for the rows `rows` in the chunk's layout: bases the steps
    /// of an empty chunk on its first row, and widens the chunk when one of
    /// them does not fit as steps.
    fn take_layout<'r>(&mut self, rows: impl Iterator<Item = &'r Row> + Clone) {
        if self.len == 0
            && let Some(first) = rows.clone().next()
        {
            self.slab
                .set_layout(Layout::steps_from(first.ts_ns, first.file_offset));
        }
        let layout = self.slab.layout();
        if !rows.fold(true, |all, r| all & layout.fits(r.ts_ns, r.file_offset)) {
            self.slab = self.slab.widened(self.len, self.slab.cap());
        }
    }
}

/// A full chunk written to disk: its columns one after the other, at byte
/// `at` of its file (a spill segment of its own, or a saved index's rows
/// file, which holds every chunk).
struct ColdChunk {
    len: usize,
    layout: Layout,
    first_ts_ns: u64,
    max_ts_ns: u64,
    file: Arc<File>,
    at: u64,
    path: PathBuf,
    /// A saved index's checksum of the chunk's bytes, checked at each
    /// read: a segment changed on disk reads as an error, never as rows.
    sum: Option<u64>,
    /// Its first row's frame offset, kept when it was spilled: the ring,
    /// deleting the chunk before it, need not read it back for that.
    first_file_offset: Option<u64>,
}

/// One chunk of a saved index (`--index-dir`): where its rows are in the
/// rows file and what the chunk list keeps in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SavedChunk {
    pub(crate) len: usize,
    pub(crate) layout: Layout,
    pub(crate) first_ts_ns: u64,
    pub(crate) max_ts_ns: u64,
    pub(crate) at: u64,
    pub(crate) sum: u64,
}

/// Everything of [`Columns`] but the rows themselves, as a saved index
/// keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SavedColumns {
    pub(crate) len: u64,
    pub(crate) sorted: bool,
    pub(crate) last_ts_ns: u64,
    /// (row, caplen, origlen) of the frames longer than the packed word.
    pub(crate) big_lens: Vec<(u64, u32, u32)>,
    pub(crate) chunks: Vec<SavedChunk>,
}

enum Slot {
    Hot(Chunk),
    Cold(ColdChunk),
}

impl Slot {
    fn len(&self) -> usize {
        match self {
            Slot::Hot(c) => c.len(),
            Slot::Cold(c) => c.len,
        }
    }

    fn first_ts_ns(&self) -> u64 {
        match self {
            Slot::Hot(c) => c.cols().ts_ns.get(0).unwrap_or(0),
            Slot::Cold(c) => c.first_ts_ns,
        }
    }

    /// Bytes a row takes in memory or on disk.
    fn row_bytes(&self) -> usize {
        match self {
            Slot::Hot(c) => c.slab.layout().row_bytes(),
            Slot::Cold(c) => c.layout.row_bytes(),
        }
    }

    fn max_ts_ns(&self) -> u64 {
        match self {
            Slot::Hot(c) => c.max_ts_ns,
            Slot::Cold(c) => c.max_ts_ns,
        }
    }
}

/// Cold chunks read back lately (a view scrolling, a filter scanning).
const COLD_CACHE_CHUNKS: usize = 2;

/// All rows of a store.
#[derive(Default)]
pub(crate) struct Columns {
    /// The chunks from `first_kept` on: those the ring deleted leave the
    /// list (a live session deletes one every few seconds for hours), and
    /// their rows, all whole chunks, read as placeholders.
    chunks: VecDeque<Slot>,
    /// Bounded live stores: where full chunks go past the memory share.
    spill: Option<Arc<Spill>>,
    /// Chunks `0..first_kept` were deleted by the ring.
    first_kept: usize,
    /// No chunk of `chunks` before this one is in memory: the walks over
    /// the hot chunks start here, so that a session's chunks on disk cost
    /// nothing a batch.
    first_hot: usize,
    cache: Mutex<Vec<(usize, Arc<Chunk>)>>,
    len: u64,
    /// Exact lengths of the rare frames longer than 65534 bytes.
    big_lens: std::collections::HashMap<u64, (u32, u32)>,
    /// True while every timestamp is >= the one before.
    pub(crate) sorted: bool,
    last_ts_ns: u64,
    /// A whole chunk's memory made ready by another thread (the file
    /// indexer's, in its spare time), taken by the next chunk.
    spare: Option<Slab>,
}

impl Columns {
    pub(crate) fn new() -> Columns {
        Columns {
            sorted: true,
            ..Columns::default()
        }
    }

    /// Columns of a bounded live store.
    pub(crate) fn bounded(spill: Arc<Spill>) -> Columns {
        Columns {
            spill: Some(spill),
            ..Columns::new()
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Whether a whole chunk's memory made elsewhere would be used: the
    /// rows have reached whole chunks and none is waiting.
    pub(crate) fn wants_spare(&self) -> bool {
        self.spare.is_none()
            && matches!(self.chunks.back(), Some(Slot::Hot(c)) if c.slab.cap() == CHUNK_ROWS)
    }

    /// Memory for the next whole chunk, zeroed and faulted in elsewhere.
    pub(crate) fn give_spare(&mut self, slab: Slab) {
        if slab.cap() == CHUNK_ROWS {
            self.spare = Some(slab);
        }
    }

    /// The rows are all in: a spare not taken goes back.
    pub(crate) fn drop_spare(&mut self) {
        self.spare = None;
    }

    /// The first row the ring has not deleted.
    pub(crate) fn first_row(&self) -> u64 {
        (self.first_kept * CHUNK_ROWS) as u64
    }

    /// Chunk `ci`'s slot; `None` past the end and for a deleted chunk.
    fn slot(&self, ci: usize) -> Option<&Slot> {
        self.chunks.get(ci.checked_sub(self.first_kept)?)
    }

    /// Rows in chunk `ci`: a deleted chunk was a whole one.
    fn chunk_len(&self, ci: usize) -> Option<usize> {
        match self.slot(ci) {
            Some(slot) => Some(slot.len()),
            None => (ci < self.first_kept).then_some(CHUNK_ROWS),
        }
    }

    /// The chunk `ci`, read back from disk when it is cold. `None` for a
    /// deleted chunk (and for one that cannot be read: its rows then read
    /// as placeholders, and the error is the spill's).
    fn chunk(&self, ci: usize) -> Option<ChunkRef<'_>> {
        match self.slot(ci)? {
            Slot::Hot(c) => Some(ChunkRef::Hot(c)),
            Slot::Cold(c) => {
                let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((_, hit)) = cache.iter().find(|(i, _)| *i == ci) {
                    return Some(ChunkRef::Cold(Arc::clone(hit)));
                }
                let loaded = match load_chunk(c) {
                    Ok(l) => Arc::new(l),
                    Err(e) => {
                        if let Some(s) = &self.spill {
                            s.fail("cannot read the index segment", &c.path, &e);
                        }
                        return None;
                    }
                };
                if cache.len() >= COLD_CACHE_CHUNKS {
                    cache.remove(0);
                }
                cache.push((ci, Arc::clone(&loaded)));
                Some(ChunkRef::Cold(loaded))
            }
        }
    }

    /// The placeholder of a row whose chunk is gone (or unreadable): at
    /// its chunk's first time, or a deleted one's at the first kept row's.
    fn placeholder(&self, ci: usize) -> Row {
        Row {
            ts_ns: self
                .slot(ci)
                .or(self.chunks.front())
                .map_or(0, Slot::first_ts_ns),
            conversation: NO_CONVERSATION,
            ..Row::default()
        }
    }

    /// What hot chunks may take of an index budget: the cache of chunks
    /// read back counts against it too.
    pub(crate) fn hot_budget_bytes(index_budget_bytes: u64) -> u64 {
        index_budget_bytes.saturating_sub((COLD_CACHE_CHUNKS * CHUNK_ROWS * STEP_ROW_BYTES) as u64)
    }

    /// After rows were appended: spill the oldest full chunks past the
    /// index's memory share, then, over the disk cap, delete the oldest
    /// spilled chunk. Returns the file offset below which frame bytes
    /// belong only to deleted rows, when the ring deleted rows.
    pub(crate) fn bound(&mut self) -> Option<u64> {
        let spill = self.spill.clone()?;
        let budget_bytes = Columns::hot_budget_bytes(spill.index_budget_bytes());
        // The newest hot chunks that fit the budget stay, and the newest
        // one, being filled, always; the older ones go to disk.
        let mut kept_bytes = 0u64;
        let mut hot: Vec<usize> = Vec::new();
        let newest = self.chunks.len().saturating_sub(1);
        for (k, c) in self.chunks.iter().enumerate().skip(self.first_hot).rev() {
            if let Slot::Hot(c) = c {
                kept_bytes += c.heap_bytes();
                if kept_bytes > budget_bytes && k != newest {
                    hot.push(k);
                }
            }
        }
        hot.reverse();
        for &k in &hot {
            if k == newest || spill.failed() {
                break;
            }
            let Some(Slot::Hot(c)) = self.chunks.get(k) else {
                continue;
            };
            let Some((file, path)) = spill.write_segment_with("rows", |w| write_chunk(c, w)) else {
                break;
            };
            let cold = ColdChunk {
                len: c.len(),
                layout: c.slab.layout(),
                first_ts_ns: c.cols().ts_ns.get(0).unwrap_or(0),
                max_ts_ns: c.max_ts_ns,
                file: Arc::new(file),
                at: 0,
                path,
                sum: None,
                first_file_offset: c.cols().file_offset.get(0),
            };
            spill
                .rows_on_disk
                .fetch_add(cold.len as u64, std::sync::atomic::Ordering::Relaxed);
            self.chunks[k] = Slot::Cold(cold);
        }
        while self
            .chunks
            .get(self.first_hot)
            .is_some_and(|c| !matches!(c, Slot::Hot(_)))
        {
            self.first_hot += 1;
        }
        let mut deleted = None;
        while spill.over_disk() {
            let ci = self.first_kept;
            if !matches!(self.chunks.front(), Some(Slot::Cold(_))) {
                break;
            }
            let Some(Slot::Cold(c)) = self.chunks.pop_front() else {
                break;
            };
            self.first_hot = self.first_hot.saturating_sub(1);
            let len = c.len;
            let size = (len * c.layout.row_bytes()) as u64;
            spill.delete_segment(&c.path, size);
            spill
                .rows_on_disk
                .fetch_sub(len as u64, std::sync::atomic::Ordering::Relaxed);
            spill
                .rows_deleted
                .fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed);
            self.cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|(i, _)| *i != ci);
            self.first_kept += 1;
            // Frame bytes below the first kept row belong to deleted rows.
            deleted = match self.chunks.front() {
                Some(Slot::Cold(c)) if c.first_file_offset.is_some() => c.first_file_offset,
                _ => self.get(self.first_row()).map(|r| r.file_offset),
            };
        }
        spill.set_index_memory(self.hot_chunk_bytes());
        deleted
    }

    #[cfg(test)]
    pub(crate) fn push(&mut self, r: &Row) {
        self.extend(std::slice::from_ref(r));
    }

    /// Append many rows; the same as [`Columns::push`] for each, but a
    /// column at a time, so that each is one tight loop over a slice. The
    /// chunk's latest time, the order and the lengths too long for the
    /// packed word are then read off the columns just written: walking
    /// the rows once more for them (through `Take` adapters, the rows 128
    /// bytes apart in a batch) was a fifth of the append.
    pub(crate) fn extend<T: AsRow>(&mut self, rows: &[T]) {
        let mut rest = rows;
        while !rest.is_empty() {
            if !matches!(self.chunks.back(), Some(Slot::Hot(c)) if c.len() < CHUNK_ROWS) {
                let chunk = if self.len == 0 {
                    Chunk::new(FIRST_CHUNK_ROWS)
                } else {
                    match self.spare.take() {
                        Some(slab) => Chunk::from_slab(slab),
                        None => Chunk::new(CHUNK_ROWS),
                    }
                };
                self.chunks.push_back(Slot::Hot(chunk));
            }
            let first = self.len;
            let Some(Slot::Hot(c)) = self.chunks.back_mut() else {
                return;
            };
            let (part, tail) = rest.split_at(rest.len().min(CHUNK_ROWS - c.len()));
            rest = tail;
            let k = part.len();
            // Grow by doubling up to a chunk, as row-by-row pushes would.
            let want = c.len() + k;
            if want > c.slab.cap() {
                c.reserve_to(want.next_power_of_two().min(CHUNK_ROWS));
            }
            c.take_layout(part.iter().map(AsRow::row));
            let at = c.len();
            let cols = c.slab.cols_mut();
            fn fill<T, U>(col: &mut [U], at: usize, part: &[T], value: impl Fn(&T) -> U) {
                let to = col.get_mut(at..at + part.len()).unwrap_or(&mut []);
                for (slot, v) in to.iter_mut().zip(part) {
                    *slot = value(v);
                }
            }
            cols.ts_ns.fill(at, part.iter().map(|r| r.row().ts_ns));
            cols.file_offset
                .fill(at, part.iter().map(|r| r.row().file_offset));
            fill(cols.lens, at, part, |r| r.row().packed_lens());
            fill(cols.conversation, at, part, |r| r.row().conversation);
            fill(cols.psn_opcode, at, part, |r| r.row().packed_psn_opcode());
            fill(cols.meta, at, part, |r| r.row().packed_meta());
            c.len += k;
            let written = c.slab.cols().ts_ns.range(at, at + k);
            let (max_ts_ns, in_order) = written.max_and_order(self.last_ts_ns);
            c.max_ts_ns = c.max_ts_ns.max(max_ts_ns);
            self.sorted &= in_order;
            self.last_ts_ns = written.get(k - 1).unwrap_or(self.last_ts_ns);
            let lens = c.slab.cols().lens;
            let lens = lens.get(at..at + k).unwrap_or(&[]);
            if lens.iter().fold(false, |any, &l| any | (l == ESCAPED_LENS)) {
                for (n, r) in part.iter().enumerate() {
                    let r = r.row();
                    if r.caplen >= LEN_ESCAPE || r.origlen >= LEN_ESCAPE {
                        self.big_lens
                            .insert(first + n as u64, (r.caplen, r.origlen));
                    }
                }
            }
            self.len += k as u64;
        }
    }

    /// Row `index`'s (caplen, origlen) from its packed word, or from the
    /// side table when they did not fit it.
    fn lens(&self, index: u64, lens: u32) -> (u32, u32) {
        if lens & 0xFFFF == LEN_ESCAPE {
            self.big_lens
                .get(&index)
                .copied()
                .unwrap_or((LEN_ESCAPE, LEN_ESCAPE))
        } else {
            (lens & 0xFFFF, lens >> 16)
        }
    }

    pub(crate) fn get(&self, index: u64) -> Option<Row> {
        if index >= self.len {
            return None;
        }
        let ci = (index / CHUNK_ROWS as u64) as usize;
        let Some(chunk) = self.chunk(ci) else {
            return Some(self.placeholder(ci));
        };
        let chunk = chunk.get().cols();
        let i = (index % CHUNK_ROWS as u64) as usize;
        Some(Row::from_packed(
            chunk.ts_ns.get(i)?,
            chunk.file_offset.get(i)?,
            self.lens(index, *chunk.lens.get(i)?),
            chunk.conversation[i],
            chunk.psn_opcode[i],
            chunk.meta[i],
        ))
    }

    /// Append rows `range` to `out`, a chunk at a time (one slice per
    /// column and chunk instead of a lookup per row and column).
    pub(crate) fn extend_rows(&self, range: std::ops::Range<u64>, out: &mut Vec<Row>) {
        let mut at = range.start;
        while at < range.end {
            let ci = (at / CHUNK_ROWS as u64) as usize;
            let Some(chunk_len) = self.chunk_len(ci) else {
                return;
            };
            let first = at - at % CHUNK_ROWS as u64;
            let Some(chunk) = self.chunk(ci) else {
                let hi = ((range.end - first) as usize).min(chunk_len);
                let p = self.placeholder(ci);
                out.extend(std::iter::repeat_n(
                    p,
                    hi.saturating_sub((at - first) as usize),
                ));
                at = first + hi as u64;
                if hi == 0 {
                    return;
                }
                continue;
            };
            let chunk = chunk.get().cols();
            let lo = (at - first) as usize;
            let hi = ((range.end - first) as usize).min(chunk.ts_ns.len());
            if lo >= hi {
                return;
            }
            fn part<T>(v: &[T], lo: usize, hi: usize) -> &[T] {
                v.get(lo..hi).unwrap_or(&[])
            }
            let rows = chunk
                .ts_ns
                .range(lo, hi)
                .iter()
                .zip(chunk.file_offset.range(lo, hi).iter())
                .zip(part(chunk.lens, lo, hi))
                .zip(part(chunk.conversation, lo, hi))
                .zip(part(chunk.psn_opcode, lo, hi))
                .zip(part(chunk.meta, lo, hi));
            for (k, (((((ts_ns, file_offset), &lens), &conversation), &po), &meta)) in
                rows.enumerate()
            {
                out.push(Row::from_packed(
                    ts_ns,
                    file_offset,
                    self.lens(first + (lo + k) as u64, lens),
                    conversation,
                    po,
                    meta,
                ));
            }
            at = first + hi as u64;
        }
    }

    /// Change the flags of a stored row (the analysis can learn late that
    /// a gap before a packet was capture loss).
    pub(crate) fn update_flags(&mut self, index: u64, set: Flags, clear: Flags) {
        let ci = (index / CHUNK_ROWS as u64) as usize;
        let i = (index % CHUNK_ROWS as u64) as usize;
        let patch = |m: u32| {
            let flags = ((m as u16) & !clear.0) | set.0;
            (m & !0xFFFF) | u32::from(flags)
        };
        let slot = ci
            .checked_sub(self.first_kept)
            .and_then(|k| self.chunks.get_mut(k));
        match slot {
            Some(Slot::Hot(c)) => {
                let m = if i < c.len {
                    c.slab.cols_mut().meta.get_mut(i)
                } else {
                    None
                };
                if let Some(m) = m {
                    *m = patch(*m);
                }
            }
            // A late verdict on a row already on disk: patch its meta word
            // in the segment and forget the cached copy.
            Some(Slot::Cold(c)) if i < c.len => {
                let at = c.at + c.layout.segment_meta_at(c.len, i);
                let mut word = [0u8; 4];
                if super::read_exact_at(&c.file, &mut word, at).is_ok() {
                    let m = patch(u32::from_le_bytes(word)).to_le_bytes();
                    let _ = super::write_all_at(&c.file, &m, at);
                }
                self.cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|(k, _)| *k != ci);
            }
            _ => {}
        }
    }

    /// First row whose timestamp is >= `ts_ns` (in file order on unsorted
    /// captures: the first row of the first chunk that reaches `ts_ns`, then
    /// the first row in it at or after `ts_ns`). Chunks are picked by their
    /// times, kept in memory, so that only one chunk is read from disk.
    /// A time before the first kept row finds that row.
    pub(crate) fn seek(&self, ts_ns: u64) -> u64 {
        let k = if self.sorted {
            // The first chunk whose last time reaches ts_ns.
            self.chunks.partition_point(|c| c.max_ts_ns() < ts_ns)
        } else {
            match self.chunks.iter().position(|c| c.max_ts_ns() >= ts_ns) {
                Some(k) => k,
                None => return self.len,
            }
        };
        let ci = self.first_kept + k;
        let base = (ci * CHUNK_ROWS) as u64;
        let Some(slot) = self.chunks.get(k) else {
            return self.len;
        };
        let Some(chunk) = self.chunk(ci) else {
            // An unreadable chunk's rows read as at its first time.
            return if slot.first_ts_ns() >= ts_ns {
                base
            } else {
                base + slot.len() as u64
            };
        };
        let ts = chunk.get().cols().ts_ns;
        let i = if self.sorted {
            ts.partition_point(|t| t < ts_ns)
        } else {
            ts.iter().position(|t| t >= ts_ns).unwrap_or(ts.len())
        };
        base + i as u64
    }

    /// Bytes the index's rows take (in memory or on disk), without the
    /// room reserved for growth.
    pub(crate) fn held_bytes(&self) -> u64 {
        let rows: u64 = self
            .chunks
            .iter()
            .map(|c| (c.len() * c.row_bytes()) as u64)
            .sum();
        rows + self.big_lens.len() as u64 * 32
    }

    /// Bytes the index has allocated in memory (rows and the room reserved
    /// for growth).
    pub(crate) fn heap_bytes(&self) -> u64 {
        let spare = self.spare.as_ref().map_or(0, |s| s.bytes() as u64);
        self.hot_chunk_bytes() + spare + self.big_lens.len() as u64 * 32
    }

    /// Memory of the chunks held in memory (not those on disk).
    fn hot_chunk_bytes(&self) -> u64 {
        self.chunks
            .range(self.first_hot.min(self.chunks.len())..)
            .map(|c| match c {
                Slot::Hot(c) => c.heap_bytes(),
                _ => 0,
            })
            .sum()
    }
}

impl Columns {
    /// Write every chunk's rows to `w`, one after the other as a spill
    /// segment holds them (a chunk on disk copied as it is), and return
    /// what the saved index keeps beside them. Fails on a chunk that
    /// cannot be read (a file's index never has deleted ones).
    pub(crate) fn save(&self, w: &mut dyn std::io::Write) -> std::io::Result<SavedColumns> {
        if self.first_kept > 0 {
            return Err(std::io::Error::other("rows were deleted by the disk ring"));
        }
        let mut chunks = Vec::with_capacity(self.chunks.len());
        let mut at = 0u64;
        let mut buf = Vec::new();
        for slot in &self.chunks {
            buf.clear();
            let (len, layout) = match slot {
                Slot::Hot(c) => {
                    c.slab.write_rows(c.len, &mut buf)?;
                    (c.len, c.slab.layout())
                }
                Slot::Cold(c) => {
                    buf = Slab::read_segment(&c.file, c.at, c.len, c.layout)?;
                    (c.len, c.layout)
                }
            };
            w.write_all(&buf)?;
            chunks.push(SavedChunk {
                len,
                layout,
                first_ts_ns: slot.first_ts_ns(),
                max_ts_ns: slot.max_ts_ns(),
                at,
                sum: super::saved::checksum(&buf),
            });
            at += buf.len() as u64;
        }
        let mut big_lens: Vec<(u64, u32, u32)> = self
            .big_lens
            .iter()
            .map(|(&row, &(caplen, origlen))| (row, caplen, origlen))
            .collect();
        big_lens.sort_unstable();
        Ok(SavedColumns {
            len: self.len,
            sorted: self.sorted,
            last_ts_ns: self.last_ts_ns,
            big_lens,
            chunks,
        })
    }

    /// The columns of a saved index: every chunk on disk in `file` (at
    /// `path`), read back as a spilled chunk is.
    pub(crate) fn from_saved(
        saved: SavedColumns,
        hot: Vec<(usize, Slab)>,
        file: Arc<File>,
        path: &std::path::Path,
        spill: Arc<Spill>,
    ) -> Columns {
        let mut hot = hot.into_iter().peekable();
        let chunks: VecDeque<Slot> = saved
            .chunks
            .iter()
            .enumerate()
            .map(|(k, c)| {
                if let Some((_, slab)) = hot.next_if(|(h, _)| *h == k) {
                    let mut chunk = Chunk::from_slab(slab);
                    chunk.len = c.len;
                    chunk.max_ts_ns = c.max_ts_ns;
                    return Slot::Hot(chunk);
                }
                Slot::Cold(ColdChunk {
                    len: c.len,
                    layout: c.layout,
                    first_ts_ns: c.first_ts_ns,
                    max_ts_ns: c.max_ts_ns,
                    file: Arc::clone(&file),
                    at: c.at,
                    path: path.to_path_buf(),
                    sum: Some(c.sum),
                    first_file_offset: None,
                })
            })
            .collect();
        let cols = Columns {
            chunks,
            spill: Some(Arc::clone(&spill)),
            len: saved.len,
            big_lens: saved
                .big_lens
                .iter()
                .map(|&(row, caplen, origlen)| (row, (caplen, origlen)))
                .collect(),
            sorted: saved.sorted,
            last_ts_ns: saved.last_ts_ns,
            ..Columns::default()
        };
        spill.set_index_memory(cols.hot_chunk_bytes());
        cols
    }
}

/// A chunk to read: in memory, or read back from disk.
enum ChunkRef<'a> {
    Hot(&'a Chunk),
    Cold(Arc<Chunk>),
}

impl ChunkRef<'_> {
    fn get(&self) -> &Chunk {
        match self {
            ChunkRef::Hot(c) => c,
            ChunkRef::Cold(c) => c,
        }
    }
}

/// A chunk's rows as they go to disk (see [`Slab::write_rows`]).
fn write_chunk(c: &Chunk, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    c.slab.write_rows(c.len, w)
}

fn load_chunk(c: &ColdChunk) -> std::io::Result<Chunk> {
    let buf = Slab::read_segment(&c.file, c.at, c.len, c.layout)?;
    let damaged = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the rows at byte {} {what}", c.at),
        )
    };
    if c.sum.is_some_and(|sum| super::saved::checksum(&buf) != sum) {
        return Err(damaged("fail their checksum"));
    }
    let slab = Slab::from_segment(&buf, c.len, c.layout).ok_or_else(|| damaged("are cut"))?;
    let mut chunk = Chunk::from_slab(slab);
    chunk.len = c.len;
    chunk.max_ts_ns = c.max_ts_ns;
    Ok(chunk)
}

#[cfg(test)]
mod tests;
