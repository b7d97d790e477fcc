//! What the analysis reads of one packet: [`Observation`] (built from a
//! decoded [`Packet`]) and the CM messages that name a connection.

use super::*;

/// What the analysis needs of one RoCE packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    pub ts_ns: u64,
    /// Source and destination (IPv4 mapped into IPv6, RoCEv1 or IB GIDs,
    /// or a native IB packet's LIDs as [`crate::lid_endpoint`]s).
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub dest_qp: u32,
    pub opcode: Opcode,
    pub psn: u32,
    pub syndrome: Option<u8>,
    pub msn: u32,
    /// RETH DMA length (READ requests: the bytes asked for).
    pub dma_len: Option<u32>,
    pub payload_len: u32,
    /// Frame length on the wire.
    pub wire_len: u32,
    pub ecn_ce: bool,
    /// An RDMA CM message (REQ/REP over UD QP 1), which names the QPNs of a
    /// connection: the analysis pairs flows by it.
    pub cm: Option<CmMessage>,
}

/// What the analysis reads of a packet: an [`Observation`], or whatever
/// holds the same values in another form, read where they are. The
/// store's hand-over rows keep them packed beside the row's own time, PSN
/// and opcode, and building an `Observation` from each cost the indexer's
/// busier thread 70 instructions a packet.
pub trait Observed {
    fn ts_ns(&self) -> u64;
    /// Source and destination (see [`Observation::src`]): read only for a
    /// flow's first packet and for CM messages.
    fn ends(&self) -> ([u8; 16], [u8; 16]);
    fn dest_qp(&self) -> u32;
    fn opcode(&self) -> Opcode;
    fn psn(&self) -> u32;
    fn syndrome(&self) -> Option<u8>;
    fn msn(&self) -> u32;
    fn dma_len(&self) -> Option<u32>;
    fn payload_len(&self) -> u32;
    fn wire_len(&self) -> u32;
    fn ecn_ce(&self) -> bool;
    fn cm(&self) -> Option<CmMessage>;
    /// The capture port the frame left by when the capture says it was
    /// sent there (a pause on that port holds its sender).
    fn tx_port(&self) -> Option<u8> {
        None
    }
}

impl Observed for Observation {
    #[inline(always)]
    fn ts_ns(&self) -> u64 {
        self.ts_ns
    }
    #[inline(always)]
    fn ends(&self) -> ([u8; 16], [u8; 16]) {
        (self.src, self.dst)
    }
    #[inline(always)]
    fn dest_qp(&self) -> u32 {
        self.dest_qp
    }
    #[inline(always)]
    fn opcode(&self) -> Opcode {
        self.opcode
    }
    #[inline(always)]
    fn psn(&self) -> u32 {
        self.psn
    }
    #[inline(always)]
    fn syndrome(&self) -> Option<u8> {
        self.syndrome
    }
    #[inline(always)]
    fn msn(&self) -> u32 {
        self.msn
    }
    #[inline(always)]
    fn dma_len(&self) -> Option<u32> {
        self.dma_len
    }
    #[inline(always)]
    fn payload_len(&self) -> u32 {
        self.payload_len
    }
    #[inline(always)]
    fn wire_len(&self) -> u32 {
        self.wire_len
    }
    #[inline(always)]
    fn ecn_ce(&self) -> bool {
        self.ecn_ce
    }
    #[inline(always)]
    fn cm(&self) -> Option<CmMessage> {
        self.cm
    }
}

/// The part of a CM REQ or REP that pairs the two flows of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmMessage {
    pub rep: bool,
    pub local_comm_id: u32,
    /// REP: the REQ's communication id it answers.
    pub remote_comm_id: u32,
    /// The sender's QPN.
    pub local_qpn: u32,
}

/// MAD management class of the communication manager.
pub(super) const MAD_CLASS_CM: u8 = 0x07;
pub(super) const CM_ATTR_REQ: u16 = 0x0010;
pub(super) const CM_ATTR_REP: u16 = 0x0013;

pub(super) fn cm_message(p: &Packet<'_>, dest_qp: u32, opcode: Opcode) -> Option<CmMessage> {
    if dest_qp != 1 || !matches!(opcode.kind(), crate::OpcodeKind::Ud(_)) {
        return None;
    }
    let mad = p.payload();
    let be32 = |o: usize| {
        mad.get(o..o + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if *mad.get(1)? != MAD_CLASS_CM {
        return None;
    }
    let attr = u16::from_be_bytes([*mad.get(16)?, *mad.get(17)?]);
    match attr {
        CM_ATTR_REQ => Some(CmMessage {
            rep: false,
            local_comm_id: be32(24)?,
            remote_comm_id: 0,
            local_qpn: be32(56)? >> 8,
        }),
        CM_ATTR_REP => Some(CmMessage {
            rep: true,
            local_comm_id: be32(24)?,
            remote_comm_id: be32(28)?,
            local_qpn: be32(36)? >> 8,
        }),
        _ => None,
    }
}

impl Observation {
    /// The observation of a decoded RoCE packet (`None` if it is not RoCE).
    pub fn from_packet(p: &Packet<'_>, ts_ns: u64, wire_len: u32) -> Option<Observation> {
        let bth = p.bth()?;
        // Each header is looked up once: this runs for every packet indexed.
        let ip = p.ip();
        // Native IB without a GRH: the LIDs name the ends.
        let (src, dst) = match (ip, p.grh(), p.lrh()) {
            (Some(ip), _, _) => (ip.src_v6(), ip.dst_v6()),
            (None, Some(g), _) => (g.src(), g.dst()),
            (None, None, Some(l)) => (crate::lid_endpoint(l.slid()), crate::lid_endpoint(l.dlid())),
            (None, None, None) => ([0; 16], [0; 16]),
        };
        let aeth = p.ext().aeth();
        let dest_qp = bth.dest_qp();
        let opcode = bth.opcode();
        Some(Observation {
            ts_ns,
            src,
            dst,
            dest_qp,
            opcode,
            psn: bth.psn(),
            syndrome: aeth.map(|a| a.syndrome_raw()),
            msn: aeth.map_or(0, |a| a.msn()),
            dma_len: p.ext().reth().map(|r| r.dma_len()),
            payload_len: p.payload_len() as u32,
            wire_len,
            ecn_ce: ip.is_some_and(|ip| ip.ecn() == 3),
            cm: cm_message(p, dest_qp, opcode),
        })
    }
}
