//! A chunk's memory: its six columns in one zeroed block, a whole chunk
//! (1.5 MiB) mapped on its own and faulted in with one system call.
//!
//! With six columns in separate heap allocations, each faulted in on its
//! own and filled through `Vec::extend`, `rocescope stats` on a 2 M-frame
//! capture took 0.096 s; with one block per chunk written through slices,
//! 0.084 s (BENCHMARKS.md, "Why the indexer is built so": one mapping per
//! chunk, and no huge pages). Huge pages would save the page faults too,
//! but on a virtual machine that hands free memory back to its host they
//! made a first run after a pause twice as slow: the 2 MiB blocks they
//! need are the ones the host took back.
//!
//! A row takes 24 bytes: the time and the file offset are kept as 32-bit
//! steps from a base per slab, which a chunk of packets at any rate worth
//! indexing fits. A row that does not fit (a chunk spanning more than about
//! four seconds, an offset 4 GiB on, a time well before the chunk's first)
//! makes its chunk wide, 32 bytes a row. Faulting the index in was about a
//! sixth of the CPU of indexing a header-only capture; with 24-byte rows
//! `rocescope stats` takes 0.92-0.96x the time and 16 MiB less memory on 2 M
//! packets (BENCHMARKS.md, "Why the indexer is built so": a 24-byte row),
//! and a live session's memory share holds a third more rows.

/// Slabs this large or larger are mapped on their own: a whole chunk.
const MAPPED_MIN_BYTES: usize = 1 << 20;

/// Bytes a row takes with the time and the file offset as steps.
pub(crate) const STEP_ROW_BYTES: usize = 4 + 4 + 4 + 4 + 4 + 4;
/// Bytes a row takes in a wide slab: two 8-byte columns, four 4-byte ones.
pub(crate) const WIDE_ROW_BYTES: usize = 8 + 8 + 4 + 4 + 4 + 4;

/// How far before a chunk's first time its time base sits, so that a
/// capture a little out of order (interfaces merged) keeps its steps.
const TS_SLACK_NS: u64 = 1 << 28;

/// How a slab keeps its two 64-bit columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Each value a 32-bit step from its base: 24 bytes a row.
    Steps { ts_base_ns: u64, offset_base: u64 },
    /// Whole values: 32 bytes a row.
    Wide,
}

impl Layout {
    /// Steps based for a chunk whose first row has these values.
    pub(crate) fn steps_from(ts_ns: u64, file_offset: u64) -> Layout {
        Layout::Steps {
            ts_base_ns: ts_ns.saturating_sub(TS_SLACK_NS),
            offset_base: file_offset,
        }
    }

    pub(crate) fn row_bytes(self) -> usize {
        match self {
            Layout::Steps { .. } => STEP_ROW_BYTES,
            Layout::Wide => WIDE_ROW_BYTES,
        }
    }

    /// Where row `i`'s meta word (flags, port, direction) sits in a
    /// segment of `len` rows written by [`Slab::write_rows`]: the last
    /// column, 32 bits a row.
    pub(crate) fn segment_meta_at(self, len: usize, i: usize) -> u64 {
        (len * (self.row_bytes() - 4) + i * 4) as u64
    }

    /// Whether a row with these values can be stored in this layout.
    #[inline]
    pub(crate) fn fits(self, ts_ns: u64, file_offset: u64) -> bool {
        match self {
            Layout::Steps {
                ts_base_ns,
                offset_base,
            } => {
                ts_ns.wrapping_sub(ts_base_ns) <= u64::from(u32::MAX)
                    && file_offset.wrapping_sub(offset_base) <= u64::from(u32::MAX)
            }
            Layout::Wide => true,
        }
    }
}

/// Memory for `cap` rows of each column, zeroed: the two 64-bit columns
/// (whole or as steps) one after the other, then the four `u32` ones (the
/// segment file's layout).
pub(crate) struct Slab {
    mem: Mem,
    cap: usize,
    layout: Layout,
}

enum Mem {
    Heap(Vec<u64>),
    Mapped(memmap2::MmapMut),
}

