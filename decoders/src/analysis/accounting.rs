//! Feeding the time-by-state accounting (`time_states.rs`) from the
//! analysis: each host's link (bytes on the wire, the fastest rate seen),
//! pauses, the windows the source gives, and the hooks the request and
//! response paths call.

use super::time_states::{
    Acct, FrameRing, LabelCx, MAX_PAUSES, NO_FRAMES, Pause, Steady, WaitEnd, fs_per_byte,
    wire_bytes, wire_ns,
};
use super::*;

/// One sending host's link as the capture shows it.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Host {
    /// Bytes on the wire so far (frames, FCS, preamble and gap).
    pub(super) busy_bytes: u64,
    pub(super) last_ts_ns: u64,
    pub(super) last_bytes: u64,
    /// When its card can take the next response (when the source tells
    /// how long it takes one).
    pub(super) responses_free_ns: u64,
    /// Its latest frames: (time, bytes on the wire), kept once it has
    /// sent a request (a wait of its requesters reads them; a host that
    /// only responds has none).
    pub(super) frames: FrameRing,
    pub(super) requests: bool,
    /// The end of its last frame on the wire at the link's rate, kept
    /// once it has sent a request (a steady request reads it rather than
    /// working its time out again).
    #[serde(default)]
    pub(super) last_end_ns: u64,
}

impl Host {
    /// A frame of `bytes` on the wire at `ts_ns`, at `fs_per_byte`.
    #[inline(always)]
    fn on_wire(&mut self, ts_ns: u64, bytes: u64, fs_per_byte: u64) {
        self.busy_bytes += bytes;
        self.last_ts_ns = ts_ns;
        self.last_bytes = bytes;
        if self.requests {
            let end_ns = ts_ns + wire_ns(bytes, fs_per_byte);
            self.last_end_ns = end_ns;
            self.frames.push(ts_ns, end_ns);
        }
    }
}

/// A request on the wire, as the request path hands it to the accounting:
/// flow `id` at `ts_ns`, the capture showing `before` PSNs outstanding
/// before it and `outstanding` with it (as the request path counted them),
/// a resend or not, what ended the wait before it, whether it continues a
/// message, and the port it left by.
#[derive(Debug, Clone, Copy)]
pub(super) struct RequestOnWire<'e> {
    pub(super) id: u32,
    pub(super) ts_ns: u64,
    pub(super) frame_bytes: u32,
    pub(super) before: u32,
    pub(super) outstanding: u32,
    pub(super) resend: bool,
    pub(super) end: &'e WaitEnd,
    pub(super) mid_message: Option<bool>,
    pub(super) port: Option<u8>,
    /// The flow's accounting ([`NO_ACCT`] before its first request), its
    /// sender's host, an episode open, READs sent: read while the request
    /// path holds the flow, not looked up again.
    pub(super) acct: u32,
    pub(super) host: u32,
    pub(super) episode: bool,
    pub(super) reads: bool,
}

impl RequestOnWire<'_> {
    /// The request as the steady paths read it, on host `h`'s link (its
    /// end there as `on_link` placed it), `window` and `outstanding_after`
    /// as the path worked them out.
    #[inline(always)]
    fn steady<'s>(
        &self,
        h: &'s Host,
        window: Option<u32>,
        outstanding_after: u32,
        pauses: &'s VecDeque<Pause>,
        pause_reach_ns: u64,
    ) -> Steady<'s> {
        Steady {
            ts_ns: self.ts_ns,
            end_ns: h.last_end_ns,
            span: self.end.span,
            held: self.end.held,
            mid_message: self.mid_message,
            window,
            outstanding_after,
            busy_bytes: h.busy_bytes,
            pauses,
            pause_reach_ns,
            frames: &h.frames,
        }
    }
}

/// A requester flow's accounting, its sender's host and whether it has
/// sent READs, as the response path holds them (not looked up again).
#[derive(Debug, Clone, Copy)]
pub(super) struct AcctOf {
    pub(super) acct: u32,
    pub(super) host: u32,
    pub(super) reads: bool,
}

/// Standard Ethernet rates, Gb/s: the fastest rate the capture shows is
/// read as the least of these at or above it.
const LINK_RATES_GBPS: [f64; 10] = [
    1.0, 10.0, 25.0, 40.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1600.0,
];

