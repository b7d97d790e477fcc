//! Every point's sightings grouped by content: one pass that scatters
//! them into buckets by the hash's high bits, then each bucket sorted on
//! its own (small enough to stay in cache), the buckets shared among the
//! threads. A group is a run of equal hashes: copies of one frame, each
//! point's in its own capture order.

use super::{PointInput, Sighting};

/// A sighting's place: point in the high 8 bits, its index below.
pub(super) const IDX_BITS: u32 = 40;
const IDX_MASK: u64 = (1 << IDX_BITS) - 1;

/// One sighting, sorted by content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Entry {
    pub hash: u64,
    /// Point (high bits) and index in its sightings.
    pub at: u64,
}

impl Entry {
    #[inline]
    pub fn point(&self) -> usize {
        (self.at >> IDX_BITS) as usize
    }
    #[inline]
    pub fn idx(&self) -> usize {
        (self.at & IDX_MASK) as usize
    }
}

/// The sightings of every point, by content.
#[derive(Debug)]
pub(super) struct Groups {
    pub entries: Vec<Entry>,
    /// Where each bucket starts in `entries` (and the end last).
    pub bounds: Vec<usize>,
    pub threads: usize,
}

/// Buckets for `total` sightings: about 4 Ki entries each, so that one
/// sorts in the L1/L2 cache.
fn bucket_bits(total: usize) -> u32 {
    let want = (total / 4096).max(1);
    (usize::BITS - want.leading_zeros()).clamp(4, 20)
}

impl Groups {
    pub fn build(inputs: &[PointInput<'_>], threads: usize) -> Groups {
        let total: usize = inputs.iter().map(|p| p.sightings.len()).sum();
        let bits = bucket_bits(total);
        let buckets = 1usize << bits;
        let shift = 64 - bits;
        let mut counts = vec![0usize; buckets + 1];
        for p in inputs {
            for s in p.sightings {
                counts[(s.hash >> shift) as usize + 1] += 1;
            }
        }
        for i in 1..=buckets {
            counts[i] += counts[i - 1];
        }
        let bounds = counts.clone();
        let mut next = counts;
        let mut entries = vec![Entry { hash: 0, at: 0 }; total];
        for (point, p) in inputs.iter().enumerate() {
            let base = (point as u64) << IDX_BITS;
            for (i, s) in p.sightings.iter().enumerate() {
                let b = (s.hash >> shift) as usize;
                let slot = next[b];
                next[b] += 1;
                if let Some(e) = entries.get_mut(slot) {
                    *e = Entry {
                        hash: s.hash,
                        at: base | i as u64,
                    };
                }
            }
        }
        let threads = threads.max(1);
        let mut g = Groups {
            entries,
            bounds,
            threads,
        };
        g.sort();
        g
    }

    /// Sorts each bucket: by hash, then point, then the point's order.
    fn sort(&mut self) {
        let bounds = &self.bounds;
        let parts = split(&mut self.entries, bounds, self.threads);
        std::thread::scope(|s| {
            for (entries, local) in parts {
                s.spawn(move || {
                    for w in local.windows(2) {
                        if let Some(b) = entries.get_mut(w[0]..w[1]) {
                            b.sort_unstable();
                        }
                    }
                });
            }
        });
    }

    /// The bucket ranges each thread takes: about equal entries each.
    pub fn chunks(&self) -> Vec<std::ops::Range<usize>> {
        let t = self.threads;
        let total = self.entries.len();
        let mut out = Vec::with_capacity(t);
        let mut start_b = 0;
        for k in 1..=t {
            let target = total * k / t;
            let mut end_b = start_b;
            while end_b + 1 < self.bounds.len() && self.bounds[end_b + 1] <= target {
                end_b += 1;
            }
            if k == t {
                end_b = self.bounds.len() - 1;
            }
            out.push(self.bounds[start_b]..self.bounds[end_b]);
            start_b = end_b;
        }
        out
    }
}

/// `entries` cut at bucket bounds into `threads` parts of about equal
/// size, each with its bounds made local.
fn split<'a>(
    entries: &'a mut [Entry],
    bounds: &[usize],
    threads: usize,
) -> Vec<(&'a mut [Entry], Vec<usize>)> {
    let total = entries.len();
    let mut out = Vec::new();
    let mut rest = entries;
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
        let len = local.last().copied().unwrap_or(0);
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len.min(total - taken));
        out.push((head, local));
        taken += len;
        rest = tail;
    }
    out
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

/// The sighting an entry names.
#[inline]
pub(super) fn sighting<'a>(inputs: &'a [PointInput<'_>], e: &Entry) -> &'a Sighting {
    &inputs[e.point()].sightings[e.idx()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_whole_among_threads() {
        let bounds = vec![0, 3, 3, 10, 12, 20];
        let mut entries = vec![Entry { hash: 0, at: 0 }; 20];
        for t in 1..5 {
            let parts = split(&mut entries, &bounds, t);
            assert_eq!(parts.len(), t);
            let sum: usize = parts.iter().map(|(e, _)| e.len()).sum();
            assert_eq!(sum, 20);
            for (e, local) in &parts {
                assert_eq!(local.last().copied().unwrap_or(0), e.len());
            }
        }
    }
}