/// A 64-bit column: whole values, or 32-bit steps from a base.
#[derive(Clone, Copy)]
pub(crate) enum Col64<'a> {
    Wide(&'a [u64]),
    Steps(u64, &'a [u32]),
}

/// [`Col64`], writable.
pub(crate) enum Col64Mut<'a> {
    Wide(&'a mut [u64]),
    Steps(u64, &'a mut [u32]),
}

/// All six columns of a slab, each `cap` rows long.
pub(crate) struct Cols<'a> {
    pub(crate) ts_ns: Col64<'a>,
    pub(crate) file_offset: Col64<'a>,
    pub(crate) lens: &'a [u32],
    pub(crate) conversation: &'a [u32],
    pub(crate) psn_opcode: &'a [u32],
    pub(crate) meta: &'a [u32],
}

/// [`Cols`], writable.
pub(crate) struct ColsMut<'a> {
    pub(crate) ts_ns: Col64Mut<'a>,
    pub(crate) file_offset: Col64Mut<'a>,
    pub(crate) lens: &'a mut [u32],
    pub(crate) conversation: &'a mut [u32],
    pub(crate) psn_opcode: &'a mut [u32],
    pub(crate) meta: &'a mut [u32],
}

impl<'a> Col64<'a> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Col64::Wide(v) => v.len(),
            Col64::Steps(_, v) => v.len(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        match self {
            Col64::Wide(v) => v.get(i).copied(),
            Col64::Steps(base, v) => v.get(i).map(|&s| base + u64::from(s)),
        }
    }

    /// Rows `lo..hi` (empty when out of range).
    pub(crate) fn range(self, lo: usize, hi: usize) -> Col64<'a> {
        match self {
            Col64::Wide(v) => Col64::Wide(v.get(lo..hi).unwrap_or(&[])),
            Col64::Steps(base, v) => Col64::Steps(base, v.get(lo..hi).unwrap_or(&[])),
        }
    }

    pub(crate) fn iter(self) -> Col64Iter<'a> {
        match self {
            Col64::Wide(v) => Col64Iter::Wide(v.iter()),
            Col64::Steps(base, v) => Col64Iter::Steps(base, v.iter()),
        }
    }

    /// The largest value, and whether the values never go down from
    /// `prev` on: loops over the stored words that the compiler
    /// vectorizes. `(0, true)` when empty.
    pub(crate) fn max_and_order(self, prev: u64) -> (u64, bool) {
        fn scan<T: Copy + Ord + Default>(v: &[T]) -> (T, bool) {
            let max = v.iter().fold(T::default(), |m, &x| m.max(x));
            let rest = v.get(1..).unwrap_or(&[]);
            let ordered = v.iter().zip(rest).fold(true, |ok, (a, b)| ok & (a <= b));
            (max, ordered)
        }
        let Some(first) = self.get(0) else {
            return (0, true);
        };
        let (max, ordered) = match self {
            Col64::Wide(v) => scan(v),
            Col64::Steps(base, v) => {
                let (max, ordered) = scan(v);
                (base + u64::from(max), ordered)
            }
        };
        (max, ordered && first >= prev)
    }

    /// The first row for which `below` is false, on a column where it is
    /// true of a prefix (`slice::partition_point`).
    pub(crate) fn partition_point(self, below: impl Fn(u64) -> bool) -> usize {
        match self {
            Col64::Wide(v) => v.partition_point(|&t| below(t)),
            Col64::Steps(base, v) => v.partition_point(|&s| below(base + u64::from(s))),
        }
    }
}

/// The values of a [`Col64`].
pub(crate) enum Col64Iter<'a> {
    Wide(std::slice::Iter<'a, u64>),
    Steps(u64, std::slice::Iter<'a, u32>),
}

impl Iterator for Col64Iter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        match self {
            Col64Iter::Wide(v) => v.next().copied(),
            Col64Iter::Steps(base, v) => v.next().map(|&s| *base + u64::from(s)),
        }
    }
}

impl Col64Mut<'_> {
    /// Writes `values` from row `at` on, as many as fit. Values stored as
    /// steps must fit the slab's layout (checked by the caller).
    #[inline]
    pub(crate) fn fill(self, at: usize, values: impl Iterator<Item = u64>) {
        match self {
            Col64Mut::Wide(col) => {
                for (slot, v) in col.get_mut(at..).unwrap_or(&mut []).iter_mut().zip(values) {
                    *slot = v;
                }
            }
            Col64Mut::Steps(base, col) => {
                for (slot, v) in col.get_mut(at..).unwrap_or(&mut []).iter_mut().zip(values) {
                    *slot = v.wrapping_sub(base) as u32;
                }
            }
        }
    }
}

