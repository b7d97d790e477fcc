//! A signal over a time window, per column (a character cell or a pixel):
//! what both workbenches draw its step chart from. Bounded work per
//! column (two binary searches), however many changes a signal has.

use rocescope_replay::wave::signals::{Change, Marker, MarkerKind};

/// One column of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Before the signal's first change.
    Empty,
    /// No change inside the column: this value held throughout.
    Held(Change),
    /// The value changed inside the column (`changes` times); `end` holds at its end.
    Edge { end: Change, changes: usize },
}

impl Column {
    /// The value at the column's end.
    pub fn value(self) -> Option<Change> {
        match self {
            Column::Empty => None,
            Column::Held(c) | Column::Edge { end: c, .. } => Some(c),
        }
    }
}

/// The markers (an ILA capture's triggers and window starts) that fall in
/// `width` columns from `start_ns`, each `ns_per_col` long: (column, kind),
/// a trigger kept over a window start in the same column.
pub fn marker_columns(
    markers: &[Marker],
    start_ns: u64,
    ns_per_col: u64,
    width: usize,
) -> Vec<(usize, MarkerKind)> {
    let step = ns_per_col.max(1);
    let end = start_ns.saturating_add(step.saturating_mul(width as u64));
    let mut out: Vec<(usize, MarkerKind)> = Vec::new();
    for m in markers
        .iter()
        .filter(|m| m.ts_ns >= start_ns && m.ts_ns < end)
    {
        let col = ((m.ts_ns - start_ns) / step) as usize;
        match out.iter_mut().find(|(c, _)| *c == col) {
            Some(slot) if m.kind == MarkerKind::Trigger => slot.1 = MarkerKind::Trigger,
            Some(_) => {}
            None => out.push((col, m.kind)),
        }
    }
    out
}

/// `width` columns from `start_ns`, each `ns_per_col` long (at least 1).
pub fn columns(changes: &[Change], start_ns: u64, ns_per_col: u64, width: usize) -> Vec<Column> {
    let step = ns_per_col.max(1);
    let mut out = Vec::with_capacity(width);
    let mut i = changes.partition_point(|c| c.ts_ns <= start_ns);
    for k in 0..width as u64 {
        let end = start_ns.saturating_add(step.saturating_mul(k + 1));
        let j = i + changes[i..].partition_point(|c| c.ts_ns < end);
        out.push(match (j - i, j.checked_sub(1)) {
            (_, None) => Column::Empty,
            (0, Some(h)) => Column::Held(changes[h]),
            (n, Some(h)) => Column::Edge {
                end: changes[h],
                changes: n,
            },
        });
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(ts_ns: u64, value: u64) -> Change {
        Change {
            ts_ns,
            value,
            known: true,
        }
    }

    #[test]
    fn columns_hold_and_mark_edges() {
        let c = [ch(10, 1), ch(25, 0), ch(27, 1), ch(29, 0)];
        let cols = columns(&c, 0, 10, 4);
        assert_eq!(cols[0], Column::Empty);
        assert_eq!(
            cols[1],
            Column::Edge {
                end: ch(10, 1),
                changes: 1
            }
        );
        assert_eq!(
            cols[2],
            Column::Edge {
                end: ch(29, 0),
                changes: 3
            }
        );
        assert_eq!(cols[3], Column::Held(ch(29, 0)));
        // A window starting after a change holds it from the first column.
        assert_eq!(columns(&c, 12, 5, 1)[0], Column::Held(ch(10, 1)));
    }
}
