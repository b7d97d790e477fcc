//! The simulator's own reason each requester QP's next packet is not (yet)
//! on the wire, from its model (issue 48): the truth the capture-only time
//! by state of the RC analysis is held to. Emitted as
//! `TruthEvent::QpReason` records when it changes, with the time it holds
//! from, only when asked ([`Simulator::record_states`]).
//!
//! The states and their order are the analysis' (`TimeState` codes):
//! error, waiting on timer, RNR wait, recovering, paused, window full,
//! sending, sharing, rate limited, host limited, idle. What the model knows
//! and the capture can only infer: a packet admitted and waiting for its
//! payload's DMA is host limited; a WR the window keeps from admission is
//! window full; a timer resend shows, when the timer fires, that the wait
//! since the last progress was for the timer.

use super::*;

/// State codes (`rocescope_decoders::analysis::TimeState` order).
pub(super) mod code {
    pub const ERROR: u8 = 0;
    pub const WAITING_ON_TIMER: u8 = 1;
    pub const RNR_WAIT: u8 = 2;
    pub const RECOVERING: u8 = 3;
    pub const PAUSED: u8 = 4;
    pub const WINDOW_FULL: u8 = 5;
    pub const SENDING: u8 = 6;
    pub const SHARING: u8 = 7;
    pub const RATE_LIMITED: u8 = 8;
    pub const HOST_LIMITED: u8 = 9;
    pub const IDLE: u8 = 10;
    /// No reason told yet.
    pub const NONE: u8 = u8::MAX;
}

impl Simulator {
    /// Emit each requester QP's reason (`TruthEvent::QpReason`) as it
    /// changes. Off by default: a run with it on has the same frames and
    /// records, and these besides.
    pub fn record_states(&mut self, on: bool) {
        self.record_states = on;
    }

    /// PSNs sent and not acknowledged: what a capture of the requester sees
    /// outstanding (admitted packets not yet sent are not).
    fn sent_outstanding(conn: &Conn) -> u64 {
        match conn
            .send_idx
            .checked_sub(1)
            .and_then(|i| conn.inflight.get(i))
        {
            Some(e) => (e.abs_psn + u64::from(e.psn_count)).saturating_sub(conn.oldest_unacked_psn),
            None => 0,
        }
    }

    /// QP `c`'s reason at `t`, from its state now.
    fn reason(&self, c: usize, t: Ps) -> u8 {
        let conn = &self.conns[c];
        let node = &self.nodes[conn.req_node as usize];
        if conn.state == QpState::Err {
            return code::ERROR;
        }
        if conn.rnr_until_ps > t {
            return code::RNR_WAIT;
        }
        if conn.recover_psn.is_some() {
            return code::RECOVERING;
        }
        if node.paused_until_ps > t {
            return code::PAUSED;
        }
        let next = conn.inflight.get(conn.send_idx);
        // The window keeps a WR from admission, or the packets on the wire
        // fill it.
        let blocked = next.is_none() && conn.admit_idx < conn.work_requests.len();
        if blocked || Self::sent_outstanding(conn) >= conn.window {
            return code::WINDOW_FULL;
        }
        if conn.sending_until_ps > t {
            return code::SENDING;
        }
        if !conn.mid_message {
            return code::IDLE;
        }
        // Mid-message, the window open: the link busy with other frames
        // first, then pacing, then the payload not ready.
        if node.tx_free_ps > t {
            return code::SHARING;
        }
        match next {
            Some(_)
                if conn.dcqcn.as_ref().is_some_and(Dcqcn::limited) && conn.dcqcn_next_tx_ps > t =>
            {
                code::RATE_LIMITED
            }
            Some(e) if e.ready_ps > t => code::HOST_LIMITED,
            // Ready with the link free: the transmitter takes it now.
            Some(_) => code::SHARING,
            None => code::HOST_LIMITED,
        }
    }

