//! The columnar, chunked row storage: 32 bytes per packet, no reallocation.
//!
//! Columns grow in fixed chunks so that appending never copies what is
//! already stored (a doubling `Vec` would briefly hold twice the index) and
//! the slack is at most one chunk.

use super::row::{Flags, Row};
use crate::record::Direction;

/// Rows per chunk: 2 MiB of index.
pub(crate) const CHUNK_ROWS: usize = 1 << 16;

/// Lengths at or above this are kept in a side table.
const LEN_ESCAPE: u32 = 0xFFFF;

struct Chunk {
    ts_ns: Vec<u64>,
    file_offset: Vec<u64>,
    /// caplen (low 16) | origlen (high 16), `LEN_ESCAPE` = see side table.
    lens: Vec<u32>,
    conversation: Vec<u32>,
    /// psn (low 24) | opcode (high 8).
    psn_opcode: Vec<u32>,
    /// flags (low 16) | port (bits 16..24) | dir (bits 24..26: 0 none, 1 rx, 2 tx).
    meta: Vec<u32>,
    /// Largest timestamp in the chunk, for time searches on unsorted captures.
    max_ts_ns: u64,
}

/// The first chunk starts this small (and grows by doubling) so that small
/// captures do not pay for a whole chunk.
const FIRST_CHUNK_ROWS: usize = 1024;

impl Chunk {
    fn new(rows: usize) -> Chunk {
        Chunk {
            ts_ns: Vec::with_capacity(rows),
            file_offset: Vec::with_capacity(rows),
            lens: Vec::with_capacity(rows),
            conversation: Vec::with_capacity(rows),
            psn_opcode: Vec::with_capacity(rows),
            meta: Vec::with_capacity(rows),
            max_ts_ns: 0,
        }
    }

    /// Fault in all the chunk's columns at once (2 MiB), not a page at a
    /// time as rows arrive.
    fn prefault(&mut self) {
        use super::prefault::populate;
        populate(self.ts_ns.spare_capacity_mut());
        populate(self.file_offset.spare_capacity_mut());
        populate(self.lens.spare_capacity_mut());
        populate(self.conversation.spare_capacity_mut());
        populate(self.psn_opcode.spare_capacity_mut());
        populate(self.meta.spare_capacity_mut());
    }

    fn heap_bytes(&self) -> u64 {
        (self.ts_ns.capacity() * 8
            + self.file_offset.capacity() * 8
            + self.lens.capacity() * 4
            + self.conversation.capacity() * 4
            + self.psn_opcode.capacity() * 4
            + self.meta.capacity() * 4) as u64
    }

    fn len(&self) -> usize {
        self.ts_ns.len()
    }

    fn reserve_to(&mut self, rows: usize) {
        let more = rows.saturating_sub(self.len());
        self.ts_ns.reserve_exact(more);
        self.file_offset.reserve_exact(more);
        self.lens.reserve_exact(more);
        self.conversation.reserve_exact(more);
        self.psn_opcode.reserve_exact(more);
        self.meta.reserve_exact(more);
    }
}

/// All rows of a store.
#[derive(Default)]
pub(crate) struct Columns {
    chunks: Vec<Chunk>,
    len: u64,
    /// Exact lengths of the rare frames longer than 65534 bytes.
    big_lens: std::collections::HashMap<u64, (u32, u32)>,
    /// True while every timestamp is >= the one before.
    pub(crate) sorted: bool,
    last_ts_ns: u64,
}

