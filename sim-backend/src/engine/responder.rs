//! The receive path: a frame arriving at a node, the receive FSM, and the
//! responder (ACK/NAK, READ execution, the DPI check).

use super::*;

impl Simulator {
    pub(super) fn on_node_arrive(&mut self, id: u32) {
        let node = self.packets[id as usize].dst_node as usize;
        self.capture(id, Direction::Rx, node);
        self.tap_points(id, points::Seen::Received(node));
        let p = &self.packets[id as usize];
        if p.corrupt {
            // ICRC check fails: dropped by the receiver.
            self.point_drop(id, DropPlace::Stack { node }, DropWhy::Icrc);
            self.release(id);
            return;
        }
        if self.apply_faults_at(id, node, SLOT_STACK).is_none() {
            return;
        }
        let p = &self.packets[id as usize];
        let op = p.opcode;
        if is_request(op) {
            self.responder_rx(id);
            self.release(id);
        } else if op == Opcode::CNP.0 {
            let c = p.conn as usize;
            if self.conns[c].req_node as usize == node {
                self.dcqcn_on_cnp(c);
            }
            self.release(id);
        } else {
            let ready = self.now_ps + self.rx_latency(node);
            self.nodes[node].fsm_queue.push_back((ready, id));
            self.schedule_fsm(node);
        }
    }

    /// A scenario's CNP reaches the requester of `c` as one from its
    /// responder would: seen by a sniffer there, and its DCQCN acts on it.
    pub(super) fn on_cnp_at(&mut self, c: usize) {
        let mut cnp = self.new_pkt(c, false, Opcode::CNP.0, 0, 0);
        cnp.becn = true;
        cnp.ecn = 0b10;
        let id = self.alloc(cnp);
        self.on_node_arrive(id);
    }

    pub(super) fn schedule_fsm(&mut self, node: usize) {
        let n = &mut self.nodes[node];
        let Some(&(ready, _)) = n.fsm_queue.front() else {
            return;
        };
        let t = ready.max(n.fsm_free_ps).max(self.now_ps);
        if t < n.fsm_event_at_ps {
            n.fsm_event_at_ps = t;
            self.schedule(t, Event::FsmReady(node as u16));
        }
    }

    pub(super) fn on_fsm_ready(&mut self, node: usize) {
        if self.nodes[node].fsm_event_at_ps != self.now_ps {
            return;
        }
        self.nodes[node].fsm_event_at_ps = NEVER;
        let now = self.now_ps;
        let n = &self.nodes[node];
        if n.fsm_free_ps > now {
            self.schedule_fsm(node);
            return;
        }
        let Some(&(ready, id)) = n.fsm_queue.front() else {
            return;
        };
        if ready > now {
            self.schedule_fsm(node);
            return;
        }
        self.nodes[node].fsm_queue.pop_front();
        let busy = match self.nodes[node].kind {
            NodeKind::Balboa => self.params.resp_proc_cycles + self.params.ack_gap_cycles,
            NodeKind::Connectx => 1,
        };
        self.nodes[node].fsm_free_ps = now + busy * self.cycle_ps;
        self.requester_rx(id);
        self.release(id);
        self.schedule_fsm(node);
    }

    pub(super) fn abs_psn_of(base: u64, psn24: u32) -> u64 {
        let d = psn::psn_diff(psn24, (base & 0xFF_FFFF) as u32);
        base.wrapping_add_signed(i64::from(d))
    }

