//! The requester: responses (ACK, NAK, READ responses), completions,
//! Go-Back-N and the retransmission timer firing.

use super::*;

impl Simulator {
    /// A response (ACK, NAK, READ response) processed by the requester's FSM.
    pub(super) fn requester_rx(&mut self, id: u32) {
        let p = self.pkts[id as usize].clone();
        let c = p.conn as usize;
        if self.conns[c].state != QpState::Rts {
            return;
        }
        let una = self.conns[c].una;
        let abs = Self::abs_of(una, p.psn);
        let in_range = abs >= una && abs < self.conns[c].next_psn;
        if p.opcode == Opcode::RC_ACK.0 {
            let syn = p.aeth.syndrome;
            match syn >> 5 {
                0 if in_range => self.ack_up_to(c, abs + 1),
                3 if in_range && syn & 0x1F == 0 => {
                    // PSN sequence error: Go-Back-N from the NAKed PSN.
                    self.ack_up_to(c, abs);
                    self.go_back_n(c, abs, RETX_NAK);
                }
                3 if in_range => {
                    // Fatal NAK of one request (DPI reject): complete its
                    // WR with an error and move on.
                    let wr_id = self.conns[c]
                        .inflight
                        .iter()
                        .find(|e| e.abs <= abs && abs < e.abs + u64::from(e.npsn))
                        .map(|e| e.wr_id);
                    if let Some(w) = self.conns[c].wrs.iter_mut().find(|w| Some(w.id) == wr_id) {
                        w.error = true;
                    }
                    self.ack_up_to(c, abs + 1);
                }
                _ => {}
            }
        } else if is_read_response(p.opcode) {
            if abs == una && una < self.conns[c].next_psn {
                self.conns[c].read_gap = false;
                let node = self.conns[c].req as usize;
                let visible = self.dma_write(node, self.now, u64::from(p.payload_len));
                // The completion waits for a flushing read behind the data.
                let visible = visible + ps_of_ns(self.p.pcie_read_latency_ns);
                self.stats.qps[c].acked_bytes += u64::from(p.payload_len);
                self.ack_read_one(c, visible);
            } else if abs > una && abs < self.conns[c].next_psn && !self.conns[c].read_gap {
                // A response is missing: ask again from it.
                self.conns[c].read_gap = true;
                self.go_back_n(c, una, RETX_NAK);
            }
        }
        self.admit(c);
    }

    pub(super) fn ack_read_one(&mut self, c: usize, visible: Ps) {
        let conn = &mut self.conns[c];
        conn.una += 1;
        conn.retry_count = 0;
        conn.timer_backoff = false;
        let mut complete = None;
        if let Some(front) = conn.inflight.front()
            && conn.una >= front.abs + u64::from(front.npsn)
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
        let now = self.now;
        let mut done = Vec::new();
        let conn = &mut self.conns[c];
        if upto <= conn.una {
            return;
        }
        while let Some(front) = conn.inflight.front() {
            if front.abs + u64::from(front.npsn) > upto {
                break;
            }
            if front.last {
                done.push(front.wr_id);
            }
            if !front.read {
                self.stats.qps[c].acked_bytes += u64::from(front.len);
            }
            conn.inflight.pop_front();
            conn.send_idx = conn.send_idx.saturating_sub(1);
        }
        conn.una = upto;
        conn.retry_count = 0;
        conn.timer_backoff = false;
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
        let Some(pos) = conn.wrs.iter().position(|w| w.id == wr_id) else {
            return;
        };
        let Some(wr) = conn.wrs.remove(pos) else {
            return;
        };
        if pos < conn.admit_idx {
            conn.admit_idx -= 1;
        }
        let host = card_done.max(self.now) + ps_of_ns(self.p.host_completion_ns);
        let closed_loop = conn.rate_gbps <= 0.0;
        let s = &mut self.stats.qps[c];
        s.messages += 1;
        if wr.error {
            s.errors += 1;
        } else {
            s.bytes += wr.size;
        }
        s.latency_sum_ns += (host - wr.app_ps) / NS;
        if self.record_completions {
            s.completions.push((host / NS, wr.size));
        }
        if closed_loop {
            let t = host + ps_of_ns(self.p.host_post_ns);
            self.schedule(t, Ev::Post(c as u32));
        }
    }

