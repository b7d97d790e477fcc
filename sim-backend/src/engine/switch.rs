//! The switch: per-port queues, ECN marking and PFC.

use super::*;

impl Simulator {
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
            if self.nodes[src].paused_until_ps <= now {
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
            let n = &mut self.nodes[src];
            n.paused_until_ps = n.paused_until_ps.max(resume);
        }
        let arrive = end + ps_of_ns(self.params.link_prop_ns + self.params.mac_latency_ns);
        if let Some(extra) = self.apply_faults(id, dst, false) {
            self.schedule(arrive + extra, Event::NodeArrive(id));
        }
    }
}