    /// A request packet at the responder.
    pub(super) fn responder_rx(&mut self, id: u32) {
        let p = self.packets[id as usize].clone();
        let c = p.conn as usize;
        let node = p.dst_node as usize;
        let kind = self.nodes[node].kind;
        let out_t = self.now_ps + self.rx_latency(node);
        let ack_t = out_t + self.tx_latency(node);
        let abs_psn = Self::abs_psn_of(self.conns[c].expected_psn, p.psn);
        // ECN CE at a ConnectX: one CNP per interval.
        if kind == NodeKind::Connectx && p.ecn == 3 {
            let interval = ps_of_ns(self.params.cx_cnp_interval_ns);
            let due = self.conns[c]
                .last_cnp
                .is_none_or(|t| self.now_ps >= t + interval);
            if due {
                self.conns[c].last_cnp = Some(self.now_ps);
                let mut cnp = self.new_pkt(c, false, Opcode::CNP.0, 0, 0);
                cnp.becn = true;
                cnp.ecn = 0b10;
                let cid = self.alloc(cnp);
                self.nodes[node].ctrl_queue.push_back((ack_t, cid));
                self.stats.cnps += 1;
                self.truth(p.dest_qp, p.psn, TruthEvent::CnpSent);
                self.kick(node, ack_t);
            }
        }
        let expected_psn = self.conns[c].expected_psn;
        let is_read = p.opcode == Opcode::RC_READ_REQUEST.0;
        // A SEND starting a message needs a receive WQE: with none posted,
        // RNR NAK, and the rest dropped until it comes again.
        let send_first = matches!(p.opcode, 0x00 | 0x04 | 0x05);
        if abs_psn == expected_psn && send_first && !self.take_recv_wqe(c) {
            self.point_drop(id, DropPlace::Stack { node }, DropWhy::Rnr);
            self.conns[c].rnr_pending = true;
            let code = self.params.rnr_timer_code.min(31) as u8;
            self.send_ack(c, ack_t, 0x20 | code, abs_psn, true);
            self.stats.naks += 1;
            return;
        }
        if abs_psn > expected_psn && self.conns[c].rnr_pending {
            self.point_drop(id, DropPlace::Stack { node }, DropWhy::Rnr);
            return;
        }
        if abs_psn == expected_psn {
            self.conns[c].nak_sent = false;
            self.conns[c].rnr_pending = false;
            if is_read {
                // RTL quirk: the IP packet is trimmed before the RETH parser.
                let needed = 20 + 8 + 12 + 16;
                if self.params.read_req_trim_bytes < needed {
                    self.send_ack(c, ack_t, 0x60 | 1, expected_psn, true);
                    self.stats.naks += 1;
                    self.truth(p.dest_qp, p.psn, TruthEvent::NakSent { code: 1 });
                    return;
                }
                let n = u64::from(p.reth.dma_len)
                    .div_ceil(self.params.pmtu_bytes)
                    .max(1);
                self.conns[c].expected_psn += n;
                self.conns[c].msn = self.conns[c].msn.wrapping_add(1);
                self.execute_read(c, abs_psn, p.reth.dma_len, out_t);
            } else {
                if self.conns[c].dpi {
                    let (ok, class) = self.dpi_check(&p);
                    let dpi_ns = self.params.dpi_ns;
                    let verdict = if ok { Verdict::Pass } else { Verdict::Drop };
                    self.slot(
                        SlotKind::Dpi,
                        p.dest_qp,
                        p.psn,
                        verdict,
                        dpi_ns,
                        u32::from(class),
                    );
                    if !ok {
                        // Unacceptable WRITE: dropped and NAKed; the PSN is consumed.
                        self.point_drop(id, DropPlace::Stack { node }, DropWhy::Dpi);
                        self.stats.dpi_drops += 1;
                        self.truth(p.dest_qp, p.psn, TruthEvent::DpiDrop);
                        self.conns[c].expected_psn += 1;
                        self.send_ack(c, ack_t, 0x60 | 1, abs_psn, true);
                        self.stats.naks += 1;
                        self.truth(p.dest_qp, p.psn, TruthEvent::NakSent { code: 1 });
                        return;
                    }
                }
                self.aes_slot(c, p.dest_qp, p.psn, abs_psn);
                self.conns[c].expected_psn += 1;
                // WRITE Last / Only, SEND Last / Only (with immediate too).
                let last = matches!(p.opcode, 0x08 | 0x0A | 0x02 | 0x03 | 0x04 | 0x05);
                if last {
                    self.conns[c].msn = self.conns[c].msn.wrapping_add(1);
                }
                self.dma_write(node, out_t, u64::from(p.payload_len_bytes));
                let ack = match kind {
                    NodeKind::Balboa => true,
                    NodeKind::Connectx => {
                        self.conns[c].unacked_packets += 1;
                        last || self.conns[c].unacked_packets >= self.params.cx_ack_every
                    }
                };
                if ack {
                    self.conns[c].unacked_packets = 0;
                    let psn_ack = self.conns[c].expected_psn - 1;
                    self.send_ack(c, ack_t, 0x1F, psn_ack, false);
                }
            }
        } else if abs_psn > expected_psn {
            self.stats.psn_drops += 1;
            if !self.conns[c].nak_sent {
                self.conns[c].nak_sent = true;
                self.send_ack(c, ack_t, 0x60, expected_psn, true);
                self.stats.naks += 1;
                self.truth(
                    p.dest_qp,
                    (expected_psn & 0xFF_FFFF) as u32,
                    TruthEvent::NakSent { code: 0 },
                );
                self.qp_record(c, false);
            }
        } else if is_read {
            // Duplicate READ: executed again.
            self.execute_read(c, abs_psn, p.reth.dma_len, out_t);
        } else {
            // Duplicate WRITE: ACKed again.
            let psn_ack = expected_psn - 1;
            self.send_ack(c, ack_t, 0x1F, psn_ack, false);
        }
    }

