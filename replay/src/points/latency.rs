//! One-way latency per segment and direction: percentiles over the
//! capture and per bin of time (queueing growth shows as a rising series).

use super::SegmentLatency;
use super::journey::LatSample;

/// The `q`-th quantile of `v` (reordered in place), nearest rank: what
/// [`quantiles`] gives, each alone.
#[cfg(test)]
fn quantile(v: &mut [i32], q: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let k = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    i64::from(*v.select_nth_unstable(k).1)
}

/// The `lo`-th and `hi`-th quantiles of `v` (`lo <= hi`), as
/// [`quantile`] gives each: the higher one sought only among the values
/// above the lower one's rank, half the work of a second whole search.
pub(super) fn quantiles(v: &mut [i32], lo: f64, hi: f64) -> (i64, i64) {
    if v.is_empty() {
        return (0, 0);
    }
    let rank = |q: f64| ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    let (k_lo, k_hi) = (rank(lo), rank(hi));
    let (_, x_lo, above) = v.select_nth_unstable(k_lo);
    let x_lo = *x_lo;
    let x_hi = match k_hi.checked_sub(k_lo + 1) {
        Some(k) => *above.select_nth_unstable(k).1,
        None => x_lo,
    };
    (i64::from(x_lo), i64::from(x_hi))
}

/// Values spanning at most this many nanoseconds are counted rather
/// than searched for their quantiles.
const COUNTED_RANGE: usize = 1 << 16;

/// What [`quantiles`] gives, from a count of each value: one pass over
/// `v` (its values between `min` and `max`) and one over the range, for
/// a segment's many samples in a narrow range of latency.
fn quantiles_counted(v: &[i32], min: i32, max: i32, lo: f64, hi: f64) -> (i64, i64) {
    if v.is_empty() {
        return (0, 0);
    }
    let mut counts = vec![0u32; (i64::from(max) - i64::from(min) + 1).max(1) as usize];
    for &x in v {
        if let Some(c) = counts.get_mut((i64::from(x) - i64::from(min)) as usize) {
            *c += 1;
        }
    }
    let rank = |q: f64| ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    let (k_lo, k_hi) = (rank(lo), rank(hi));
    let mut below = 0usize;
    let mut x_lo = None;
    for (i, &c) in counts.iter().enumerate() {
        below += c as usize;
        let x = i64::from(min) + i as i64;
        if x_lo.is_none() && below > k_lo {
            x_lo = Some(x);
        }
        if below > k_hi {
            return (x_lo.unwrap_or(x), x);
        }
    }
    (i64::from(max), i64::from(max))
}

/// The series' bins over the points' span, as each sample is put in one
/// when it is taken.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bins {
    start: i64,
    width: f64,
    count: usize,
}

/// Bins of a series at most (a latency sample keeps its bin in 24 bits).
pub(super) const MAX_SERIES_BINS: usize = 1 << 24;

impl Bins {
    pub fn new(span: (i64, i64), count: usize) -> Bins {
        let count = count.clamp(1, MAX_SERIES_BINS);
        Bins {
            start: span.0,
            width: ((span.1 - span.0).max(1) as f64 / count as f64).max(1.0),
            count,
        }
    }

    /// The bin of time `t` (relative to `t0`).
    #[inline]
    pub fn of(&self, t: i64) -> u32 {
        (((t - self.start) as f64 / self.width).max(0.0) as usize).min(self.count - 1) as u32
    }
}

/// Each segment's latency from the journeys' samples: put in order of
/// segment (a counting pass), then each segment's quantiles and its bins'
/// (samples of a bin gathered by another counting pass), never a sort of
/// all of them.
pub(super) fn segments(
    parts: &[&[LatSample]],
    names: &[String],
    bins_of: Bins,
    t0: u64,
) -> Result<Vec<SegmentLatency>, super::PointsError> {
    let n = names.len().max(1);
    let key = |s: &LatSample| usize::from(s.from()) * n + usize::from(s.to());
    let samples = || parts.iter().flat_map(|p| p.iter());
    let mut starts = vec![0usize; n * n + 1];
    for s in samples() {
        starts[key(s) + 1] += 1;
    }
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    let mut next = starts.clone();
    let mut by_seg = vec![(0u32, 0i32); starts[n * n]];
    for s in samples() {
        let k = key(s);
        by_seg[next[k]] = (s.bin(), s.ns);
        next[k] += 1;
    }
    // Each segment on a thread of its own (a few, each a share of the
    // samples): the longest task of the analysis' last step when one
    // thread took them all.
    let by_seg = &by_seg;
    let starts = &starts;
    let mut out: Vec<SegmentLatency> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n * n)
            .filter(|&k| starts[k + 1] > starts[k])
            .map(|k| {
                sc.spawn(move || {
                    let seg = &by_seg[starts[k]..starts[k + 1]];
                    let (from, to) = ((k / n) as u8, (k % n) as u8);
                    segment(seg, from, to, names, bins_of, t0)
                })
            })
            .collect();
        super::joined_all(handles, "latency of a segment")
    })?;
    // Path order: the forward direction's segments first.
    out.sort_by_key(|s| {
        (
            s.from > s.to,
            if s.from < s.to {
                s.from
            } else {
                u8::MAX - s.from
            },
        )
    });
    Ok(out)
}

