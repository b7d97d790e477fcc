//! Records handed out (QP state, ground truth, slot decisions) and the pool
//! of packets in flight.

use super::*;

impl Simulator {
    #[inline]
    pub(super) fn emit(&mut self, r: Record) {
        self.out.push(Out::Record(r));
    }

    pub(super) fn qp_record(&mut self, c: usize, requester: bool) {
        let conn = &self.conns[c];
        let (qpn, outstanding) = if requester {
            (conn.req_qpn, conn.next_psn - conn.una)
        } else {
            (conn.resp_qpn, 0)
        };
        self.emit(Record::QpState(QpStateChange {
            ts_ns: self.now / NS,
            qpn,
            state: conn.state,
            next_psn: (conn.next_psn & 0xFF_FFFF) as u32,
            oldest_unacked_psn: (conn.una & 0xFF_FFFF) as u32,
            epsn: (conn.epsn & 0xFF_FFFF) as u32,
            msn: conn.msn & 0xFF_FFFF,
            outstanding: outstanding.min(u64::from(u16::MAX)) as u16,
            retry_count: conn.retry_count.min(255) as u8,
        }));
    }

    pub(super) fn truth(&mut self, qpn: u32, psn: u32, event: TruthEvent) {
        self.emit(Record::Truth(GroundTruth {
            ts_ns: self.now / NS,
            qpn,
            psn,
            event,
        }));
    }

    pub(super) fn slot(
        &mut self,
        slot: SlotKind,
        qpn: u32,
        psn: u32,
        verdict: Verdict,
        latency_ns: u64,
        detail: u32,
    ) {
        self.emit(Record::Slot(SlotDecision {
            ts_ns: self.now / NS,
            slot,
            qpn,
            psn,
            verdict,
            latency_ns: latency_ns.min(u64::from(u32::MAX)) as u32,
            detail,
        }));
    }

    // ------------------------------------------------------------ packets

    pub(super) fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(id) = self.free_pkts.pop() {
            self.pkts[id as usize] = p;
            id
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        }
    }

    pub(super) fn release(&mut self, id: u32) {
        self.free_pkts.push(id);
    }

    pub(super) fn new_pkt(
        &self,
        c: usize,
        from_req: bool,
        opcode: u8,
        abs_psn: u64,
        payload_len: u32,
    ) -> Pkt {
        let conn = &self.conns[c];
        let (src, dst, dest_qp) = if from_req {
            (conn.req, conn.resp, conn.resp_qpn)
        } else {
            (conn.resp, conn.req, conn.req_qpn)
        };
        let ext = u64::from(self.ops[usize::from(opcode)].ext);
        let frame =
            wire::rocev2_ipv4_frame_bytes(u64::from(payload_len), ext).max(wire::MIN_FRAME_BYTES);
        Pkt {
            conn: c as u32,
            src,
            dst,
            opcode,
            psn: (abs_psn & 0xFF_FFFF) as u32,
            abs_psn,
            dest_qp,
            payload_len,
            reth: Reth::default(),
            aeth: Aeth::default(),
            ecn: 0b10,
            becn: false,
            corrupt: false,
            retx: RETX_NONE,
            bad: false,
            frame_len: frame as u32,
        }
    }
}
