//! The host side: posting work requests, the PCIe DMA model, admission into
//! the send window and the retransmission timer.

use super::*;

impl Simulator {
    pub(super) fn on_post(&mut self, c: usize) {
        let p_post = ps_of_ns(self.params.host_post_ns);
        let conn = &mut self.conns[c];
        if conn.state != QpState::Rts {
            return;
        }
        let open_loop = conn.rate_gbps > 0.0;
        if open_loop {
            // Offered load: next post after one message time at the rate.
            let interval = (conn.size_bytes as f64 * 8.0 / conn.rate_gbps * 1000.0) as Ps;
            if conn.messages == 0 || conn.wr_seq + 1 < conn.messages {
                let t = self.now_ps + interval.max(1);
                self.schedule(t, Event::Post(c as u32));
            }
            let conn = &self.conns[c];
            if conn.work_requests.len() >= conn.queue_depth as usize {
                return;
            }
        }
        let conn = &mut self.conns[c];
        if conn.messages != 0 && conn.wr_seq >= conn.messages {
            return;
        }
        let id = conn.wr_seq;
        conn.wr_seq += 1;
        let read = match conn.op {
            OpKind::Write | OpKind::Send => false,
            OpKind::Read => true,
            OpKind::Mixed => id % 2 == 1,
        };
        let bad = conn.dpi_bad_every != 0 && (id + 1).is_multiple_of(conn.dpi_bad_every) && !read;
        conn.work_requests.push_back(WorkRequest {
            id,
            read,
            size_bytes: conn.size_bytes,
            admitted_bytes: 0,
            app_ps: self.now_ps.saturating_sub(p_post),
            bad,
            va: 0x1000_0000 + (id % 64) * conn.size_bytes.next_power_of_two(),
            error: false,
        });
        self.admit(c);
    }

    /// Reads `bytes` from host memory through the DMA engine, returning when
    /// the last byte is on the card.
    pub(super) fn dma_read(&mut self, node: usize, at: Ps, bytes: u64) -> Ps {
        let tags = self.params.pcie_read_tags as usize;
        let mrrs = self.params.pcie_mrrs_bytes;
        let lat = ps_of_ns(self.params.pcie_read_latency_ns);
        let ps_per_byte = self.pcie_ps_per_byte;
        // The transfer time of a whole MRRS chunk, as computed per chunk below.
        let mrrs_ps = self.pcie_mrrs_ps;
        let n = &mut self.nodes[node];
        let tags = tags.max(1);
        let bytes = bytes.max(1);
        let chunks = bytes.div_ceil(mrrs) as usize;
        // One step when the ring is full and every tag these chunks reuse
        // is free by `at` (tags free up in ring order): then each chunk is
        // issued at `at` and the engine streams them back to back, exactly
        // what the loop below computes chunk by chunk.
        if n.dma_tags.len() == tags && chunks <= tags {
            let h = n.dma_tag_head;
            let newest = if h + chunks > tags {
                h + chunks - 1 - tags
            } else {
                h + chunks - 1
            };
            if n.dma_tags[newest].1 <= at {
                let mut done = (at + lat).max(n.dma_last_ps);
                let rest = bytes % mrrs;
                let full = (bytes / mrrs) as usize;
                if h + chunks < tags
                    && let Some(run) = n.dma_tags.get_mut(h..h + full)
                {
                    // The tags in one run from the head (no wrap): a plain
                    // slice loop.
                    for slot in run {
                        done += mrrs_ps;
                        *slot = (at, done);
                    }
                    if rest > 0 {
                        done += (rest as f64 * ps_per_byte) as Ps;
                        n.dma_tags[h + full] = (at, done);
                    }
                    n.dma_tag_head = h + chunks;
                    n.dma_last_ps = done;
                    return done;
                }
                let mut i = h;
                for _ in 0..bytes / mrrs {
                    done += mrrs_ps;
                    n.dma_tags[i] = (at, done);
                    i = if i + 1 == tags { 0 } else { i + 1 };
                }
                if rest > 0 {
                    done += (rest as f64 * ps_per_byte) as Ps;
                    n.dma_tags[i] = (at, done);
                    i = if i + 1 == tags { 0 } else { i + 1 };
                }
                n.dma_tag_head = i;
                n.dma_last_ps = done;
                return done;
            }
        }
        let mut left = bytes;
        let mut done = at;
        while left > 0 {
            let chunk = left.min(mrrs);
            left -= chunk;
            let xfer = if chunk == mrrs {
                mrrs_ps
            } else {
                (chunk as f64 * ps_per_byte) as Ps
            };
            if n.dma_tags.len() < tags {
                // A free tag.
                done = (at + lat).max(n.dma_last_ps) + xfer;
                n.dma_tags.push((at, done));
            } else {
                // Wait for the oldest read's tag and reuse it.
                let h = n.dma_tag_head;
                let issue = at.max(n.dma_tags[h].1);
                done = (issue + lat).max(n.dma_last_ps) + xfer;
                n.dma_tags[h] = (issue, done);
                n.dma_tag_head = if h + 1 == tags { 0 } else { h + 1 };
            }
            n.dma_last_ps = done;
        }
        done
    }

    /// Writes `bytes` to host memory; returns when they are visible.
    pub(super) fn dma_write(&mut self, node: usize, at: Ps, bytes: u64) -> Ps {
        let ps_per_byte = self.pcie_ps_per_byte;
        let n = &mut self.nodes[node];
        let done = at.max(n.dma_write_free_ps) + (bytes as f64 * ps_per_byte) as Ps;
        n.dma_write_free_ps = done;
        done + ps_of_ns(self.params.pcie_write_latency_ns)
    }

