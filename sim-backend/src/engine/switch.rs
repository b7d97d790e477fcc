//! The switch: per-port queues, ECN marking and PFC.

use super::*;

impl Simulator {
    pub(super) fn on_switch_arrive(&mut self, id: u32) {
        let now = self.now;
        let (dst, src, frame_len) = {
            let p = &self.pkts[id as usize];
            (p.dst as usize, p.src as usize, u64::from(p.frame_len))
        };
        let bytes = wire::wire_bytes(frame_len);
        let ser = self.ser_ps(frame_len);
        let port = &mut self.ports[dst];
        while let Some(&(end, b)) = port.q.front() {
            if end > now {
                break;
            }
            port.occ -= b;
            port.q.pop_front();
        }
        if port.occ + bytes > self.p.switch_buffer_bytes {
            let p = &self.pkts[id as usize];
            let (qpn, psn_w) = (p.dest_qp, p.psn);
            self.stats.wire_drops += 1;
            self.truth(qpn, psn_w, TruthEvent::WireDrop);
            self.release(id);
            return;
        }
        let occ = port.occ;
        if self.p.ecn_threshold_bytes > 0 && occ > self.p.ecn_threshold_bytes {
            let p = &mut self.pkts[id as usize];
            if p.ecn != 0 && p.ecn != 3 {
                p.ecn = 3;
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                self.stats.ecn_marked += 1;
                self.truth(qpn, psn_w, TruthEvent::EcnMarked);
            }
        }
        let port = &mut self.ports[dst];
        let start = (now + ps_of_ns(self.p.switch_latency_ns)).max(port.free);
        let end = start + ser;
        port.free = end;
        port.q.push_back((end, bytes));
        port.occ += bytes;
        if self.p.pfc_enabled != 0 && port.occ > self.p.pfc_xoff_bytes {
            // Pause the sender until the queue drains below XON.
            let mut left = port.occ;
            let mut resume = now;
            for &(e, b) in &port.q {
                if left <= self.p.pfc_xon_bytes {
                    break;
                }
                left -= b;
                resume = e;
            }
            if self.nodes[src].paused_until <= now {
                let p = &self.pkts[id as usize];
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
            n.paused_until = n.paused_until.max(resume);
        }
        let arrive = end + ps_of_ns(self.p.link_prop_ns + self.p.mac_latency_ns);
        if let Some(extra) = self.apply_faults(id, dst, false) {
            self.schedule(arrive + extra, Ev::NodeArrive(id));
        }
    }
}