/// Frames at least this long (on the wire) time the link: a short one's
/// nanosecond stamps are off by several percent of its time.
const MIN_RATE_SAMPLE_BYTES: u64 = 1_000;

/// The link rate until the capture shows one (BALBOA's).
const DEFAULT_LINK_GBPS: f64 = 100.0;

/// "No accounting" in `Flow::acct`.
pub(super) const NO_ACCT: u32 = u32::MAX;

/// Pause quanta are 512 bit times.
const QUANTUM_BITS: f64 = 512.0;

impl RcAnalysis {
    /// The host index of address `a`.
    pub(super) fn host_of(&mut self, a: [u8; 16]) -> u32 {
        let n = self.hosts.len() as u32;
        *self.host_ids.entry(a).or_insert_with(|| {
            self.hosts.push(Host::default());
            n
        })
    }

    /// Every packet: its bytes on its sender's link, and the fastest rate
    /// that link has shown (two frames back to back).
    #[inline(always)]
    pub(super) fn on_link(&mut self, host: u32, ts_ns: u64, frame_bytes: u32) {
        let Some(h) = self.hosts.get_mut(host as usize) else {
            return;
        };
        let bytes = wire_bytes(frame_bytes);
        // Only two long frames time the link, whose time a nanosecond clock
        // reads to a fraction of a percent (asked first: a capture of short
        // frames goes no further).
        if bytes >= MIN_RATE_SAMPLE_BYTES
            && h.last_bytes >= MIN_RATE_SAMPLE_BYTES
            && ts_ns > h.last_ts_ns
        {
            let dt = ts_ns - h.last_ts_ns;
            // The smaller frame's time at least separates two frames, whether
            // the capture stamps a frame's first bit (sent) or its last
            // (received).
            let least = bytes.min(h.last_bytes);
            // dt / least below the best ns per byte so far.
            if self.fastest.0 == 0 || dt * self.fastest.1 < self.fastest.0 * least {
                self.fastest = (dt, least);
                h.on_wire(ts_ns, bytes, self.fs_per_byte);
                // After the frame is placed at the rate so far; its end as
                // a request reads it, at the new rate.
                self.set_rate();
                let fs = self.fs_per_byte;
                if let Some(h) = self.hosts.get_mut(host as usize) {
                    h.last_end_ns = ts_ns + wire_ns(bytes, fs);
                }
                return;
            }
        }
        h.on_wire(ts_ns, bytes, self.fs_per_byte);
    }

    /// The link rate: configured, given by the source, else the fastest the
    /// capture shows (as a standard rate), else 100 Gb/s.
    #[inline]
    pub fn link_gbps(&self) -> f64 {
        self.link_gbps
    }

    /// The link rate worked out again, in both forms.
    pub(super) fn set_rate(&mut self) {
        self.link_gbps = self.reckon_link_gbps();
        self.fs_per_byte = fs_per_byte(self.link_gbps);
    }

    /// [`RcAnalysis::link_gbps`] worked out again (what it rests on
    /// changed).
    pub(super) fn reckon_link_gbps(&self) -> f64 {
        if self.config.link_gbps > 0.0 {
            return self.config.link_gbps;
        }
        if let Some(g) = self.source_link_gbps {
            return g;
        }
        let (dt, bytes) = self.fastest;
        if dt == 0 {
            return DEFAULT_LINK_GBPS;
        }
        let seen = bytes as f64 * 8.0 / dt as f64;
        LINK_RATES_GBPS
            .into_iter()
            .find(|&r| r >= seen * 0.98)
            .unwrap_or(seen)
    }

    /// The link rate the source knows (a simulator's scenario, a card).
    pub fn set_link_gbps(&mut self, gbps: f64) {
        if gbps > 0.0 {
            self.source_link_gbps = Some(gbps);
            self.set_rate();
        }
    }

    /// The window the source knows for the QP whose requests go to QPN
    /// `dest_qp` from requester QPN `requester_qp` (a simulator's scenario:
    /// BALBOA's 16, a ConnectX's 128).
    pub fn qp_window(&mut self, dest_qp: u32, requester_qp: u32, packets: u32) {
        if packets == 0 {
            return;
        }
        self.facts_epoch += 1;
        match self
            .qp_windows
            .iter_mut()
            .find(|(d, r, _)| *d == dest_qp && *r == requester_qp)
        {
            Some(w) => w.2 = packets,
            None => self.qp_windows.push((dest_qp, requester_qp, packets)),
        }
    }

