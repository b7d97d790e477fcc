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

mod link;
mod steady;
mod wait;

use link::ROUNDING_NS;
pub(crate) use link::{FrameRing, NO_FRAMES, fs_per_byte, wire_bytes, wire_ns};
pub(crate) use steady::Steady;
pub(crate) use wait::{LabelCx, WaitEnd};

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
        self.take_effects_of::<true>(upto, seen, busy_bytes);
    }

    /// [`Acct::take_effects`], the link's bytes at each change worked out
    /// (`PLACE`) or not: a change's bytes are read only by a wait's piece
    /// that starts before the link's oldest frame kept (the other QPs'
    /// bytes spread over it), so a request closing its wait at once after
    /// (the steady path) skips them when the wait starts after that frame.
    #[inline(always)]
    fn take_effects_of<const PLACE: bool>(&mut self, upto: u64, seen: u32, busy_bytes: u64) {
        while let Some(&(at, _, freed)) = self.pending.front() {
            if at >= upto {
                break;
            }
            self.pending.pop_front();
            self.pending_psns -= freed;
            // The link's bytes then, between the last event's and now's.
            let (t0, b0) = self.last_event;
            let busy = if PLACE && upto > t0 && at > t0 {
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

    /// Starts the next wait at the runs' end with `outstanding` and the
    /// link at `busy_bytes`.
    pub fn restart(&mut self, outstanding: u32, busy_bytes: u64) {
        self.out_at_mark = outstanding;
        self.busy_at_mark = busy_bytes;
        self.segs.clear();
        self.last_event = (self.runs.end_ns, busy_bytes);
    }

    /// The requester's own packet on the wire, `[from, to)`: recovering for
    /// a resend, else sending, unless the window is full (as the requester
    /// counts it). Inlined: every request of a QP with responses pending
    /// on its card comes here (`Acct::steady_pending`).
    #[inline(always)]
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
