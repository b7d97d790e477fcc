//! Every decoded header field as (name, byte range, value), named as
//! Wireshark names it. One walk serves the JSON output, the detail tree, the
//! hex view's highlighting and the display filter.
//!
//! Names Wireshark does not have follow its style and are listed in
//! decoders/FIELDS.md: `infiniband.bth.fecn`, `infiniband.bth.becn`,
//! `infiniband.xrceth.xrcsrq`, `infiniband.feth.sel`, `infiniband.feth.plt`,
//! `infiniband.cnp.reserved_nonzero`. As in Wireshark, the AtomicETH's
//! address and key are `infiniband.reth.va` and `infiniband.reth.r_key`.

use crate::headers::*;
use crate::packet::{IpHeader, Packet};

/// A field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue<'a> {
    U64(u64),
    Bool(bool),
    Mac([u8; 6]),
    Ipv4([u8; 4]),
    Ipv6([u8; 16]),
    /// A whole header or an opaque run of bytes.
    Bytes(&'a [u8]),
}

impl FieldValue<'_> {
    /// Integer view (booleans as 0/1); `None` for addresses and bytes.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            FieldValue::U64(v) => Some(v),
            FieldValue::Bool(b) => Some(u64::from(b)),
            _ => None,
        }
    }
}

/// One field or header of a decoded frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// Wireshark-style field name, e.g. `infiniband.bth.psn`.
    pub name: &'static str,
    /// Human label, e.g. "Packet Sequence Number".
    pub label: &'static str,
    /// 0 for a header (a tree node), 1 for a field inside it.
    pub depth: u8,
    /// Byte range of the field in the frame (bit fields cover their bytes).
    pub offset: usize,
    pub len: usize,
    pub value: FieldValue<'a>,
}

struct Emit<'f, 'a> {
    f: &'f mut dyn FnMut(&Field<'a>),
}

impl<'a> Emit<'_, 'a> {
    fn header(&mut self, name: &'static str, label: &'static str, offset: usize, bytes: &'a [u8]) {
        (self.f)(&Field {
            name,
            label,
            depth: 0,
            offset,
            len: bytes.len(),
            value: FieldValue::Bytes(bytes),
        });
    }
    fn field(
        &mut self,
        name: &'static str,
        label: &'static str,
        offset: usize,
        len: usize,
        value: FieldValue<'a>,
    ) {
        (self.f)(&Field {
            name,
            label,
            depth: 1,
            offset,
            len,
            value,
        });
    }
    fn u(
        &mut self,
        name: &'static str,
        label: &'static str,
        offset: usize,
        len: usize,
        v: impl Into<u64>,
    ) {
        self.field(name, label, offset, len, FieldValue::U64(v.into()));
    }
    fn b(&mut self, name: &'static str, label: &'static str, offset: usize, v: bool) {
        self.field(name, label, offset, 1, FieldValue::Bool(v));
    }
}