    /// How the requester's card of the QP whose requests go to QPN
    /// `dest_qp` from requester QPN `requester_qp` takes responses (a
    /// simulator's scenario: BALBOA's response FSM, 80 ns behind the MAC,
    /// then 356 ns each): `latency_ns` after arriving, one at a time,
    /// `each_ns` apart.
    pub fn qp_response_time(
        &mut self,
        dest_qp: u32,
        requester_qp: u32,
        latency_ns: u64,
        each_ns: u64,
    ) {
        self.facts_epoch += 1;
        match self
            .qp_response_times
            .iter_mut()
            .find(|(d, r, ..)| *d == dest_qp && *r == requester_qp)
        {
            Some(w) => (w.2, w.3) = (latency_ns, each_ns),
            None => self
                .qp_response_times
                .push((dest_qp, requester_qp, latency_ns, each_ns)),
        }
    }

    /// Whether the requester of the QP whose requests go to QPN `dest_qp`
    /// from requester QPN `requester_qp` slows down on CNPs, as the source
    /// knows it (a simulator's BALBOA does not): without, a CNP paces.
    pub fn qp_congestion_control(&mut self, dest_qp: u32, requester_qp: u32, reacts: bool) {
        self.facts_epoch += 1;
        self.qp_unpaced
            .retain(|&(d, r)| (d, r) != (dest_qp, requester_qp));
        if !reacts {
            self.qp_unpaced.push((dest_qp, requester_qp));
        }
    }

    /// The response time the source gave for requester flow `id`'s QP.
    fn response_time_of(&self, id: u32) -> Option<(u64, u64)> {
        let f = &self.flows[id as usize];
        let rq = f.peer.map(|p| self.flows[p as usize].key.dest_qp)?;
        self.qp_response_times
            .iter()
            .find(|w| w.0 == f.key.dest_qp && w.1 == rq)
            .map(|w| (w.2, w.3))
    }

    /// A PFC or PAUSE frame at `ts_ns` on capture port `port` (any, when
    /// the capture does not say): `quanta` of 512 bit times hold the link;
    /// 0 releases it.
    pub fn pause(&mut self, ts_ns: u64, port: Option<u8>, quanta: u16) {
        if quanta == 0 {
            if let Some(p) = self
                .pauses
                .iter_mut()
                .rev()
                .find(|p| p.port == port && p.end_ns > ts_ns && p.start_ns <= ts_ns)
            {
                p.end_ns = ts_ns;
            }
            return;
        }
        let ns = (f64::from(quanta) * QUANTUM_BITS / self.link_gbps()) as u64;
        self.pause_reach_ns = self.pause_reach_ns.max(ns.max(1));
        if self.pauses.len() == MAX_PAUSES {
            self.pauses.pop_front();
        }
        self.pauses.push_back(Pause {
            port,
            start_ns: ts_ns,
            end_ns: ts_ns + ns.max(1),
        });
    }

    /// The window of flow `id` when known: configured, given by the source
    /// for its QP, else the one the capture has shown the sender held at.
    pub(super) fn window_of(&self, id: u32) -> Option<u32> {
        if self.config.window_packets > 0 {
            return Some(self.config.window_packets);
        }
        let f = &self.flows[id as usize];
        self.window_given(id)
            .or((f.window_held > 0).then_some(f.window_held))
    }

    /// The window the source gave for flow `id`'s QP.
    pub(super) fn window_given(&self, id: u32) -> Option<u32> {
        let f = &self.flows[id as usize];
        let requester_qp = f.peer.map(|p| self.flows[p as usize].key.dest_qp);
        let mut on_qp = self.qp_windows.iter().filter(|w| w.0 == f.key.dest_qp);
        match requester_qp {
            Some(rq) => on_qp.clone().find(|w| w.1 == rq).or_else(|| on_qp.next()),
            None => on_qp.next(),
        }
        .map(|w| w.2)
    }

