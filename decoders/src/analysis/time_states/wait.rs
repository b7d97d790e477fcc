//! Labelling a requester's wait between two of its packets: what ended
//! it (a timer or RNR resend, recovery) decides from when on the tiers
//! hold; below them, paused, window full, sharing, rate or host limited,
//! idle, each from where it begins.

use super::link::ROUNDING_NS;
use super::*;

/// What ended an open wait.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WaitEnd {
    /// PSNs the request that ended it needs room for (1 if none).
    pub span: u32,
    /// The wait ended with a resend its timer drove: waiting on the timer
    /// from the last progress (`timer_from`, which the accounting fills in).
    pub timer: bool,
    pub timer_from: Option<u64>,
    /// ...a resend after an RNR NAK at this time.
    pub rnr_from: Option<u64>,
    /// ...a resend after loss evidence at this time (a NAK).
    pub recovering_from: Option<u64>,
    /// The request came at once when an ACK freed room, after a long wait:
    /// the capture shows the sender held at its window.
    pub held: bool,
}

/// What labelling reads besides the requester's own state.
pub(crate) struct LabelCx<'a> {
    /// The link rate, femtoseconds a byte.
    pub fs_per_byte: u64,
    /// The QP's window, when the scenario, the card or the configuration
    /// gives it.
    pub window: Option<u32>,
    pub pauses: &'a VecDeque<Pause>,
    /// The longest any of them holds.
    pub pause_reach_ns: u64,
    /// The requester host's link: bytes on the wire so far.
    pub busy_bytes: u64,
    /// ...and its latest frames: where in a wait the other QPs' frames
    /// were.
    pub frames: &'a FrameRing,
}

/// A portion of a wait, `[from, to)`, and the PSNs outstanding throughout.
#[derive(Debug, Clone, Copy)]
struct Piece {
    from: u64,
    to: u64,
    outstanding: u32,
}

impl Piece {
    #[inline(always)]
    fn new(from: u64, to: u64, outstanding: u32) -> Piece {
        Piece {
            from,
            to,
            outstanding,
        }
    }
}

/// Other QPs' bytes on the link over a portion of a wait, taken as
/// spread evenly over it where the frames kept do not place them.
#[derive(Debug, Clone, Copy)]
struct Spread {
    bytes: u64,
    over_ns: u64,
}

impl Spread {
    /// The bytes falling in `ns` of the portion.
    fn within(self, ns: u64) -> u64 {
        (u128::from(self.bytes) * u128::from(ns) / u128::from(self.over_ns.max(1))) as u64
    }
}

impl Acct {
    /// Labels the open wait up to `to` (what ended it in `end`), then
    /// starts a new one at `to` with `outstanding` and the link at
    /// `busy_bytes`.
    #[inline(always)]
    pub fn close_wait(&mut self, to: u64, end: &WaitEnd, cx: &LabelCx<'_>) {
        let from = self.runs.end_ns;
        self.last_wait_ns = to.saturating_sub(from);
        if to <= from {
            self.segs.clear();
            return;
        }
        if self.segs.is_empty() {
            if to - from <= ROUNDING_NS && self.runs.last_state() == Some(TimeState::Sending) {
                self.runs.push(to, TimeState::Sending);
                return;
            }
            if self.plain_holds(from, end, cx) {
                if !self.plain_label(Piece::new(from, to, self.out_at_mark), end, cx) {
                    // The base states throughout, the link's frames in
                    // several stretches: walked, without the tiers' and
                    // pauses' set-up (`portion`, `base`), which hold none.
                    let others = cx.busy_bytes.saturating_sub(self.busy_at_mark);
                    self.open_spread(Piece::new(from, to, self.out_at_mark), others, end, cx);
                }
                // Else labelled in place: nothing above the base states,
                // nothing paused, the link's frames placed by at most one
                // stretch.
                return;
            }
        }
        self.close_wait_walked(from, to, end, cx);
    }

    /// [`Acct::open`] over `[from, to)` with `others_bytes` of the other
    /// QPs spread over it, once [`Acct::plain_holds`] (what
    /// [`Acct::portion`] then [`Acct::base`] come to).
    #[inline(never)]
    fn open_spread(&mut self, piece: Piece, others_bytes: u64, end: &WaitEnd, cx: &LabelCx<'_>) {
        let spread = Spread {
            bytes: others_bytes,
            over_ns: piece.to.saturating_sub(piece.from),
        };
        self.open(piece, spread, end, cx);
    }