impl<'a> Packet<'a> {
    /// Call `f` for every header and field in wire order.
    pub fn for_each_field(&self, f: &mut dyn FnMut(&Field<'a>)) {
        let mut e = Emit { f };
        if let Some(eth) = self.eth() {
            e.header("eth", "Ethernet II", 0, eth.as_bytes());
            e.field("eth.dst", "Destination", 0, 6, FieldValue::Mac(eth.dst()));
            e.field("eth.src", "Source", 6, 6, FieldValue::Mac(eth.src()));
            e.u("eth.type", "Type", 12, 2, eth.ethertype());
            let mut off = EthernetSlice::LEN;
            for tag in self.vlans() {
                e.header("vlan", "802.1Q Virtual LAN", off, tag.as_bytes());
                e.u("vlan.priority", "Priority", off, 1, tag.pcp());
                e.b("vlan.dei", "DEI", off, tag.dei());
                e.u("vlan.id", "ID", off, 2, tag.vid());
                e.u("vlan.etype", "Type", off + 2, 2, tag.ethertype());
                off += VlanSlice::LEN;
            }
        }
        let n = self.net_offset();
        match self.ip() {
            Some(IpHeader::V4(ip)) => {
                e.header("ip", "Internet Protocol Version 4", n, ip.as_bytes());
                e.u("ip.hdr_len", "Header Length", n, 1, ip.header_len() as u64);
                e.u(
                    "ip.dsfield.dscp",
                    "Differentiated Services Codepoint",
                    n + 1,
                    1,
                    ip.dscp(),
                );
                e.u(
                    "ip.dsfield.ecn",
                    "Explicit Congestion Notification",
                    n + 1,
                    1,
                    ip.ecn(),
                );
                e.u("ip.len", "Total Length", n + 2, 2, ip.total_len());
                e.u("ip.id", "Identification", n + 4, 2, ip.identification());
                e.b("ip.flags.df", "Don't fragment", n + 6, ip.dont_fragment());
                e.b("ip.flags.mf", "More fragments", n + 6, ip.more_fragments());
                e.u(
                    "ip.frag_offset",
                    "Fragment Offset",
                    n + 6,
                    2,
                    ip.fragment_offset(),
                );
                e.u("ip.ttl", "Time to Live", n + 8, 1, ip.ttl());
                e.u("ip.proto", "Protocol", n + 9, 1, ip.protocol());
                e.u("ip.checksum", "Header Checksum", n + 10, 2, ip.checksum());
                e.field(
                    "ip.src",
                    "Source Address",
                    n + 12,
                    4,
                    FieldValue::Ipv4(ip.src()),
                );
                e.field(
                    "ip.dst",
                    "Destination Address",
                    n + 16,
                    4,
                    FieldValue::Ipv4(ip.dst()),
                );
            }
            Some(IpHeader::V6(ip)) => {
                e.header("ipv6", "Internet Protocol Version 6", n, ip.as_bytes());
                e.u("ipv6.tclass", "Traffic Class", n, 2, ip.traffic_class());
                e.u(
                    "ipv6.tclass.dscp",
                    "Differentiated Services Codepoint",
                    n,
                    2,
                    ip.dscp(),
                );
                e.u(
                    "ipv6.tclass.ecn",
                    "Explicit Congestion Notification",
                    n,
                    2,
                    ip.ecn(),
                );
                e.u("ipv6.flow", "Flow Label", n + 1, 3, ip.flow_label());
                e.u("ipv6.plen", "Payload Length", n + 4, 2, ip.payload_len());
                e.u("ipv6.nxt", "Next Header", n + 6, 1, ip.next_header());
                e.u("ipv6.hlim", "Hop Limit", n + 7, 1, ip.hop_limit());
                e.field(
                    "ipv6.src",
                    "Source Address",
                    n + 8,
                    16,
                    FieldValue::Ipv6(ip.src()),
                );
                e.field(
                    "ipv6.dst",
                    "Destination Address",
                    n + 24,
                    16,
                    FieldValue::Ipv6(ip.dst()),
                );
            }
            None => {}
        }
        if let Some(udp) = self.udp() {
            let o = self.udp_offset();
            e.header("udp", "User Datagram Protocol", o, udp.as_bytes());
            e.u("udp.srcport", "Source Port", o, 2, udp.src_port());
            e.u("udp.dstport", "Destination Port", o + 2, 2, udp.dst_port());
            e.u("udp.length", "Length", o + 4, 2, udp.length());
            e.u("udp.checksum", "Checksum", o + 6, 2, udp.checksum());
        }
        if let Some(bth) = self.bth() {
            emit_roce(&mut e, self, bth);
        }
    }
}

fn emit_roce<'a>(e: &mut Emit<'_, 'a>, p: &Packet<'a>, b: BthSlice<'a>) {
    if let Some(grh) = p.grh() {
        let o = p.net_offset();
        e.header("infiniband.grh", "Global Route Header", o, grh.as_bytes());
        e.u("infiniband.grh.ipver", "IP Version", o, 1, 6u8);
        e.u(
            "infiniband.grh.tclass",
            "Traffic Class",
            o,
            2,
            grh.traffic_class(),
        );
        e.u(
            "infiniband.grh.flowlabel",
            "Flow Label",
            o + 1,
            3,
            grh.flow_label(),
        );
        e.u(
            "infiniband.grh.paylen",
            "Payload Length",
            o + 4,
            2,
            grh.payload_len(),
        );
        e.u(
            "infiniband.grh.nxthdr",
            "Next Header",
            o + 6,
            1,
            grh.next_header(),
        );
        e.u(
            "infiniband.grh.hoplmt",
            "Hop Limit",
            o + 7,
            1,
            grh.hop_limit(),
        );
        e.field(
            "infiniband.grh.sgid",
            "Source GID",
            o + 8,
            16,
            FieldValue::Ipv6(grh.src()),
        );
        e.field(
            "infiniband.grh.dgid",
            "Destination GID",
            o + 24,
            16,
            FieldValue::Ipv6(grh.dst()),
        );
    }
    let o = p.bth_offset();
    e.header("infiniband.bth", "Base Transport Header", o, b.as_bytes());
    e.u("infiniband.bth.opcode", "Opcode", o, 1, b.opcode().0);
    e.b("infiniband.bth.se", "Solicited Event", o + 1, b.solicited());
    e.b("infiniband.bth.m", "MigReq", o + 1, b.mig_req());
    e.u(
        "infiniband.bth.padcnt",
        "Pad Count",
        o + 1,
        1,
        b.pad_count(),
    );
    e.u("infiniband.bth.tver", "Header Version", o + 1, 1, b.tver());
    e.u("infiniband.bth.p_key", "Partition Key", o + 2, 2, b.pkey());
    e.b("infiniband.bth.fecn", "Forward ECN", o + 4, b.fecn());
    e.b("infiniband.bth.becn", "Backward ECN", o + 4, b.becn());
    e.u(
        "infiniband.bth.destqp",
        "Destination Queue Pair",
        o + 5,
        3,
        b.dest_qp(),
    );
    e.b(
        "infiniband.bth.a",
        "Acknowledge Request",
        o + 8,
        b.ack_req(),
    );
    e.u(
        "infiniband.bth.reserved7",
        "Reserved (7 bits)",
        o + 8,
        1,
        b.reserved7(),
    );
    e.u(
        "infiniband.bth.psn",
        "Packet Sequence Number",
        o + 9,
        3,
        b.psn(),
    );