    /// Outstanding PSNs of requester flow `id` as the requester counts
    /// them: READ responses received in order take their PSNs off at once
    /// (the last one's AETH acknowledges the READ for the rest).
    #[inline]
    pub(super) fn acct_outstanding(&self, id: u32) -> u32 {
        self.acct_outstanding_of(id, self.flows[id as usize].outstanding_psns())
    }

    /// [`RcAnalysis::acct_outstanding`] from the count the capture shows,
    /// `out`, which the caller holds already (not worked out again).
    #[inline(always)]
    pub(super) fn acct_outstanding_of(&self, id: u32, out: u32) -> u32 {
        let f = &self.flows[id as usize];
        if !f.reads {
            return out;
        }
        let Some(front) = f.outstanding.front().filter(|s| s.read()) else {
            return out;
        };
        let next = f.peer.and_then(|p| self.flows[p as usize].read_resp_next);
        match next.map(|n| psn_diff(n, front.psn())) {
            Some(done) if done > 0 && (done as u32) <= out => out - done as u32,
            _ => out,
        }
    }

    /// Whether requester flow `id`'s card has responses it has not taken.
    #[inline]
    pub(super) fn acct_pending(&self, id: u32) -> bool {
        self.cards_timed()
            && self
                .accts
                .get(self.flows[id as usize].acct as usize)
                .is_some_and(|a| !a.nothing_pending())
    }

    /// Whether the source gave any QP's card response time. Without one
    /// (a capture file), no response waits for a card to take it, for
    /// any QP: asked first, so that a request or an ACK does not read its
    /// account for that. (The list only grows.)
    #[inline(always)]
    fn cards_timed(&self) -> bool {
        !self.qp_response_times.is_empty()
    }

    /// Requester flow `id`'s window and its card's response time, worked
    /// out again only when what they rest on changed (the source's facts,
    /// the pairing, the window the capture showed).
    #[inline(always)]
    fn facts_of(&mut self, id: u32, k: usize) -> (Option<u32>, Option<(u64, u64)>) {
        let epoch = self.facts_epoch;
        let a = &self.accts[k];
        if a.facts.0 == epoch {
            return (a.facts.1, a.facts.2);
        }
        let facts = (epoch, self.window_of(id), self.response_time_of(id));
        self.accts[k].facts = facts;
        (facts.1, facts.2)
    }

    /// The accounting of requester flow `id`, made at its first request.
    #[inline(always)]
    pub(super) fn acct_of(&mut self, id: u32, ts_ns: u64) -> usize {
        match self.flows[id as usize].acct {
            NO_ACCT => self.new_acct(id, ts_ns),
            k => k as usize,
        }
    }

    /// [`RcAnalysis::acct_of`] the first time (once a QP).
    #[cold]
    #[inline(never)]
    fn new_acct(&mut self, id: u32, ts_ns: u64) -> usize {
        let f = &mut self.flows[id as usize];
        f.acct = self.accts.len() as u32;
        self.accts.push(Acct::new(ts_ns));
        if let Some(h) = self.hosts.get_mut(f.src_host as usize) {
            h.requests = true;
        }
        f.acct as usize
    }

    /// A request of flow `id` on the wire at `ts_ns` (the capture showing
    /// `before` PSNs outstanding before it, `outstanding` with it, as the
    /// request path counted them): the wait before it labelled by what
    /// ended it, then its own time on the wire.
    /// Taken by value: the general path's copy is made on its own branch,
    /// not on every request's.
    #[inline(always)]
    pub(super) fn account_request(&mut self, r: RequestOnWire<'_>) {
        #[cfg(test)]
        if self.general_only {
            self.account_request_general(r);
            return;
        }
        if !self.steady_request(&r) {
            self.account_request_general(r);
        }
    }