    /// A receive WQE for the SEND starting now, if QP `c`'s responder has
    /// one posted (its host posts one every `recv_post_ns`, up to
    /// `recv_queue_depth`; without a depth there always is one).
    pub(super) fn take_recv_wqe(&mut self, c: usize) -> bool {
        let now = self.now_ps;
        let q = &self.scenario.qps[c];
        let (depth, every) = (q.recv_queue_depth, ps_of_ns(q.recv_post_ns));
        if depth == 0 {
            return true;
        }
        let conn = &mut self.conns[c];
        if conn.recv_credits >= depth {
            conn.recv_posted_ps = now;
        } else if let Some(posted) = (now - conn.recv_posted_ps).checked_div(every) {
            let room = u64::from(depth - conn.recv_credits);
            conn.recv_credits += posted.min(room) as u32;
            conn.recv_posted_ps = if posted >= room {
                now
            } else {
                conn.recv_posted_ps + posted * every
            };
        }
        if conn.recv_credits == 0 {
            return false;
        }
        if conn.recv_credits == depth {
            // The host posts the next one this long after it is taken.
            conn.recv_posted_ps = now;
        }
        conn.recv_credits -= 1;
        true
    }

    pub(super) fn send_ack(&mut self, c: usize, at: Ps, syndrome: u8, abs_psn: u64, _nak: bool) {
        let mut a = self.new_pkt(c, false, Opcode::RC_ACK.0, abs_psn, 0);
        a.aeth = Aeth {
            syndrome,
            msn: self.conns[c].msn & 0xFF_FFFF,
        };
        let node = self.conns[c].resp_node as usize;
        let id = self.alloc(a);
        self.nodes[node].ctrl_queue.push_back((at, id));
        self.kick(node, at);
    }

    pub(super) fn execute_read(&mut self, c: usize, abs_psn: u64, dma_len: u32, at: Ps) {
        let pmtu = self.params.pmtu_bytes;
        let node = self.conns[c].resp_node as usize;
        let start = at
            + match self.nodes[node].kind {
                NodeKind::Balboa => ps_of_ns(self.params.read_responder_ns),
                NodeKind::Connectx => 0,
            };
        let txl = self.tx_latency(node);
        let extra = if self.conns[c].aes {
            ps_of_ns(self.params.aes_ns)
        } else {
            0
        };
        let total = u64::from(dma_len).max(1);
        let n = total.div_ceil(pmtu);
        let msn = self.conns[c].msn;
        for k in 0..n {
            let len = (total - k * pmtu).min(pmtu);
            let opcode = match (k == 0, k + 1 == n) {
                (true, true) => Opcode::RC_READ_RESPONSE_ONLY,
                (true, false) => Opcode::RC_READ_RESPONSE_FIRST,
                (false, false) => Opcode::RC_READ_RESPONSE_MIDDLE,
                (false, true) => Opcode::RC_READ_RESPONSE_LAST,
            }
            .0;
            let done = self.dma_read(node, start, len);
            self.conns[c].response_queue.push_back(ResponsePacket {
                abs_psn: abs_psn + k,
                opcode,
                len_bytes: if dma_len == 0 { 0 } else { len as u32 },
                ready_ps: done + txl + extra,
                msn,
            });
        }
        let t = self.conns[c]
            .response_queue
            .front()
            .map_or(at, |r| r.ready_ps);
        self.kick(node, t);
    }

    pub(super) fn dpi_check(&mut self, p: &SimPacket) -> (bool, u8) {
        let mut buf = std::mem::take(&mut self.payload_buf);
        self.plaintext_into(p, p.payload_len_bytes as usize, &mut buf);
        let r = slots::dpi_verdict(&buf, p.dest_qp);
        self.payload_buf = buf;
        r
    }
}
