//! Each point's frames as the matcher reads them: a [`Sighting`] per RoCE
//! frame, taken at ingest by [`PointTap`] (an [`Analyzer`] in front of the
//! RC analysis), so that a file and a live feed give them alike and the
//! frame bytes are never read again.

use std::sync::{Arc, Mutex};

use rocescope_decoders::analysis::Observed;

use crate::store::{Analyzer, LateFlags, PacketInfo, Wide};

/// One RoCE frame seen at one point: what matching needs, 40 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sighting {
    /// The frame's content ([`content_hash`]): flow, opcode, PSN, AETH
    /// and RETH fields. Equal at every point that saw the frame.
    pub hash: u64,
    /// The point's own clock (or a frame index in a capture without
    /// times).
    pub ts_ns: u64,
    /// The frame's row in the point's store.
    pub row: u64,
    /// The point's conversation (its store's id).
    pub conv: u32,
    /// 24-bit PSN.
    pub psn: u32,
    /// Length on the wire.
    pub wire_len: u16,
    pub opcode: u8,
    /// AETH syndrome, [`NO_SYNDROME`] without an AETH.
    pub syndrome: u8,
}

const _: () = assert!(std::mem::size_of::<Sighting>() == 40);

/// [`Sighting::syndrome`] of a frame without an AETH (0xFF is no
/// syndrome a frame carries: its bits 6:5 would be 11 with a reserved code).
pub const NO_SYNDROME: u8 = 0xFF;

impl Sighting {
    /// An ACK (AETH syndrome 0xx_xxxxx, bits 6:5 = 00).
    pub fn is_ack(&self) -> bool {
        self.syndrome != NO_SYNDROME && self.syndrome & 0x60 == 0
    }
    /// A NAK (bits 6:5 = 11).
    pub fn is_nak(&self) -> bool {
        self.syndrome != NO_SYNDROME && self.syndrome & 0x60 == 0x60
    }
}

/// The 64-bit mix the content hash is made of (the rustc "Fx" step; the
/// words are few and the collisions of 64 bits negligible at any capture
/// size).
#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// A flow's part of the content hash: its addresses and DestQP.
pub fn flow_hash(src: &[u8; 16], dst: &[u8; 16], dest_qp: u32) -> u64 {
    let w = |b: &[u8]| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_le_bytes(a)
    };
    let mut h = 0;
    for x in [&src[..8], &src[8..], &dst[..8], &dst[8..]] {
        h = mix(h, w(x));
    }
    mix(h, u64::from(dest_qp))
}

/// What names a frame at every point that saw it: its flow, opcode, PSN,
/// the AETH's syndrome and MSN and the RETH's DMA length. Neither the IP
/// ID (RoCE NICs send 0) nor the ICRC (header-only captures cut it) is
/// needed; a resend of the same PSN has the same content, and the
/// matcher tells its copies apart by time.
#[inline]
pub fn content_hash(flow: u64, opcode: u8, psn: u32, syndrome_msn: u32, dma_len: u32) -> u64 {
    let a = u64::from(opcode) << 56 | u64::from(psn) << 32 | u64::from(syndrome_msn);
    let h = mix(mix(flow, a), u64::from(dma_len));
    // The last step's high bits mixed down: the matcher partitions by them.
    h ^ (h >> 29)
}

/// Sightings a block of [`WideCounts`] counts: 2^14, 1 KiB of counts
/// beside 640 KiB of sightings (1/16 byte a sighting).
pub const COUNT_BLOCK_BITS: u32 = 14;

/// The hash's high bits [`WideCounts`] counts by (the grouping's wide
/// buckets' at most).
pub const COUNT_BITS: u32 = 8;

/// A point's sightings counted block by block by their hash's high bits,
/// and their first and last time, kept as they are appended: the
/// grouping takes its counts from these rather than reading every
/// sighting once more (a whole pass over 40 bytes each).
#[derive(Debug, Clone)]
pub struct WideCounts {
    /// Block `k` counts sightings `k << COUNT_BLOCK_BITS` up to the next
    /// block's first (the last block up to `counted`).
    pub blocks: Vec<[u32; 1 << COUNT_BITS]>,
    /// Sightings counted, from the list's first: the counts are the
    /// list's only while this is its length.
    pub counted: usize,
    /// The lowest and highest `ts_ns` counted (`(u64::MAX, 0)` for none).
    pub span: (u64, u64),
}