    /// [`RcAnalysis::account_request`] outside the steady state.
    #[inline(never)]
    fn account_request_general(&mut self, r: RequestOnWire<'_>) {
        let RequestOnWire {
            id,
            ts_ns,
            frame_bytes,
            before,
            outstanding,
            resend,
            end,
            mid_message,
            port,
            ..
        } = r;
        let k = self.acct_of(id, ts_ns);
        let mut end = *end;
        if end.timer {
            end.timer_from = Some(self.accts[k].last_progress_ns);
        }
        let fs = self.fs_per_byte;
        let (window, _) = self.facts_of(id, k);
        let out_after = self.acct_outstanding_of(id, outstanding);
        let f = &self.flows[id as usize];
        let busy = self
            .hosts
            .get(f.src_host as usize)
            .map_or(0, |h| h.busy_bytes);
        let own = wire_bytes(frame_bytes);
        let episode_since = f.episode.as_ref().map(|e| e.episode.start_ns);
        let cx = LabelCx {
            fs_per_byte: fs,
            window,
            pauses: &self.pauses,
            pause_reach_ns: self.pause_reach_ns,
            // The link before this packet.
            busy_bytes: busy.saturating_sub(own),
            frames: self
                .hosts
                .get(f.src_host as usize)
                .map_or(NO_FRAMES, |h| &h.frames),
        };
        let a = &mut self.accts[k];
        if port.is_some() {
            a.port = port;
        }
        let was_mid = a.mid_message;
        a.take_effects(ts_ns, before, cx.busy_bytes);
        a.close_wait(ts_ns, &end, &cx);
        let out_after = a.as_counted(out_after);
        let own_ns = wire_ns(own, fs);
        // Back at the link's rate after a CNP, packets back to back: no
        // longer paced.
        if a.rate_limited && was_mid && !resend && a.last_wait_ns * 8 < own_ns {
            a.rate_limited = false;
        }
        a.recovering_since = episode_since;
        a.own_packet(ts_ns, ts_ns + own_ns, resend, out_after, window);
        if let Some(mid) = mid_message {
            a.mid_message = mid;
            a.last_progress_ns = ts_ns;
        }
        a.restart(out_after, busy);
    }

    /// [`RcAnalysis::account_request`] in the steady state (most
    /// requests): a new request of a QP with no episode and no tier, its
    /// window known as of the facts' epoch. False, having changed nothing,
    /// otherwise. A QP that has sent READs takes a path of its own, out of
    /// line (its count reads the READ responses, its waits are cut by
    /// them), so that a WRITE's stays as short as it is.
    #[inline(always)]
    fn steady_request(&mut self, r: &RequestOnWire<'_>) -> bool {
        if r.reads {
            return self.steady_read_request(r);
        }
        self.steady_request_of::<false>(r)
    }

    /// [`RcAnalysis::steady_request`] of a QP that has sent READs.
    #[inline(never)]
    fn steady_read_request(&mut self, r: &RequestOnWire<'_>) -> bool {
        self.steady_request_of::<true>(r)
    }

    /// [`RcAnalysis::steady_request`], for a QP that has sent READs or
    /// not (`READS`). A wait [`Acct::steady_request`] cannot label in one
    /// pass (cut by READ responses or ACKs, responses pending on the card,
    /// a pause, the link's frames in several stretches) is closed as the
    /// general path does, without its set-up ([`Acct::steady_pending`]).
    #[inline(always)]
    fn steady_request_of<const READS: bool>(&mut self, r: &RequestOnWire<'_>) -> bool {
        let RequestOnWire {
            id,
            ts_ns,
            frame_bytes,
            outstanding,
            resend,
            end,
            port,
            acct,
            host,
            episode,
            ..
        } = *r;
        // READ responses received in order count as the requester takes
        // them (the count the general path reads).
        let read_count = if READS {
            self.acct_outstanding_of(id, outstanding)
        } else {
            0
        };
        let Some(a) = self.accts.get_mut(acct as usize) else {
            return false;
        };
        // Only a resend's wait ends by a timer, an RNR NAK or recovery.
        debug_assert!(
            resend || !(end.timer || end.rnr_from.is_some() || end.recovering_from.is_some())
        );
        if resend
            || episode
            || a.facts.0 != self.facts_epoch
            || port.is_some_and(|p| a.port != Some(p))
        {
            return false;
        }
        let outstanding_after = if READS { read_count } else { outstanding };
        // Responses pending on its card (its response time given: the live
        // simulator's): no one-pass labelling; out of line, the set-up
        // there, so that the steady path's stays as short as it is.
        if !a.nothing_pending() {
            return a.pending_holds() && self.steady_pending_request(r, outstanding_after);
        }
        let Some(h) = self.hosts.get(host as usize) else {
            return false;
        };
        // This packet's end on the wire, as its link placed it (`on_link`
        // saw it last, at the rate now).
        debug_assert!(
            h.last_ts_ns == ts_ns
                && h.last_end_ns == ts_ns + wire_ns(wire_bytes(frame_bytes), self.fs_per_byte)
        );
        let s = r.steady(
            h,
            a.facts.1,
            outstanding_after,
            &self.pauses,
            self.pause_reach_ns,
        );
        // A READ QP's wait cut by its READ responses or ACKs (most of its
        // waits): between messages, its pieces labelled at once; the
        // one-pass labelling takes no cut wait.
        if READS && a.cut() {
            if a.steady_holds() && a.steady_between_messages(&s) {
                return true;
            }
        } else if a.steady_request(&s) {
            return true;
        }
        // A wait cut by changes of the count, a pause, several stretches
        // of the link's frames: closed as the general path does, without
        // its set-up.
        a.pending_holds() && self.steady_pending_request(r, outstanding_after)
    }

