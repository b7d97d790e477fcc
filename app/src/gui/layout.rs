//! Pure layout rules of the GUI's drawing (plot bounds, label placement),
//! kept apart from egui so that tests state them without a window.

/// Top of the throughput plot's y axis in GB/s, from the data (the
/// largest value any drawn line can reach) and the link rate where known.
///
/// The data's maximum with a 10 % margin, so that the line fills the plot;
/// the link rate (+10 %) is a natural ceiling, yet the axis never cuts
/// what is drawn. Never 0 (an empty capture still has an axis).
pub fn throughput_y_top(data_max_gbytes_s: f64, link_gbytes_s: Option<f64>) -> f64 {
    let data = if data_max_gbytes_s.is_finite() {
        data_max_gbytes_s.max(0.0)
    } else {
        0.0
    };
    let mut top = (data * 1.1).max(0.1);
    if let Some(link) = link_gbytes_s.filter(|l| l.is_finite() && *l > 0.0) {
        top = top.min(link * 1.1).max(data);
    }
    top
}

/// The largest value the throughput plot can draw, from each line's own
/// maximum: one line per series, plus (with more than one QP) the
/// aggregate, bounded by the sum of the maxima. `lines` holds
/// (QP index, maximum) pairs.
pub fn throughput_data_max(line_maxima: &[f64], qps: usize) -> f64 {
    let clean = line_maxima.iter().copied().filter(|v| v.is_finite());
    if qps > 1 {
        clean.map(|v| v.max(0.0)).sum()
    } else {
        clean.fold(0.0, f64::max)
    }
}

/// The largest rate (GB/s) of any bin of a series (bins are bounded by
/// `MAX_BINS`, so this is cheap enough for every frame).
pub fn series_max_gbytes_s(s: &rocescope_decoders::analysis::Series) -> f64 {
    (0..s.bins.len())
        .map(|i| s.rate_gbytes_s(i))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// The egui id of the Overview's throughput plot (its memory holds the bounds).
pub const THROUGHPUT_PLOT_ID: &str = "rocescope-throughput";

/// A label placed by [`place_labels`]: which input, and on which row
/// (0 is the first row; rows stack downwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlacedLabel {
    pub index: usize,
    pub row: usize,
}

/// Place labels that start at `x` and are `width` wide (px, any order) on
/// at most `rows` stacked rows so that no two on a row come within `gap`
/// of each other: each label takes the first row where it fits, labels
/// that fit no row are left out (thinned). Returned in x order.
pub fn place_labels(labels: &[(f32, f32)], rows: usize, gap: f32) -> Vec<PlacedLabel> {
    let mut order: Vec<usize> = (0..labels.len())
        .filter(|&i| labels[i].0.is_finite() && labels[i].1.is_finite())
        .collect();
    order.sort_by(|&a, &b| labels[a].0.total_cmp(&labels[b].0));
    // The right end of the last label of each row.
    let mut ends = vec![f32::NEG_INFINITY; rows];
    let mut out = Vec::new();
    for i in order {
        let (x, w) = labels[i];
        if let Some(row) = ends.iter().position(|&end| x >= end + gap) {
            ends[row] = x + w.max(0.0);
            out.push(PlacedLabel { index: i, row });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_y_axis_follows_the_data_under_the_link_rate() {
        // 11.4 GB/s on a 12.5 GB/s link: the axis ends near 12.5.
        let top = throughput_y_top(11.4, Some(12.5));
        assert!((11.4..=12.5 * 1.1).contains(&top), "{top}");
        // A slow flow is not flattened by the link's rate.
        assert!((throughput_y_top(1.0, Some(12.5)) - 1.1).abs() < 1e-9);
        // A spike above the link stays in view.
        assert!(throughput_y_top(20.0, Some(12.5)) >= 20.0);
        // Nothing yet, or garbage: a small positive axis.
        assert!(throughput_y_top(0.0, None) > 0.0);
        assert!(throughput_y_top(f64::NAN, Some(f64::NAN)) > 0.0);
        assert_eq!(throughput_data_max(&[1.0, 2.0], 1), 2.0);
        assert_eq!(throughput_data_max(&[1.0, 2.0], 2), 3.0);
    }

    #[test]
    fn labels_never_overlap_on_a_row() {
        // A band of 200 labels 1 px apart, 30 px wide.
        let labels: Vec<(f32, f32)> = (0..200).map(|i| (i as f32, 30.0)).collect();
        let placed = place_labels(&labels, 3, 4.0);
        assert!(!placed.is_empty() && placed.len() < 200, "thinned");
        for (k, a) in placed.iter().enumerate() {
            for b in &placed[k + 1..] {
                if a.row != b.row {
                    continue;
                }
                let (xa, wa) = labels[a.index];
                let (xb, wb) = labels[b.index];
                assert!(xa + wa + 4.0 <= xb || xb + wb + 4.0 <= xa, "{a:?} {b:?}");
            }
        }
        assert!(placed.iter().all(|p| p.row < 3));
        // Far apart: all on the first row.
        let apart = place_labels(&[(300.0, 30.0), (0.0, 30.0)], 3, 4.0);
        assert_eq!(
            apart,
            vec![
                PlacedLabel { index: 1, row: 0 },
                PlacedLabel { index: 0, row: 0 }
            ]
        );
        assert!(place_labels(&[(0.0, 10.0)], 0, 4.0).is_empty());
    }
}
