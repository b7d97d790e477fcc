//! One-way latency per segment and direction: percentiles over the
//! capture and per bin of time (queueing growth shows as a rising series).

use super::SegmentLatency;
use super::journey::LatSample;

/// The `q`-th quantile of `v` (reordered in place), nearest rank.
pub(super) fn quantile(v: &mut [i64], q: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let k = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    *v.select_nth_unstable(k).1
}

/// Each segment's latency from the journeys' samples (reordered).
pub(super) fn segments(
    samples: &mut [LatSample],
    names: &[String],
    span: (i64, i64),
    t0: u64,
    bins: usize,
) -> Vec<SegmentLatency> {
    samples.sort_unstable_by_key(|s| (s.from, s.to, s.t));
    let mut out = Vec::new();
    let mut i = 0;
    let bins = bins.max(1);
    let width = ((span.1 - span.0).max(1) as f64 / bins as f64).max(1.0);
    let mut values = Vec::new();
    while i < samples.len() {
        let (from, to) = (samples[i].from, samples[i].to);
        let mut j = i;
        while j < samples.len() && samples[j].from == from && samples[j].to == to {
            j += 1;
        }
        let seg = &samples[i..j];
        values.clear();
        values.extend(seg.iter().map(|s| s.ns));
        let negative = values.iter().filter(|&&v| v < 0).count() as u64;
        let min_ns = values.iter().copied().min().unwrap_or(0);
        let max_ns = values.iter().copied().max().unwrap_or(0);
        let p50_ns = quantile(&mut values, 0.5);
        let p99_ns = quantile(&mut values, 0.99);
        // The series: samples are in time order within the segment.
        let mut series = Vec::new();
        let mut k = 0;
        while k < seg.len() {
            let b = (((seg[k].t - span.0) as f64 / width) as usize).min(bins - 1);
            let mut m = k;
            values.clear();
            while m < seg.len()
                && (((seg[m].t - span.0) as f64 / width) as usize).min(bins - 1) == b
            {
                values.push(seg[m].ns);
                m += 1;
            }
            let start = span.0 as f64 + b as f64 * width;
            series.push((
                (t0 as i64 + start as i64).max(0) as u64,
                quantile(&mut values, 0.5),
                quantile(&mut values, 0.99),
            ));
            k = m;
        }
        let name = |p: u8| names.get(usize::from(p)).map_or("?", String::as_str);
        out.push(SegmentLatency {
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
        });
        i = j;
    }
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut v: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(&mut v, 0.5), 50);
        assert_eq!(quantile(&mut v, 0.99), 99);
        assert_eq!(quantile(&mut [7], 0.99), 7);
        assert_eq!(quantile(&mut [], 0.5), 0);
    }

    #[test]
    fn a_segment_series_rises_with_its_queue() {
        let mut s: Vec<LatSample> = (0..1000)
            .map(|k| LatSample {
                from: 0,
                to: 1,
                t: k * 1000,
                ns: 500 + k,
            })
            .collect();
        let names = vec!["a".to_owned(), "sw".to_owned()];
        let segs = segments(&mut s, &names, (0, 1_000_000), 0, 10);
        assert_eq!(segs.len(), 1);
        let seg = &segs[0];
        assert_eq!(seg.name, "a>sw");
        assert_eq!(seg.frames, 1000);
        assert_eq!(seg.series.len(), 10);
        assert!(seg.series.windows(2).all(|w| w[1].1 > w[0].1));
        assert_eq!(seg.min_ns, 500);
    }
}
