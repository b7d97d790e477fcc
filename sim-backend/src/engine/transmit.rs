//! The transmitter: wake-ups, the choice of the next frame from the node's
//! streams, DCQCN pacing and serialisation onto the link.

use super::*;

impl Simulator {
    /// Makes sure the node's transmitter wakes up by `at` (or as soon as
    /// the link is free and not paused). A node has at most one pending
    /// wake-up: an earlier one replaces it.
    pub(super) fn kick(&mut self, node: usize, at: Ps) {
        let n = &mut self.nodes[node];
        let t = at.max(n.tx_free_ps).max(n.paused_until_ps).max(self.now_ps);
        if t < n.tx_wake_at_ps {
            let ev = Event::TxWake(node as u16);
            let old_t = n.tx_wake_at_ps;
            n.tx_wake_at_ps = t;
            if old_t != NEVER {
                // The node's one pending wake-up, moved earlier.
                self.events.move_earlier(old_t, t.max(self.now_ps), ev);
            } else {
                self.schedule(t, ev);
            }
        }
    }

    pub(super) fn on_tx_wake(&mut self, node: usize) {
        if self.nodes[node].tx_wake_at_ps != self.now_ps {
            // Superseded by an earlier wake-up.
            return;
        }
        self.nodes[node].tx_wake_at_ps = NEVER;
        let now = self.now_ps;
        {
            let n = &self.nodes[node];
            if n.tx_free_ps > now || n.paused_until_ps > now {
                let t = n.tx_free_ps.max(n.paused_until_ps);
                self.kick(node, t);
                return;
            }
        }
        // Control frames (ACK, NAK, CNP) first.
        if let Some(&(ready, id)) = self.nodes[node].ctrl_queue.front()
            && ready <= now
        {
            self.nodes[node].ctrl_queue.pop_front();
            self.transmit(node, id);
            self.kick_next(node);
            return;
        }
        // Round robin from `next_stream`: the first stream with a frame
        // ready now, else the earliest time one will be.
        let n = &self.nodes[node];
        let mut earliest = n.ctrl_queue.front().map_or(NEVER, |x| x.0);
        let (ns, start) = (n.streams.len(), n.next_stream.min(n.streams.len()));
        let (before, after) = n.streams.split_at(start);
        let mut pick = None;
        for (i, &s) in (start..).zip(after).chain((0..).zip(before)) {
            let ready = self.stream_ready(s);
            if ready <= now {
                pick = Some((i, s));
                break;
            }
            earliest = earliest.min(ready);
        }
        if let Some((i, s)) = pick {
            self.nodes[node].next_stream = if i + 1 == ns { 0 } else { i + 1 };
            let id = self.take_from_stream(s);
            self.transmit(node, id);
            self.kick_next(node);
            return;
        }
        if earliest != NEVER {
            self.kick(node, earliest);
        }
    }

    /// After a frame went out: one wake-up at the time the transmitter can
    /// next send something (the earliest ready frame, once the link is free).
    pub(super) fn kick_next(&mut self, node: usize) {
        let n = &self.nodes[node];
        let floor = n.tx_free_ps.max(n.paused_until_ps).max(self.now_ps);
        let mut earliest = n.ctrl_queue.front().map_or(NEVER, |x| x.0);
        if earliest > floor {
            for &s in &n.streams {
                earliest = earliest.min(self.stream_ready(s));
                if earliest <= floor {
                    break;
                }
            }
        }
        if earliest != NEVER {
            self.kick(node, earliest);
        }
    }

    pub(super) fn stream_ready(&self, s: Stream) -> Ps {
        match s {
            Stream::Req(c) => {
                let conn = &self.conns[c as usize];
                if conn.state != QpState::Rts {
                    return NEVER;
                }
                let ready = conn
                    .inflight
                    .get(conn.send_idx)
                    .map_or(NEVER, |e| e.ready_ps);
                if conn.dcqcn.as_ref().is_some_and(Dcqcn::limited) {
                    ready.max(conn.dcqcn_next_tx_ps)
                } else {
                    ready
                }
            }
            Stream::Resp(c) => self.conns[c as usize]
                .response_queue
                .front()
                .map_or(NEVER, |r| r.ready_ps),
        }
    }

