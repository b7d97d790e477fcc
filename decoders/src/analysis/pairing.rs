//! Flows and their pairing into QP conversations: by the CM exchange where
//! the capture has one, else by addresses and by which outstanding PSN a
//! response answers.

use super::*;

/// How far behind a requester's next PSN a response may be and still
/// answer it when the capture did not see the request: more PSNs than a
/// 100 Gb/s link keeps in flight at 4 KiB a packet.
const NEAR_PSNS: i32 = 4096;

impl RcAnalysis {
    pub(super) fn flow_id<O: Observed>(&mut self, o: &O) -> u32 {
        let (src, dst) = o.ends();
        let key = FlowKey {
            src,
            dst,
            dest_qp: o.dest_qp(),
        };
        if let Some(id) = self.flow_ids.get(&key) {
            return *id;
        }
        let id = self.flows.len() as u32;
        let qp = self.qps.len() as u32;
        self.qps.push(id);
        let host = self.host_of(src);
        self.flows.push(Flow::new(key, qp, o.ts_ns(), host));
        self.flow_ids.insert(key, id);
        id
    }

    /// A CM REQ or REP: rare (one per connection), so out of line and cold.
    /// Inlined into the per-packet `observe_flow`, its code made every
    /// packet's path longer (8 instructions a packet on the bench pcap).
    #[cold]
    #[inline(never)]
    pub(super) fn note_cm<O: Observed>(&mut self, o: &O, cm: CmMessage) {
        let (src, dst) = o.ends();
        if cm.rep {
            // A REP from B answers A's REQ: A -> B requests go to B's QPN,
            // B -> A responses to A's.
            if let Some(req_qpn) = self.cm_reqs.get(&(dst, src, cm.remote_comm_id)) {
                self.cm_pairs.push((dst, src, cm.local_qpn, *req_qpn));
            }
        } else {
            self.cm_reqs
                .insert((src, dst, cm.local_comm_id), cm.local_qpn);
        }
    }

    /// Pair response flow `resp` with the reverse flow whose outstanding
    /// requests this response answers: by the CM exchange where the capture
    /// has one, else by addresses and PSNs.
    #[inline]
    pub(super) fn pair<O: Observed>(&mut self, resp: u32, o: &O) -> Option<u32> {
        match self.flows[resp as usize].peer {
            Some(p) => Some(p),
            None => self.find_pair(resp, o),
        }
    }

    /// [`RcAnalysis::pair`] for a flow not paired yet: a search, until the
    /// flow's first answer finds its requests. Out of line and cold: inlined
    /// into every response's path, its code lengthened that path.
    #[cold]
    #[inline(never)]
    fn find_pair<O: Observed>(&mut self, resp: u32, o: &O) -> Option<u32> {
        let key = self.flows[resp as usize].key;
        let by_cm = self
            .cm_pairs
            .iter()
            .find(|(a, b, _, qa)| *b == key.src && *a == key.dst && *qa == key.dest_qp)
            .and_then(|(a, b, qb, _)| {
                self.flow_ids
                    .get(&FlowKey {
                        src: *a,
                        dst: *b,
                        dest_qp: *qb,
                    })
                    .copied()
            })
            .filter(|f| self.flows[*f as usize].peer.is_none());
        if let Some(chosen) = by_cm {
            return Some(self.join(resp, chosen));
        }
        let candidates: Vec<u32> = self
            .flows
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                *i as u32 != resp
                    && f.key.src == key.dst
                    && f.key.dst == key.src
                    && f.peer.is_none()
                    && f.started
            })
            .map(|(i, _)| i as u32)
            .collect();
        let answers = |f: &Flow| {
            f.outstanding.iter().any(|s| {
                psn_diff(o.psn(), s.psn()) >= 0 && psn_diff(o.psn(), s.psn()) < s.psn_count as i32
            }) || psn_diff(o.psn(), f.next_psn) == -1
        };
        // What the capture did not see sent: a response to a request from
        // before the capture began is just behind the requester's next PSN.
        // QPs start their PSNs at random in 2^24, so another QP's requests
        // are not that close; a capture joined mid-stream can see one QP's
        // responses before its requests and only another QP's requests.
        let near = |f: &Flow| (1..=NEAR_PSNS).contains(&psn_diff(f.next_psn, o.psn()));
        let flow = |c: &u32| &self.flows[*c as usize];
        let chosen = candidates
            .iter()
            .find(|c| answers(flow(c)))
            .or_else(|| candidates.iter().find(|c| near(flow(c))))
            .copied()?;
        Some(self.join(resp, chosen))
    }

    /// Make `resp` and `chosen` the two directions of one QP conversation.
    /// A `resp` that carries requests itself keeps its own conversation:
    /// each end's requests are tracked and reported apart.
    pub(super) fn join(&mut self, resp: u32, chosen: u32) -> u32 {
        // A QP's window and response time are looked up by its pair.
        self.facts_epoch += 1;
        self.flows[resp as usize].peer = Some(chosen);
        self.flows[chosen as usize].peer = Some(resp);
        if self.flows[resp as usize].started {
            return chosen;
        }
        // The response flow joins the requester's QP conversation.
        let qp = self.flows[chosen as usize].qp;
        let old = self.flows[resp as usize].qp;
        self.flows[resp as usize].qp = qp;
        if self.qps.get(old as usize) == Some(&resp) {
            // Leave the slot (ids stay stable) but point it at the pair.
            self.qps[old as usize] = chosen;
        }
        chosen
    }
}

impl RcAnalysis {
    /// Flow `id` sends its first request: if it joined its pair's
    /// conversation as the response direction, it takes back its own.
    pub(super) fn split_requester(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        if f.qp != f.own_slot {
            f.qp = f.own_slot;
            self.qps[f.own_slot as usize] = id;
        }
    }

    /// Whether flow `id` and its peer both carry requests (two reports).
    pub(super) fn both_request(&self, id: u32) -> bool {
        let f = &self.flows[id as usize];
        f.peer.is_some_and(|p| {
            let p = &self.flows[p as usize];
            f.started && p.started && p.qp == p.own_slot && f.qp == f.own_slot
        })
    }
}

impl RcAnalysis {
    /// A CNP's flow pairs with any reverse flow of the same hosts.
    #[cold]
    #[inline(never)]
    pub(super) fn pair_any(&mut self, id: u32) -> Option<u32> {
        let key = self.flows[id as usize].key;
        let peer = self
            .flows
            .iter()
            .position(|f| f.key.src == key.dst && f.key.dst == key.src)? as u32;
        Some(peer)
    }
}
