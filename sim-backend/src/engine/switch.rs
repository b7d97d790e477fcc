//! The switch: per-port queues, ECN marking and PFC.

use super::*;

/// The switch's MAC, the source of its PFC frames.
const SWITCH_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0xfe];

impl Simulator {
    /// A PFC frame reaches `node`: the sniffer there sees it, and the node's
    /// transmitter holds for `quanta`.
    pub(super) fn on_pause_arrive(&mut self, node: usize, quanta: u16) {
        let now = self.now_ps;
        let quantum_ps = (512_000.0 / self.params.link_gbps) as Ps;
        let n = &mut self.nodes[node];
        n.paused_until_ps = n.paused_until_ps.max(now + u64::from(quanta) * quantum_ps);
        if self
            .sniffer
            .as_ref()
            .is_some_and(|sn| sn.node as usize == node)
        {
            // IEEE 802.1Qbb: MAC Control (0x8808), opcode 0x0101, the class
            // enable vector (priority 3), eight pause times.
            let mut f = [0u8; wire::MIN_FRAME_BYTES as usize];
            f[..6].copy_from_slice(&[0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);
            f[6..12].copy_from_slice(&SWITCH_MAC);
            f[12..14].copy_from_slice(&0x8808u16.to_be_bytes());
            f[14..16].copy_from_slice(&0x0101u16.to_be_bytes());
            f[16..18].copy_from_slice(&(1u16 << 3).to_be_bytes());
            f[18 + 2 * 3..20 + 2 * 3].copy_from_slice(&quanta.to_be_bytes());
            self.capture_raw(Direction::Rx, &f);
        }
    }

    pub(super) fn on_switch_arrive(&mut self, id: u32) {
        let now = self.now_ps;
        let (dst, src, frame_len) = {
            let p = &self.packets[id as usize];
            (
                p.dst_node as usize,
                p.src_node as usize,
                u64::from(p.frame_len_bytes),
            )
        };
        // A mirror at the switch sees the frame as it arrives, before
        // the queue toward its receiver takes it or drops it.
        self.tap_points(id, points::Seen::Switch);
        if self.apply_faults_at(id, dst, SLOT_SWITCH_QUEUE).is_none() {
            return;
        }
        let bytes = wire::wire_bytes(frame_len);
        let ser = self.ser_ps(frame_len);
        let port = &mut self.ports[dst];
        while let Some(&(end, b)) = port.queue.front() {
            if end > now {
                break;
            }
            port.occupancy_bytes -= b;
            port.queue.pop_front();
        }
        if port.occupancy_bytes + bytes > self.params.switch_buffer_bytes {
            let p = &self.packets[id as usize];
            let (qpn, psn_w) = (p.dest_qp, p.psn);
            self.stats.wire_drops += 1;
            self.truth(qpn, psn_w, TruthEvent::WireDrop);
            self.point_drop(id, DropPlace::SwitchQueue { node: dst }, DropWhy::Lost);
            self.release(id);
            return;
        }
        let occ = port.occupancy_bytes;
        if self.params.ecn_threshold_bytes > 0 && occ > self.params.ecn_threshold_bytes {
            let p = &mut self.packets[id as usize];
            if p.ecn != 0 && p.ecn != 3 {
                p.ecn = 3;
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                self.stats.ecn_marked += 1;
                self.truth(qpn, psn_w, TruthEvent::EcnMarked);
            }
        }
        let port = &mut self.ports[dst];
        let start = (now + ps_of_ns(self.params.switch_latency_ns)).max(port.free_ps);
        let end = start + ser;
        port.free_ps = end;
        port.queue.push_back((end, bytes));
        port.occupancy_bytes += bytes;
        if self.params.pfc_enabled != 0 && port.occupancy_bytes > self.params.pfc_xoff_bytes {
            // Pause the sender until the queue drains below XON.
            let mut left = port.occupancy_bytes;
            let mut resume = now;
            for &(e, b) in &port.queue {
                if left <= self.params.pfc_xon_bytes {
                    break;
                }
                left -= b;
                resume = e;
            }
            // The switch sends the sender a PFC frame (priority 3) asking
            // for a pause until the queue is down to XON; the sender holds
            // from when it arrives, for its quanta (512 bit times each).
            let arrive = now
                + self.ser_ps(wire::MIN_FRAME_BYTES)
                + ps_of_ns(self.params.link_prop_ns + self.params.mac_latency_ns);
            let quantum_ps = (512_000.0 / self.params.link_gbps) as Ps;
            let quanta = (resume.saturating_sub(arrive)).div_ceil(quantum_ps.max(1));
            let quanta = quanta.clamp(1, u64::from(u16::MAX)) as u16;
            if self.nodes[src].pfc_asked_until_ps <= now {
                let p = &self.packets[id as usize];
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                self.truth(
                    qpn,
                    psn_w,
                    TruthEvent::PfcPause {
                        ns: (resume - now) / NS,
                    },
                );
            }
            if resume > self.nodes[src].pfc_asked_until_ps {
                self.nodes[src].pfc_asked_until_ps = resume;
                self.schedule(
                    arrive,
                    Event::PauseArrive {
                        node: src as u16,
                        quanta,
                    },
                );
            }
        }
        let arrive = end + ps_of_ns(self.params.link_prop_ns + self.params.mac_latency_ns);
        if let Some(extra) = self.apply_faults(id, dst, false) {
            self.schedule(arrive + extra, Event::NodeArrive(id));
        }
    }
}
