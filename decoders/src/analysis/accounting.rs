//! Feeding the time-by-state accounting (`time_states.rs`) from the
//! analysis: each host's link (bytes on the wire, the fastest rate seen),
//! pauses, the windows the source gives, and the hooks the request and
//! response paths call.

use super::time_states::{Acct, LabelCx, MAX_PAUSES, Pause, StateRuns, WaitEnd, wire_bytes};
use super::*;

/// One sending host's link as the capture shows it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Host {
    /// Bytes on the wire so far (frames, FCS, preamble and gap).
    pub(super) busy_bytes: u64,
    pub(super) last_ts_ns: u64,
    pub(super) last_bytes: u64,
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
        if ts_ns > h.last_ts_ns && h.last_bytes > 0 {
            let dt = ts_ns - h.last_ts_ns;
            // The smaller frame's time at least separates two frames, whether
            // the capture stamps a frame's first bit (sent) or its last
            // (received).
            let least = bytes.min(h.last_bytes);
            // dt / least below the best ns per byte so far; only long
            // frames, whose time a nanosecond clock reads to a fraction
            // of a percent.
            if least >= MIN_RATE_SAMPLE_BYTES
                && (self.fastest.0 == 0 || dt * self.fastest.1 < self.fastest.0 * least)
            {
                self.fastest = (dt, least);
            }
        }
        h.busy_bytes += bytes;
        h.last_ts_ns = ts_ns;
        h.last_bytes = bytes;
    }

    /// The link rate: configured, given by the source, else the fastest the
    /// capture shows (as a standard rate), else 100 Gb/s.
    pub fn link_gbps(&self) -> f64 {
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
        }
    }

    /// The window the source knows for the QP whose requests go to QPN
    /// `dest_qp` from requester QPN `requester_qp` (a simulator's scenario:
    /// BALBOA's 16, a ConnectX's 128).
    pub fn qp_window(&mut self, dest_qp: u32, requester_qp: u32, packets: u32) {
        if packets == 0 {
            return;
        }
        match self
            .qp_windows
            .iter_mut()
            .find(|(d, r, _)| *d == dest_qp && *r == requester_qp)
        {
            Some(w) => w.2 = packets,
            None => self.qp_windows.push((dest_qp, requester_qp, packets)),
        }
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
        let requester_qp = f.peer.map(|p| self.flows[p as usize].key.dest_qp);
        let mut on_qp = self.qp_windows.iter().filter(|w| w.0 == f.key.dest_qp);
        match requester_qp {
            Some(rq) => on_qp.clone().find(|w| w.1 == rq).or_else(|| on_qp.next()),
            None => on_qp.next(),
        }
        .map(|w| w.2)
        .or((f.window_held > 0).then_some(f.window_held))
    }

    /// Outstanding PSNs of requester flow `id` as the requester counts
    /// them: READ responses received in order take their PSNs off at once
    /// (the last one's AETH acknowledges the READ for the rest).
    pub(super) fn acct_outstanding(&self, id: u32) -> u32 {
        let f = &self.flows[id as usize];
        let out = f.outstanding_psns();
        let Some(front) = f.outstanding.front().filter(|s| s.read()) else {
            return out;
        };
        let next = f.peer.and_then(|p| self.flows[p as usize].read_resp_next);
        match next.map(|n| psn_diff(n, front.psn())) {
            Some(done) if done > 0 && (done as u32) <= out => out - done as u32,
            _ => out,
        }
    }

    /// The accounting of requester flow `id`, made at its first request.
    pub(super) fn acct_of(&mut self, id: u32, ts_ns: u64) -> usize {
        let f = &mut self.flows[id as usize];
        if f.acct == NO_ACCT {
            f.acct = self.accts.len() as u32;
            self.accts.push(Acct::new(ts_ns));
        }
        f.acct as usize
    }

    /// A request of flow `id` on the wire at `ts_ns`: the wait before it
    /// labelled by what ended it, then its own time on the wire.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn account_request(
        &mut self,
        id: u32,
        ts_ns: u64,
        frame_bytes: u32,
        resend: bool,
        end: WaitEnd,
        mid_message: Option<bool>,
        port: Option<u8>,
    ) {
        let k = self.acct_of(id, ts_ns);
        let mut end = end;
        if end.timer {
            end.timer_from = Some(self.accts[k].last_progress_ns);
        }
        let gbps = self.link_gbps();
        let window = self.window_of(id);
        let out_after = self.acct_outstanding(id);
        let f = &self.flows[id as usize];
        let busy = self
            .hosts
            .get(f.src_host as usize)
            .map_or(0, |h| h.busy_bytes);
        let own = wire_bytes(frame_bytes);
        let episode_since = f.episode.as_ref().map(|e| e.episode.start_ns);
        let cx = LabelCx {
            link_gbps: gbps,
            window,
            pauses: &self.pauses,
            // The link before this packet.
            busy_bytes: busy.saturating_sub(own),
        };
        let a = &mut self.accts[k];
        if port.is_some() {
            a.port = port;
        }
        let was_mid = a.mid_message;
        a.close_wait(ts_ns, &end, &cx);
        let own_ns = (own as f64 * 8.0 / gbps) as u64;
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

    /// A response changed requester flow `req`'s wait at `ts_ns`: sends
    /// taken off (`progress`), an episode closed (`recovered`), the QP in
    /// error (`error`).
    pub(super) fn account_response(
        &mut self,
        req: u32,
        ts_ns: u64,
        progress: bool,
        recovered: bool,
        error: bool,
    ) {
        let k = self.flows[req as usize].acct;
        if k == NO_ACCT {
            return;
        }
        let out = self.acct_outstanding(req);
        let host = self.flows[req as usize].src_host;
        let busy = self.hosts.get(host as usize).map_or(0, |h| h.busy_bytes);
        if recovered || error {
            let cx = LabelCx {
                link_gbps: self.link_gbps(),
                window: self.window_of(req),
                pauses: &self.pauses,
                busy_bytes: busy,
            };
            let a = &mut self.accts[k as usize];
            a.close_wait(ts_ns, &WaitEnd::default(), &cx);
            if recovered {
                a.recovering_since = None;
            }
            if error {
                a.error_since.get_or_insert(ts_ns);
            }
            a.restart(out, busy);
        } else {
            self.accts[k as usize].outstanding_now(ts_ns, out, busy);
        }
        if progress {
            self.accts[k as usize].last_progress_ns = ts_ns;
        }
    }

    /// A CNP reached requester flow `req`: its sender is paced.
    pub(super) fn account_cnp(&mut self, req: u32) {
        let k = self.flows[req as usize].acct;
        if let Some(a) = self.accts.get_mut(k as usize) {
            a.rate_limited = true;
        }
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
            link_gbps: self.link_gbps(),
            window: self.window_of(id),
            pauses: &self.pauses,
            busy_bytes: busy,
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
        a.close_wait(end_ns, &end, &cx);
        let mut runs = a.runs;
        if let Some(e) = error {
            runs.in_state_from(e.ts_ns, TimeState::Error);
        }
        runs
    }
}