    pub(super) fn take_from_stream(&mut self, s: Stream) -> u32 {
        match s {
            Stream::Req(c) => {
                let c = c as usize;
                let idx = self.conns[c].send_idx;
                let e = self.conns[c].inflight[idx].clone();
                self.conns[c].send_idx += 1;
                self.conns[c].inflight[idx].sent = true;
                self.conns[c].inflight[idx].retx = RETX_NONE;
                if e.retx == RETX_NONE {
                    // New data: progress, the end of a recovery past its
                    // frontier, and whether a message is under way.
                    let conn = &mut self.conns[c];
                    conn.mid_message = !e.last && !e.read;
                    conn.last_progress_ps = self.now_ps;
                    if conn.recover_psn.is_some_and(|p| e.abs_psn >= p) {
                        conn.recover_psn = None;
                    }
                }
                let mut p = self.new_pkt(c, true, e.opcode, e.abs_psn, e.len_bytes);
                if e.read
                    || e.opcode == Opcode::RC_WRITE_FIRST.0
                    || e.opcode == Opcode::RC_WRITE_ONLY.0
                {
                    p.reth = Reth {
                        va: e.va,
                        rkey: 0x1000 + self.conns[c].resp_qpn,
                        dma_len: e.dma_len,
                    };
                }
                p.bad = e.bad;
                p.retx = e.retx;
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                if e.retx != RETX_NONE {
                    let cause = match e.retx {
                        RETX_NAK => RetransmitCause::Nak,
                        RETX_RNR => RetransmitCause::Rnr,
                        _ => RetransmitCause::Timeout,
                    };
                    self.truth(qpn, psn_w, TruthEvent::Retransmit { cause });
                    self.stats.qps[c].retransmissions += 1;
                    if let Some(ind) = self.conns[c].indication.take() {
                        push_bounded(
                            &mut self.stats.indication_to_packet_ns,
                            (self.now_ps - ind) / NS,
                        );
                    }
                }
                if !e.read {
                    self.aes_slot(c, qpn, psn_w, e.abs_psn);
                }
                let conn = &self.conns[c];
                if !e.read && conn.app != AppOp::None {
                    let lat = self.params.app_slot_cycles * self.cycle_ps / NS;
                    let detail = conn.app as u32;
                    self.slot(SlotKind::App, qpn, psn_w, Verdict::Transformed, lat, detail);
                }
                let node = self.conns[c].req_node as usize;
                self.nodes[node].last_grant = self.conns[c].req_qpn;
                let frame_len = u64::from(p.frame_len_bytes);
                self.dcqcn_pace(c, frame_len);
                self.alloc(p)
            }
            Stream::Resp(c) => {
                let c = c as usize;
                let Some(r) = self.conns[c].response_queue.pop_front() else {
                    return self.alloc(self.new_pkt(c, false, Opcode::RC_ACK.0, 0, 0));
                };
                let mut p = self.new_pkt(c, false, r.opcode, r.abs_psn, r.len_bytes);
                p.aeth = Aeth {
                    syndrome: 0x1F,
                    msn: r.msn & 0xFF_FFFF,
                };
                self.aes_slot(c, p.dest_qp, p.psn, r.abs_psn);
                let node = self.conns[c].resp_node as usize;
                self.nodes[node].last_grant = self.conns[c].resp_qpn;
                self.alloc(p)
            }
        }
    }

    /// Spaces the requester's next packet at its DCQCN rate, after the
    /// rate's recovery up to now.
    pub(super) fn dcqcn_pace(&mut self, c: usize, frame_len: u64) {
        let (cfg, now) = (self.dcqcn_cfg, self.now_ps);
        let Some(d) = self.conns[c].dcqcn.as_mut() else {
            return;
        };
        if !d.limited() {
            return;
        }
        d.advance(&cfg, now);
        let (rate, gap) = (d.rate_gbps, d.gap_ps(wire::wire_bytes(frame_len) * 8));
        self.conns[c].dcqcn_next_tx_ps = now + gap;
        self.log_dcqcn_rate(c, rate);
    }

    /// A CNP at the requester: its DCQCN reaction point cuts the rate.
    pub(super) fn dcqcn_on_cnp(&mut self, c: usize) {
        let (cfg, now) = (self.dcqcn_cfg, self.now_ps);
        let Some(d) = self.conns[c].dcqcn.as_mut() else {
            return;
        };
        d.on_cnp(&cfg, now);
        let rate = d.rate_gbps;
        self.stats.qps[c].dcqcn_cnps += 1;
        self.log_dcqcn_rate(c, rate);
    }

    pub(super) fn log_dcqcn_rate(&mut self, c: usize, rate_gbps: f64) {
        let log = &mut self.stats.qps[c].dcqcn_rates;
        if log.len() < DCQCN_RATES_MAX && log.last().is_none_or(|&(_, r)| r != rate_gbps) {
            log.push((self.now_ps / NS, rate_gbps));
        }
    }

    /// Serialisation time of a frame on a link (memoised per frame length).
    #[inline]
    pub(super) fn ser_ps(&mut self, frame_len: u64) -> Ps {
        let compute = |p: &Params| (wire::wire_time_ps(frame_len, 1) as f64 / p.link_gbps) as Ps;
        let i = frame_len as usize;
        if i >= SER_CACHE_MAX {
            return compute(&self.params);
        }
        if i >= self.ser_ps_cache.len() {
            self.ser_ps_cache.resize(i + 1, NEVER);
        }
        let v = self.ser_ps_cache[i];
        if v != NEVER {
            return v;
        }
        let v = compute(&self.params);
        self.ser_ps_cache[i] = v;
        v
    }

    pub(super) fn transmit(&mut self, node: usize, id: u32) {
        let now = self.now_ps;
        let frame_len = u64::from(self.packets[id as usize].frame_len_bytes);
        let ser = self.ser_ps(frame_len);
        let n = &mut self.nodes[node];
        n.tx_free_ps = now + ser;
        n.busy_ps += ser;
        let p = &self.packets[id as usize];
        if is_request(p.opcode) {
            self.conns[p.conn as usize].sending_until_ps = now + ser;
        }
        self.stats.packets_sent += 1;
        self.capture(id, Direction::Tx, node);
        self.tap_points(id, points::Seen::Sent(node));
        let arrive = now + ser + ps_of_ns(self.params.mac_latency_ns + self.params.link_prop_ns);
        if let Some(extra) = self.apply_faults(id, node, true) {
            self.schedule(arrive + extra, Event::SwitchArrive(id));
        }
    }
}