    let mut off = o + BthSlice::LEN;
    let x = p.ext();
    if let Some(h) = x.rdeth() {
        e.header(
            "infiniband.rdeth",
            "Reliable Datagram Extended Transport Header",
            off,
            h.as_bytes(),
        );
        e.u(
            "infiniband.rdeth.eecnxt",
            "E2E Context",
            off + 1,
            3,
            h.ee_context(),
        );
        off += RdethSlice::LEN;
    }
    if let Some(h) = x.deth() {
        e.header(
            "infiniband.deth",
            "Datagram Extended Transport Header",
            off,
            h.as_bytes(),
        );
        e.u("infiniband.deth.q_key", "Queue Key", off, 4, h.qkey());
        e.u(
            "infiniband.deth.srcqp",
            "Source Queue Pair",
            off + 5,
            3,
            h.src_qp(),
        );
        off += DethSlice::LEN;
    }
    if let Some(h) = x.xrceth() {
        e.header(
            "infiniband.xrceth",
            "XRC Extended Transport Header",
            off,
            h.as_bytes(),
        );
        e.u(
            "infiniband.xrceth.xrcsrq",
            "XRC Shared Receive Queue",
            off + 1,
            3,
            h.xrc_srq(),
        );
        off += XrcEthSlice::LEN;
    }
    if let Some(h) = x.feth() {
        e.header(
            "infiniband.feth",
            "FLUSH Extended Transport Header",
            off,
            h.as_bytes(),
        );
        e.u(
            "infiniband.feth.sel",
            "Selectivity Level",
            off + 3,
            1,
            h.selectivity(),
        );
        e.u(
            "infiniband.feth.plt",
            "Placement Type",
            off + 3,
            1,
            h.placement(),
        );
        off += FethSlice::LEN;
    }
    if let Some(h) = x.reth() {
        e.header(
            "infiniband.reth",
            "RDMA Extended Transport Header",
            off,
            h.as_bytes(),
        );
        e.u("infiniband.reth.va", "Virtual Address", off, 8, h.va());
        e.u("infiniband.reth.r_key", "Remote Key", off + 8, 4, h.rkey());
        e.u(
            "infiniband.reth.dmalen",
            "DMA Length",
            off + 12,
            4,
            h.dma_len(),
        );
        off += RethSlice::LEN;
    }
    if let Some(h) = x.atomic_eth() {
        e.header(
            "infiniband.atomiceth",
            "Atomic Extended Transport Header",
            off,
            h.as_bytes(),
        );
        // Wireshark names the AtomicETH address fields as the RETH ones.
        e.u("infiniband.reth.va", "Virtual Address", off, 8, h.va());
        e.u("infiniband.reth.r_key", "Remote Key", off + 8, 4, h.rkey());
        e.u(
            "infiniband.atomiceth.swapdt",
            "Swap (Or Add) Data",
            off + 12,
            8,
            h.swap_add(),
        );
        e.u(
            "infiniband.atomiceth.cmpdt",
            "Compare Data",
            off + 20,
            8,
            h.compare(),
        );
        off += AtomicEthSlice::LEN;
    }
    if let Some(h) = x.aeth() {
        e.header(
            "infiniband.aeth",
            "ACK Extended Transport Header",
            off,
            h.as_bytes(),
        );
        let s = h.syndrome_raw();
        e.u("infiniband.aeth.syndrome", "Syndrome", off, 1, s);
        e.u(
            "infiniband.aeth.syndrome.opcode",
            "Syndrome OpCode",
            off,
            1,
            (s >> 5) & 3,
        );
        match h.syndrome() {
            Syndrome::Ack { credits } => e.u(
                "infiniband.aeth.syndrome.credit_count",
                "Credit Count",
                off,
                1,
                credits,
            ),
            Syndrome::RnrNak { timer } => {
                e.u("infiniband.aeth.syndrome.timer", "Timer", off, 1, timer)
            }
            Syndrome::Nak(code) => e.u(
                "infiniband.aeth.syndrome.error_code",
                "Error Code",
                off,
                1,
                code.code(),
            ),
            Syndrome::Reserved(_) => {}
        }
        e.u(
            "infiniband.aeth.msn",
            "Message Sequence Number",
            off + 1,
            3,
            h.msn(),
        );
        off += AethSlice::LEN;
    }
    if let Some(h) = x.atomic_ack_eth() {
        e.header(
            "infiniband.atomicacketh",
            "Atomic ACK Extended Transport Header",
            off,
            h.as_bytes(),
        );
        e.u(
            "infiniband.atomicacketh.origremdt",
            "Original Remote Data",
            off,
            8,
            h.orig_rem_data(),
        );
        off += AtomicAckEthSlice::LEN;
    }
    if let Some(h) = x.immdt() {
        e.u("infiniband.immdt", "Immediate Data", off, 4, h.value());
        off += ImmDtSlice::LEN;
    }
    if let Some(h) = x.ieth() {
        e.u("infiniband.ieth", "RKey", off, 4, h.rkey());
        off += IethSlice::LEN;
    }
    if let Some(h) = x.cnp() {
        e.header(
            "infiniband.cnp",
            "Congestion Notification (reserved)",
            off,
            h.as_bytes(),
        );
        e.u(
            "infiniband.cnp.reserved_nonzero",
            "Reserved bytes not zero",
            off,
            16,
            h.reserved_nonzero(),
        );
    }
    let payload = p.payload();
    if !payload.is_empty() {
        e.header("infiniband.payload", "Payload", p.payload_offset(), payload);
    }
    if let Some(stored) = p.stored_icrc_be() {
        e.u(
            "infiniband.invariant.crc",
            "Invariant CRC",
            p.icrc_offset(),
            4,
            stored,
        );
    }
}