impl Default for WideCounts {
    fn default() -> WideCounts {
        WideCounts {
            blocks: Vec::new(),
            counted: 0,
            span: (u64::MAX, 0),
        }
    }
}

impl WideCounts {
    /// The counts of `list`, from nothing.
    pub fn of(list: &[Sighting]) -> WideCounts {
        let mut c = WideCounts::default();
        c.extend(list);
        c
    }

    /// `more`, appended to the list after those counted, counted: block
    /// by block, so that the loop over sightings only counts.
    pub fn extend(&mut self, more: &[Sighting]) {
        let mut rest = more;
        while !rest.is_empty() {
            let b = self.counted >> COUNT_BLOCK_BITS;
            if b == self.blocks.len() {
                self.blocks.push([0; 1 << COUNT_BITS]);
            }
            let room = ((b + 1) << COUNT_BLOCK_BITS) - self.counted;
            let (now, after) = rest.split_at(room.min(rest.len()));
            let Some(block) = self.blocks.get_mut(b) else {
                // Not reached (pushed above); left uncounted, the counts
                // then are not the list's and go unused.
                return;
            };
            let (mut lo, mut hi) = self.span;
            for s in now {
                block[(s.hash >> (64 - COUNT_BITS)) as usize] += 1;
                lo = lo.min(s.ts_ns);
                hi = hi.max(s.ts_ns);
            }
            self.span = (lo, hi);
            self.counted += now.len();
            rest = after;
        }
    }

    /// Adds the sightings `list[from..to]` to `out` by the hash's top
    /// `COUNT_BITS - coarsen` bits: whole blocks from their counts, the
    /// blocks cut by the range's ends sighting by sighting. The counts
    /// must be `list`'s (`counted == list.len()`, the caller checks).
    pub fn add_range(
        &self,
        list: &[Sighting],
        from: usize,
        to: usize,
        out: &mut [u32],
        coarsen: u32,
    ) {
        let to = to.min(list.len());
        let mut i = from;
        while i < to {
            let b = i >> COUNT_BLOCK_BITS;
            let start = b << COUNT_BLOCK_BITS;
            let end = (start + (1 << COUNT_BLOCK_BITS)).min(list.len());
            if i == start
                && end <= to
                && let Some(block) = self.blocks.get(b)
            {
                for (k, &n) in block.iter().enumerate() {
                    if let Some(o) = out.get_mut(k >> coarsen) {
                        *o += n;
                    }
                }
                i = end;
                continue;
            }
            let stop = end.min(to);
            for s in &list[i..stop] {
                // (Coarsened to one bucket: a shift by 64, none left.)
                let k = s.hash.checked_shr(64 - COUNT_BITS + coarsen).unwrap_or(0);
                if let Some(o) = out.get_mut(k as usize) {
                    *o += 1;
                }
            }
            i = stop;
        }
    }
}

/// The sightings of one point, growing as its store does.
#[derive(Debug, Default)]
pub struct Sightings {
    pub list: Vec<Sighting>,
    /// `list` counted as it grows.
    pub counts: WideCounts,
    /// The oldest let go past the bound (a live session's), counted.
    pub let_go: u64,
    /// Each conversation's flow hash, by its id (filled as they appear).
    flows: Vec<u64>,
}

/// The sightings of one point, shared with whoever matches them.
pub type SharedSightings = Arc<Mutex<Sightings>>;

/// An [`Analyzer`] that takes each RoCE frame's [`Sighting`] and hands
/// the batch on to the analysis behind it.
pub struct PointTap {
    inner: Box<dyn Analyzer>,
    out: SharedSightings,
    /// At most this many are kept (the newest): a live session's bound.
    max: usize,
    batch: Vec<Sighting>,
}

