//! Time by state per requester QP: every nanosecond of a QP's span, from
//! its first request to the end of its last packet, in exactly one state,
//! the reason its next packet was not (yet) on the wire, from the capture
//! alone (issue 48). Kept as runs (a start and a state; a run ends where
//! the next begins), not per packet: a state that holds across packets is
//! one run.
//!
//! The time between two of a requester's packets is labelled when the
//! second one comes, so that what ended the wait can tell what it was: a
//! resend its timer drove was waiting on the timer since the last
//! progress; one after an RNR NAK was the RNR wait; the ACKs in between
//! cut the wait into pieces whose outstanding count says whether the
//! window was full. When several states apply, the first in
//! [`TimeState::ALL`] wins.

use std::collections::VecDeque;

use super::state_runs::StateRuns;

mod steady;

/// Why a requester QP's next packet was not (yet) on the wire. In the
/// order that decides when several apply.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[repr(u8)]
pub enum TimeState {
    /// After the QP went to the error state.
    Error,
    /// From the last progress before a timer-driven resend to the resend.
    WaitingOnTimer,
    /// From an RNR NAK to the resend.
    RnrWait,
    /// From the loss evidence the requester acted on (a NAK, a timer
    /// resend) to its first new packet or the ACK of all it had sent; its
    /// resends on the wire too.
    Recovering,
    /// A PFC or PAUSE frame toward the sender holds its link.
    Paused,
    /// Outstanding packets at the window: the next request does not fit.
    WindowFull,
    /// Its own packet on the wire.
    Sending,
    /// Mid-message, window open, the link busy with other QPs' packets.
    Sharing,
    /// Mid-message, window open, gaps longer than the link needs after a
    /// CNP (congestion control pacing the sender).
    RateLimited,
    /// Mid-message, window open, gaps with no signal in the capture: the
    /// host, PCIe, the card's payload fetch.
    HostLimited,
    /// Between messages (after a Last or Only), nothing on the way.
    Idle,
}

/// States there are.
pub const TIME_STATES: usize = 11;

impl TimeState {
    /// Every state, in the order that decides.
    pub const ALL: [TimeState; TIME_STATES] = [
        TimeState::Error,
        TimeState::WaitingOnTimer,
        TimeState::RnrWait,
        TimeState::Recovering,
        TimeState::Paused,
        TimeState::WindowFull,
        TimeState::Sending,
        TimeState::Sharing,
        TimeState::RateLimited,
        TimeState::HostLimited,
        TimeState::Idle,
    ];

    /// Its name in JSON, tables and text: `window_full`, `sending`...
    pub fn name(self) -> &'static str {
        match self {
            TimeState::Error => "error",
            TimeState::WaitingOnTimer => "waiting_on_timer",
            TimeState::RnrWait => "rnr_wait",
            TimeState::Recovering => "recovering",
            TimeState::Paused => "paused",
            TimeState::WindowFull => "window_full",
            TimeState::Sending => "sending",
            TimeState::Sharing => "sharing",
            TimeState::RateLimited => "rate_limited",
            TimeState::HostLimited => "host_limited",
            TimeState::Idle => "idle",
        }
    }

    /// Its code (its place in [`TimeState::ALL`]), as records carry it.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The state of a code, if there is one.
    pub fn from_code(code: u8) -> Option<TimeState> {
        TimeState::ALL.get(usize::from(code)).copied()
    }

    /// The state of a name.
    pub fn from_name(name: &str) -> Option<TimeState> {
        TimeState::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A PFC or PAUSE frame's hold on a link: on capture port `port` (any
/// port when the capture does not say), `start_ns..end_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Pause {
    pub port: Option<u8>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Pauses kept (the newest): a QP's open wait looks back at most this far.
pub(crate) const MAX_PAUSES: usize = 4096;

/// A change in the open wait of a requester: an ACK took sends off, or the
/// READ responses moved on.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Seg {
    ts_ns: u64,
    /// Outstanding PSNs from then on.
    outstanding: u32,
    /// The requester host's link: bytes on the wire so far.
    busy_bytes: u64,
}

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

/// A request in the steady state ([`Acct::steady_request`]): what it
/// reads besides the requester's own state.
pub(crate) struct Steady<'a> {
    /// Its first bit and the end of its last on the wire.
    pub ts_ns: u64,
    pub end_ns: u64,
    /// PSNs it needs room for.
    pub span: u32,
    /// The capture shows the sender held at its window before it.
    pub held: bool,
    pub mid_message: Option<bool>,
    pub window: Option<u32>,
    /// Outstanding PSNs with it.
    pub outstanding_after: u32,
    /// The requester host's link: bytes on the wire with it.
    pub busy_bytes: u64,
    pub pauses: &'a VecDeque<Pause>,
    pub pause_reach_ns: u64,
    pub frames: &'a FrameRing,
}

