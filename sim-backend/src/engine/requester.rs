//! The requester: responses (ACK, NAK, READ responses), completions,
//! Go-Back-N and the retransmission timer firing.

use super::*;

impl Simulator {
    /// A response (ACK, NAK, READ response) processed by the requester's FSM.
    pub(super) fn requester_rx(&mut self, id: u32) {
        let p = self.packets[id as usize].clone();
        let c = p.conn as usize;
        if self.conns[c].state != QpState::Rts {
            return;
        }
        let una = self.conns[c].oldest_unacked_psn;
        let abs_psn = Self::abs_psn_of(una, p.psn);
        let in_range = abs_psn >= una && abs_psn < self.conns[c].next_psn;
        if p.opcode == Opcode::RC_ACK.0 {
            let syn = p.aeth.syndrome;
            match syn >> 5 {
                0 if in_range => self.ack_up_to(c, abs_psn + 1),
                1 if in_range => {
                    // RNR NAK: everything before it is in; wait the timer
                    // it names, then go back to it.
                    self.ack_up_to(c, abs_psn);
                    let wait = ps_of_ns(rocescope_decoders::Syndrome::rnr_timer_ns(syn & 0x1F));
                    let until = self.now_ps + wait;
                    self.conns[c].rnr_until_ps = until;
                    self.go_back_n(c, abs_psn, RETX_RNR);
                    let conn = &mut self.conns[c];
                    for e in conn.inflight.iter_mut().skip(conn.send_idx) {
                        e.ready_ps = e.ready_ps.max(until);
                    }
                    let node = conn.req_node as usize;
                    self.kick(node, until);
                }
                3 if in_range && syn & 0x1F == 0 => {
                    // PSN sequence error: Go-Back-N from the NAKed PSN.
                    self.ack_up_to(c, abs_psn);
                    self.go_back_n(c, abs_psn, RETX_NAK);
                }
                3 if in_range => {
                    // Fatal NAK of one request (DPI reject): complete its
                    // WR with an error and move on.
                    let wr_id = self.conns[c]
                        .inflight
                        .iter()
                        .find(|e| {
                            e.abs_psn <= abs_psn && abs_psn < e.abs_psn + u64::from(e.psn_count)
                        })
                        .map(|e| e.wr_id);
                    if let Some(w) = self.conns[c]
                        .work_requests
                        .iter_mut()
                        .find(|w| Some(w.id) == wr_id)
                    {
                        w.error = true;
                    }
                    self.ack_up_to(c, abs_psn + 1);
                }
                _ => {}
            }
        } else if is_read_response(p.opcode) {
            if abs_psn == una && una < self.conns[c].next_psn {
                self.conns[c].read_gap = false;
                let node = self.conns[c].req_node as usize;
                let visible = self.dma_write(node, self.now_ps, u64::from(p.payload_len_bytes));
                // The completion waits for a flushing read behind the data.
                let visible = visible + ps_of_ns(self.params.pcie_read_latency_ns);
                self.stats.qps[c].acked_bytes += u64::from(p.payload_len_bytes);
                self.ack_read_one(c, visible);
            } else if abs_psn > una && abs_psn < self.conns[c].next_psn && !self.conns[c].read_gap {
                // A response is missing: ask again from it.
                self.conns[c].read_gap = true;
                self.go_back_n(c, una, RETX_NAK);
            }
        }
        self.admit(c);
    }

    pub(super) fn ack_read_one(&mut self, c: usize, visible: Ps) {
        let conn = &mut self.conns[c];
        conn.oldest_unacked_psn += 1;
        conn.retry_count = 0;
        conn.timer_backoff = false;
        conn.last_progress_ps = self.now_ps;
        if conn
            .recover_psn
            .is_some_and(|p| conn.oldest_unacked_psn >= p)
        {
            conn.recover_psn = None;
        }
        let mut complete = None;
        if let Some(front) = conn.inflight.front()
            && conn.oldest_unacked_psn >= front.abs_psn + u64::from(front.psn_count)
        {
            if front.last {
                complete = Some(front.wr_id);
            }
            conn.inflight.pop_front();
            conn.send_idx = conn.send_idx.saturating_sub(1);
        }
        if conn.retx_state != 0 && conn.send_idx >= conn.inflight.len() {
            conn.retx_state = 0;
        }
        if let Some(w) = complete {
            self.complete(c, w, visible);
        }
        self.restart_timer(c);
    }

    /// Cumulative acknowledgement of every PSN below `upto`.
    pub(super) fn ack_up_to(&mut self, c: usize, upto: u64) {
        let now = self.now_ps;
        let mut done = Vec::new();
        let conn = &mut self.conns[c];
        if upto <= conn.oldest_unacked_psn {
            return;
        }
        while let Some(front) = conn.inflight.front() {
            if front.abs_psn + u64::from(front.psn_count) > upto {
                break;
            }
            if front.last {
                done.push(front.wr_id);
            }
            if !front.read {
                self.stats.qps[c].acked_bytes += u64::from(front.len_bytes);
            }
            conn.inflight.pop_front();
            conn.send_idx = conn.send_idx.saturating_sub(1);
        }
        conn.oldest_unacked_psn = upto;
        conn.retry_count = 0;
        conn.timer_backoff = false;
        conn.last_progress_ps = now;
        if conn.recover_psn.is_some_and(|p| upto >= p) {
            conn.recover_psn = None;
        }
        if conn.retx_state != 0 && conn.send_idx >= conn.inflight.len() {
            conn.retx_state = 0;
        }
        for w in done {
            self.complete(c, w, now);
        }
        self.restart_timer(c);
    }