/// A slab's words cut into its columns, once for shared and once for
/// mutable borrows (`split_at`/`split_at_mut` and the matching casts).
macro_rules! split_cols {
    ($words:expr, $cap:expr, $layout:expr, $split:ident, $cast:ident, $col64:ident, $cols:ident) => {{
        let cap = $cap;
        let (ts_ns, file_offset, narrow) = match $layout {
            Layout::Wide => {
                let (wide, narrow) = $words.$split(2 * cap);
                let (ts, off) = wide.$split(cap);
                ($col64::Wide(ts), $col64::Wide(off), bytemuck::$cast(narrow))
            }
            Layout::Steps {
                ts_base_ns,
                offset_base,
            } => {
                let all = bytemuck::$cast::<u64, u32>($words);
                let (ts, rest) = all.$split(cap);
                let (off, narrow) = rest.$split(cap);
                (
                    $col64::Steps(ts_base_ns, ts),
                    $col64::Steps(offset_base, off),
                    narrow,
                )
            }
        };
        let (lens, rest) = narrow.$split(cap);
        let (conversation, rest) = rest.$split(cap);
        let (psn_opcode, meta) = rest.$split(cap);
        $cols {
            ts_ns,
            file_offset,
            lens,
            conversation,
            psn_opcode,
            meta,
        }
    }};
}

impl Slab {
    /// Zeroed room for `cap` rows, with the time and the file offset as
    /// steps from bases set by the first row (see [`Slab::set_layout`]).
    /// A whole chunk is mapped on its own and faulted in at once; smaller
    /// slabs (a small capture's first chunk) come from the heap.
    pub(crate) fn new(cap: usize) -> Slab {
        Slab::with_layout(cap, Layout::steps_from(0, 0))
    }

    pub(crate) fn with_layout(cap: usize, layout: Layout) -> Slab {
        let bytes = cap * layout.row_bytes();
        let mem = if bytes >= MAPPED_MIN_BYTES {
            map_populated(bytes)
        } else {
            None
        };
        // Rows are 24 or 32 bytes: whole words.
        let mem = mem.unwrap_or_else(|| Mem::Heap(vec![0; bytes / 8]));
        Slab { mem, cap, layout }
    }

    /// Rows of each column.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// Bases the steps of a slab with no rows yet; a wide slab stays wide.
    pub(crate) fn set_layout(&mut self, layout: Layout) {
        if self.layout != Layout::Wide && layout != Layout::Wide {
            self.layout = layout;
        }
    }

    /// Bytes of memory the slab holds.
    pub(crate) fn bytes(&self) -> usize {
        self.cap * self.layout.row_bytes()
    }

    /// The same rows in a wide slab of room `cap` (at least `len`).
    pub(crate) fn widened(&self, len: usize, cap: usize) -> Slab {
        let mut wide = Slab::with_layout(cap.max(len), Layout::Wide);
        self.copy_into(&mut wide, len);
        wide
    }

    /// Copies the first `len` rows into `to` (of either layout; values
    /// into a stepped slab must fit its layout).
    pub(crate) fn copy_into(&self, to: &mut Slab, len: usize) {
        let (from, into) = (self.cols(), to.cols_mut());
        into.ts_ns.fill(0, from.ts_ns.range(0, len).iter());
        into.file_offset
            .fill(0, from.file_offset.range(0, len).iter());
        for (to, from) in [
            (into.lens, from.lens),
            (into.conversation, from.conversation),
            (into.psn_opcode, from.psn_opcode),
            (into.meta, from.meta),
        ] {
            if let (Some(to), Some(from)) = (to.get_mut(..len), from.get(..len)) {
                to.copy_from_slice(from);
            }
        }
    }