    pub(super) fn tx_latency(&self, node: usize) -> Ps {
        match self.nodes[node].kind {
            NodeKind::Balboa => self.cycle_ps * self.params.tx_pipeline_cycles,
            NodeKind::Connectx => ps_of_ns(self.params.cx_tx_latency_ns),
        }
    }

    pub(super) fn rx_latency(&self, node: usize) -> Ps {
        match self.nodes[node].kind {
            NodeKind::Balboa => self.cycle_ps * self.params.rx_pipeline_cycles,
            NodeKind::Connectx => ps_of_ns(self.params.cx_rx_latency_ns),
        }
    }

    /// Admits new packets into the window as far as it allows.
    pub(super) fn admit(&mut self, c: usize) {
        let pmtu = self.params.pmtu_bytes;
        let node = self.conns[c].req_node as usize;
        let txl = self.tx_latency(node);
        let mut admitted_any = false;
        // Earliest ready time of the packets admitted now.
        let mut first_ready = NEVER;
        loop {
            let conn = &self.conns[c];
            if conn.state != QpState::Rts || conn.admit_idx >= conn.work_requests.len() {
                break;
            }
            let outstanding = conn.next_psn - conn.oldest_unacked_psn;
            if outstanding >= conn.window {
                break;
            }
            let wr = &conn.work_requests[conn.admit_idx];
            let remaining = wr.size_bytes - wr.admitted_bytes;
            let first = wr.admitted_bytes == 0;
            if wr.read {
                let pkts = remaining.div_ceil(pmtu);
                let mut n = pkts.min(self.params.read_max_packets);
                let room = conn.window - outstanding;
                if n > room {
                    if room < self.params.read_min_packets.min(n) {
                        break;
                    }
                    n = room;
                }
                let len = (n * pmtu).min(remaining);
                let last = len == remaining;
                let infl = InFlight {
                    abs_psn: conn.next_psn,
                    psn_count: n as u32,
                    wr_id: wr.id,
                    read: true,
                    opcode: Opcode::RC_READ_REQUEST.0,
                    len_bytes: 0,
                    va: wr.va + wr.admitted_bytes,
                    dma_len: len as u32,
                    last,
                    ready_ps: self.now_ps + txl,
                    sent: false,
                    retx: RETX_NONE,
                    bad: false,
                };
                first_ready = first_ready.min(infl.ready_ps);
                let conn = &mut self.conns[c];
                conn.inflight.push_back(infl);
                conn.next_psn += n;
                conn.work_requests[conn.admit_idx].admitted_bytes += len;
                if last {
                    conn.admit_idx += 1;
                }
            } else {
                let len = remaining.min(pmtu);
                let last = len == remaining;
                let send = conn.op == OpKind::Send;
                let opcode = match (first, last, send) {
                    (true, true, false) => Opcode::RC_WRITE_ONLY,
                    (true, false, false) => Opcode::RC_WRITE_FIRST,
                    (false, false, false) => Opcode::RC_WRITE_MIDDLE,
                    (false, true, false) => Opcode::RC_WRITE_LAST,
                    (true, true, true) => Opcode::RC_SEND_ONLY,
                    (true, false, true) => Opcode::RC_SEND_FIRST,
                    (false, false, true) => Opcode::RC_SEND_MIDDLE,
                    (false, true, true) => Opcode::RC_SEND_LAST,
                }
                .0;
                let (va, dma_len, wr_id, bad) = (wr.va, wr.size_bytes as u32, wr.id, wr.bad);
                let abs_psn = conn.next_psn;
                let mut extra = 0;
                if conn.aes {
                    extra += ps_of_ns(self.params.aes_ns);
                }
                if conn.app != AppOp::None {
                    extra += self.cycle_ps * self.params.app_slot_cycles;
                }
                let mut data = self.dma_read(node, self.now_ps, len);
                if self.has_host_stalls {
                    let stall = self.host_stall(node, c);
                    if stall > 0 {
                        // The engine waits too: later reads come after it.
                        data += stall;
                        let n = &mut self.nodes[node];
                        n.dma_last_ps = n.dma_last_ps.max(data);
                    }
                }
                first_ready = first_ready.min(data + txl + extra);
                let conn = &mut self.conns[c];
                conn.inflight.push_back(InFlight {
                    abs_psn,
                    psn_count: 1,
                    wr_id,
                    read: false,
                    opcode,
                    len_bytes: len as u32,
                    va,
                    dma_len,
                    last,
                    ready_ps: data + txl + extra,
                    sent: false,
                    retx: RETX_NONE,
                    bad,
                });
                conn.next_psn += 1;
                conn.work_requests[conn.admit_idx].admitted_bytes += len;
                if last {
                    conn.admit_idx += 1;
                }
            }
            admitted_any = true;
        }
        if admitted_any {
            self.arm_timer(c);
            self.kick(node, first_ready);
        }
    }

    pub(super) fn arm_timer(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        if conn.oldest_unacked_psn == conn.next_psn || conn.state != QpState::Rts {
            conn.timer_deadline_ps = NEVER;
            return;
        }
        if conn.timer_deadline_ps != NEVER {
            return;
        }
        let period = if conn.timer_backoff {
            self.params.timeout_next_ns
        } else {
            self.params.timeout_first_ns
        };
        conn.timer_deadline_ps = self.now_ps + ps_of_ns(period);
        if conn.timer_event_at_ps == NEVER {
            conn.timer_event_at_ps = conn.timer_deadline_ps;
            let t = conn.timer_deadline_ps;
            self.schedule(t, Event::Timer(c as u32));
        }
    }

    pub(super) fn restart_timer(&mut self, c: usize) {
        self.conns[c].timer_deadline_ps = NEVER;
        self.arm_timer(c);
    }
}