    pub(super) fn complete(&mut self, c: usize, wr_id: u64, card_done: Ps) {
        let conn = &mut self.conns[c];
        let Some(pos) = conn.work_requests.iter().position(|w| w.id == wr_id) else {
            return;
        };
        let Some(wr) = conn.work_requests.remove(pos) else {
            return;
        };
        if pos < conn.admit_idx {
            conn.admit_idx -= 1;
        }
        let host = card_done.max(self.now_ps) + ps_of_ns(self.params.host_completion_ns);
        let closed_loop = conn.rate_gbps <= 0.0;
        let s = &mut self.stats.qps[c];
        s.messages += 1;
        if wr.error {
            s.errors += 1;
        } else {
            s.bytes += wr.size_bytes;
        }
        s.latency_sum_ns += (host - wr.app_ps) / NS;
        if self.record_completions {
            s.completions.push((host / NS, wr.size_bytes));
        }
        if closed_loop {
            let t = host + ps_of_ns(self.params.host_post_ns);
            self.schedule(t, Event::Post(c as u32));
        }
    }

    pub(super) fn go_back_n(&mut self, c: usize, from: u64, cause: u8) {
        let pmtu = self.params.pmtu_bytes;
        let now = self.now_ps;
        let node = self.conns[c].req_node as usize;
        let setup = self.cycle_ps * self.params.retrans_setup_cycles;
        let txl = self.tx_latency(node);
        let fetch_4k = ps_of_ns(self.params.hbm_fetch_ns);
        let conn = &mut self.conns[c];
        let Some(idx) = conn
            .inflight
            .iter()
            .position(|e| e.abs_psn <= from && from < e.abs_psn + u64::from(e.psn_count))
        else {
            return;
        };
        {
            let e = &mut conn.inflight[idx];
            if e.read && from > e.abs_psn {
                let skip = from - e.abs_psn;
                e.va += skip * pmtu;
                e.dma_len = e.dma_len.saturating_sub((skip * pmtu) as u32);
                e.psn_count -= skip as u32;
                e.abs_psn = from;
            }
        }
        let old_send = conn.send_idx;
        // Recovering until new data past what was sent, or its ACK.
        let frontier = old_send
            .checked_sub(1)
            .and_then(|i| conn.inflight.get(i))
            .map_or(conn.oldest_unacked_psn, |e| {
                e.abs_psn + u64::from(e.psn_count)
            });
        conn.recover_psn = Some(conn.recover_psn.map_or(frontier, |p| p.max(frontier)));
        conn.send_idx = idx;
        conn.retx_state = cause;
        conn.indication = Some(now);
        let mut hbm_free = self.nodes[node].hbm_free_ps;
        for i in idx..conn.inflight.len() {
            let e = &mut conn.inflight[i];
            if !e.sent && i >= old_send {
                continue;
            }
            e.retx = cause;
            if e.read {
                e.ready_ps = now + setup + txl;
            } else {
                // Payload comes back from the HBM retransmission buffer.
                let start = (now + setup).max(hbm_free);
                let dur =
                    fetch_4k * u64::from(e.len_bytes.max(64)).div_ceil(64) / (pmtu / 64).max(1);
                let dur = if u64::from(e.len_bytes) == pmtu {
                    fetch_4k
                } else {
                    dur
                };
                hbm_free = start + dur;
                e.ready_ps = hbm_free + txl;
                // Fetches done by now count for no probe: dropped here, so
                // that a run without the probe does not keep them all.
                let fetches = &mut self.nodes[node].hbm_fetches;
                while fetches.front().is_some_and(|&t| t <= now) {
                    fetches.pop_front();
                }
                fetches.push_back(hbm_free);
                if u64::from(e.len_bytes) == pmtu {
                    push_bounded(&mut self.stats.hbm_fetch_ns, dur / NS);
                }
            }
        }
        self.nodes[node].hbm_free_ps = hbm_free;
        self.qp_record(c, true);
        let t = self.conns[c].inflight.get(idx).map_or(now, |e| e.ready_ps);
        self.kick(node, t);
    }

    pub(super) fn on_timer(&mut self, c: usize) {
        let now = self.now_ps;
        let conn = &mut self.conns[c];
        conn.timer_event_at_ps = NEVER;
        if conn.timer_deadline_ps == NEVER || conn.state != QpState::Rts {
            return;
        }
        if now < conn.timer_deadline_ps {
            conn.timer_event_at_ps = conn.timer_deadline_ps;
            let t = conn.timer_deadline_ps;
            self.schedule(t, Event::Timer(c as u32));
            return;
        }
        // Expired: retransmit from the oldest unacknowledged PSN.
        self.reason_timer_fired(c);
        let conn = &mut self.conns[c];
        conn.timer_deadline_ps = NEVER;
        conn.retry_count += 1;
        conn.timer_backoff = true;
        self.stats.qps[c].timeouts += 1;
        if u64::from(self.conns[c].retry_count) > self.params.retry_limit {
            self.conns[c].state = QpState::Err;
            self.conns[c].retx_state = 3;
            self.qp_record(c, true);
            return;
        }
        let una = self.conns[c].oldest_unacked_psn;
        self.conns[c].read_gap = false;
        self.go_back_n(c, una, RETX_TIMEOUT);
        self.arm_timer(c);
    }
}