    /// The first `len` rows as a segment file holds them: each column
    /// whole, little-endian, in the slab's order (the time and the offset
    /// as steps in a stepped slab; the layout's bases are kept by the
    /// caller).
    pub(crate) fn write_rows(&self, len: usize, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let c = self.cols();
        match (c.ts_ns.range(0, len), c.file_offset.range(0, len)) {
            (Col64::Steps(_, ts), Col64::Steps(_, off)) => {
                for v in ts.iter().chain(off) {
                    w.write_all(&v.to_le_bytes())?;
                }
            }
            (ts, off) => {
                for v in ts.iter().chain(off.iter()) {
                    w.write_all(&v.to_le_bytes())?;
                }
            }
        }
        for col in [c.lens, c.conversation, c.psn_opcode, c.meta] {
            for v in col.get(..len).unwrap_or(col) {
                w.write_all(&v.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// The bytes of a segment of `len` rows in `layout` that
    /// [`Slab::write_rows`] wrote at byte `at` of `file`.
    pub(crate) fn read_segment(
        file: &std::fs::File,
        at: u64,
        len: usize,
        layout: Layout,
    ) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len * layout.row_bytes()];
        super::read_exact_at(file, &mut buf, at)?;
        Ok(buf)
    }

    /// A slab of exactly `len` rows from a segment's bytes
    /// ([`Slab::read_segment`]); `None` when `buf` is not `len` rows long.
    pub(crate) fn from_segment(buf: &[u8], len: usize, layout: Layout) -> Option<Slab> {
        let n = len;
        if buf.len() != n * layout.row_bytes() {
            return None;
        }
        let mut slab = Slab::with_layout(n, layout);
        let u32s = |to: &mut [u32], from: usize| {
            for (v, b) in to.iter_mut().zip(buf[from..from + n * 4].chunks_exact(4)) {
                *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        };
        let cols = slab.cols_mut();
        // Where the four 32-bit columns start.
        let narrow = match (cols.ts_ns, cols.file_offset) {
            (Col64Mut::Steps(_, ts), Col64Mut::Steps(_, off)) => {
                u32s(ts, 0);
                u32s(off, n * 4);
                n * 8
            }
            (ts, off) => {
                let u64s = |to: Col64Mut<'_>, from: usize| {
                    to.fill(
                        0,
                        buf[from..from + n * 8].chunks_exact(8).map(|b| {
                            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                        }),
                    );
                };
                u64s(ts, 0);
                u64s(off, n * 8);
                n * 16
            }
        };
        u32s(cols.lens, narrow);
        u32s(cols.conversation, narrow + n * 4);
        u32s(cols.psn_opcode, narrow + n * 8);
        u32s(cols.meta, narrow + n * 12);
        Some(slab)
    }

    fn words(&self) -> &[u64] {
        match &self.mem {
            Mem::Heap(v) => v,
            // `map_populated` checked that the mapping casts.
            Mem::Mapped(map) => bytemuck::try_cast_slice(map).unwrap_or(&[]),
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.mem {
            Mem::Heap(v) => v,
            Mem::Mapped(map) => bytemuck::try_cast_slice_mut(map).unwrap_or(&mut []),
        }
    }

    pub(crate) fn cols(&self) -> Cols<'_> {
        split_cols!(
            self.words(),
            self.cap,
            self.layout,
            split_at,
            cast_slice,
            Col64,
            Cols
        )
    }

    pub(crate) fn cols_mut(&mut self) -> ColsMut<'_> {
        let (cap, layout) = (self.cap, self.layout);
        split_cols!(
            self.words_mut(),
            cap,
            layout,
            split_at_mut,
            cast_slice_mut,
            Col64Mut,
            ColsMut
        )
    }
}

/// An anonymous mapping of `bytes`, faulted in for writing with one
/// system call. `None` when the system refuses the mapping (the slab then
/// comes from the heap).
fn map_populated(bytes: usize) -> Option<Mem> {
    let map = memmap2::MmapMut::map_anon(bytes).ok()?;
    // A hint: before Linux 5.14 (no MADV_POPULATE_WRITE) the pages fault in
    // one at a time as rows arrive.
    #[cfg(target_os = "linux")]
    let _ = map.advise_range(memmap2::Advice::PopulateWrite, 0, bytes);
    // Page-aligned, so it casts; checked once here rather than trusted.
    bytemuck::try_cast_slice::<u8, u64>(&map).ok()?;
    Some(Mem::Mapped(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns do not overlap, start zeroed and keep what is written, for
    /// heap slabs and mapped ones, stepped and wide alike.
    #[test]
    fn columns_are_disjoint_and_keep_their_values() {
        let base = 5_000_000_000u64;
        for layout in [Layout::steps_from(base, base), Layout::Wide] {
            for cap in [
                1,
                1024,
                MAPPED_MIN_BYTES / STEP_ROW_BYTES + 1,
                2 * MAPPED_MIN_BYTES / STEP_ROW_BYTES,
            ] {
                let mut s = Slab::with_layout(cap, layout);
                assert_eq!(s.cap(), cap);
                assert_eq!(s.bytes(), cap * layout.row_bytes());
                {
                    let c = s.cols();
                    for len in [c.ts_ns.len(), c.file_offset.len(), c.lens.len()] {
                        assert_eq!(len, cap);
                    }
                    for len in [c.conversation.len(), c.psn_opcode.len(), c.meta.len()] {
                        assert_eq!(len, cap);
                    }
                    assert!(c.meta.iter().chain(c.lens).all(|&v| v == 0));
                }
                let c = s.cols_mut();
                let k = 0..cap as u64;
                c.ts_ns.fill(0, k.clone().map(|k| base + k));
                c.file_offset
                    .fill(0, k.map(|k| base + u64::from(u32::MAX) - k));
                for i in 0..cap {
                    c.lens[i] = i as u32 + 2;
                    c.conversation[i] = i as u32 + 3;
                    c.psn_opcode[i] = i as u32 + 4;
                    c.meta[i] = i as u32 + 5;
                }
                let c = s.cols();
                for i in 0..cap {
                    let k = i as u64;
                    assert_eq!(c.ts_ns.get(i), Some(base + k));
                    assert_eq!(c.file_offset.get(i), Some(base + u64::from(u32::MAX) - k));
                    assert_eq!((c.lens[i], c.conversation[i]), (i as u32 + 2, i as u32 + 3));
                    assert_eq!((c.psn_opcode[i], c.meta[i]), (i as u32 + 4, i as u32 + 5));
                }
                assert_eq!(c.ts_ns.iter().count(), cap);
                assert_eq!(c.ts_ns.partition_point(|t| t < base + 1), 1.min(cap));
                assert_eq!(c.ts_ns.range(1, cap).get(0), c.ts_ns.get(1));
            }
        }
    }

    /// A step holds what is at most 2^32 - 1 past its base, and a time a
    /// little before the first row's; a wide slab holds anything.
    #[test]
    fn what_fits_as_steps() {
        let l = Layout::steps_from(10_000_000_000, 1_000);
        assert!(l.fits(10_000_000_000, 1_000));
        assert!(l.fits(10_000_000_000 - TS_SLACK_NS, 1_000 + u64::from(u32::MAX)));
        assert!(!l.fits(10_000_000_000 - TS_SLACK_NS - 1, 1_000));
        assert!(!l.fits(10_000_000_000, 999));
        assert!(!l.fits(10_000_000_000, 1_000 + (1 << 32)));
        assert!(!l.fits(10_000_000_000 - TS_SLACK_NS + (1 << 32), 1_000));
        assert!(Layout::steps_from(0, 0).fits(0, 0), "a time near zero");
        assert!(Layout::Wide.fits(u64::MAX, 0));
        assert_eq!(l.row_bytes(), 24);
        assert_eq!(Layout::Wide.row_bytes(), 32);
    }

    /// Widening keeps every row and its values; a wide slab is never made
    /// stepped again.
    #[test]
    fn widening_keeps_the_rows() {
        let base = 1u64 << 40;
        let mut s = Slab::new(100);
        s.set_layout(Layout::steps_from(base, base));
        let c = s.cols_mut();
        c.ts_ns.fill(0, (0..60).map(|k| base + k * 1_000));
        c.file_offset.fill(0, (0..60).map(|k| base + k * 90));
        for (i, m) in c.meta.iter_mut().enumerate() {
            *m = i as u32;
        }
        let mut w = s.widened(60, 128);
        assert_eq!((w.layout(), w.cap()), (Layout::Wide, 128));
        w.set_layout(Layout::steps_from(0, 0));
        assert_eq!(w.layout(), Layout::Wide);
        let c = w.cols();
        for i in 0..60 {
            let k = i as u64;
            assert_eq!(c.ts_ns.get(i), Some(base + k * 1_000));
            assert_eq!(c.file_offset.get(i), Some(base + k * 90));
            assert_eq!(c.meta[i], i as u32);
        }
        assert_eq!(c.ts_ns.get(60), Some(0), "room past the rows is zero");
    }

    /// A whole chunk is mapped on its own and already faulted in: filling
    /// it takes (almost) no page faults.
    #[test]
    fn a_whole_chunk_is_mapped_and_faulted_in() {
        let cap = super::super::columns::CHUNK_ROWS;
        let mut s = Slab::new(cap);
        assert!(matches!(s.mem, Mem::Mapped(_)), "a chunk is mapped");
        assert!(matches!(Slab::new(1024).mem, Mem::Heap(_)));
        let before = super::super::prefault::minor_faults();
        s.words_mut().fill(7);
        let after = super::super::prefault::minor_faults();
        assert!(s.words().iter().all(|&w| w == 7));
        if let (Some(before), Some(after)) = (before, after)
            && super::super::prefault::has_populate_write()
        {
            // 1.5 MiB is 384 pages; faulted in ahead, a handful at most.
            assert!(after - before < 16, "{} faults", after - before);
        }
    }
}
