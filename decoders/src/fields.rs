//! Every decoded header field as (name, byte range, value), named as
//! Wireshark names it. One walk serves the JSON output, the detail tree, the
//! hex view's highlighting and the display filter.
//!
//! Names Wireshark does not have follow its style and are listed in
//! decoders/FIELDS.md: `infiniband.bth.fecn`, `infiniband.bth.becn`,
//! `infiniband.xrceth.xrcsrq`, `infiniband.feth.sel`, `infiniband.feth.plt`,
//! `infiniband.cnp.reserved_nonzero`. As in Wireshark, the AtomicETH's
//! address and key are `infiniband.reth.va` and `infiniband.reth.r_key`.

use core::ops::Range;

use crate::headers::*;
use crate::packet::{IpHeader, Packet};

/// Every name [`Packet::for_each_field`] can emit, sorted: the display
/// filter refuses names outside it (and suggests the nearest), as Wireshark
/// does. A test walks the fuzz corpus and checks both ways.
pub const FIELD_NAMES: &[&str] = &[
    "erf",
    "erf.flags",
    "erf.lctr",
    "erf.rlen",
    "erf.ts",
    "erf.types.ext_header",
    "erf.types.type",
    "erf.wlen",
    "eth",
    "eth.dst",
    "eth.src",
    "eth.type",
    "infiniband.aeth",
    "infiniband.aeth.msn",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.syndrome.credit_count",
    "infiniband.aeth.syndrome.error_code",
    "infiniband.aeth.syndrome.opcode",
    "infiniband.aeth.syndrome.timer",
    "infiniband.atomicacketh",
    "infiniband.atomicacketh.origremdt",
    "infiniband.atomiceth",
    "infiniband.atomiceth.cmpdt",
    "infiniband.atomiceth.swapdt",
    "infiniband.bth",
    "infiniband.bth.a",
    "infiniband.bth.becn",
    "infiniband.bth.destqp",
    "infiniband.bth.fecn",
    "infiniband.bth.m",
    "infiniband.bth.opcode",
    "infiniband.bth.p_key",
    "infiniband.bth.padcnt",
    "infiniband.bth.psn",
    "infiniband.bth.reserved7",
    "infiniband.bth.se",
    "infiniband.bth.tver",
    "infiniband.cnp",
    "infiniband.cnp.reserved_nonzero",
    "infiniband.deth",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "infiniband.feth",
    "infiniband.feth.plt",
    "infiniband.feth.sel",
    "infiniband.grh",
    "infiniband.grh.dgid",
    "infiniband.grh.flowlabel",
    "infiniband.grh.hoplmt",
    "infiniband.grh.ipver",
    "infiniband.grh.nxthdr",
    "infiniband.grh.paylen",
    "infiniband.grh.sgid",
    "infiniband.grh.tclass",
    "infiniband.ieth",
    "infiniband.immdt",
    "infiniband.invariant.crc",
    "infiniband.lrh",
    "infiniband.lrh.dlid",
    "infiniband.lrh.lnh",
    "infiniband.lrh.lver",
    "infiniband.lrh.pktlen",
    "infiniband.lrh.reserved2",
    "infiniband.lrh.reserved5",
    "infiniband.lrh.sl",
    "infiniband.lrh.slid",
    "infiniband.lrh.vl",
    "infiniband.mad",
    "infiniband.mad.attributeid",
    "infiniband.mad.attributemodifier",
    "infiniband.mad.baseversion",
    "infiniband.mad.classspecific",
    "infiniband.mad.classversion",
    "infiniband.mad.method",
    "infiniband.mad.mgmtclass",
    "infiniband.mad.status",
    "infiniband.mad.transactionid",
    "infiniband.payload",
    "infiniband.rdeth",
    "infiniband.rdeth.eecnxt",
    "infiniband.reth",
    "infiniband.reth.dmalen",
    "infiniband.reth.r_key",
    "infiniband.reth.va",
    "infiniband.variant.crc",
    "infiniband.xrceth",
    "infiniband.xrceth.xrcsrq",
    "ip",
    "ip.checksum",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ip.dst",
    "ip.flags.df",
    "ip.flags.mf",
    "ip.frag_offset",
    "ip.hdr_len",
    "ip.id",
    "ip.len",
    "ip.proto",
    "ip.src",
    "ip.ttl",
    "ipv6",
    "ipv6.dst",
    "ipv6.flow",
    "ipv6.hlim",
    "ipv6.nxt",
    "ipv6.plen",
    "ipv6.src",
    "ipv6.tclass",
    "ipv6.tclass.dscp",
    "ipv6.tclass.ecn",
    "udp",
    "udp.checksum",
    "udp.dstport",
    "udp.length",
    "udp.srcport",
    "vlan",
    "vlan.dei",
    "vlan.etype",
    "vlan.id",
    "vlan.priority",
];

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
    /// A field at `range` (a header's `*_field` constant) of the header at
    /// `base`.
    fn field_at(
        &mut self,
        name: &'static str,
        label: &'static str,
        base: usize,
        range: Range<usize>,
        value: FieldValue<'a>,
    ) {
        self.field(name, label, base + range.start, range.len(), value);
    }
    fn u_at(
        &mut self,
        name: &'static str,
        label: &'static str,
        base: usize,
        range: Range<usize>,
        v: impl Into<u64>,
    ) {
        self.field_at(name, label, base, range, FieldValue::U64(v.into()));
    }
    fn b_at(
        &mut self,
        name: &'static str,
        label: &'static str,
        base: usize,
        range: Range<usize>,
        v: bool,
    ) {
        self.field_at(name, label, base, range, FieldValue::Bool(v));
    }
}