    /// [`RcAnalysis::steady_request_of`] once the one-pass labelling does
    /// not hold (responses pending on the card, a wait cut, a pause,
    /// several stretches) though the steady state does (no resend, no
    /// episode, the facts' epoch, the port, [`Acct::pending_holds`]):
    /// [`Acct::steady_pending`], `outstanding_after` PSNs outstanding with
    /// the request as the request path counted them. False, having changed
    /// nothing, for a flow or host the analysis does not have.
    #[inline(never)]
    fn steady_pending_request(&mut self, r: &RequestOnWire<'_>, outstanding_after: u32) -> bool {
        let (Some(a), Some(h)) = (
            self.accts.get_mut(r.acct as usize),
            self.hosts.get(r.host as usize),
        ) else {
            return false;
        };
        let s = r.steady(
            h,
            a.facts.1,
            outstanding_after,
            &self.pauses,
            self.pause_reach_ns,
        );
        let cx = LabelCx {
            fs_per_byte: self.fs_per_byte,
            window: s.window,
            pauses: s.pauses,
            pause_reach_ns: s.pause_reach_ns,
            // The link before this packet.
            busy_bytes: h.busy_bytes.saturating_sub(wire_bytes(r.frame_bytes)),
            frames: s.frames,
        };
        a.steady_pending(&s, r.before, &cx);
        true
    }

