//! The line a pair of points' clocks follow: from the smallest frame
//! time differences each way, window by window (`align.rs` gathers them),
//! the lower hull's slope and the offset between the two directions.

/// Per window of the lower point's time: the smallest difference each way
/// and where it was.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub(super) u: f64,
    pub(super) tu: f64,
    pub(super) v: f64,
    pub(super) tv: f64,
}

pub(super) const EMPTY: Window = Window {
    u: f64::INFINITY,
    tu: 0.0,
    v: f64::INFINITY,
    tv: 0.0,
};

/// A fitted line of `t_j - t_i` against `t_i - first_i`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fit {
    pub(super) base: i64,
    pub(super) a: f64,
    pub(super) b: f64,
    pub(super) spread_ns: f64,
    pub(super) one_way: bool,
}

/// The clock of a point pair from its windows. Queues only delay, so
/// each direction's window minima lie on or above a line: `U >= delay +
/// offset(x)`, `V >= delay - offset(x)`. Each direction's line is the
/// lower hull's edge under its mean time (the line under all its windows
/// closest to them: Moon, Skelly and Towsley's skew estimate); the drift is
/// the slope of the tighter of the two (a direction whose queue never
/// empties, an incast's congested port, lies loose above its line), and
/// the offset half the difference of the two lines' heights under that
/// slope, where each direction's lowest window sets its height. One way
/// only: that way's line, the delay taken as zero.
pub(super) fn fit_windows(w: &[Window]) -> Option<Fit> {
    let mut us: Vec<(f64, f64)> = w
        .iter()
        .filter(|x| x.u.is_finite())
        .map(|x| (x.tu, x.u))
        .collect();
    let mut vs: Vec<(f64, f64)> = w
        .iter()
        .filter(|x| x.v.is_finite())
        .map(|x| (x.tv, x.v))
        .collect();
    if us.is_empty() && vs.is_empty() {
        return None;
    }
    us.sort_by(|p, q| p.0.total_cmp(&q.0));
    vs.sort_by(|p, q| p.0.total_cmp(&q.0));
    let one_way = us.is_empty() || vs.is_empty();
    let (a, b) = if one_way {
        let pts: Vec<(f64, f64)> = if us.is_empty() {
            vs.iter().map(|&(x, v)| (x, -v)).collect()
        } else {
            us.clone()
        };
        let (a, b, _) = hull_line(&pts);
        (a, b)
    } else {
        let (_, bu, tight_u) = hull_line(&us);
        let (_, bv, tight_v) = hull_line(&vs);
        let b = if tight_u <= tight_v { bu } else { -bv };
        let lower = |p: &[(f64, f64)], slope: f64| {
            p.iter()
                .map(|&(x, y)| y - slope * x)
                .fold(f64::INFINITY, f64::min)
        };
        ((lower(&us, b) - lower(&vs, -b)) / 2.0, b)
    };
    // How far the windows that saw both ways are from the line: the
    // evidence's spread (queueing shows here too).
    let mut dev: Vec<f64> = w
        .iter()
        .filter(|x| x.u.is_finite() && x.v.is_finite())
        .map(|x| {
            let t = (x.tu + x.tv) / 2.0;
            ((x.u - x.v) / 2.0 - a - b * t).abs()
        })
        .collect();
    dev.sort_by(f64::total_cmp);
    let spread_ns = dev
        .get(dev.len().saturating_sub(1) * 9 / 10)
        .copied()
        .unwrap_or(0.0);
    Some(Fit {
        base: 0,
        a,
        b,
        spread_ns,
        one_way,
    })
}

/// The lower hull's edge under the points' mean `x` (points sorted by
/// `x`): `(a, b, mean height of the points above it)`. One point: level.
fn hull_line(p: &[(f64, f64)]) -> (f64, f64, f64) {
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(p.len());
    for &q in p {
        while hull.len() >= 2 {
            let (o, m) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Drop `m` unless it lies strictly below the chord from `o` to `q`.
            let cross = (m.0 - o.0) * (q.1 - o.1) - (m.1 - o.1) * (q.0 - o.0);
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(q);
    }
    let mean = p.iter().map(|q| q.0).sum::<f64>() / p.len().max(1) as f64;
    let (a, b) = match hull.windows(2).find(|e| e[1].0 >= mean && e[1].0 > e[0].0) {
        Some(e) => {
            let b = ((e[1].1 - e[0].1) / (e[1].0 - e[0].0)).clamp(-2e-3, 2e-3);
            (e[0].1 - b * e[0].0, b)
        }
        None => (hull.first().map_or(0.0, |q| q.1), 0.0),
    };
    let tight = p.iter().map(|&(x, y)| y - a - b * x).sum::<f64>() / p.len().max(1) as f64;
    (a, b, tight)
}