/// How a steady request's wait is labelled.
#[derive(Clone, Copy)]
enum Wait {
    None,
    Sending,
    Full,
    Idle,
    /// Sharing to then, host limited to the request.
    Shared(u64),
}

/// A stretch of a link's frames back to back: (first bit, end), ns.
type Stretch = (u64, u64);

/// Frames a host's link keeps for placing other QPs' frames in a wait.
pub(crate) const LINK_FRAMES: usize = 1024;

/// A host's link busy, as its latest stretches of frames back to back
/// (from the first frame's first bit to the last one's end), oldest first:
/// a ring of [`LINK_FRAMES`]. A frame that starts where the last stretch
/// ends lengthens it, so a busy link is a few entries, not one a frame
/// (a QP's wait between two of its packets reads only these).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FrameRing {
    buf: Vec<(u64, u64)>,
    /// The oldest entry's place once the ring is full.
    head: usize,
    /// The newest entry's place.
    last: usize,
}

impl FrameRing {
    /// A frame on the link from `ts_ns` to `end_ns`.
    #[inline(always)]
    pub fn push(&mut self, ts_ns: u64, end_ns: u64) {
        if let Some(l) = self.buf.get_mut(self.last)
            && ts_ns <= l.1 + ROUNDING_NS
            && ts_ns >= l.0
        {
            l.1 = l.1.max(end_ns);
            return;
        }
        self.push_new(ts_ns, end_ns);
    }