    /// [`Acct::close_wait`] for the waits that need the general walk:
    /// changes of the outstanding count inside, tiers, pauses, frames in
    /// several stretches.
    #[inline(never)]
    fn close_wait_walked(&mut self, from: u64, to: u64, end: &WaitEnd, cx: &LabelCx<'_>) {
        if self.segs.is_empty() {
            let others = cx.busy_bytes.saturating_sub(self.busy_at_mark);
            self.portion(Piece::new(from, to, self.out_at_mark), others, end, cx);
        } else {
            let mut at = from;
            let mut out = self.out_at_mark;
            let mut busy = self.busy_at_mark;
            let segs = std::mem::take(&mut self.segs);
            // Whether the pieces may be labelled in place is decided once:
            // the tiers hold for the whole wait, and a pause not reaching
            // its start reaches none of its pieces.
            let plain = self.plain_holds(from, end, cx);
            if plain && !self.mid_message {
                Acct::pieces_between_messages(
                    &mut self.runs,
                    self.out_at_mark,
                    from,
                    to,
                    &segs,
                    end.span,
                    end.held,
                    cx.window,
                );
                self.segs = segs;
                self.segs.clear();
                return;
            }
            for s in &segs {
                if s.ts_ns <= from || s.ts_ns >= to {
                    continue;
                }
                let others = s.busy_bytes.saturating_sub(busy);
                if plain {
                    // A piece of a plain wait: in place, else walked
                    // without the tiers' and pauses' set-up.
                    if !(s.ts_ns <= at
                        || (at <= self.runs.end_ns
                            && self.plain_label(Piece::new(at, s.ts_ns, out), end, cx)))
                    {
                        self.open_spread(Piece::new(at, s.ts_ns, out), others, end, cx);
                    }
                } else if !self.plain_wait(Piece::new(at, s.ts_ns, out), end, cx) {
                    self.portion(Piece::new(at, s.ts_ns, out), others, end, cx);
                }
                at = s.ts_ns;
                out = s.outstanding;
                busy = s.busy_bytes;
            }
            let others = cx.busy_bytes.saturating_sub(busy);
            if plain {
                if !(to <= at
                    || (at <= self.runs.end_ns
                        && self.plain_label(Piece::new(at, to, out), end, cx)))
                {
                    self.open_spread(Piece::new(at, to, out), others, end, cx);
                }
            } else if !self.plain_wait(Piece::new(at, to, out), end, cx) {
                self.portion(Piece::new(at, to, out), others, end, cx);
            }
            self.segs = segs;
        }
        self.segs.clear();
    }