impl<'a> Packet<'a> {
    /// Call `f` for every header and field in wire order.
    pub fn for_each_field(&self, f: &mut dyn FnMut(&Field<'a>)) {
        let mut e = Emit { f };
        if let Some(eth) = self.eth() {
            e.header("eth", "Ethernet II", 0, eth.as_bytes());
            e.field_at(
                "eth.dst",
                "Destination",
                0,
                eth_field::DST,
                FieldValue::Mac(eth.dst()),
            );
            e.field_at(
                "eth.src",
                "Source",
                0,
                eth_field::SRC,
                FieldValue::Mac(eth.src()),
            );
            e.u_at("eth.type", "Type", 0, eth_field::ETHERTYPE, eth.ethertype());
            let mut off = EthernetSlice::LEN;
            for tag in self.vlans() {
                e.header("vlan", "802.1Q Virtual LAN", off, tag.as_bytes());
                e.u_at(
                    "vlan.priority",
                    "Priority",
                    off,
                    vlan_field::PCP_DEI,
                    tag.pcp(),
                );
                e.b_at("vlan.dei", "DEI", off, vlan_field::PCP_DEI, tag.dei());
                e.u_at("vlan.id", "ID", off, vlan_field::TCI, tag.vid());
                e.u_at(
                    "vlan.etype",
                    "Type",
                    off,
                    vlan_field::ETHERTYPE,
                    tag.ethertype(),
                );
                off += VlanSlice::LEN;
            }
        }
        let n = self.net_offset();
        match self.ip() {
            Some(IpHeader::V4(ip)) => {
                e.header("ip", "Internet Protocol Version 4", n, ip.as_bytes());
                e.u_at(
                    "ip.hdr_len",
                    "Header Length",
                    n,
                    ipv4_field::VER_IHL,
                    ip.header_len() as u64,
                );
                e.u_at(
                    "ip.dsfield.dscp",
                    "Differentiated Services Codepoint",
                    n,
                    ipv4_field::DSCP_ECN,
                    ip.dscp(),
                );
                e.u_at(
                    "ip.dsfield.ecn",
                    "Explicit Congestion Notification",
                    n,
                    ipv4_field::DSCP_ECN,
                    ip.ecn(),
                );
                e.u_at(
                    "ip.len",
                    "Total Length",
                    n,
                    ipv4_field::TOTAL_LEN,
                    ip.total_len(),
                );
                e.u_at(
                    "ip.id",
                    "Identification",
                    n,
                    ipv4_field::IDENT,
                    ip.identification(),
                );
                e.b_at(
                    "ip.flags.df",
                    "Don't fragment",
                    n,
                    ipv4_field::FLAGS,
                    ip.dont_fragment(),
                );
                e.b_at(
                    "ip.flags.mf",
                    "More fragments",
                    n,
                    ipv4_field::FLAGS,
                    ip.more_fragments(),
                );
                e.u_at(
                    "ip.frag_offset",
                    "Fragment Offset",
                    n,
                    ipv4_field::FLAGS_FRAG,
                    ip.fragment_offset(),
                );
                e.u_at("ip.ttl", "Time to Live", n, ipv4_field::TTL, ip.ttl());
                e.u_at(
                    "ip.proto",
                    "Protocol",
                    n,
                    ipv4_field::PROTOCOL,
                    ip.protocol(),
                );
                e.u_at(
                    "ip.checksum",
                    "Header Checksum",
                    n,
                    ipv4_field::CHECKSUM,
                    ip.checksum(),
                );
                e.field_at(
                    "ip.src",
                    "Source Address",
                    n,
                    ipv4_field::SRC,
                    FieldValue::Ipv4(ip.src()),
                );
                e.field_at(
                    "ip.dst",
                    "Destination Address",
                    n,
                    ipv4_field::DST,
                    FieldValue::Ipv4(ip.dst()),
                );
            }
            Some(IpHeader::V6(ip)) => {
                e.header("ipv6", "Internet Protocol Version 6", n, ip.as_bytes());
                e.u_at(
                    "ipv6.tclass",
                    "Traffic Class",
                    n,
                    ipv6_field::TCLASS,
                    ip.traffic_class(),
                );
                e.u_at(
                    "ipv6.tclass.dscp",
                    "Differentiated Services Codepoint",
                    n,
                    ipv6_field::TCLASS,
                    ip.dscp(),
                );
                e.u_at(
                    "ipv6.tclass.ecn",
                    "Explicit Congestion Notification",
                    n,
                    ipv6_field::TCLASS,
                    ip.ecn(),
                );
                e.u_at(
                    "ipv6.flow",
                    "Flow Label",
                    n,
                    ipv6_field::FLOW,
                    ip.flow_label(),
                );
                e.u_at(
                    "ipv6.plen",
                    "Payload Length",
                    n,
                    ipv6_field::PAYLOAD_LEN,
                    ip.payload_len(),
                );
                e.u_at(
                    "ipv6.nxt",
                    "Next Header",
                    n,
                    ipv6_field::NEXT_HEADER,
                    ip.next_header(),
                );
                e.u_at(
                    "ipv6.hlim",
                    "Hop Limit",
                    n,
                    ipv6_field::HOP_LIMIT,
                    ip.hop_limit(),
                );
                e.field_at(
                    "ipv6.src",
                    "Source Address",
                    n,
                    ipv6_field::SRC,
                    FieldValue::Ipv6(ip.src()),
                );
                e.field_at(
                    "ipv6.dst",
                    "Destination Address",
                    n,
                    ipv6_field::DST,
                    FieldValue::Ipv6(ip.dst()),
                );
            }
            None => {}
        }
        if let Some(erf) = self.erf() {
            emit_erf(&mut e, erf);
        }
        if let Some(lrh) = self.lrh() {
            emit_lrh(&mut e, self.net_offset(), lrh);
        }
        if let Some(udp) = self.udp() {
            let o = self.udp_offset();
            e.header("udp", "User Datagram Protocol", o, udp.as_bytes());
            e.u_at(
                "udp.srcport",
                "Source Port",
                o,
                udp_field::SRC_PORT,
                udp.src_port(),
            );
            e.u_at(
                "udp.dstport",
                "Destination Port",
                o,
                udp_field::DST_PORT,
                udp.dst_port(),
            );
            e.u_at("udp.length", "Length", o, udp_field::LENGTH, udp.length());
            e.u_at(
                "udp.checksum",
                "Checksum",
                o,
                udp_field::CHECKSUM,
                udp.checksum(),
            );
        }
        if let Some(bth) = self.bth() {
            emit_roce(&mut e, self, bth);
        }
    }
}

fn emit_erf<'a>(e: &mut Emit<'_, 'a>, h: ErfSlice<'a>) {
    e.header("erf", "Extensible Record Format", 0, h.as_bytes());
    e.u_at("erf.ts", "Timestamp", 0, erf_field::TS, h.ts_raw());
    e.u_at(
        "erf.types.type",
        "Type",
        0,
        erf_field::TYPE,
        h.record_type(),
    );
    e.b_at(
        "erf.types.ext_header",
        "Extension header present",
        0,
        erf_field::TYPE,
        h.has_ext(),
    );
    e.u_at("erf.flags", "Flags", 0, erf_field::FLAGS, h.flags());
    e.u_at("erf.rlen", "Record length", 0, erf_field::RLEN, h.rlen());
    e.u_at("erf.lctr", "Loss counter", 0, erf_field::LCTR, h.lctr());
    e.u_at("erf.wlen", "Wire length", 0, erf_field::WLEN, h.wlen());
}