    #[inline(never)]
    fn push_new(&mut self, ts_ns: u64, end_ns: u64) {
        if self.buf.len() < LINK_FRAMES {
            self.last = self.buf.len();
            self.buf.push((ts_ns, end_ns));
        } else {
            self.last = self.head;
            self.buf[self.head] = (ts_ns, end_ns);
            self.head = if self.head + 1 == LINK_FRAMES {
                0
            } else {
                self.head + 1
            };
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    /// The oldest, the one before the newest and the newest (the ring's
    /// ends, read without the index arithmetic of [`FrameRing::get`]).
    #[inline(always)]
    fn ends(&self) -> Option<(Stretch, Option<Stretch>, Stretch)> {
        let oldest = *self.buf.get(self.head)?;
        let newest = *self.buf.get(self.last)?;
        let before = match self.last {
            0 if self.buf.len() == LINK_FRAMES => self.buf.get(LINK_FRAMES - 1),
            0 => None,
            l => self.buf.get(l - 1),
        };
        Some((oldest, before.copied(), newest))
    }

    /// The `i`-th oldest.
    #[inline]
    fn get(&self, i: usize) -> (u64, u64) {
        let j = self.head + i;
        self.buf[if j >= self.buf.len() {
            j - self.buf.len()
        } else {
            j
        }]
    }

    /// The stretches oldest first, as two slices (the ring's wrap between
    /// them): walked by slice, not by index through the wrap.
    #[inline]
    fn ordered(&self) -> (&[Stretch], &[Stretch]) {
        let (wrapped, oldest) = self.buf.split_at(self.head.min(self.buf.len()));
        (oldest, wrapped)
    }

    /// From the one before the first frame starting at or after `ts_ns`,
    /// oldest first, as two slices (the ring's wrap between them): that
    /// first frame is looked for from the newest, as a wait is (a long one
    /// walks them all anyway).
    #[inline]
    fn walk_from_before(&self, ts_ns: u64) -> (&[Stretch], &[Stretch]) {
        let (older, wrapped) = self.ordered();
        let mut n = wrapped.len();
        while n > 0 && wrapped[n - 1].0 >= ts_ns {
            n -= 1;
        }
        if n > 0 {
            return (&wrapped[n - 1..], &[]);
        }
        let mut n = older.len();
        while n > 0 && older[n - 1].0 >= ts_ns {
            n -= 1;
        }
        (&older[n.saturating_sub(1)..], wrapped)
    }
}

/// No frames (a host the analysis has not seen).
pub(crate) const NO_FRAMES: &FrameRing = &FrameRing {
    buf: Vec::new(),
    head: 0,
    last: 0,
};

/// Bytes an Ethernet frame of `frame_bytes` (no FCS) takes on the wire:
/// padding, FCS, preamble and the inter-frame gap.
#[inline]
pub(crate) fn wire_bytes(frame_bytes: u32) -> u64 {
    u64::from(frame_bytes.max(60)) + 24
}

/// Femtoseconds a byte takes on a link of `gbps` (integer arithmetic per
/// packet: exact for the standard rates).
pub(crate) fn fs_per_byte(gbps: f64) -> u64 {
    ((8e6 / gbps).round() as u64).max(1)
}

/// Nanoseconds `bytes` of wire take at `fs_per_byte`.
#[inline(always)]
pub(crate) fn wire_ns(bytes: u64, fs_per_byte: u64) -> u64 {
    bytes.saturating_mul(fs_per_byte) / 1_000_000
}

/// A wait this short after the sender's own frame is the rounding of the
/// frames' times to whole nanoseconds (the next frame right after it), not
/// a wait: it stays sending, rather than a run of its own (and a link's
/// frames this close are one stretch of it busy).
const ROUNDING_NS: u64 = 2;

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

/// The accounting of one requester flow.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Acct {
    pub runs: StateRuns,
    /// Outstanding PSNs and the link's bytes at `runs.end_ns`.
    out_at_mark: u32,
    busy_at_mark: u64,
    segs: Vec<Seg>,
    /// The last new request was not the last of its message.
    pub mid_message: bool,
    /// The last new request or ACK that took sends off.
    pub last_progress_ns: u64,
    /// A Go-Back-N episode is open since then.
    pub recovering_since: Option<u64>,
    /// A CNP came, and the sender has not been seen at the link's rate
    /// since.
    pub rate_limited: bool,
    /// The capture port its requests leave by, when it says.
    pub port: Option<u8>,
    /// How long the wait just closed was (whether the sender is back at
    /// the link's rate after a CNP).
    pub last_wait_ns: u64,
    /// Responses seen whose effect the requester has not taken yet (its
    /// card processes them one at a time): (when it will, the earliest it
    /// could have, PSNs they free).
    pending: VecDeque<(u64, u64, u32)>,
    pending_psns: u32,
    /// The last event's time and link bytes, for a change between events.
    last_event: (u64, u64),
    /// Its window and response time as of a facts epoch (`facts_of`).
    pub facts: (u32, Option<u32>, Option<(u64, u64)>),
}

impl Acct {
    pub fn new(start_ns: u64) -> Acct {
        Acct {
            runs: StateRuns::starting(start_ns),
            out_at_mark: 0,
            busy_at_mark: 0,
            segs: Vec::new(),
            mid_message: false,
            last_progress_ns: start_ns,
            recovering_since: None,
            rate_limited: false,
            port: None,
            last_wait_ns: 0,
            pending: VecDeque::new(),
            pending_psns: 0,
            last_event: (start_ns, 0),
            facts: (u32::MAX, None, None),
        }
    }

    /// No response waits for the requester to take it.
    #[inline]
    pub fn nothing_pending(&self) -> bool {
        self.pending.is_empty()
    }

    /// PSNs freed by responses the requester takes after `ts_ns`.
    pub fn pending_after(&self, ts_ns: u64) -> u32 {
        self.pending
            .iter()
            .filter(|p| p.0 > ts_ns)
            .map(|p| p.2)
            .sum()
    }

    /// Outstanding PSNs as the requester counts them: those the capture
    /// shows (`seen`) and those freed by responses it has not processed.
    pub fn as_counted(&self, seen: u32) -> u32 {
        seen + self.pending_psns
    }

    /// A response at `ts_ns` took the outstanding PSNs the capture shows
    /// from `before` to `after`; the requester takes it at `effect_ns`
    /// (its card's processing: `None` at once).
    #[inline]
    pub fn response(
        &mut self,
        ts_ns: u64,
        before: u32,
        after: u32,
        effect_ns: Option<(u64, u64)>,
        busy_bytes: u64,
    ) {
        self.take_effects(ts_ns, before, busy_bytes);
        let freed = before.saturating_sub(after);
        match effect_ns.filter(|&(e, _)| e > ts_ns) {
            Some((e, earliest)) if freed > 0 => {
                self.pending.push_back((e, earliest, freed));
                self.pending_psns += freed;
            }
            _ => self.change(ts_ns, after + self.pending_psns, busy_bytes),
        }
        self.last_event = (ts_ns, busy_bytes);
    }