    /// A plain wait between messages cut by changes of the outstanding
    /// count (`segs`; READ responses, ACKs): each piece window full or
    /// idle by its count, as [`Acct::plain_label`] labels it, with one
    /// push a change of state rather than one a piece (the same runs: a
    /// push in the state of the last extends it). The count is
    /// `out_at_mark` from `from` on; the request that ends the wait at
    /// `to` needs room for `span` PSNs (`held`: the capture shows the
    /// sender held at its window, what decides without one). Taking the
    /// runs, not the account, so that the steady path calls it with the
    /// segments in place.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn pieces_between_messages(
        runs: &mut StateRuns,
        out_at_mark: u32,
        from: u64,
        to: u64,
        segs: &[Seg],
        span: u32,
        held: bool,
        window: Option<u32>,
    ) {
        let span = u64::from(span.max(1));
        // Full where the count and the request's span pass the window;
        // without one, throughout when the capture shows the sender held,
        // else nowhere (a limit no count passes): one comparison a piece.
        let limit = match window {
            Some(w) => u64::from(w),
            None if held => 0,
            None => u64::MAX,
        };
        let state_of = |outstanding: u32| {
            if u64::from(outstanding) + span > limit {
                TimeState::WindowFull
            } else {
                TimeState::Idle
            }
        };
        let mut at = from;
        let mut out = out_at_mark;
        // The pushes the pieces make, held back while in the same state.
        let mut deferred: Option<(u64, TimeState)> = None;
        let mut piece = |runs: &mut StateRuns, upto: u64, state: TimeState| match deferred {
            Some((t, s)) if s == state => deferred = Some((t.max(upto), s)),
            Some((t, s)) => {
                runs.push(t, s);
                deferred = Some((upto, state));
            }
            None => deferred = Some((upto, state)),
        };
        for s in segs {
            if s.ts_ns <= from || s.ts_ns >= to {
                continue;
            }
            if s.ts_ns > at {
                piece(runs, s.ts_ns, state_of(out));
            }
            at = s.ts_ns;
            out = s.outstanding;
        }
        if to > at {
            piece(runs, to, state_of(out));
        }
        if let Some((t, s)) = deferred {
            runs.push(t, s);
        }
    }

    /// The common wait, labelled without the general walk (the same runs
    /// as [`Acct::portion`] would push): no tier (timer, RNR, recovery),
    /// no pause reaching it, and either the window full, between
    /// messages, or mid-message with one stretch of the link's frames
    /// starting before the wait (the newest, or the one before the
    /// sender's own frame that starts a stretch of its own at `to`).
    /// Returns false, having pushed nothing, when the wait is not so. Also
    /// a portion of a wait, `outstanding` throughout, that starts where
    /// the runs end (or before, where a change stamped out of time order
    /// left nothing to label).
    #[inline(always)]
    fn plain_wait(&mut self, piece: Piece, end: &WaitEnd, cx: &LabelCx<'_>) -> bool {
        if piece.to <= piece.from {
            return true;
        }
        piece.from <= self.runs.end_ns
            && self.plain_holds(piece.from, end, cx)
            && self.plain_label(piece, end, cx)
    }

    /// No tier (timer, RNR, recovery) in a wait that `end` ends, and no
    /// pause reaching `from`.
    #[inline(always)]
    fn plain_holds(&self, from: u64, end: &WaitEnd, cx: &LabelCx<'_>) -> bool {
        end.timer_from.is_none()
            && end.rnr_from.is_none()
            && end.recovering_from.is_none()
            && self.recovering_since.is_none()
            && cx
                .pauses
                .back()
                .is_none_or(|p| p.start_ns.saturating_add(cx.pause_reach_ns) <= from)
    }

    /// [`Acct::plain_wait`] once [`Acct::plain_holds`]: `[from, to)`,
    /// non-empty, starting at or before the runs' end.
    #[inline(always)]
    fn plain_label(&mut self, piece: Piece, end: &WaitEnd, cx: &LabelCx<'_>) -> bool {
        let full = match cx.window {
            Some(w) => u64::from(piece.outstanding) + u64::from(end.span.max(1)) > u64::from(w),
            None => end.held,
        };
        if full {
            self.runs.push(piece.to, TimeState::WindowFull);
            return true;
        }
        if !self.mid_message {
            self.runs.push(piece.to, TimeState::Idle);
            return true;
        }
        let frames = cx.frames;
        let n = frames.len();
        if n == 0 || frames.get(0).0 > piece.from {
            return false;
        }
        let newest = frames.get(n - 1);
        let (start, stretch_end) = if newest.0 < piece.from {
            newest
        } else if newest.0 >= piece.to && n >= 2 && frames.get(n - 2).0 < piece.from {
            frames.get(n - 2)
        } else {
            return false;
        };
        debug_assert!(start < piece.from);
        let rest = if self.rate_limited {
            TimeState::RateLimited
        } else {
            TimeState::HostLimited
        };
        self.runs.push(
            stretch_end.max(piece.from).min(piece.to),
            TimeState::Sharing,
        );
        self.runs.push(piece.to, rest);
        true
    }

    /// `[from, to)`, no change of outstanding count inside: the states
    /// from the top of the order down, each from where it begins.
    #[inline]
    fn portion(&mut self, piece: Piece, others_bytes: u64, end: &WaitEnd, cx: &LabelCx<'_>) {
        // No state above: the base states throughout (nearly every wait).
        if end.timer_from.is_none()
            && end.rnr_from.is_none()
            && end.recovering_from.is_none()
            && self.recovering_since.is_none()
        {
            // A change stamped before the last one (frames out of time
            // order) leaves an empty portion: nothing to spread.
            let spread = Spread {
                bytes: others_bytes,
                over_ns: piece.to.saturating_sub(piece.from),
            };
            self.base(piece, spread, end, cx);
            return;
        }
        // The states that hold from a time to the end of the wait (the
        // error state is the report's to place: a fatal NAK's QP may be
        // seen going on).
        let mut tiers: [(Option<u64>, TimeState); 3] = [
            (end.timer_from, TimeState::WaitingOnTimer),
            (end.rnr_from, TimeState::RnrWait),
            (
                match (self.recovering_since, end.recovering_from) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
                TimeState::Recovering,
            ),
        ];
        // The earliest tier that starts before `to` decides from its start;
        // before it, the tiers below (a later, higher tier cuts in).
        tiers.sort_by_key(|t| t.1);
        let mut at = piece.from;
        while at < piece.to {
            // The highest tier holding at `at`.
            if let Some(&(_, state)) = tiers.iter().find(|(s, _)| s.is_some_and(|s| s <= at)) {
                // It holds to the end of the portion unless a higher one
                // starts before then.
                let cut = tiers
                    .iter()
                    .take_while(|(_, s)| *s < state)
                    .filter_map(|(s, _)| *s)
                    .filter(|&s| s > at && s < piece.to)
                    .min()
                    .unwrap_or(piece.to);
                self.runs.push(cut, state);
                at = cut;
                continue;
            }
            // No tier yet: the base states until the first tier starts.
            let next = tiers
                .iter()
                .filter_map(|(s, _)| *s)
                .filter(|&s| s > at && s < piece.to)
                .min()
                .unwrap_or(piece.to);
            // Other QPs' bytes on the link, spread evenly over the portion.
            let spread = Spread {
                bytes: others_bytes,
                over_ns: piece.to - piece.from,
            };
            self.base(Piece::new(at, next, piece.outstanding), spread, end, cx);
            at = next;
        }
    }

    /// `[from, to)` below the tiers: paused, window full, sharing, rate
    /// limited, host limited or idle.
    #[inline]
    fn base(&mut self, piece: Piece, others: Spread, end: &WaitEnd, cx: &LabelCx<'_>) {
        let mut at = piece.from;
        let port = self.port;
        // Pauses on the requester's link, in time order (few, if any):
        // none starting longer than the longest hold before `from` reaches it.
        let pauses = cx.pauses;
        if pauses
            .back()
            .is_none_or(|p| p.start_ns.saturating_add(cx.pause_reach_ns) <= piece.from)
        {
            self.open(piece, others, end, cx);
            return;
        }
        let mut first = pauses.len();
        while first > 0 && pauses[first - 1].start_ns.saturating_add(cx.pause_reach_ns) > piece.from
        {
            first -= 1;
        }
        for p in pauses.range(first..).filter(|p| {
            p.start_ns < piece.to
                && p.end_ns > piece.from
                && (p.port.is_none() || port.is_none() || p.port == port)
        }) {
            let (a, b) = (p.start_ns.max(at), p.end_ns.min(piece.to));
            if b <= a {
                continue;
            }
            self.open(Piece::new(at, a, piece.outstanding), others, end, cx);
            self.runs.push(b, TimeState::Paused);
            at = b;
        }
        self.open(Piece::new(at, piece.to, piece.outstanding), others, end, cx);
    }

    /// `[from, to)`, not paused: window full, sharing, rate limited, host
    /// limited or idle.
    #[inline]
    fn open(&mut self, piece: Piece, others: Spread, end: &WaitEnd, cx: &LabelCx<'_>) {
        if piece.to <= piece.from {
            return;
        }
        let full = match cx.window {
            Some(w) => u64::from(piece.outstanding) + u64::from(end.span.max(1)) > u64::from(w),
            None => end.held,
        };
        if full {
            self.runs.push(piece.to, TimeState::WindowFull);
            return;
        }
        if !self.mid_message {
            self.runs.push(piece.to, TimeState::Idle);
            return;
        }
        let rest = if self.rate_limited {
            TimeState::RateLimited
        } else {
            TimeState::HostLimited
        };
        // The other QPs' frames where they were on the link; before the
        // frames kept, as many as the link's bytes say, first.
        let mut at = piece.from;
        let frames = cx.frames;
        let oldest = if frames.len() == 0 {
            u64::MAX
        } else {
            frames.get(0).0
        };
        if at < oldest {
            let upto = oldest.min(piece.to);
            let shared = wire_ns(others.within(upto - at), cx.fs_per_byte).min(upto - at);
            self.runs.push(at + shared, TimeState::Sharing);
            self.runs.push(upto, rest);
            at = upto;
        }
        // A stretch starting before `at` (the link busy since before the
        // wait) is the one before the first starting at or after it.
        let (mut shared_from, mut shared_to) = (at, at);
        let (older, newer) = frames.walk_from_before(at);
        'walk: for part in [older, newer] {
            for &(start, end) in part {
                if start >= piece.to {
                    break 'walk;
                }
                let s = start.max(at);
                let e = end.min(piece.to);
                if e <= s {
                    continue;
                }
                if s > shared_to {
                    self.runs.push(shared_from, rest);
                    self.runs.push(shared_to, TimeState::Sharing);
                    shared_from = s;
                }
                shared_to = shared_to.max(e);
            }
        }
        self.runs.push(shared_from, rest);
        self.runs.push(shared_to, TimeState::Sharing);
        self.runs.push(piece.to, rest);
    }
}
