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
            (conn.req_qpn, conn.next_psn - conn.oldest_unacked_psn)
        } else {
            (conn.resp_qpn, 0)
        };
        self.emit(Record::QpState(QpStateChange {
            ts_ns: self.now_ps / NS,
            qpn,
            state: conn.state,
            next_psn: (conn.next_psn & 0xFF_FFFF) as u32,
            oldest_unacked_psn: (conn.oldest_unacked_psn & 0xFF_FFFF) as u32,
            epsn: (conn.expected_psn & 0xFF_FFFF) as u32,
            msn: conn.msn & 0xFF_FFFF,
            outstanding: outstanding.min(u64::from(u16::MAX)) as u16,
            retry_count: conn.retry_count.min(255) as u8,
        }));
    }

    pub(super) fn truth(&mut self, qpn: u32, psn: u32, event: TruthEvent) {
        self.emit(Record::Truth(GroundTruth {
            ts_ns: self.now_ps / NS,
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
            ts_ns: self.now_ps / NS,
            slot,
            qpn,
            psn,
            verdict,
            latency_ns: latency_ns.min(u64::from(u32::MAX)) as u32,
            detail,
        }));
    }

    /// The AES slot's decision on a packet of connection `c` (its counter
    /// the packet's absolute PSN), when the connection runs it.
    pub(super) fn aes_slot(&mut self, c: usize, qpn: u32, psn: u32, abs_psn: u64) {
        if self.conns[c].aes {
            let aes_ns = self.params.aes_ns;
            let counter = abs_psn as u32;
            self.slot(
                SlotKind::Aes,
                qpn,
                psn,
                Verdict::Transformed,
                aes_ns,
                counter,
            );
        }
    }

    // ------------------------------------------------------------ packets

    pub(super) fn alloc(&mut self, p: SimPacket) -> u32 {
        if let Some(id) = self.free_packets.pop() {
            self.packets[id as usize] = p;
            id
        } else {
            self.packets.push(p);
            (self.packets.len() - 1) as u32
        }
    }

    pub(super) fn release(&mut self, id: u32) {
        self.free_packets.push(id);
    }

    pub(super) fn new_pkt(
        &self,
        c: usize,
        from_req: bool,
        opcode: u8,
        abs_psn: u64,
        payload_len: u32,
    ) -> SimPacket {
        let conn = &self.conns[c];
        let (src, dst, dest_qp) = if from_req {
            (conn.req_node, conn.resp_node, conn.resp_qpn)
        } else {
            (conn.resp_node, conn.req_node, conn.req_qpn)
        };
        let ext = u64::from(self.ops[usize::from(opcode)].ext);
        let frame =
            wire::rocev2_ipv4_frame_bytes(u64::from(payload_len), ext).max(wire::MIN_FRAME_BYTES);
        SimPacket {
            conn: c as u32,
            src_node: src,
            dst_node: dst,
            opcode,
            psn: (abs_psn & 0xFF_FFFF) as u32,
            abs_psn,
            dest_qp,
            payload_len_bytes: payload_len,
            reth: Reth::default(),
            aeth: Aeth::default(),
            ecn: 0b10,
            becn: false,
            corrupt: false,
            retx: RETX_NONE,
            bad: false,
            frame_len_bytes: frame as u32,
        }
    }
}