/// One segment's latency from its samples (bin, ns).
fn segment(
    seg: &[(u32, i32)],
    from: u8,
    to: u8,
    names: &[String],
    bins_of: Bins,
    t0: u64,
) -> SegmentLatency {
    let (bins, width) = (bins_of.count, bins_of.width);
    let mut values: Vec<i32> = seg.iter().map(|s| s.1).collect();
    let negative = values.iter().filter(|&&v| v < 0).count() as u64;
    let min_ns = i64::from(values.iter().copied().min().unwrap_or(0));
    let max_ns = i64::from(values.iter().copied().max().unwrap_or(0));
    let range = (max_ns - min_ns + 1) as usize;
    // The counts no larger than a sixteenth of the values (nothing added
    // to the peak of memory).
    let (p50_ns, p99_ns) = if range <= COUNTED_RANGE && range * 16 <= values.len() {
        quantiles_counted(&values, min_ns as i32, max_ns as i32, 0.5, 0.99)
    } else {
        quantiles(&mut values, 0.5, 0.99)
    };
    // The series: the segment's samples by bin.
    let mut bin_starts = vec![0usize; bins + 1];
    for s in seg {
        bin_starts[s.0 as usize + 1] += 1;
    }
    for b in 1..=bins {
        bin_starts[b] += bin_starts[b - 1];
    }
    let mut at = bin_starts.clone();
    // The whole segment's values are no longer needed: their room holds
    // the bins'.
    let binned = &mut values;
    for s in seg {
        let b = s.0 as usize;
        binned[at[b]] = s.1;
        at[b] += 1;
    }
    let mut series = Vec::new();
    for b in 0..bins {
        let v = &mut binned[bin_starts[b]..bin_starts[b + 1]];
        if v.is_empty() {
            continue;
        }
        let start = bins_of.start as f64 + b as f64 * width;
        let (p50, p99) = quantiles(v, 0.5, 0.99);
        series.push(((t0 as i64 + start as i64).max(0) as u64, p50, p99));
    }
    let name = |p: u8| names.get(usize::from(p)).map_or("?", String::as_str);
    SegmentLatency {
        name: format!("{}>{}", name(from), name(to)),
        from,
        to,
        frames: seg.len() as u64,
        p50_ns,
        p99_ns,
        min_ns,
        max_ns,
        negative,
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut v: Vec<i32> = (1..=100).collect();
        assert_eq!(quantile(&mut v, 0.5), 50);
        assert_eq!(quantile(&mut v, 0.99), 99);
        assert_eq!(quantile(&mut [7], 0.99), 7);
        assert_eq!(quantile(&mut [], 0.5), 0);
    }

    #[test]
    fn two_quantiles_at_once_are_each_ones() {
        // Shuffled, with repeats; sizes where the ranks meet and part.
        for len in [1usize, 2, 3, 7, 50, 99, 100, 101, 1000] {
            let v: Vec<i32> = (0..len).map(|i| ((i * 7919) % 97) as i32 - 20).collect();
            for (lo, hi) in [(0.5, 0.99), (0.5, 0.5), (0.0, 1.0), (0.25, 0.75)] {
                let (mut a, mut b, mut c) = (v.clone(), v.clone(), v.clone());
                assert_eq!(
                    quantiles(&mut a, lo, hi),
                    (quantile(&mut b, lo), quantile(&mut c, hi)),
                    "{len} values, {lo} and {hi}"
                );
            }
        }
        assert_eq!(quantiles(&mut [], 0.5, 0.99), (0, 0));
    }

    #[test]
    fn counted_quantiles_are_the_searched_ones() {
        for len in [1usize, 2, 3, 7, 50, 99, 100, 101, 1000, 5000] {
            let v: Vec<i32> = (0..len).map(|i| ((i * 7919) % 1013) as i32 - 300).collect();
            let (min, max) = (
                v.iter().copied().min().unwrap_or(0),
                v.iter().copied().max().unwrap_or(0),
            );
            for (lo, hi) in [(0.5, 0.99), (0.5, 0.5), (0.0, 1.0), (0.25, 0.75)] {
                let mut w = v.clone();
                assert_eq!(
                    quantiles_counted(&v, min, max, lo, hi),
                    quantiles(&mut w, lo, hi),
                    "{len} values, {lo} and {hi}"
                );
            }
        }
        assert_eq!(quantiles_counted(&[], 0, 0, 0.5, 0.99), (0, 0));
    }

    #[test]
    fn a_sample_keeps_its_points_and_bin() {
        // The largest bin a sample can keep, and more bins than that taken
        // as that many.
        let bins = Bins::new((0, 1 << 40), usize::MAX);
        let last = bins.of(1 << 40);
        assert_eq!(last as usize, MAX_SERIES_BINS - 1);
        for (from, to) in [(0u8, 1u8), (15, 14), (7, 0)] {
            for bin in [0, 1, last] {
                let s = LatSample::new(from, to, bin, -5);
                assert_eq!((s.from(), s.to(), s.bin(), s.ns), (from, to, bin, -5));
            }
        }
    }

    #[test]
    fn a_segment_series_rises_with_its_queue() {
        let bins = Bins::new((0, 1_000_000), 10);
        let s: Vec<LatSample> = (0..1000)
            .map(|k| LatSample::new(0, 1, bins.of(k * 1000), 500 + k as i32))
            .collect();
        let names = vec!["a".to_owned(), "sw".to_owned()];
        let segs = segments(&[&s], &names, bins, 0).unwrap();
        assert_eq!(segs.len(), 1);
        let seg = &segs[0];
        assert_eq!(seg.name, "a>sw");
        assert_eq!(seg.frames, 1000);
        assert_eq!(seg.series.len(), 10);
        assert!(seg.series.windows(2).all(|w| w[1].1 > w[0].1));
        assert_eq!(seg.min_ns, 500);
    }
}
