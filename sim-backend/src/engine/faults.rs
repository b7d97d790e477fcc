//! Link faults: the scenario's rules applied to each frame on a link
//! direction (drop, corrupt, delay, ...).

use super::*;

impl Simulator {
    /// A payload DMA read of QP `conn` on `node` now: the stall its host
    /// puts on it, if a host-stall rule hits.
    pub(super) fn host_stall(&mut self, node: usize, conn: usize) -> Ps {
        let now_ns = self.now_ps / NS;
        let mut stall = 0;
        for i in 0..self.scenario.faults.len() {
            let f = &self.scenario.faults[i];
            if f.kind != FaultKind::HostStall
                || f.node != node
                || f.qp.is_some_and(|q| q != conn)
                || now_ns < f.start_ns
                || (f.end_ns != 0 && now_ns >= f.end_ns)
            {
                continue;
            }
            let (nth, probability, delay_ns) = (f.nth, f.probability, f.delay_ns);
            let hit = if nth != 0 {
                self.fault_hits[i] += 1;
                self.fault_hits[i].is_multiple_of(nth)
            } else {
                self.rng.chance(probability)
            };
            if hit {
                // From a tenth of the rule's delay up to all of it.
                let tenth = delay_ns / 10;
                let ns = tenth + self.rng.next_u64() % (delay_ns - tenth + 1);
                stall = stall.max(ps_of_ns(ns));
            }
        }
        stall
    }

    /// Applies the fault rules of one link direction to a frame. Returns the
    /// extra delay, or None when the frame is gone.
    #[inline]
    pub(super) fn apply_faults(&mut self, id: u32, node: usize, to_switch: bool) -> Option<Ps> {
        let slot = if to_switch {
            SLOT_TO_SWITCH
        } else {
            SLOT_FROM_SWITCH
        };
        self.apply_faults_at(id, node, slot)
    }

    /// The rules of one place (`SLOT_*`) of `node` applied to a frame:
    /// its extra delay, or None when the frame is gone.
    #[inline]
    pub(super) fn apply_faults_at(&mut self, id: u32, node: usize, slot: usize) -> Option<Ps> {
        let on = FAULT_SLOTS * node + slot;
        if self.faults_on.get(on).is_none_or(Vec::is_empty) {
            return Some(0);
        }
        self.apply_fault_rules(id, on, slot)
    }

    pub(super) fn apply_fault_rules(&mut self, id: u32, on: usize, slot: usize) -> Option<Ps> {
        let to_switch = slot == SLOT_TO_SWITCH;
        let node = on / FAULT_SLOTS;
        let rules = self.faults_on.get(on).map_or(0, Vec::len);
        let now_ns = self.now_ps / NS;
        let conn = self.packets[id as usize].conn as usize;
        let mut extra = 0;
        let mut dup = false;
        for k in 0..rules {
            let i = self.faults_on[on][k];
            let f = self.scenario.faults[i].clone();
            // A repeating rule: time within its period, hits per period.
            let t_ns = match now_ns.checked_div(f.every_ns) {
                Some(period) => {
                    if self.fault_period[i] != period {
                        self.fault_period[i] = period;
                        self.fault_hits[i] = 0;
                    }
                    now_ns % f.every_ns
                }
                None => now_ns,
            };
            if f.qp.is_some_and(|q| q != conn)
                || t_ns < f.start_ns
                || (f.end_ns != 0 && t_ns >= f.end_ns)
            {
                continue;
            }
            let hit = if f.kind == FaultKind::LinkDown {
                true
            } else if f.nth != 0 {
                self.fault_hits[i] += 1;
                self.fault_hits[i] == f.nth
            } else {
                self.rng.chance(f.probability)
            };
            if !hit {
                continue;
            }
            let p = &mut self.packets[id as usize];
            match f.kind {
                FaultKind::Loss | FaultKind::LinkDown => {
                    let (qpn, psn_w) = (p.dest_qp, p.psn);
                    self.stats.wire_drops += 1;
                    self.truth(qpn, psn_w, TruthEvent::WireDrop);
                    let place = match slot {
                        SLOT_SWITCH_QUEUE => DropPlace::SwitchQueue { node },
                        SLOT_STACK => DropPlace::Stack { node },
                        _ => DropPlace::Link { node, to_switch },
                    };
                    self.point_drop(id, place, DropWhy::Lost);
                    self.release(id);
                    return None;
                }
                FaultKind::Corrupt => {
                    if !p.corrupt {
                        p.corrupt = true;
                        let (qpn, psn_w) = (p.dest_qp, p.psn);
                        self.stats.wire_corrupt += 1;
                        self.truth(qpn, psn_w, TruthEvent::WireCorrupt);
                    }
                }
                FaultKind::Reorder => extra += ps_of_ns(f.delay_ns),
                FaultKind::Duplicate => dup = true,
                // Never on a link (`faults_on` leaves host stalls out).
                FaultKind::HostStall => {}
            }
        }
        if dup {
            let copy = self.packets[id as usize].clone();
            let id2 = self.alloc(copy);
            let ev_t = self.now_ps + extra + ps_of_ns(1);
            let ser = (wire::wire_time_ps(u64::from(self.packets[id2 as usize].frame_len_bytes), 1)
                as f64
                / self.params.link_gbps) as Ps;
            let base = ps_of_ns(self.params.link_prop_ns + self.params.mac_latency_ns);
            let ev = if to_switch {
                Event::SwitchArrive(id2)
            } else {
                Event::NodeArrive(id2)
            };
            self.schedule(ev_t + ser + base, ev);
        }
        Some(extra)
    }
}