impl std::fmt::Debug for PointTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointTap")
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl PointTap {
    /// A tap in front of `inner`, keeping every sighting.
    pub fn new(inner: Box<dyn Analyzer>) -> (PointTap, SharedSightings) {
        PointTap::bounded(inner, usize::MAX)
    }

    /// A tap keeping at most `max` sightings, the newest (the older ones
    /// are counted in [`Sightings::let_go`]).
    pub fn bounded(inner: Box<dyn Analyzer>, max: usize) -> (PointTap, SharedSightings) {
        let out = SharedSightings::default();
        (
            PointTap {
                inner,
                out: Arc::clone(&out),
                max: max.max(1),
                batch: Vec::new(),
            },
            out,
        )
    }
}

impl Analyzer for PointTap {
    fn batch(
        &mut self,
        first_index: u64,
        batch: &mut [PacketInfo],
        wide: &[Wide],
        late: &mut Vec<LateFlags>,
    ) {
        let mut s = self.out.lock().unwrap_or_else(|e| e.into_inner());
        self.batch.clear();
        for (i, info) in batch.iter().enumerate() {
            let Some(o) = info.observed(wide) else {
                continue;
            };
            let conv = info.row.conversation;
            let slot = conv as usize;
            if slot >= s.flows.len() {
                s.flows.resize(slot + 1, 0);
            }
            let mut flow = s.flows[slot];
            if flow == 0 {
                let (src, dst) = o.ends();
                flow = flow_hash(&src, &dst, o.dest_qp()) | 1;
                s.flows[slot] = flow;
            }
            let syndrome = o.syndrome();
            let syn_msn = syndrome.map_or(0, |x| u32::from(x) << 24 | o.msn());
            self.batch.push(Sighting {
                hash: content_hash(
                    flow,
                    info.row.opcode,
                    info.row.psn,
                    syn_msn,
                    o.dma_len().unwrap_or(0),
                ),
                ts_ns: info.row.ts_ns,
                row: first_index + i as u64,
                conv,
                psn: info.row.psn,
                wire_len: u16::try_from(info.row.origlen).unwrap_or(u16::MAX),
                opcode: info.row.opcode,
                syndrome: syndrome.unwrap_or(NO_SYNDROME),
            });
        }
        s.list.extend_from_slice(&self.batch);
        s.counts.extend(&self.batch);
        if s.list.len() > self.max {
            // Let the oldest half of the excess and more go at once, so
            // that the copy is rare.
            let cut = (s.list.len() - self.max)
                .max(self.max / 8)
                .min(s.list.len());
            s.list.drain(..cut);
            s.let_go += cut as u64;
            // The blocks now start elsewhere: counted again (as rare as
            // the copy, and about its cost).
            s.counts = WideCounts::of(&s.list);
        }
        drop(s);
        self.inner.batch(first_index, batch, wide, late);
    }

    fn record(&mut self, r: &crate::record::Record) {
        self.inner.record(r);
    }

    fn finish(&mut self) {
        self.inner.finish();
    }

    fn is_costly(&self) -> bool {
        self.inner.is_costly()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_counts_of_any_range_are_the_sightings_counted() {
        let n = 3 * (1usize << COUNT_BLOCK_BITS) + 123;
        let list: Vec<Sighting> = (0..n as u64)
            .map(|i| Sighting {
                hash: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                ts_ns: 500 + (i * 31) % 9_000,
                ..Sighting::default()
            })
            .collect();
        let mut c = WideCounts::default();
        for b in list.chunks(777) {
            c.extend(b);
        }
        assert_eq!(c.counted, n);
        assert_eq!(c.span, (500, 500 + 8_999));
        let block = 1usize << COUNT_BLOCK_BITS;
        let ranges = [
            (0, n),
            (0, block),
            (1, block + 1),
            (block, 3 * block),
            (block - 1, 3 * block + 1),
            (5, 17),
            (3 * block, n),
            (n, n),
        ];
        for coarsen in [0, 3, COUNT_BITS] {
            for &(from, to) in &ranges {
                let mut got = vec![0u32; 1 << (COUNT_BITS - coarsen)];
                c.add_range(&list, from, to, &mut got, coarsen);
                let mut want = vec![0u32; got.len()];
                for s in &list[from..to] {
                    want[s.hash.checked_shr(64 - COUNT_BITS + coarsen).unwrap_or(0) as usize] += 1;
                }
                assert_eq!(got, want, "{from}..{to}, coarsen {coarsen}");
            }
        }
        assert_eq!(WideCounts::of(&[]).span, (u64::MAX, 0));
    }
}
