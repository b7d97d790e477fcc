//! The steady state's one-pass labelling: a request (and a QP's READs,
//! their waits cut by responses) that needs none of the general path's
//! set-up, with the same runs the general path pushes; and the requests
//! of a QP with responses pending on its card, labelled as the general
//! path does, without its set-up.

use super::*;

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

impl Acct {
    /// A new request in the steady state, labelled in one pass (the same
    /// runs as [`Acct::close_wait`] then [`Acct::own_packet`] and
    /// [`Acct::restart`] push): nothing pending, no change of the
    /// outstanding count in the wait, no tier, no pacing, no pause reaching
    /// the wait, and the wait labelled by the window, the end of a message
    /// or one stretch of the link's frames. Returns false, having changed
    /// nothing, when the request is not so (the general path then).
    #[inline(always)]
    pub fn steady_request(&mut self, s: &Steady<'_>) -> bool {
        if !self.segs.is_empty()
            || !self.pending.is_empty()
            || self.recovering_since.is_some()
            || self.rate_limited
        {
            return false;
        }
        let from = self.runs.end_ns;
        let to = s.ts_ns;
        // The wait's label, decided before anything changes.
        let wait = if to <= from {
            Wait::None
        } else if to - from <= ROUNDING_NS && self.runs.last_state() == Some(TimeState::Sending) {
            Wait::Sending
        } else {
            if s.pauses
                .back()
                .is_some_and(|p| p.start_ns.saturating_add(s.pause_reach_ns) > from)
            {
                return false;
            }
            let full = match s.window {
                Some(w) => u64::from(self.out_at_mark) + u64::from(s.span.max(1)) > u64::from(w),
                None => s.held,
            };
            if full {
                Wait::Full
            } else if !self.mid_message {
                Wait::Idle
            } else {
                let Some(stretch_end) = s.frames.stretch_over(from, to) else {
                    return false;
                };
                Wait::Shared(stretch_end.max(from).min(to))
            }
        };
        self.last_wait_ns = to.saturating_sub(from);
        match wait {
            Wait::None => {}
            Wait::Sending => self.runs.push(to, TimeState::Sending),
            Wait::Full => self.runs.push(to, TimeState::WindowFull),
            Wait::Idle => self.runs.push(to, TimeState::Idle),
            Wait::Shared(shared_to) => {
                self.runs.push(shared_to, TimeState::Sharing);
                self.runs.push(to, TimeState::HostLimited);
            }
        }
        // Its own packet: sending, unless the window is full with it.
        self.steady_own_packet(to, s);
        true
    }

    /// [`Acct::steady_request`] of a wait cut by changes of the outstanding
    /// count (READ responses, ACKs), in the steady state
    /// ([`Acct::steady_holds`]): between messages, each piece window full
    /// or idle by its count, what the general walk comes to without its
    /// set-up ([`Acct::steady_pending`]). False, having changed nothing,
    /// mid-message or with a pause reaching the wait.
    #[inline(always)]
    pub fn steady_between_messages(&mut self, s: &Steady<'_>) -> bool {
        debug_assert!(self.steady_holds() && !self.segs.is_empty());
        if self.mid_message {
            return false;
        }
        let from = self.runs.end_ns;
        let to = s.ts_ns;
        if to > from {
            if s.pauses
                .back()
                .is_some_and(|p| p.start_ns.saturating_add(s.pause_reach_ns) > from)
            {
                return false;
            }
            Acct::pieces_between_messages(
                &mut self.runs,
                self.out_at_mark,
                from,
                to,
                &self.segs,
                s.span,
                s.held,
                s.window,
            );
        }
        self.last_wait_ns = to.saturating_sub(from);
        self.segs.clear();
        self.steady_own_packet(to, s);
        true
    }

    /// Changes of the outstanding count cut the open wait.
    #[inline(always)]
    pub fn cut(&self) -> bool {
        !self.segs.is_empty()
    }

    /// A request [`Acct::steady_request`] could not label in one pass, of
    /// a QP with no recovery and no pacing ([`Acct::pending_holds`]) but
    /// perhaps responses pending (its card's response time given: the
    /// live simulator's): what the general path does, without its set-up.
    /// The responses its card took before the request change the count
    /// (the capture showing `before` outstanding), the wait closes cut by
    /// them ([`Acct::close_wait`]), then its own packet, counted with the
    /// responses still pending.
    #[inline(always)]
    pub fn steady_pending(&mut self, s: &Steady<'_>, before: u32, cx: &LabelCx<'_>) {
        debug_assert!(self.pending_holds());
        if !self.pending.is_empty() {
            // The changes' link bytes are read only by a piece of the wait
            // before the link's oldest frame kept (`Acct::open`); the wait
            // closes now, from the runs' end on.
            if cx.frames.len() > 0 && cx.frames.get(0).0 <= self.runs.end_ns {
                self.take_effects_of::<false>(s.ts_ns, before, cx.busy_bytes);
            } else {
                self.take_effects_of::<true>(s.ts_ns, before, cx.busy_bytes);
            }
        }
        let end = WaitEnd {
            span: s.span,
            held: s.held,
            ..WaitEnd::default()
        };
        self.close_wait(s.ts_ns, &end, cx);
        let outstanding_after = self.as_counted(s.outstanding_after);
        self.own_packet(s.ts_ns, s.end_ns, false, outstanding_after, s.window);
        if let Some(mid) = s.mid_message {
            self.mid_message = mid;
            self.last_progress_ns = s.ts_ns;
        }
        self.restart(outstanding_after, s.busy_bytes);
    }

    /// No recovery, no pacing: a request not resent and ending no tier is
    /// labelled by [`Acct::steady_pending`] (whatever is pending).
    #[inline(always)]
    pub fn pending_holds(&self) -> bool {
        self.recovering_since.is_none() && !self.rate_limited
    }

    /// A steady request's own packet on the wire from `from` (or the runs'
    /// end): sending, unless the window is full with it; the marks moved on.
    #[inline(always)]
    fn steady_own_packet(&mut self, from: u64, s: &Steady<'_>) {
        let from = from.max(self.runs.end_ns);
        let to = s.end_ns.max(from);
        let state = match s.window {
            Some(w) if s.outstanding_after >= w => TimeState::WindowFull,
            _ => TimeState::Sending,
        };
        self.runs.push(to, state);
        if let Some(mid) = s.mid_message {
            self.mid_message = mid;
            self.last_progress_ns = s.ts_ns;
        }
        self.out_at_mark = s.outstanding_after;
        self.busy_at_mark = s.busy_bytes;
        self.last_event = (self.runs.end_ns, s.busy_bytes);
    }

    /// Nothing pending, no recovery, no pacing: a request not resent and
    /// ending no tier is labelled by [`Acct::steady_request`] or
    /// [`Acct::steady_pending`].
    #[inline(always)]
    pub fn steady_holds(&self) -> bool {
        self.pending.is_empty() && self.recovering_since.is_none() && !self.rate_limited
    }
}