    /// The times in `(after, upto]` at which QP `c`'s reason may change
    /// with no event (a frame leaves the wire, a pause or an RNR wait ends,
    /// a payload is ready, DCQCN lets the next packet go): the earliest.
    fn next_change(&self, c: usize, after: Ps, upto: Ps) -> Option<Ps> {
        let conn = &self.conns[c];
        let node = &self.nodes[conn.req_node as usize];
        [
            conn.sending_until_ps,
            node.tx_free_ps,
            node.paused_until_ps,
            conn.rnr_until_ps,
            conn.inflight.get(conn.send_idx).map_or(0, |e| e.ready_ps),
            conn.dcqcn_next_tx_ps,
        ]
        .into_iter()
        .filter(|&t| t > after && t <= upto)
        .min()
    }

    fn tell_reason(&mut self, c: usize, state: u8, since: Ps) {
        let conn = &mut self.conns[c];
        if conn.reason == state {
            return;
        }
        conn.reason = state;
        let (qpn, psn) = (conn.resp_qpn, conn.req_qpn);
        self.emit(Record::Truth(GroundTruth {
            ts_ns: self.now_ps / NS,
            qpn,
            psn,
            event: TruthEvent::QpReason {
                state,
                since_ns: since / NS,
            },
        }));
    }

    /// Before an event at `now`: the changes time alone made since the last
    /// look, told at their times, from the state before the event.
    pub(super) fn reasons_before(&mut self, now: Ps) {
        let from = self.reasons_at_ps;
        for c in 0..self.conns.len() {
            let mut t = from;
            while let Some(next) = self.next_change(c, t, now) {
                let r = self.reason(c, next);
                self.tell_reason(c, r, next);
                t = next;
            }
        }
    }

    /// After an event at `now`: each QP's reason from now on.
    pub(super) fn reasons_after(&mut self, now: Ps) {
        for c in 0..self.conns.len() {
            let r = self.reason(c, now);
            self.tell_reason(c, r, now);
        }
        self.reasons_at_ps = now;
    }

    /// The timer fired on QP `c`: the wait since its last progress was for
    /// the timer (told back to then).
    pub(super) fn reason_timer_fired(&mut self, c: usize) {
        if !self.record_states {
            return;
        }
        let since = self.conns[c].last_progress_ps;
        // Told even when it was already that: the record is the proof.
        self.conns[c].reason = code::NONE;
        self.tell_reason(c, code::WAITING_ON_TIMER, since);
    }

    /// The link rate and each QP's window, for the analysis (once, first).
    pub(super) fn tell_scenario(&mut self) {
        let mbps = (self.params.link_gbps * 1000.0).round() as u64;
        self.truth(0, 0, TruthEvent::LinkRate { mbps });
        for c in 0..self.conns.len() {
            let conn = &self.conns[c];
            let (qpn, psn, packets) = (
                conn.resp_qpn,
                conn.req_qpn,
                u32::try_from(conn.window).unwrap_or(u32::MAX),
            );
            self.truth(qpn, psn, TruthEvent::QpWindow { packets });
            // The requester's response FSM: behind the receive pipeline,
            // busy this long with each response.
            let node = self.conns[c].req_node as usize;
            let each = match self.nodes[node].kind {
                NodeKind::Balboa => self.params.resp_proc_cycles + self.params.ack_gap_cycles,
                NodeKind::Connectx => 1,
            } * self.cycle_ps;
            let latency = self.rx_latency(node);
            let reacts = self.conns[c].dcqcn.is_some();
            self.truth(qpn, psn, TruthEvent::QpCongestionControl { reacts });
            let ns = |ps: Ps| u32::try_from(ps / NS).unwrap_or(u32::MAX);
            self.truth(
                qpn,
                psn,
                TruthEvent::QpResponseTime {
                    latency_ns: ns(latency),
                    each_ns: ns(each),
                },
            );
        }
    }
}