impl Columns {
    pub(crate) fn new() -> Columns {
        Columns {
            sorted: true,
            ..Columns::default()
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    #[cfg(test)]
    pub(crate) fn push(&mut self, r: &Row) {
        self.extend(std::iter::once(r));
    }

    /// Append many rows; the same as [`Columns::push`] for each, but a
    /// column at a time, so that each is one tight loop.
    pub(crate) fn extend<'r, I>(&mut self, rows: I)
    where
        I: Iterator<Item = &'r Row> + Clone,
    {
        let mut rest = rows;
        loop {
            if rest.clone().next().is_none() {
                return;
            }
            if self.chunks.last().is_none_or(|c| c.len() == CHUNK_ROWS) {
                let rows = if self.chunks.is_empty() {
                    FIRST_CHUNK_ROWS
                } else {
                    CHUNK_ROWS
                };
                let mut c = Chunk::new(rows);
                if rows == CHUNK_ROWS {
                    c.prefault();
                }
                self.chunks.push(c);
            }
            let first = self.len;
            let Some(c) = self.chunks.last_mut() else {
                return;
            };
            let part = rest.clone().take(CHUNK_ROWS - c.len());
            // Grow by doubling up to a chunk, as row-by-row pushes would.
            let want = c.len() + part.clone().count();
            if want > c.ts_ns.capacity() {
                c.reserve_to(want.next_power_of_two().min(CHUNK_ROWS));
            }
            c.ts_ns.extend(part.clone().map(|r| r.ts_ns));
            c.file_offset.extend(part.clone().map(|r| r.file_offset));
            c.lens.extend(part.clone().map(|r| {
                if r.caplen >= LEN_ESCAPE || r.origlen >= LEN_ESCAPE {
                    LEN_ESCAPE | (LEN_ESCAPE << 16)
                } else {
                    r.caplen | (r.origlen << 16)
                }
            }));
            c.conversation.extend(part.clone().map(|r| r.conversation));
            c.psn_opcode.extend(
                part.clone()
                    .map(|r| (r.psn & 0xFF_FFFF) | (u32::from(r.opcode) << 24)),
            );
            c.meta.extend(part.clone().map(|r| {
                let dir = match r.dir {
                    None => 0,
                    Some(Direction::Rx) => 1,
                    Some(Direction::Tx) => 2,
                };
                u32::from(r.flags.0) | (u32::from(r.port) << 16) | (dir << 24)
            }));
            let mut n = 0u64;
            for r in part {
                if r.caplen >= LEN_ESCAPE || r.origlen >= LEN_ESCAPE {
                    self.big_lens.insert(first + n, (r.caplen, r.origlen));
                }
                c.max_ts_ns = c.max_ts_ns.max(r.ts_ns);
                if r.ts_ns < self.last_ts_ns {
                    self.sorted = false;
                }
                self.last_ts_ns = r.ts_ns;
                n += 1;
            }
            self.len += n;
            for _ in 0..n {
                rest.next();
            }
        }
    }

    pub(crate) fn get(&self, index: u64) -> Option<Row> {
        let chunk = self.chunks.get((index / CHUNK_ROWS as u64) as usize)?;
        let i = (index % CHUNK_ROWS as u64) as usize;
        let lens = *chunk.lens.get(i)?;
        let (caplen, origlen) = if lens & 0xFFFF == LEN_ESCAPE {
            self.big_lens
                .get(&index)
                .copied()
                .unwrap_or((LEN_ESCAPE, LEN_ESCAPE))
        } else {
            (lens & 0xFFFF, lens >> 16)
        };
        Some(row(
            chunk.ts_ns[i],
            chunk.file_offset[i],
            (caplen, origlen),
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
            let Some(chunk) = self.chunks.get((at / CHUNK_ROWS as u64) as usize) else {
                return;
            };
            let first = at - at % CHUNK_ROWS as u64;
            let lo = (at - first) as usize;
            let hi = ((range.end - first) as usize).min(chunk.len());
            if lo >= hi {
                return;
            }
            fn part<T>(v: &[T], lo: usize, hi: usize) -> &[T] {
                v.get(lo..hi).unwrap_or(&[])
            }
            let rows = part(&chunk.ts_ns, lo, hi)
                .iter()
                .zip(part(&chunk.file_offset, lo, hi))
                .zip(part(&chunk.lens, lo, hi))
                .zip(part(&chunk.conversation, lo, hi))
                .zip(part(&chunk.psn_opcode, lo, hi))
                .zip(part(&chunk.meta, lo, hi));
            for (k, (((((&ts_ns, &file_offset), &lens), &conversation), &po), &meta)) in
                rows.enumerate()
            {
                let (caplen, origlen) = if lens & 0xFFFF == LEN_ESCAPE {
                    self.big_lens
                        .get(&(first + (lo + k) as u64))
                        .copied()
                        .unwrap_or((LEN_ESCAPE, LEN_ESCAPE))
                } else {
                    (lens & 0xFFFF, lens >> 16)
                };
                out.push(row(
                    ts_ns,
                    file_offset,
                    (caplen, origlen),
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
        if let Some(m) = self.chunks.get_mut(ci).and_then(|c| c.meta.get_mut(i)) {
            let flags = ((*m as u16) & !clear.0) | set.0;
            *m = (*m & !0xFFFF) | u32::from(flags);
        }
    }

    #[inline]
    fn ts(&self, index: u64) -> u64 {
        let c = &self.chunks[(index / CHUNK_ROWS as u64) as usize];
        c.ts_ns[(index % CHUNK_ROWS as u64) as usize]
    }

    /// First row whose timestamp is >= `ts_ns` (in file order on unsorted
    /// captures: the first row of the first chunk that reaches `ts_ns`, then
    /// the first row in it at or after `ts_ns`).
    pub(crate) fn seek(&self, ts_ns: u64) -> u64 {
        if self.sorted {
            let (mut lo, mut hi) = (0u64, self.len);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.ts(mid) < ts_ns {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
        for (ci, c) in self.chunks.iter().enumerate() {
            if c.max_ts_ns >= ts_ns {
                let base = (ci * CHUNK_ROWS) as u64;
                if let Some(i) = c.ts_ns.iter().position(|t| *t >= ts_ns) {
                    return base + i as u64;
                }
            }
        }
        self.len
    }

    /// Bytes the index holds (allocated), for "index memory per packet".
    pub(crate) fn heap_bytes(&self) -> u64 {
        let chunks: u64 = self.chunks.iter().map(Chunk::heap_bytes).sum();
        chunks + self.big_lens.len() as u64 * 32
    }
}

/// A row from its stored columns.
#[inline]
fn row(
    ts_ns: u64,
    file_offset: u64,
    (caplen, origlen): (u32, u32),
    conversation: u32,
    psn_opcode: u32,
    meta: u32,
) -> Row {
    Row {
        ts_ns,
        file_offset,
        caplen,
        origlen,
        conversation,
        opcode: (psn_opcode >> 24) as u8,
        psn: psn_opcode & 0xFF_FFFF,
        flags: Flags(meta as u16),
        port: (meta >> 16) as u8,
        dir: match (meta >> 24) & 3 {
            1 => Some(Direction::Rx),
            2 => Some(Direction::Tx),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_32_bytes() {
        let mut c = Columns::new();
        let mut rows = Vec::new();
        for i in 0..(CHUNK_ROWS as u64 * 2 + 10) {
            let r = Row {
                ts_ns: 1_000 + i * 7,
                file_offset: 24 + i * 90,
                caplen: (i % 70_000) as u32,
                origlen: 70 + (i % 9000) as u32,
                conversation: (i % 5) as u32,
                opcode: (i % 256) as u8,
                psn: (i * 3) as u32 & 0xFF_FFFF,
                flags: Flags((i * 31) as u16),
                port: (i % 4) as u8,
                dir: [None, Some(Direction::Rx), Some(Direction::Tx)][(i % 3) as usize],
            };
            c.push(&r);
            rows.push(r);
        }
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(c.get(i as u64).as_ref(), Some(r), "row {i}");
        }
        assert_eq!(c.get(rows.len() as u64), None);
        // Ranges read a chunk at a time give the same rows, across chunk
        // ends, the escaped lengths and past the end.
        let n = rows.len() as u64;
        let edge = CHUNK_ROWS as u64;
        for range in [
            0..n,
            3..17,
            edge - 5..edge + 5,
            edge * 2 - 1..n + 100,
            n..n + 1,
        ] {
            let mut got = Vec::new();
            c.extend_rows(range.clone(), &mut got);
            let end = range.end.min(n);
            let want: Vec<Row> = (range.start..end).filter_map(|i| c.get(i)).collect();
            assert_eq!(got, want, "{range:?}");
        }
        assert_eq!(c.seek(1_000 + 7 * 100), 100);
        assert_eq!(c.seek(1_000 + 7 * 100 + 1), 101);
        assert_eq!(c.seek(0), 0);
        assert_eq!(c.seek(u64::MAX), rows.len() as u64);
        let rows_bytes = 3 * CHUNK_ROWS as u64 * 32;
        assert_eq!(c.heap_bytes(), rows_bytes + c.big_lens.len() as u64 * 32);
    }

    #[test]
    fn batches_store_what_single_rows_store() {
        let rows: Vec<Row> = (0..(CHUNK_ROWS as u64 * 2 + 777))
            .map(|i| Row {
                ts_ns: 1_000 + i * 7 - (i % 3),
                file_offset: 24 + i * 90,
                caplen: (i % 70_000) as u32,
                origlen: 70 + (i % 9000) as u32,
                psn: i as u32,
                ..Row::default()
            })
            .collect();
        let mut one = Columns::new();
        for r in &rows {
            one.push(r);
        }
        let mut many = Columns::new();
        let mut at = 0;
        for size in [256usize, 1024, 1, 16_384, 5_000, 70_000].iter().cycle() {
            let end = (at + size).min(rows.len());
            many.extend(rows[at..end].iter());
            at = end;
            if at == rows.len() {
                break;
            }
        }
        assert_eq!(many.len(), one.len());
        assert_eq!(many.heap_bytes(), one.heap_bytes());
        assert_eq!(many.sorted, one.sorted);
        for i in 0..rows.len() as u64 {
            assert_eq!(many.get(i), one.get(i), "row {i}");
        }
    }

    #[test]
    fn seek_on_unsorted_timestamps() {
        let mut c = Columns::new();
        for ts in [10u64, 30, 20, 40, 35] {
            c.push(&Row {
                ts_ns: ts,
                ..Row::default()
            });
        }
        assert!(!c.sorted);
        assert_eq!(c.seek(25), 1);
        assert_eq!(c.seek(36), 3);
        assert_eq!(c.seek(41), 5);
    }
}
