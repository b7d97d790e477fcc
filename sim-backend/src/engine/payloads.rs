//! Payload bytes and headers of a packet: plaintext, the wire payload after
//! the AES slot, and the packet builder.

use super::*;

impl Simulator {
    /// The first `n` bytes of a packet's plaintext payload (before AES).
    pub(super) fn plaintext_into(&self, p: &SimPacket, n: usize, out: &mut Vec<u8>) {
        out.clear();
        let conn = &self.conns[p.conn as usize];
        let n = n.min(p.payload_len_bytes as usize);
        out.resize(n, 0);
        fill_plaintext(conn.seed, p.abs_psn, out);
        if p.bad {
            let sig = slots::dpi_signature_beat();
            for beat in out.chunks_mut(64) {
                let l = beat.len();
                beat.copy_from_slice(&sig[..l]);
            }
        }
        if conn.app != AppOp::None && is_request(p.opcode) {
            slots::app_apply(conn.app, self.params.app_modulus as u32, out);
        }
    }

    /// Whether a packet's payload on the wire is its plaintext as
    /// [`fill_plaintext`] writes it: not encrypted, transformed or marked.
    pub(super) fn plain_payload(&self, p: &SimPacket) -> bool {
        let conn = &self.conns[p.conn as usize];
        !conn.aes && !p.bad && (conn.app == AppOp::None || !is_request(p.opcode))
    }

    /// The first `n` bytes of the payload as on the wire (after AES).
    pub(super) fn wire_payload_into(&self, p: &SimPacket, n: usize, out: &mut Vec<u8>) {
        self.plaintext_into(p, n, out);
        let conn = &self.conns[p.conn as usize];
        if conn.aes {
            slots::aes_ctr_apply(&conn.aes_key, conn.req_qpn, p.abs_psn, out);
        }
    }

    pub(super) fn hdr_fields(&self, p: &SimPacket) -> template::HdrFields {
        template::HdrFields {
            src_ip: self.nodes[p.src_node as usize].ip,
            dst_ip: self.nodes[p.dst_node as usize].ip,
            udp_src_port: match self.nodes[p.src_node as usize].kind {
                NodeKind::Balboa => BALBOA_UDP_SRC_PORT,
                NodeKind::Connectx => 0xC000 | (p.dest_qp as u16 & 0x3FFF),
            },
            opcode: p.opcode,
            dest_qp: p.dest_qp,
            psn: p.psn,
            ecn: p.ecn,
            becn: p.becn,
            payload_len: p.payload_len_bytes as usize,
            reth: p.reth,
            aeth: p.aeth,
        }
    }

    pub(super) fn builder(&self, p: &SimPacket) -> PacketBuilder {
        let src_ip = self.nodes[p.src_node as usize].ip;
        let dst_ip = self.nodes[p.dst_node as usize].ip;
        let mut b = PacketBuilder::rocev2_ipv4(src_ip, dst_ip, Opcode(p.opcode), p.dest_qp, p.psn);
        if let rocescope_decoders::NetHeader::Ipv4 { ecn, dscp, .. } = &mut b.net {
            *ecn = p.ecn;
            if p.opcode == Opcode::CNP.0 {
                *dscp = 48;
            }
        }
        b.udp_src_port = match self.nodes[p.src_node as usize].kind {
            NodeKind::Balboa => BALBOA_UDP_SRC_PORT,
            NodeKind::Connectx => 0xC000 | (p.dest_qp as u16 & 0x3FFF),
        };
        b.bth.mig_req = true;
        b.bth.becn = p.becn;
        b.ext.reth = p.reth;
        b.ext.aeth = p.aeth;
        if p.opcode == Opcode::CNP.0 {
            b.bth.ack_req = false;
        }
        b
    }
}

/// A payload's plaintext bytes from its start, as many as `out` holds: a
/// QP's `seed` and the packet's absolute PSN make them (a header-only
/// capture cut past the headers writes them again from these two).
pub(crate) fn fill_plaintext(seed: u64, abs_psn: u64, out: &mut [u8]) {
    let base = seed ^ abs_psn.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for (w, chunk) in out.chunks_mut(8).enumerate() {
        let v = mix64(base ^ w as u64).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}
