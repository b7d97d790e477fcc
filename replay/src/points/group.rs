//! Every point's sightings grouped by content: one pass that scatters
//! them into wide buckets by the hash's high bits (each thread a share of
//! the sightings, each read once; few enough write streams for the TLB),
//! each wide bucket then cut in the cache into its buckets, each bucket
//! sorted on its own (small enough to stay in cache), the buckets shared
//! among the threads, each sorted bucket handed at once to a pass that
//! reads every group (the direction votes) and counted by where its
//! sightings' marks go (`journey.rs` writes them span by span). A group
//! is a run of equal hashes: copies of one frame, each point's in its own
//! capture order.

use super::journey::{Flows, NONE};
use super::tap::COUNT_BITS;
use super::{PointInput, PointsError, joined_all};
use crate::store::prefault;

/// A journey member's place: point in the high bits, its index below.
pub(super) const IDX_BITS: u32 = 40;

/// An entry's `at`: point (4 bits) | index (38) | syndrome (8) | wire
/// length (14), so that sorting by `(hash, at)` puts a group's copies in
/// point order, each point's in its own order.
const AT_IDX_BITS: u32 = 38;
const AT_IDX_SHIFT: u32 = 22;
const AT_POINT_SHIFT: u32 = AT_IDX_SHIFT + AT_IDX_BITS;

/// One sighting, sorted by content, with what every pass reads of it (so
/// that they read the entries in order, never the sightings at random).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Entry {
    pub hash: u64,
    /// Point, index, syndrome, wire length (see `AT_*`).
    pub at: u64,
    /// Its time, in its point's clock.
    pub ts: u64,
    /// Its flow (`journey::NONE` for none).
    pub flow: u32,
    /// PSN (24 bits) | opcode (a journey keeps the first copy's as it is).
    pub psn_op: u32,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 32);

impl Entry {
    #[inline]
    pub fn point(&self) -> usize {
        (self.at >> AT_POINT_SHIFT) as usize
    }
    #[inline]
    pub fn idx(&self) -> usize {
        ((self.at >> AT_IDX_SHIFT) & ((1 << AT_IDX_BITS) - 1)) as usize
    }
    #[inline]
    pub fn syndrome(&self) -> u8 {
        (self.at >> 14) as u8
    }
    #[inline]
    pub fn wire_len(&self) -> u16 {
        (self.at & 0x3FFF) as u16
    }
    /// Its place as a journey member keeps it.
    #[inline]
    pub fn member(&self) -> u64 {
        ((self.point() as u64) << IDX_BITS) | self.idx() as u64
    }
}

/// The sightings of every point, by content.
#[derive(Debug)]
pub(super) struct Groups {
    /// Every entry, bucket after bucket.
    entries: Vec<Entry>,
    /// Where each thread's part starts and ends among the entries: a
    /// contiguous range of buckets; the threads of every later pass take
    /// one each.
    parts: Vec<std::ops::Range<usize>>,
    /// Each point's first and last time (0 and 0 without sightings),
    /// taken in the counting pass.
    pub spans: Vec<(u64, u64)>,
    /// Where each point's sightings are cut into spans of
    /// [`MARK_SPAN_BITS`] (their marks are written span by span).
    pub spans_of_marks: MarkSpans,
    /// Each part's entries per span of the marks (counted as its buckets
    /// are sorted, while they are in the cache).
    pub span_counts: Vec<Vec<u32>>,
}

/// A span of the marks holds this many sightings (2^14: 128 KiB of marks,
/// within the L2 cache while they are written).
pub(super) const MARK_SPAN_BITS: u32 = 14;

/// Every point's sightings in spans of `2^MARK_SPAN_BITS`, numbered one
/// after the other, point after point.
#[derive(Debug, Clone, Default)]
pub(super) struct MarkSpans {
    /// Where each point's spans start among all (and their total last).
    pub first: Vec<usize>,
}