    /// A response changed requester flow `req`'s wait at `ts_ns`: the
    /// outstanding PSNs the capture shows went from `before` to the count
    /// now (`outstanding` of its sends, which the response path holds),
    /// sends taken off (`progress`), an episode closed (`recovered`), the
    /// QP in error (`error`).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn account_response(
        &mut self,
        req: u32,
        of: AcctOf,
        ts_ns: u64,
        before: u32,
        outstanding: u32,
        progress: bool,
        recovered: bool,
        error: bool,
    ) {
        let AcctOf {
            acct: k,
            host,
            reads,
        } = of;
        if k == NO_ACCT {
            return;
        }
        let seen = if reads {
            self.acct_outstanding_of(req, outstanding)
        } else {
            // Nothing changed (a duplicate ACK), and no card time to take
            // anywhere: the wait goes on as it was, what both paths below
            // come to, without reading the account. (Not asked for a QP
            // that sends READs, whose responses nearly all change it.)
            if outstanding == before && !(progress || recovered || error) && !self.cards_timed() {
                return;
            }
            outstanding
        };
        // The steady state: an ACK (or a duplicate) of a QP whose card's
        // response time is not given, nothing pending, no episode closed:
        // the count changes at once.
        if let Some(a) = self.accts.get_mut(k as usize)
            && !(recovered || error)
            && a.facts.0 == self.facts_epoch
            && a.facts.2.is_none()
            && a.nothing_pending()
        {
            if seen == before && !progress {
                return;
            }
            let busy = self.hosts.get(host as usize).map_or(0, |h| h.busy_bytes);
            a.response_now(ts_ns, seen, busy);
            if progress {
                a.last_progress_ns = ts_ns;
            }
            return;
        }
        let (window, response_time) = self.facts_of(req, k as usize);
        // Nothing changed (a duplicate ACK), and no card time to take: the
        // wait goes on as it was.
        if seen == before
            && !(progress || recovered || error)
            && response_time.is_none()
            && self.accts[k as usize].nothing_pending()
        {
            return;
        }
        let busy = self.hosts.get(host as usize).map_or(0, |h| h.busy_bytes);
        // When the requester's card takes it: after those before it on the
        // same card, each its processing time.
        let effect = response_time.map(|(latency, each)| {
            let h = &mut self.hosts[host as usize];
            let start = (ts_ns + latency).max(h.responses_free_ns);
            h.responses_free_ns = start + each;
            (start, ts_ns + latency)
        });
        let out = self.accts[k as usize].as_counted(seen);
        if recovered || error {
            let cx = LabelCx {
                fs_per_byte: self.fs_per_byte,
                window,
                pauses: &self.pauses,
                pause_reach_ns: self.pause_reach_ns,
                busy_bytes: busy,
                frames: self
                    .hosts
                    .get(host as usize)
                    .map_or(NO_FRAMES, |h| &h.frames),
            };
            let a = &mut self.accts[k as usize];
            a.close_wait(ts_ns, &WaitEnd::default(), &cx);
            if recovered {
                a.recovering_since = None;
            }
            // A fatal NAK's error is the report's to place: the QP is in
            // error from it unless its requester is seen going on after it.
            let _ = error;
            a.restart(out, busy);
        } else {
            self.accts[k as usize].response(ts_ns, before, seen, effect, busy);
        }
        if progress {
            self.accts[k as usize].last_progress_ns = ts_ns;
        }
    }

    /// A CNP reached requester flow `req`: its sender is paced, unless
    /// the source says it does not react to CNPs.
    pub(super) fn account_cnp(&mut self, req: u32) {
        if !self.config.time_by_state {
            return;
        }
        let f = &self.flows[req as usize];
        if let Some(rq) = f.peer.map(|p| self.flows[p as usize].key.dest_qp)
            && self.qp_unpaced.contains(&(f.key.dest_qp, rq))
        {
            return;
        }
        let k = f.acct;
        if let Some(a) = self.accts.get_mut(k as usize) {
            a.rate_limited = true;
        }
    }

    /// Requester flow `id`'s outstanding PSNs as its requester counts them
    /// at `ts_ns` (the last packet): those the capture shows and those
    /// freed by responses its card has not taken then.
    pub(super) fn outstanding_counted(&self, id: u32, ts_ns: u64) -> u32 {
        let seen = self.acct_outstanding(id);
        let f = &self.flows[id as usize];
        self.accts
            .get(f.acct as usize)
            .map_or(seen, |a| seen + a.pending_after(ts_ns))
    }

    /// Requester flow `id`'s runs for a report: its open wait labelled to
    /// `end_ns` as it stands (the analysis goes on), in error from `error`.
    pub(super) fn report_states(&self, id: u32, end_ns: u64, error: Option<&QpError>) -> StateRuns {
        let f = &self.flows[id as usize];
        let Some(a) = self.accts.get(f.acct as usize) else {
            return StateRuns::default();
        };
        let mut a = a.clone();
        let busy = self
            .hosts
            .get(f.src_host as usize)
            .map_or(0, |h| h.busy_bytes);
        let cx = LabelCx {
            fs_per_byte: self.fs_per_byte,
            window: self.window_of(id),
            pauses: &self.pauses,
            pause_reach_ns: self.pause_reach_ns,
            busy_bytes: busy,
            frames: self
                .hosts
                .get(f.src_host as usize)
                .map_or(NO_FRAMES, |h| &h.frames),
        };
        // One nanosecond past its last packet, so that the span ends in the
        // state that packet left it in (the ACK that emptied the window).
        let end_ns = end_ns.max(a.runs.end_ns) + 1;
        // Silent to the end with data unacknowledged and an episode whose
        // timer drove it: waiting on the timer (a stuck QP).
        let end = WaitEnd {
            timer_from: f
                .episode
                .as_ref()
                .filter(|e| e.episode.timer_expiries > 0 && !f.outstanding.is_empty())
                .map(|_| a.last_progress_ns.max(a.runs.end_ns)),
            ..WaitEnd::default()
        };
        let seen = self.acct_outstanding(id);
        a.take_effects(end_ns, seen, busy);
        a.close_wait(end_ns, &end, &cx);
        let mut runs = a.runs;
        if let Some(e) = error.filter(|_| !f.went_on_after_error) {
            runs.in_state_from(e.ts_ns, TimeState::Error);
        }
        runs
    }
}