fn emit_lrh<'a>(e: &mut Emit<'_, 'a>, o: usize, h: LrhSlice<'a>) {
    e.header("infiniband.lrh", "Local Route Header", o, h.as_bytes());
    e.u_at(
        "infiniband.lrh.vl",
        "Virtual Lane",
        o,
        lrh_field::VL_LVER,
        h.vl(),
    );
    e.u_at(
        "infiniband.lrh.lver",
        "Link Version",
        o,
        lrh_field::VL_LVER,
        h.lver(),
    );
    e.u_at(
        "infiniband.lrh.sl",
        "Service Level",
        o,
        lrh_field::SL_LNH,
        h.sl(),
    );
    e.u_at(
        "infiniband.lrh.reserved2",
        "Reserved (2 bits)",
        o,
        lrh_field::SL_LNH,
        h.reserved2(),
    );
    e.u_at(
        "infiniband.lrh.lnh",
        "Link Next Header",
        o,
        lrh_field::SL_LNH,
        h.lnh().bits(),
    );
    e.u_at(
        "infiniband.lrh.dlid",
        "Destination Local ID",
        o,
        lrh_field::DLID,
        h.dlid(),
    );
    e.u_at(
        "infiniband.lrh.reserved5",
        "Reserved (5 bits)",
        o,
        lrh_field::PKTLEN,
        h.reserved5(),
    );
    e.u_at(
        "infiniband.lrh.pktlen",
        "Packet Length",
        o,
        lrh_field::PKTLEN,
        h.pkt_len_words(),
    );
    e.u_at(
        "infiniband.lrh.slid",
        "Source Local ID",
        o,
        lrh_field::SLID,
        h.slid(),
    );
}