    /// The responses the requester took before `upto`, the capture showing
    /// `seen` outstanding since the last event: changes of the count at
    /// their times.
    #[inline]
    pub fn take_effects(&mut self, upto: u64, seen: u32, busy_bytes: u64) {
        while let Some(&(at, _, freed)) = self.pending.front() {
            if at >= upto {
                break;
            }
            self.pending.pop_front();
            self.pending_psns -= freed;
            // The link's bytes then, between the last event's and now's.
            let (t0, b0) = self.last_event;
            let busy = if upto > t0 && at > t0 {
                b0 + ((busy_bytes.saturating_sub(b0)) as f64 * (at - t0) as f64
                    / (upto - t0) as f64) as u64
            } else {
                b0
            };
            self.change(at, seen + self.pending_psns, busy);
        }
    }

    /// [`Acct::response`] with nothing pending and taken at once (an ACK
    /// of a QP whose card's response time is not given, or a READ
    /// response): the count changes at `ts_ns`.
    #[inline(always)]
    pub fn response_now(&mut self, ts_ns: u64, after: u32, busy_bytes: u64) {
        debug_assert!(self.pending.is_empty());
        self.change(ts_ns, after, busy_bytes);
        self.last_event = (ts_ns, busy_bytes);
    }

    /// From `ts_ns` the requester counts `outstanding`: a change inside
    /// the time already labelled (its own packet's) is the count the wait
    /// after it starts from. Inlined: every READ response and ACK that
    /// moves the count comes here.
    #[inline(always)]
    fn change(&mut self, ts_ns: u64, outstanding: u32, busy_bytes: u64) {
        if ts_ns <= self.runs.end_ns {
            self.out_at_mark = outstanding;
            return;
        }
        let last = self.segs.last().map_or(self.out_at_mark, |s| s.outstanding);
        if last != outstanding {
            self.segs.push(Seg {
                ts_ns,
                outstanding,
                busy_bytes,
            });
        }
    }

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
                if !self.plain_label(from, to, self.out_at_mark, end, cx) {
                    // The base states throughout, the link's frames in
                    // several stretches: walked, without the tiers' and
                    // pauses' set-up (`portion`, `base`), which hold none.
                    let others = cx.busy_bytes.saturating_sub(self.busy_at_mark);
                    self.open_spread(from, to, self.out_at_mark, others, end, cx);
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
    fn open_spread(
        &mut self,
        from: u64,
        to: u64,
        outstanding: u32,
        others_bytes: u64,
        end: &WaitEnd,
        cx: &LabelCx<'_>,
    ) {
        let spread = Spread {
            bytes: others_bytes,
            over_ns: to.saturating_sub(from),
        };
        self.open(from, to, outstanding, spread, end, cx);
    }

    /// [`Acct::close_wait`] for the waits that need the general walk:
    /// changes of the outstanding count inside, tiers, pauses, frames in
    /// several stretches.
    #[inline(never)]
    fn close_wait_walked(&mut self, from: u64, to: u64, end: &WaitEnd, cx: &LabelCx<'_>) {
        if self.segs.is_empty() {
            let others = cx.busy_bytes.saturating_sub(self.busy_at_mark);
            self.portion(from, to, self.out_at_mark, others, end, cx);
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
                self.plain_pieces_between_messages(from, to, &segs, end, cx.window);
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
                        || (at <= self.runs.end_ns && self.plain_label(at, s.ts_ns, out, end, cx)))
                    {
                        self.open_spread(at, s.ts_ns, out, others, end, cx);
                    }
                } else if !self.plain_wait(at, s.ts_ns, out, end, cx) {
                    self.portion(at, s.ts_ns, out, others, end, cx);
                }
                at = s.ts_ns;
                out = s.outstanding;
                busy = s.busy_bytes;
            }
            let others = cx.busy_bytes.saturating_sub(busy);
            if plain {
                if !(to <= at || (at <= self.runs.end_ns && self.plain_label(at, to, out, end, cx)))
                {
                    self.open_spread(at, to, out, others, end, cx);
                }
            } else if !self.plain_wait(at, to, out, end, cx) {
                self.portion(at, to, out, others, end, cx);
            }
            self.segs = segs;
        }
        self.segs.clear();
    }

    /// A plain wait between messages cut by changes of the outstanding
    /// count (`segs`; READ responses, ACKs): each piece window full or
    /// idle by its count, as [`Acct::plain_label`] labels it, with one
    /// push a change of state rather than one a piece (the same runs: a
    /// push in the state of the last extends it).
    #[inline]
    fn plain_pieces_between_messages(
        &mut self,
        from: u64,
        to: u64,
        segs: &[Seg],
        end: &WaitEnd,
        window: Option<u32>,
    ) {
        let span = u64::from(end.span.max(1));
        let state_of = |outstanding: u32| {
            let full = match window {
                Some(w) => u64::from(outstanding) + span > u64::from(w),
                None => end.held,
            };
            if full {
                TimeState::WindowFull
            } else {
                TimeState::Idle
            }
        };
        let mut at = from;
        let mut out = self.out_at_mark;
        // The pushes the pieces make, held back while in the same state.
        let mut held: Option<(u64, TimeState)> = None;
        let mut piece = |runs: &mut StateRuns, upto: u64, state: TimeState| match held {
            Some((t, s)) if s == state => held = Some((t.max(upto), s)),
            Some((t, s)) => {
                runs.push(t, s);
                held = Some((upto, state));
            }
            None => held = Some((upto, state)),
        };
        for s in segs {
            if s.ts_ns <= from || s.ts_ns >= to {
                continue;
            }
            if s.ts_ns > at {
                piece(&mut self.runs, s.ts_ns, state_of(out));
            }
            at = s.ts_ns;
            out = s.outstanding;
        }
        if to > at {
            piece(&mut self.runs, to, state_of(out));
        }
        if let Some((t, s)) = held {
            self.runs.push(t, s);
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
    fn plain_wait(
        &mut self,
        from: u64,
        to: u64,
        outstanding: u32,
        end: &WaitEnd,
        cx: &LabelCx<'_>,
    ) -> bool {
        if to <= from {
            return true;
        }
        from <= self.runs.end_ns
            && self.plain_holds(from, end, cx)
            && self.plain_label(from, to, outstanding, end, cx)
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
    fn plain_label(
        &mut self,
        from: u64,
        to: u64,
        outstanding: u32,
        end: &WaitEnd,
        cx: &LabelCx<'_>,
    ) -> bool {
        let full = match cx.window {
            Some(w) => u64::from(outstanding) + u64::from(end.span.max(1)) > u64::from(w),
            None => end.held,
        };
        if full {
            self.runs.push(to, TimeState::WindowFull);
            return true;
        }
        if !self.mid_message {
            self.runs.push(to, TimeState::Idle);
            return true;
        }
        let frames = cx.frames;
        let n = frames.len();
        if n == 0 || frames.get(0).0 > from {
            return false;
        }
        let newest = frames.get(n - 1);
        let (start, stretch_end) = if newest.0 < from {
            newest
        } else if newest.0 >= to && n >= 2 && frames.get(n - 2).0 < from {
            frames.get(n - 2)
        } else {
            return false;
        };
        debug_assert!(start < from);
        let rest = if self.rate_limited {
            TimeState::RateLimited
        } else {
            TimeState::HostLimited
        };
        self.runs
            .push(stretch_end.max(from).min(to), TimeState::Sharing);
        self.runs.push(to, rest);
        true
    }

    /// Starts the next wait at the runs' end with `outstanding` and the
    /// link at `busy_bytes`.
    pub fn restart(&mut self, outstanding: u32, busy_bytes: u64) {
        self.out_at_mark = outstanding;
        self.busy_at_mark = busy_bytes;
        self.segs.clear();
        self.last_event = (self.runs.end_ns, busy_bytes);
    }

    /// `[from, to)`, no change of outstanding count inside: the states
    /// from the top of the order down, each from where it begins.
    #[inline]
    fn portion(
        &mut self,
        from: u64,
        to: u64,
        outstanding: u32,
        others_bytes: u64,
        end: &WaitEnd,
        cx: &LabelCx<'_>,
    ) {
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
                over_ns: to.saturating_sub(from),
            };
            self.base(from, to, outstanding, spread, end, cx);
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
        let mut at = from;
        while at < to {
            // The highest tier holding at `at`.
            if let Some(&(_, state)) = tiers.iter().find(|(s, _)| s.is_some_and(|s| s <= at)) {
                // It holds to the end of the portion unless a higher one
                // starts before then.
                let cut = tiers
                    .iter()
                    .take_while(|(_, s)| *s < state)
                    .filter_map(|(s, _)| *s)
                    .filter(|&s| s > at && s < to)
                    .min()
                    .unwrap_or(to);
                self.runs.push(cut, state);
                at = cut;
                continue;
            }
            // No tier yet: the base states until the first tier starts.
            let next = tiers
                .iter()
                .filter_map(|(s, _)| *s)
                .filter(|&s| s > at && s < to)
                .min()
                .unwrap_or(to);
            // Other QPs' bytes on the link, spread evenly over the portion.
            let spread = Spread {
                bytes: others_bytes,
                over_ns: to - from,
            };
            self.base(at, next, outstanding, spread, end, cx);
            at = next;
        }
    }

    /// `[from, to)` below the tiers: paused, window full, sharing, rate
    /// limited, host limited or idle.
    #[inline]
    fn base(
        &mut self,
        from: u64,
        to: u64,
        outstanding: u32,
        others: Spread,
        end: &WaitEnd,
        cx: &LabelCx<'_>,
    ) {
        let mut at = from;
        let port = self.port;
        // Pauses on the requester's link, in time order (few, if any):
        // none starting longer than the longest hold before `from` reaches it.
        let pauses = cx.pauses;
        if pauses
            .back()
            .is_none_or(|p| p.start_ns.saturating_add(cx.pause_reach_ns) <= from)
        {
            self.open(from, to, outstanding, others, end, cx);
            return;
        }
        let mut first = pauses.len();
        while first > 0 && pauses[first - 1].start_ns.saturating_add(cx.pause_reach_ns) > from {
            first -= 1;
        }
        for p in pauses.range(first..).filter(|p| {
            p.start_ns < to
                && p.end_ns > from
                && (p.port.is_none() || port.is_none() || p.port == port)
        }) {
            let (a, b) = (p.start_ns.max(at), p.end_ns.min(to));
            if b <= a {
                continue;
            }
            self.open(at, a, outstanding, others, end, cx);
            self.runs.push(b, TimeState::Paused);
            at = b;
        }
        self.open(at, to, outstanding, others, end, cx);
    }

    /// `[from, to)`, not paused: window full, sharing, rate limited, host
    /// limited or idle.
    #[inline]
    fn open(
        &mut self,
        from: u64,
        to: u64,
        outstanding: u32,
        others: Spread,
        end: &WaitEnd,
        cx: &LabelCx<'_>,
    ) {
        if to <= from {
            return;
        }
        let full = match cx.window {
            Some(w) => u64::from(outstanding) + u64::from(end.span.max(1)) > u64::from(w),
            None => end.held,
        };
        if full {
            self.runs.push(to, TimeState::WindowFull);
            return;
        }
        if !self.mid_message {
            self.runs.push(to, TimeState::Idle);
            return;
        }
        let rest = if self.rate_limited {
            TimeState::RateLimited
        } else {
            TimeState::HostLimited
        };
        // The other QPs' frames where they were on the link; before the
        // frames kept, as many as the link's bytes say, first.
        let mut at = from;
        let frames = cx.frames;
        let oldest = if frames.len() == 0 {
            u64::MAX
        } else {
            frames.get(0).0
        };
        if at < oldest {
            let upto = oldest.min(to);
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
                if start >= to {
                    break 'walk;
                }
                let s = start.max(at);
                let e = end.min(to);
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
        self.runs.push(to, rest);
    }

    /// The requester's own packet on the wire, `[from, to)`: recovering for
    /// a resend, else sending, unless the window is full (as the requester
    /// counts it).
    #[inline]
    pub fn own_packet(
        &mut self,
        from: u64,
        to: u64,
        resend: bool,
        outstanding_after: u32,
        window: Option<u32>,
    ) {
        // A packet whose time the last one's still covers starts after it.
        let from = from.max(self.runs.end_ns);
        let to = to.max(from);
        let state = if resend || self.recovering_since.is_some() {
            TimeState::Recovering
        } else {
            TimeState::Sending
        };
        let Some(w) = window.filter(|_| state == TimeState::Sending) else {
            self.runs.push(to, state);
            return;
        };
        if self.pending.is_empty() {
            // Nothing the requester takes while it is on the wire.
            let state = if outstanding_after >= w {
                TimeState::WindowFull
            } else {
                state
            };
            self.runs.push(to, state);
            return;
        }
        // Full while the requester counts the window full, which responses
        // it takes while the packet is on the wire may end.
        let mut out = outstanding_after;
        let mut taken = 0;
        for &(at, _, freed) in &self.pending {
            if out < w || at >= to {
                break;
            }
            if at > from {
                self.runs.push(at, TimeState::WindowFull);
            }
            taken += freed;
            out = outstanding_after.saturating_sub(taken);
        }
        self.runs.push(
            to,
            if out >= w {
                TimeState::WindowFull
            } else {
                state
            },
        );
    }
}