    pub(super) fn go_back_n(&mut self, c: usize, from: u64, cause: u8) {
        let pmtu = self.p.pmtu_bytes;
        let now = self.now;
        let node = self.conns[c].req as usize;
        let setup = self.cyc * self.p.retrans_setup_cycles;
        let txl = self.tx_latency(node);
        let fetch_4k = ps_of_ns(self.p.hbm_fetch_ns);
        let conn = &mut self.conns[c];
        let Some(idx) = conn
            .inflight
            .iter()
            .position(|e| e.abs <= from && from < e.abs + u64::from(e.npsn))
        else {
            return;
        };
        {
            let e = &mut conn.inflight[idx];
            if e.read && from > e.abs {
                let skip = from - e.abs;
                e.va += skip * pmtu;
                e.dma_len = e.dma_len.saturating_sub((skip * pmtu) as u32);
                e.npsn -= skip as u32;
                e.abs = from;
            }
        }
        let old_send = conn.send_idx;
        conn.send_idx = idx;
        conn.retx_state = cause;
        conn.indication = Some(now);
        let mut hbm_free = self.nodes[node].hbm_free;
        for i in idx..conn.inflight.len() {
            let e = &mut conn.inflight[i];
            if !e.sent && i >= old_send {
                continue;
            }
            e.retx = cause;
            if e.read {
                e.ready = now + setup + txl;
            } else {
                // Payload comes back from the HBM retransmission buffer.
                let start = (now + setup).max(hbm_free);
                let dur = fetch_4k * u64::from(e.len.max(64)).div_ceil(64) / (pmtu / 64).max(1);
                let dur = if u64::from(e.len) == pmtu {
                    fetch_4k
                } else {
                    dur
                };
                hbm_free = start + dur;
                e.ready = hbm_free + txl;
                // Fetches done by now count for no probe: dropped here, so
                // that a run without the probe does not keep them all.
                let fetches = &mut self.nodes[node].hbm_fetches;
                while fetches.front().is_some_and(|&t| t <= now) {
                    fetches.pop_front();
                }
                fetches.push_back(hbm_free);
                if u64::from(e.len) == pmtu {
                    push_bounded(&mut self.stats.hbm_fetch_ns, dur / NS);
                }
            }
        }
        self.nodes[node].hbm_free = hbm_free;
        self.qp_record(c, true);
        let t = self.conns[c].inflight.get(idx).map_or(now, |e| e.ready);
        self.kick(node, t);
    }

    pub(super) fn on_timer(&mut self, c: usize) {
        let now = self.now;
        let conn = &mut self.conns[c];
        conn.timer_event_at = NEVER;
        if conn.timer_deadline == NEVER || conn.state != QpState::Rts {
            return;
        }
        if now < conn.timer_deadline {
            conn.timer_event_at = conn.timer_deadline;
            let t = conn.timer_deadline;
            self.schedule(t, Ev::Timer(c as u32));
            return;
        }
        // Expired: retransmit from the oldest unacknowledged PSN.
        conn.timer_deadline = NEVER;
        conn.retry_count += 1;
        conn.timer_backoff = true;
        self.stats.qps[c].timeouts += 1;
        if u64::from(self.conns[c].retry_count) > self.p.retry_limit {
            self.conns[c].state = QpState::Err;
            self.conns[c].retx_state = 3;
            self.qp_record(c, true);
            return;
        }
        let una = self.conns[c].una;
        self.conns[c].read_gap = false;
        self.go_back_n(c, una, RETX_TIMEOUT);
        self.arm_timer(c);
    }
}