fn emit_roce<'a>(e: &mut Emit<'_, 'a>, p: &Packet<'a>, b: BthSlice<'a>) {
    if let Some(grh) = p.grh() {
        let o = p.net_offset() + if p.lrh().is_some() { LrhSlice::LEN } else { 0 };
        e.header("infiniband.grh", "Global Route Header", o, grh.as_bytes());
        e.u_at(
            "infiniband.grh.ipver",
            "IP Version",
            o,
            ipv6_field::VERSION,
            6u8,
        );
        e.u_at(
            "infiniband.grh.tclass",
            "Traffic Class",
            o,
            ipv6_field::TCLASS,
            grh.traffic_class(),
        );
        e.u_at(
            "infiniband.grh.flowlabel",
            "Flow Label",
            o,
            ipv6_field::FLOW,
            grh.flow_label(),
        );
        e.u_at(
            "infiniband.grh.paylen",
            "Payload Length",
            o,
            ipv6_field::PAYLOAD_LEN,
            grh.payload_len(),
        );
        e.u_at(
            "infiniband.grh.nxthdr",
            "Next Header",
            o,
            ipv6_field::NEXT_HEADER,
            grh.next_header(),
        );
        e.u_at(
            "infiniband.grh.hoplmt",
            "Hop Limit",
            o,
            ipv6_field::HOP_LIMIT,
            grh.hop_limit(),
        );
        e.field_at(
            "infiniband.grh.sgid",
            "Source GID",
            o,
            ipv6_field::SRC,
            FieldValue::Ipv6(grh.src()),
        );
        e.field_at(
            "infiniband.grh.dgid",
            "Destination GID",
            o,
            ipv6_field::DST,
            FieldValue::Ipv6(grh.dst()),
        );
    }
    let o = p.bth_offset();
    e.header("infiniband.bth", "Base Transport Header", o, b.as_bytes());
    e.u_at(
        "infiniband.bth.opcode",
        "Opcode",
        o,
        bth_field::OPCODE,
        b.opcode().0,
    );
    e.b_at(
        "infiniband.bth.se",
        "Solicited Event",
        o,
        bth_field::FLAGS,
        b.solicited(),
    );
    e.b_at(
        "infiniband.bth.m",
        "MigReq",
        o,
        bth_field::FLAGS,
        b.mig_req(),
    );
    e.u_at(
        "infiniband.bth.padcnt",
        "Pad Count",
        o,
        bth_field::FLAGS,
        b.pad_count(),
    );
    e.u_at(
        "infiniband.bth.tver",
        "Header Version",
        o,
        bth_field::FLAGS,
        b.tver(),
    );
    e.u_at(
        "infiniband.bth.p_key",
        "Partition Key",
        o,
        bth_field::PKEY,
        b.pkey(),
    );
    e.b_at(
        "infiniband.bth.fecn",
        "Forward ECN",
        o,
        bth_field::ECN,
        b.fecn(),
    );
    e.b_at(
        "infiniband.bth.becn",
        "Backward ECN",
        o,
        bth_field::ECN,
        b.becn(),
    );
    e.u_at(
        "infiniband.bth.destqp",
        "Destination Queue Pair",
        o,
        bth_field::DEST_QP,
        b.dest_qp(),
    );
    e.b_at(
        "infiniband.bth.a",
        "Acknowledge Request",
        o,
        bth_field::ACK_REQ,
        b.ack_req(),
    );
    e.u_at(
        "infiniband.bth.reserved7",
        "Reserved (7 bits)",
        o,
        bth_field::ACK_REQ,
        b.reserved7(),
    );
    e.u_at(
        "infiniband.bth.psn",
        "Packet Sequence Number",
        o,
        bth_field::PSN,
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
        e.u_at(
            "infiniband.rdeth.eecnxt",
            "E2E Context",
            off,
            rdeth_field::EE_CONTEXT,
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
        e.u_at(
            "infiniband.deth.q_key",
            "Queue Key",
            off,
            deth_field::QKEY,
            h.qkey(),
        );
        e.u_at(
            "infiniband.deth.srcqp",
            "Source Queue Pair",
            off,
            deth_field::SRC_QP,
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
        e.u_at(
            "infiniband.xrceth.xrcsrq",
            "XRC Shared Receive Queue",
            off,
            xrceth_field::XRC_SRQ,
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
        e.u_at(
            "infiniband.feth.sel",
            "Selectivity Level",
            off,
            feth_field::SEL_PLT,
            h.selectivity(),
        );
        e.u_at(
            "infiniband.feth.plt",
            "Placement Type",
            off,
            feth_field::SEL_PLT,
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
        e.u_at(
            "infiniband.reth.va",
            "Virtual Address",
            off,
            reth_field::VA,
            h.va(),
        );
        e.u_at(
            "infiniband.reth.r_key",
            "Remote Key",
            off,
            reth_field::RKEY,
            h.rkey(),
        );
        e.u_at(
            "infiniband.reth.dmalen",
            "DMA Length",
            off,
            reth_field::DMA_LEN,
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
        e.u_at(
            "infiniband.reth.va",
            "Virtual Address",
            off,
            atomic_eth_field::VA,
            h.va(),
        );
        e.u_at(
            "infiniband.reth.r_key",
            "Remote Key",
            off,
            atomic_eth_field::RKEY,
            h.rkey(),
        );
        e.u_at(
            "infiniband.atomiceth.swapdt",
            "Swap (Or Add) Data",
            off,
            atomic_eth_field::SWAP_ADD,
            h.swap_add(),
        );
        e.u_at(
            "infiniband.atomiceth.cmpdt",
            "Compare Data",
            off,
            atomic_eth_field::COMPARE,
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
        e.u_at(
            "infiniband.aeth.syndrome",
            "Syndrome",
            off,
            aeth_field::SYNDROME,
            s,
        );
        e.u_at(
            "infiniband.aeth.syndrome.opcode",
            "Syndrome OpCode",
            off,
            aeth_field::SYNDROME,
            (s >> 5) & 3,
        );
        match h.syndrome() {
            Syndrome::Ack { credits } => e.u_at(
                "infiniband.aeth.syndrome.credit_count",
                "Credit Count",
                off,
                aeth_field::SYNDROME,
                credits,
            ),
            Syndrome::RnrNak { timer } => e.u_at(
                "infiniband.aeth.syndrome.timer",
                "Timer",
                off,
                aeth_field::SYNDROME,
                timer,
            ),
            Syndrome::Nak(code) => e.u_at(
                "infiniband.aeth.syndrome.error_code",
                "Error Code",
                off,
                aeth_field::SYNDROME,
                code.code(),
            ),
            Syndrome::Reserved(_) => {}
        }
        e.u_at(
            "infiniband.aeth.msn",
            "Message Sequence Number",
            off,
            aeth_field::MSN,
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
        e.u_at(
            "infiniband.atomicacketh.origremdt",
            "Original Remote Data",
            off,
            atomic_ack_eth_field::ORIG_REM_DATA,
            h.orig_rem_data(),
        );
        off += AtomicAckEthSlice::LEN;
    }
    if let Some(h) = x.immdt() {
        e.u_at(
            "infiniband.immdt",
            "Immediate Data",
            off,
            immdt_field::VALUE,
            h.value(),
        );
        off += ImmDtSlice::LEN;
    }
    if let Some(h) = x.ieth() {
        e.u_at("infiniband.ieth", "RKey", off, ieth_field::RKEY, h.rkey());
        off += IethSlice::LEN;
    }
    if let Some(h) = x.cnp() {
        e.header(
            "infiniband.cnp",
            "Congestion Notification (reserved)",
            off,
            h.as_bytes(),
        );
        e.u_at(
            "infiniband.cnp.reserved_nonzero",
            "Reserved bytes not zero",
            off,
            cnp_field::RESERVED,
            h.reserved_nonzero(),
        );
    }
    let payload = p.payload();
    if let Some(mad) = p.mad() {
        emit_mad(e, p.payload_offset(), mad);
    } else if !payload.is_empty() {
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
    if let Some(stored) = p.stored_vcrc_be() {
        e.u(
            "infiniband.variant.crc",
            "Variant CRC",
            p.icrc_offset() + 4,
            2,
            stored,
        );
    }
}

fn emit_mad<'a>(e: &mut Emit<'_, 'a>, o: usize, m: crate::mad::MadView<'a>) {
    use crate::mad::mad_field as f;
    e.header("infiniband.mad", "MAD Header", o, m.bytes());
    let fields: [(&'static str, &'static str, Range<usize>, u64); 9] = [
        (
            "infiniband.mad.baseversion",
            "Base Version",
            f::BASE_VERSION,
            m.base_version().into(),
        ),
        (
            "infiniband.mad.mgmtclass",
            "Management Class",
            f::MGMT_CLASS,
            m.mgmt_class().into(),
        ),
        (
            "infiniband.mad.classversion",
            "Class Version",
            f::CLASS_VERSION,
            m.class_version().into(),
        ),
        (
            "infiniband.mad.method",
            "Method",
            f::METHOD,
            m.method().into(),
        ),
        (
            "infiniband.mad.status",
            "Status",
            f::STATUS,
            m.status().into(),
        ),
        (
            "infiniband.mad.classspecific",
            "Class Specific",
            f::CLASS_SPECIFIC,
            m.class_specific().into(),
        ),
        (
            "infiniband.mad.transactionid",
            "Transaction ID",
            f::TID,
            m.transaction_id(),
        ),
        (
            "infiniband.mad.attributeid",
            "Attribute ID",
            f::ATTRIBUTE_ID,
            m.attribute_id().into(),
        ),
        (
            "infiniband.mad.attributemodifier",
            "Attribute Modifier",
            f::ATTRIBUTE_MODIFIER,
            m.attribute_modifier().into(),
        ),
    ];
    for (name, label, range, v) in fields {
        e.u_at(name, label, o, range, v);
    }
}