impl MarkSpans {
    pub fn new(inputs: &[PointInput<'_>]) -> MarkSpans {
        let mut first = Vec::with_capacity(inputs.len() + 1);
        let mut at = 0;
        for p in inputs {
            first.push(at);
            at += p.sightings.len().div_ceil(1 << MARK_SPAN_BITS);
        }
        first.push(at);
        MarkSpans { first }
    }

    /// Spans in all.
    pub fn len(&self) -> usize {
        self.first.last().copied().unwrap_or(0)
    }

    /// The span of point `p`'s sighting `i`.
    #[inline]
    pub fn of(&self, p: usize, i: usize) -> usize {
        // Past every span for a point there is not.
        self.first
            .get(p)
            .map_or(usize::MAX, |f| f + (i >> MARK_SPAN_BITS))
    }
}

// SAFETY: `Entry` is integers only (no padding: 8 + 8 + 8 + 4 + 4 bytes,
// asserted above), for which all zero bytes are a value; so that the
// entries come zeroed from the allocator, each page first touched by the
// thread that scatters into it, rather than filled first.
#[allow(unsafe_code)]
unsafe impl bytemuck::Zeroable for Entry {}

/// What a thread does with each bucket once it is sorted, while it is
/// still in the cache: a pass over every group fused into the grouping.
pub(super) trait BucketVisit: Send {
    /// `bucket`, sorted, starting at `at` in the thread's part.
    fn bucket(&mut self, bucket: &[Entry], at: usize);
}

/// Buckets for `total` sightings: about 1 Ki entries each (32 KiB), so
/// that one sorts in the L1 cache.
fn bucket_bits(total: usize) -> u32 {
    let want = (total / 1024).max(1);
    (usize::BITS - want.leading_zeros()).clamp(4, 22)
}

/// Each thread's share of the sightings: (point, from, to), the points'
/// sightings taken as one list cut in `threads` equal ranges.
fn shares(inputs: &[PointInput<'_>], threads: usize) -> Vec<Vec<(usize, usize, usize)>> {
    let total: usize = inputs.iter().map(|p| p.sightings.len()).sum();
    let mut out = Vec::with_capacity(threads);
    let (mut point, mut i) = (0usize, 0usize);
    for k in 1..=threads {
        let mut want = total * k / threads - total * (k - 1) / threads;
        let mut mine = Vec::new();
        while want > 0 && point < inputs.len() {
            let len = inputs[point].sightings.len();
            let take = (len - i).min(want);
            if take > 0 {
                mine.push((point, i, i + take));
            }
            want -= take;
            i += take;
            if i == len {
                point += 1;
                i = 0;
            }
        }
        out.push(mine);
    }
    out
}

impl Groups {
    /// Four steps on `threads` threads: each counts its share of the
    /// sightings per bucket (and each point's span); each scatters its
    /// share into the wide buckets, at its place in each (after the earlier
    /// shares': a bucket's entries stay in point order, each point's in its
    /// order); each cuts a range of wide buckets into their buckets
    /// (keeping that order); each sorts a contiguous range of buckets (its
    /// part), hands each sorted bucket to its visitor (made by `visitor`
    /// from the spans) and counts its entries by span of the marks. A
    /// thread that failed loses the grouping with an error naming it.
    pub fn build<V: BucketVisit>(
        inputs: &[PointInput<'_>],
        flows: &Flows,
        threads: usize,
        visitor: impl Fn(&[(u64, u64)]) -> V + Sync,
    ) -> Result<(Groups, Vec<V>), PointsError> {
        let total: usize = inputs.iter().map(|p| p.sightings.len()).sum();
        let bits = bucket_bits(total);
        let buckets = 1usize << bits;
        let shift = 64 - bits;
        let threads = threads.max(1);
        let shares = shares(inputs, threads);
        // The scatter writes to a few wide buckets (each of `fine` buckets
        // in a row), then each wide bucket is cut into its buckets in the
        // cache: a write stream per bucket (thousands) missed the TLB at
        // nearly every write.
        let wide_bits = bits.min(WIDE_BITS);
        let fine = 1usize << (bits - wide_bits);
        let wides = buckets / fine;
        let wide_shift = 64 - wide_bits;
        // Per share: its count per wide bucket, its points' (first, last):
        // from the counts kept at ingest where they are the sightings'
        // (the sightings read only at the share's ends), else counted.
        type Counted = (Vec<u32>, Vec<(u64, u64)>);
        let counted: Vec<Counted> = std::thread::scope(|sc| {
            let handles: Vec<_> = shares
                .iter()
                .map(|share| {
                    sc.spawn(move || {
                        let mut counts = vec![0u32; wides];
                        let mut spans = vec![(u64::MAX, 0u64); inputs.len()];
                        for &(point, from, to) in share {
                            let list = inputs[point].sightings;
                            let kept = inputs[point].counts.filter(|c| c.counted == list.len());
                            if let Some(c) = kept {
                                c.add_range(list, from, to, &mut counts, COUNT_BITS - wide_bits);
                                spans[point] = c.span;
                                continue;
                            }
                            let (mut lo, mut hi) = spans[point];
                            for s in &list[from..to] {
                                counts[(s.hash >> wide_shift) as usize] += 1;
                                lo = lo.min(s.ts_ns);
                                hi = hi.max(s.ts_ns);
                            }
                            spans[point] = (lo, hi);
                        }
                        (counts, spans)
                    })
                })
                .collect();
            joined_all(handles, "grouping's count")
        })?;
        let mut spans = vec![(u64::MAX, 0u64); inputs.len()];
        for (_, s) in &counted {
            for (a, b) in spans.iter_mut().zip(s) {
                *a = (a.0.min(b.0), a.1.max(b.1));
            }
        }
        for s in &mut spans {
            if s.0 > s.1 {
                *s = (0, 0);
            }
        }
        // Wide bucket bounds, and each share's room in each.
        let mut wide_bounds = vec![0usize; wides + 1];
        for (c, _) in &counted {
            for (w, &k) in c.iter().enumerate() {
                wide_bounds[w + 1] += k as usize;
            }
        }
        for i in 1..=wides {
            wide_bounds[i] += wide_bounds[i - 1];
        }
        if wide_bounds[wides] != total {
            return Err(PointsError::Miscounted("grouping's count"));
        }
        let mut entries: Vec<Entry> = bytemuck::allocation::zeroed_vec(total);
        // Fresh (untouched) 2 MiB pages: a fault per 2 MiB rather than per
        // page (108 MB at line rate: ~26,000 faults), and the scatter's and
        // sort's streams within fewer TLB entries. Faulting in 4 KiB pages
        // ahead instead (MADV_POPULATE_WRITE) saved the traps but not the
        // CPU (BENCHMARKS.md, "matching speed").
        prefault::advise_huge(&mut entries);
        let mut rooms: Vec<Vec<&mut [Entry]>> =
            (0..threads).map(|_| Vec::with_capacity(wides)).collect();
        let mut rest: &mut [Entry] = &mut entries;
        for w in 0..wides {
            for (t, (c, _)) in counted.iter().enumerate() {
                let (room, after) = std::mem::take(&mut rest).split_at_mut(c[w] as usize);
                rooms[t].push(room);
                rest = after;
            }
        }
        let filled = std::thread::scope(|sc| {
            let handles: Vec<_> = shares
                .iter()
                .zip(rooms)
                .map(|(share, mut room)| {
                    sc.spawn(move || {
                        let mut next = vec![0u32; room.len()];
                        for &(point, from, to) in share {
                            let base = (point as u64) << AT_POINT_SHIFT;
                            let convs = flows.point_flows(point);
                            for (i, s) in inputs[point].sightings[from..to].iter().enumerate() {
                                let b = (s.hash >> wide_shift) as usize;
                                let (Some(r), Some(k)) = (room.get_mut(b), next.get_mut(b)) else {
                                    continue;
                                };
                                if let Some(e) = r.get_mut(*k as usize) {
                                    *e = Entry {
                                        hash: s.hash,
                                        at: base
                                            | (((from + i) as u64) << AT_IDX_SHIFT)
                                            | (u64::from(s.syndrome) << 14)
                                            | u64::from(s.wire_len.min(0x3FFF)),
                                        ts: s.ts_ns,
                                        flow: convs.get(s.conv as usize).copied().unwrap_or(NONE),
                                        psn_op: (s.psn << 8) | u32::from(s.opcode),
                                    };
                                }
                                *k += 1;
                            }
                        }
                        // Each room filled to its end, no further: the
                        // counts were the sightings'.
                        room.iter().zip(&next).all(|(r, &k)| r.len() == k as usize)
                    })
                })
                .collect();
            joined_all(handles, "grouping's scatter")
        })?
        .into_iter()
        .all(|filled| filled);
        if !filled {
            return Err(PointsError::Miscounted("grouping's scatter"));
        }
        // Each bucket's entries in order of its sub-buckets already (only
        // their insertion pass left) where the wide buckets' cut took them;
        // the buckets' bounds counted there.
        let (bounds, presorted) = if fine > 1 {
            let (bounds, presorted) = cut_wide(&mut entries, &wide_bounds, fine, shift, threads);
            let Some(bounds) = bounds else {
                return Err(PointsError::ThreadFailed("grouping's cut"));
            };
            (bounds, presorted)
        } else {
            (wide_bounds, false)
        };
        // The parts: about equal entries, whole buckets.
        let mut parts = Vec::with_capacity(threads);
        let mut first_bucket = 0usize;
        for local in split(&bounds, threads) {
            let nb = local.len().saturating_sub(1);
            parts.push((first_bucket, local));
            first_bucket += nb;
        }
        let (bounds_ref, spans_ref, visitor) = (&bounds, &spans, &visitor);
        let mark_spans = MarkSpans::new(inputs);
        let ms = &mark_spans;
        let visits: Vec<(V, Vec<u32>)> = std::thread::scope(|sc| {
            let mut rest: &mut [Entry] = &mut entries;
            let mut handles = Vec::with_capacity(threads);
            for (first, local) in &parts {
                let len = local.last().copied().unwrap_or(0);
                let (part, after) = std::mem::take(&mut rest).split_at_mut(len);
                rest = after;
                let first = *first;
                handles.push(sc.spawn(move || {
                    let base = bounds_ref[first];
                    let mut sorter = BucketSort::new(shift);
                    let mut visit = visitor(spans_ref);
                    let mut counts = vec![0u32; ms.len()];
                    for w in local.windows(2) {
                        if let Some(b) = part.get_mut(w[0]..w[1]) {
                            if presorted {
                                BucketSort::insert(b);
                            } else {
                                sorter.sort(b);
                            }
                            visit.bucket(b, w[0]);
                            for e in b.iter() {
                                if let Some(c) = counts.get_mut(ms.of(e.point(), e.idx())) {
                                    *c += 1;
                                }
                            }
                        }
                    }
                    debug_assert_eq!(base + len, bounds_ref[first + local.len() - 1]);
                    (visit, counts)
                }));
            }
            joined_all(handles, "grouping's sort")
        })?;
        let mut ranges = Vec::with_capacity(threads);
        let mut span_counts = Vec::with_capacity(threads);
        let mut at = 0;
        let mut out = Vec::with_capacity(threads);
        for ((_, local), (v, counts)) in parts.iter().zip(visits) {
            let len = local.last().copied().unwrap_or(0);
            ranges.push(at..at + len);
            span_counts.push(counts);
            out.push(v);
            at += len;
        }
        Ok((
            Groups {
                entries,
                parts: ranges,
                spans,
                spans_of_marks: mark_spans,
                span_counts,
            },
            out,
        ))
    }

    /// Every entry, part by part (a group never spans two).
    pub fn all(&self) -> impl Iterator<Item = &[Entry]> {
        self.parts
            .iter()
            .map(|r| self.entries.get(r.clone()).unwrap_or(&[]))
    }
}

/// The scatter's buckets: at most 2^8 (with two threads, 512 write
/// streams, whose pages the TLB holds).
const WIDE_BITS: u32 = 8;

// The counts kept at ingest are coarsened to the wide buckets', never
// refined.
const _: () = assert!(WIDE_BITS <= COUNT_BITS);

/// A wide bucket is cut by its buckets' bits and their sub-buckets'
/// ([`BucketSort`]'s counting pass done here) while these are at most
/// this many bits (their counts, 256 KiB, within the L2 cache).
const MAX_CUT_BITS: u32 = 16;

/// Each wide bucket (`fine` buckets in a row, bounds `wide_bounds`) cut
/// into its buckets by the hash's bits below the wide bucket's (from bit
/// `shift`), keeping the entries' order within each: a counting pass
/// through a scratch copy, the wide buckets shared among `threads`. With
/// few enough buckets a wide one, by their sub-buckets' bits too, as
/// [`BucketSort::sort`] would order each bucket before its insertion pass:
/// then says so. Returns (the buckets' bounds, counted in the cut; `None`
/// when a thread failed), cut by sub-buckets too.
fn cut_wide(
    entries: &mut [Entry],
    wide_bounds: &[usize],
    fine: usize,
    shift: u32,
    threads: usize,
) -> (Option<Vec<usize>>, bool) {
    let fine_bits = fine.trailing_zeros();
    let sub = fine_bits + SUB_BITS <= MAX_CUT_BITS && shift >= SUB_BITS;
    let bounds = if sub {
        cut_wide_by(
            entries,
            wide_bounds,
            fine_bits,
            shift - SUB_BITS,
            fine_bits + SUB_BITS,
            threads,
        )
    } else {
        cut_wide_by(entries, wide_bounds, fine_bits, shift, fine_bits, threads)
    };
    (bounds, sub)
}

/// [`cut_wide`] by the `key_bits` bits of the hash from bit `key_shift`
/// (the wide bucket's `fine_bits` buckets their highest): a counting sort
/// of each wide bucket, stable. Returns the buckets' bounds, `None` when
/// a thread failed.
fn cut_wide_by(
    entries: &mut [Entry],
    wide_bounds: &[usize],
    fine_bits: u32,
    key_shift: u32,
    key_bits: u32,
    threads: usize,
) -> Option<Vec<usize>> {
    let fine = 1usize << fine_bits;
    let wides = wide_bounds.len().saturating_sub(1);
    let total = wide_bounds.last().copied().unwrap_or(0);
    let mut bounds = vec![0usize; wides * fine + 1];
    // Wide buckets by thread, about equal entries each.
    let cuts = split(wide_bounds, threads.max(1));
    let done = std::thread::scope(|sc| {
        let mut rest: &mut [Entry] = entries;
        let mut rest_bounds: &mut [usize] = &mut bounds;
        let mut first_wide = 0usize;
        let mut handles = Vec::with_capacity(cuts.len());
        for local in cuts {
            let len = local.last().copied().unwrap_or(0);
            let (part, after) = std::mem::take(&mut rest).split_at_mut(len);
            rest = after;
            let n_wides = local.len().saturating_sub(1);
            let (my_bounds, after) = std::mem::take(&mut rest_bounds).split_at_mut(n_wides * fine);
            rest_bounds = after;
            let base = wide_bounds.get(first_wide).copied().unwrap_or(total);
            first_wide += n_wides;
            handles.push(sc.spawn(move || {
                let mut scratch: Vec<Entry> = Vec::new();
                let mask = (1usize << key_bits) - 1;
                let key = |e: &Entry| (e.hash >> key_shift) as usize & mask;
                // A bucket's first key among its wide bucket's.
                let per_bucket = key_bits - fine_bits;
                let mut next = vec![0usize; 1 << key_bits];
                for (w, out) in local.windows(2).zip(my_bounds.chunks_mut(fine)) {
                    let Some(wide) = part.get_mut(w[0]..w[1]) else {
                        continue;
                    };
                    next.fill(0);
                    for e in wide.iter() {
                        next[key(e)] += 1;
                    }
                    let mut at = 0;
                    for n in next.iter_mut() {
                        let c = *n;
                        *n = at;
                        at += c;
                    }
                    for (f, o) in out.iter_mut().enumerate() {
                        *o = base + w[0] + next[f << per_bucket];
                    }
                    scratch.clear();
                    scratch.extend_from_slice(wide);
                    for e in &scratch {
                        let k = key(e);
                        if let Some(d) = wide.get_mut(next[k]) {
                            *d = *e;
                        }
                        next[k] += 1;
                    }
                }
            }));
        }
        handles.into_iter().all(|h| h.join().is_ok())
    });
    if let Some(last) = bounds.last_mut() {
        *last = total;
    }
    done.then_some(bounds)
}

/// Sub-buckets a bucket is counted into, by the hash's bits below the
/// bucket's: a few entries each, put in order by insertion.
const SUB_BITS: u32 = 8;

/// Sorts one bucket by hash, keeping the order of equal hashes: a
/// counting pass into a scratch copy by the next bits of the hash, then
/// insertion within each sub-bucket. A bucket's entries arrive in `at`
/// order (each point's in turn, each in its order), so a stable sort by
/// hash is the order of `(hash, at)`, a third of the time of a
/// comparison sort of the whole entries.
struct BucketSort {
    /// The bucket's bits start at bit `shift`; the sub-bucket's below.
    sub_shift: u32,
    counts: Vec<u32>,
    scratch: Vec<Entry>,
}

impl BucketSort {
    fn new(shift: u32) -> BucketSort {
        BucketSort {
            sub_shift: shift.saturating_sub(SUB_BITS),
            counts: vec![0; (1 << SUB_BITS) + 1],
            scratch: Vec::new(),
        }
    }

    #[inline]
    fn sub(&self, e: &Entry) -> usize {
        ((e.hash >> self.sub_shift) & ((1 << SUB_BITS) - 1)) as usize
    }

    fn sort(&mut self, b: &mut [Entry]) {
        if b.len() < 2 {
            return;
        }
        self.counts.fill(0);
        for e in b.iter() {
            let k = self.sub(e) + 1;
            self.counts[k] += 1;
        }
        for k in 1..self.counts.len() {
            self.counts[k] += self.counts[k - 1];
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(b);
        for e in &self.scratch {
            let k = ((e.hash >> self.sub_shift) & ((1 << SUB_BITS) - 1)) as usize;
            let slot = self.counts[k] as usize;
            self.counts[k] += 1;
            if let Some(d) = b.get_mut(slot) {
                *d = *e;
            }
        }
        BucketSort::insert(b);
    }

    /// A bucket in order of its sub-buckets put in order of hash: each
    /// sub-bucket by insertion, stable, and quick on a handful.
    fn insert(b: &mut [Entry]) {
        for i in 1..b.len() {
            let cur = b[i];
            let mut j = i;
            while j > 0 && b[j - 1].hash > cur.hash {
                b[j] = b[j - 1];
                j -= 1;
            }
            b[j] = cur;
        }
    }
}

/// The buckets cut into `threads` parts of about equal entries, each
/// part's bucket bounds made local (from 0 to its length).
fn split(bounds: &[usize], threads: usize) -> Vec<Vec<usize>> {
    let total = bounds.last().copied().unwrap_or(0);
    let mut out = Vec::new();
    let mut taken = 0;
    let mut b = 0;
    for k in 1..=threads {
        let target = if k == threads {
            total
        } else {
            total * k / threads
        };
        let mut local = vec![0];
        while b + 1 < bounds.len() && bounds[b + 1] <= target {
            local.push(bounds[b + 1] - taken);
            b += 1;
        }
        if k == threads {
            while b + 1 < bounds.len() {
                local.push(bounds[b + 1] - taken);
                b += 1;
            }
        }
        taken += local.last().copied().unwrap_or(0);
        out.push(local);
    }
    out
}

/// Calls `f` with each group of every part, in order.
pub(super) fn for_each_group_all(groups: &Groups, mut f: impl FnMut(&[Entry])) {
    for part in groups.all() {
        for_each_group(part, &mut f);
    }
}

/// Calls `f` with each group (a run of one hash) in `entries`.
#[inline]
pub(super) fn for_each_group(entries: &[Entry], mut f: impl FnMut(&[Entry])) {
    let mut i = 0;
    while i < entries.len() {
        let h = entries[i].hash;
        let mut j = i + 1;
        while j < entries.len() && entries[j].hash == h {
            j += 1;
        }
        f(&entries[i..j]);
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_sort_is_the_order_of_hash_then_place() {
        // One bucket (top 4 bits equal), entries in `at` order as the
        // scatter leaves them, hashes repeated (copies) and colliding in
        // their sub-bucket bits.
        let shift = 60;
        let mut b: Vec<Entry> = (0..900u64)
            .map(|i| Entry {
                hash: (0x5u64 << 60) | (((i * 7919) % 300) << 50) | ((i * 31) % 5),
                at: i << 22,
                ts: i,
                flow: i as u32,
                psn_op: 0,
            })
            .collect();
        let mut want = b.clone();
        want.sort_unstable();
        BucketSort::new(shift).sort(&mut b);
        assert_eq!(b, want);
    }

    #[test]
    fn wide_buckets_cut_as_a_scatter_to_every_bucket_leaves_them() {
        // 10 bucket bits, 4 of them below the wide buckets' 8 (16 buckets
        // a wide one: cut by the sub-buckets' bits too), and 18 (1,024 a
        // wide one: by the buckets' bits only); entries in `at` order,
        // wide buckets as the scatter leaves them (a stable pass by the
        // top 8 bits). Each bucket, sorted after the cut, is what a
        // scatter to every bucket and its whole sort make.
        let wide_bits = WIDE_BITS;
        for (bits, by_sub) in [(10u32, true), (18, false)] {
            let shift = 64 - bits;
            let fine = 1usize << (bits - wide_bits);
            let all: Vec<Entry> = (0..5000u64)
                .map(|i| Entry {
                    // Repeated hashes (copies), spread over the buckets.
                    hash: (i / 3).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    at: i << 22,
                    ts: i,
                    flow: 0,
                    psn_op: 0,
                })
                .collect();
            let mut bounds = vec![0usize; (1 << bits) + 1];
            for e in &all {
                bounds[(e.hash >> shift) as usize + 1] += 1;
            }
            for i in 1..bounds.len() {
                bounds[i] += bounds[i - 1];
            }
            let mut want = all.clone();
            want.sort_by_key(|e| e.hash >> shift);
            for w in bounds.windows(2) {
                BucketSort::new(shift).sort(&mut want[w[0]..w[1]]);
            }
            let mut wide = all.clone();
            wide.sort_by_key(|e| e.hash >> (64 - wide_bits));
            for threads in [1, 2, 3] {
                let mut got = wide.clone();
                let wide_bounds: Vec<usize> = bounds.iter().step_by(fine).copied().collect();
                let (cut, sub) = cut_wide(&mut got, &wide_bounds, fine, shift, threads);
                assert_eq!(
                    cut.as_ref(),
                    Some(&bounds),
                    "{bits} bits, {threads} threads"
                );
                assert_eq!(sub, by_sub, "{bits} bits");
                for w in bounds.windows(2) {
                    let b = &mut got[w[0]..w[1]];
                    if sub {
                        BucketSort::insert(b);
                    } else {
                        BucketSort::new(shift).sort(b);
                    }
                }
                assert_eq!(got, want, "{bits} bits, {threads} threads");
            }
        }
    }

    /// Every sorted bucket, kept.
    struct Collect(Vec<Entry>);

    impl BucketVisit for Collect {
        fn bucket(&mut self, bucket: &[Entry], _at: usize) {
            self.0.extend_from_slice(bucket);
        }
    }

    fn sightings(n: usize, seed: u64) -> Vec<crate::points::Sighting> {
        (0..n as u64)
            .map(|i| crate::points::Sighting {
                // Repeated hashes (copies), spread over every bucket.
                hash: ((i / 3) ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                ts_ns: 1_000 + (i * 7919) % 100_000,
                row: i,
                ..Default::default()
            })
            .collect()
    }

    /// A point of `sightings` alone (no conversations, clock or bound).
    fn input<'a>(
        sightings: &'a [crate::points::Sighting],
        counts: Option<&'a crate::points::WideCounts>,
    ) -> PointInput<'a> {
        PointInput {
            name: "p",
            sightings,
            conversations: &[],
            qps: &[],
            ordinal: false,
            fixed_offset_ns: None,
            let_go: 0,
            counts,
        }
    }

    /// The entries, each point's span, each part's range.
    type Grouped = (Vec<Entry>, Vec<(u64, u64)>, Vec<Vec<usize>>);

    fn grouped(
        lists: &[Vec<crate::points::Sighting>],
        counts: &[Option<crate::points::WideCounts>],
        threads: usize,
    ) -> Result<Grouped, PointsError> {
        let inputs: Vec<PointInput<'_>> = lists
            .iter()
            .zip(counts)
            .map(|(l, c)| input(l, c.as_ref()))
            .collect();
        let (g, visits) =
            Groups::build(&inputs, &Flows::default(), threads, |_| Collect(Vec::new()))?;
        let seen: Vec<Entry> = visits.into_iter().flat_map(|v| v.0).collect();
        assert_eq!(seen, g.entries);
        let parts = g.parts.iter().map(|r| vec![r.start, r.end]).collect();
        Ok((g.entries, g.spans, parts))
    }

    #[test]
    fn counts_kept_at_ingest_group_as_counting_does() {
        // Three points over several count blocks (the shares cut them
        // mid-block), one empty; 3,000 to 700,000 sightings: every bucket
        // width the grouping picks from a few to 2^10 a wide bucket.
        for (n, seed) in [(3_000usize, 1u64), (70_000, 2), (700_000, 3)] {
            let lists = vec![
                sightings(n, seed),
                Vec::new(),
                sightings(n / 2 + 17, seed),
                sightings(n / 3 + 5, seed ^ 9),
            ];
            let kept: Vec<_> = lists
                .iter()
                .map(|l| {
                    // Appended in batches, as the tap does.
                    let mut c = crate::points::WideCounts::default();
                    for b in l.chunks(1000) {
                        c.extend(b);
                    }
                    Some(c)
                })
                .collect();
            let none = vec![None; lists.len()];
            for threads in [1, 2, 3] {
                let want = grouped(&lists, &none, threads).expect("counted");
                let got = grouped(&lists, &kept, threads).expect("kept counts");
                assert_eq!(got.0.len(), lists.iter().map(Vec::len).sum::<usize>());
                assert!(got.0.windows(2).all(|w| w[0] <= w[1]), "sorted");
                assert_eq!(got, want, "{n} sightings, {threads} threads");
            }
            // Counts of other sightings, as many: told, never a grouping
            // with frames left out.
            let wrong: Vec<_> = lists
                .iter()
                .map(|l| {
                    Some(crate::points::WideCounts::of(&sightings(
                        l.len(),
                        seed ^ 77,
                    )))
                })
                .collect();
            assert!(matches!(
                grouped(&lists, &wrong, 2),
                Err(PointsError::Miscounted(_))
            ));
            // Counts of fewer sightings than the list: not used.
            let stale: Vec<_> = lists
                .iter()
                .map(|l| Some(crate::points::WideCounts::of(&l[..l.len() / 2])))
                .collect();
            assert_eq!(
                grouped(&lists, &stale, 2).expect("counted"),
                grouped(&lists, &none, 2).expect("counted")
            );
        }
    }

    #[test]
    fn shares_cover_every_sighting_once_in_order() {
        let lens = [5usize, 0, 7, 1];
        let lists: Vec<Vec<crate::points::Sighting>> = lens
            .iter()
            .map(|&n| vec![crate::points::Sighting::default(); n])
            .collect();
        let inputs: Vec<PointInput<'_>> = lists.iter().map(|l| input(l, None)).collect();
        for t in 1..6 {
            let sh = shares(&inputs, t);
            assert_eq!(sh.len(), t);
            let flat: Vec<(usize, usize)> = sh
                .iter()
                .flatten()
                .flat_map(|&(p, from, to)| (from..to).map(move |i| (p, i)))
                .collect();
            let want: Vec<(usize, usize)> = lens
                .iter()
                .enumerate()
                .flat_map(|(p, &n)| (0..n).map(move |i| (p, i)))
                .collect();
            assert_eq!(flat, want, "{t} threads");
            let sizes: Vec<usize> = sh
                .iter()
                .map(|v| v.iter().map(|x| x.2 - x.1).sum())
                .collect();
            assert!(sizes.iter().max().unwrap_or(&0) - sizes.iter().min().unwrap_or(&0) <= 1);
        }
    }

    #[test]
    fn buckets_split_whole_among_threads() {
        let bounds = vec![0, 3, 3, 10, 12, 20];
        for t in 1..5 {
            let parts = split(&bounds, t);
            assert_eq!(parts.len(), t);
            let sum: usize = parts.iter().map(|l| l.last().copied().unwrap_or(0)).sum();
            assert_eq!(sum, 20);
            // Every bucket in exactly one part.
            let buckets: usize = parts.iter().map(|l| l.len() - 1).sum();
            assert_eq!(buckets, bounds.len() - 1);
        }
    }
}
