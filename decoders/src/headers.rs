//! Zero-copy header views over `&[u8]` and the owned header values that the
//! builders write. A view is only constructed once its whole length is
//! present, so its accessors are infallible.

use crate::error::{DecodeError, Layer, take};
use crate::wire::{array_at, u8_at, u16_at, u24_at, u32_at, u64_at};

/// Generates a fixed-length header view with `from_slice`, `as_bytes` and `LEN`.
macro_rules! fixed_view {
    ($(#[$m:meta])* $name:ident, $layer:expr, $len:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<'a>(&'a [u8]);

        impl<'a> $name<'a> {
            /// Header length in bytes.
            pub const LEN: usize = $len;

            /// View the header at `offset` of `frame`.
            #[inline]
            pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
                take(frame, offset, Self::LEN, $layer).map($name)
            }

            /// The header's bytes.
            #[inline]
            pub fn as_bytes(&self) -> &'a [u8] {
                self.0
            }
        }
    };
}

// ---------------------------------------------------------------- Ethernet

fixed_view!(
    /// Ethernet II header (without 802.1Q tags, which follow as [`VlanSlice`]s).
    EthernetSlice, Layer::Ethernet, 14
);

impl EthernetSlice<'_> {
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        array_at(self.0, 0)
    }
    #[inline]
    pub fn src(&self) -> [u8; 6] {
        array_at(self.0, 6)
    }
    /// EtherType or TPID of the first tag.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        u16_at(self.0, 12)
    }
}

fixed_view!(
    /// An 802.1Q / 802.1ad tag body: TCI and the next EtherType.
    VlanSlice, Layer::Vlan, 4
);

impl VlanSlice<'_> {
    #[inline]
    pub fn pcp(&self) -> u8 {
        u8_at(self.0, 0) >> 5
    }
    #[inline]
    pub fn dei(&self) -> bool {
        u8_at(self.0, 0) & 0x10 != 0
    }
    #[inline]
    pub fn vid(&self) -> u16 {
        u16_at(self.0, 0) & 0x0FFF
    }
    #[inline]
    pub fn ethertype(&self) -> u16 {
        u16_at(self.0, 2)
    }
}

// ---------------------------------------------------------------- IPv4

/// IPv4 header including its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Slice<'a>(&'a [u8]);

impl<'a> Ipv4Slice<'a> {
    pub const MIN_LEN: usize = 20;

    #[inline]
    pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        let fixed = take(frame, offset, Self::MIN_LEN, Layer::Ipv4)?;
        let version = fixed[0] >> 4;
        if version != 4 {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "version",
                version.into(),
            ));
        }
        let ihl_bytes = usize::from(fixed[0] & 0x0F) * 4;
        if ihl_bytes < Self::MIN_LEN {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "header length (bytes)",
                ihl_bytes as u64,
            ));
        }
        let hdr = take(frame, offset, ihl_bytes, Layer::Ipv4)?;
        let total = usize::from(u16_at(hdr, 2));
        if total < ihl_bytes {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "total length",
                total as u64,
            ));
        }
        Ok(Ipv4Slice(hdr))
    }

    /// Wrap a header whose checks already passed (the decoder keeps only
    /// its offset and length).
    #[inline]
    pub(crate) fn from_validated(hdr: &'a [u8]) -> Self {
        Ipv4Slice(hdr)
    }
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
    #[inline]
    pub fn header_len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub fn dscp(&self) -> u8 {
        u8_at(self.0, 1) >> 2
    }
    #[inline]
    pub fn ecn(&self) -> u8 {
        u8_at(self.0, 1) & 3
    }
    #[inline]
    pub fn total_len(&self) -> u16 {
        u16_at(self.0, 2)
    }
    #[inline]
    pub fn identification(&self) -> u16 {
        u16_at(self.0, 4)
    }
    #[inline]
    pub fn dont_fragment(&self) -> bool {
        u8_at(self.0, 6) & 0x40 != 0
    }
    #[inline]
    pub fn more_fragments(&self) -> bool {
        u8_at(self.0, 6) & 0x20 != 0
    }
    #[inline]
    pub fn fragment_offset(&self) -> u16 {
        u16_at(self.0, 6) & 0x1FFF
    }
    #[inline]
    pub fn ttl(&self) -> u8 {
        u8_at(self.0, 8)
    }
    #[inline]
    pub fn protocol(&self) -> u8 {
        u8_at(self.0, 9)
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        u16_at(self.0, 10)
    }
    #[inline]
    pub fn src(&self) -> [u8; 4] {
        array_at(self.0, 12)
    }
    #[inline]
    pub fn dst(&self) -> [u8; 4] {
        array_at(self.0, 16)
    }
    /// Bytes of IPv4 options (empty without options).
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        self.0.get(20..).unwrap_or(&[])
    }
    /// Recompute the header checksum and compare.
    #[inline]
    pub fn checksum_ok(&self) -> bool {
        ipv4_checksum(self.0) == 0
    }
}

/// One's-complement sum over an IPv4 header; 0 when the stored checksum is right.
pub(crate) fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in hdr.chunks(2) {
        let word = match pair {
            [a, b] => u16::from_be_bytes([*a, *b]),
            [a] => u16::from_be_bytes([*a, 0]),
            _ => 0,
        };
        sum += u32::from(word);
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

// ---------------------------------------------------------------- IPv6 / GRH

/// A 40-byte IPv6 header; RoCEv1's GRH has the same layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Slice<'a>(&'a [u8]);

impl<'a> Ipv6Slice<'a> {
    pub const LEN: usize = 40;

    /// View an IPv6 header (or a GRH when `layer` is [`Layer::Grh`]).
    #[inline]
    pub fn from_slice_as(
        frame: &'a [u8],
        offset: usize,
        layer: Layer,
    ) -> Result<Self, DecodeError> {
        let hdr = take(frame, offset, Self::LEN, layer)?;
        let version = hdr[0] >> 4;
        if version != 6 {
            return Err(DecodeError::invalid(
                layer,
                offset,
                "version",
                version.into(),
            ));
        }
        Ok(Ipv6Slice(hdr))
    }

    #[inline]
    pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        Self::from_slice_as(frame, offset, Layer::Ipv6)
    }

    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        ((u16_at(self.0, 0) >> 4) & 0xFF) as u8
    }
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }
    #[inline]
    pub fn flow_label(&self) -> u32 {
        u32_at(self.0, 0) & 0x000F_FFFF
    }
    #[inline]
    pub fn payload_len(&self) -> u16 {
        u16_at(self.0, 4)
    }
    #[inline]
    pub fn next_header(&self) -> u8 {
        u8_at(self.0, 6)
    }
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        u8_at(self.0, 7)
    }
    #[inline]
    pub fn src(&self) -> [u8; 16] {
        array_at(self.0, 8)
    }
    #[inline]
    pub fn dst(&self) -> [u8; 16] {
        array_at(self.0, 24)
    }
}

// ---------------------------------------------------------------- UDP

fixed_view!(
    /// UDP header.
    UdpSlice, Layer::Udp, 8
);

impl UdpSlice<'_> {
    #[inline]
    pub fn src_port(&self) -> u16 {
        u16_at(self.0, 0)
    }
    #[inline]
    pub fn dst_port(&self) -> u16 {
        u16_at(self.0, 2)
    }
    /// Length of UDP header + payload in bytes.
    #[inline]
    pub fn length(&self) -> u16 {
        u16_at(self.0, 4)
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        u16_at(self.0, 6)
    }
}

// ---------------------------------------------------------------- BTH

fixed_view!(
    /// Base Transport Header (12 bytes).
    BthSlice, Layer::Bth, 12
);

impl BthSlice<'_> {
    #[inline]
    pub fn opcode(&self) -> crate::Opcode {
        crate::Opcode(u8_at(self.0, 0))
    }
    #[inline]
    pub fn solicited(&self) -> bool {
        u8_at(self.0, 1) & 0x80 != 0
    }
    #[inline]
    pub fn mig_req(&self) -> bool {
        u8_at(self.0, 1) & 0x40 != 0
    }
    #[inline]
    pub fn pad_count(&self) -> u8 {
        (u8_at(self.0, 1) >> 4) & 3
    }
    #[inline]
    pub fn tver(&self) -> u8 {
        u8_at(self.0, 1) & 0x0F
    }
    #[inline]
    pub fn pkey(&self) -> u16 {
        u16_at(self.0, 2)
    }
    /// Forward ECN: the packet met congestion (RoCEv2 uses IP ECN instead).
    #[inline]
    pub fn fecn(&self) -> bool {
        u8_at(self.0, 4) & 0x80 != 0
    }
    /// Backward ECN: set in CNPs.
    #[inline]
    pub fn becn(&self) -> bool {
        u8_at(self.0, 4) & 0x40 != 0
    }
    /// The six reserved bits after FECN/BECN.
    #[inline]
    pub fn reserved6(&self) -> u8 {
        u8_at(self.0, 4) & 0x3F
    }
    #[inline]
    pub fn dest_qp(&self) -> u32 {
        u24_at(self.0, 5)
    }
    #[inline]
    pub fn ack_req(&self) -> bool {
        u8_at(self.0, 8) & 0x80 != 0
    }
    #[inline]
    pub fn reserved7(&self) -> u8 {
        u8_at(self.0, 8) & 0x7F
    }
    #[inline]
    pub fn psn(&self) -> u32 {
        u24_at(self.0, 9)
    }
    #[inline]
    pub fn to_owned(&self) -> Bth {
        Bth {
            opcode: self.opcode().0,
            solicited: self.solicited(),
            mig_req: self.mig_req(),
            pad_count: self.pad_count(),
            tver: self.tver(),
            pkey: self.pkey(),
            fecn: self.fecn(),
            becn: self.becn(),
            dest_qp: self.dest_qp(),
            ack_req: self.ack_req(),
            psn: self.psn(),
        }
    }
}

/// Owned BTH for building packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    pub solicited: bool,
    pub mig_req: bool,
    /// Written by the builder from the payload length; kept here for round trips.
    pub pad_count: u8,
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// 24 bits.
    pub dest_qp: u32,
    pub ack_req: bool,
    /// 24 bits.
    pub psn: u32,
}

impl Default for Bth {
    fn default() -> Self {
        Bth {
            opcode: 0,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 0,
            ack_req: false,
            psn: 0,
        }
    }
}

impl Bth {
    #[inline]
    pub fn write(&self, out: &mut [u8; 12]) {
        out[0] = self.opcode;
        out[1] = (u8::from(self.solicited) << 7)
            | (u8::from(self.mig_req) << 6)
            | ((self.pad_count & 3) << 4)
            | (self.tver & 0x0F);
        out[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        out[4] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        out[5..8].copy_from_slice(&self.dest_qp.to_be_bytes()[1..]);
        out[8] = u8::from(self.ack_req) << 7;
        out[9..12].copy_from_slice(&self.psn.to_be_bytes()[1..]);
    }
}

// ---------------------------------------------------------------- extended headers

fixed_view!(
    /// RDMA Extended Transport Header: virtual address, R_Key, DMA length.
    RethSlice, Layer::Reth, 16
);

impl RethSlice<'_> {
    #[inline]
    pub fn va(&self) -> u64 {
        u64_at(self.0, 0)
    }
    #[inline]
    pub fn rkey(&self) -> u32 {
        u32_at(self.0, 8)
    }
    #[inline]
    pub fn dma_len(&self) -> u32 {
        u32_at(self.0, 12)
    }
    #[inline]
    pub fn to_owned(&self) -> Reth {
        Reth {
            va: self.va(),
            rkey: self.rkey(),
            dma_len: self.dma_len(),
        }
    }
}

/// Owned RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
}

impl Reth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.rkey.to_be_bytes());
        out.extend_from_slice(&self.dma_len.to_be_bytes());
    }
}

fixed_view!(
    /// ACK Extended Transport Header: syndrome and MSN.
    AethSlice, Layer::Aeth, 4
);

impl AethSlice<'_> {
    #[inline]
    pub fn syndrome_raw(&self) -> u8 {
        u8_at(self.0, 0)
    }
    #[inline]
    pub fn syndrome(&self) -> Syndrome {
        Syndrome::from_u8(self.syndrome_raw())
    }
    #[inline]
    pub fn msn(&self) -> u32 {
        u24_at(self.0, 1)
    }
    #[inline]
    pub fn to_owned(&self) -> Aeth {
        Aeth {
            syndrome: self.syndrome_raw(),
            msn: self.msn(),
        }
    }
}

/// Owned AETH; `syndrome` is the raw byte (see [`Syndrome`] to build one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Aeth {
    pub syndrome: u8,
    /// 24 bits.
    pub msn: u32,
}

impl Aeth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        let msn = self.msn.to_be_bytes();
        out.extend_from_slice(&[self.syndrome, msn[1], msn[2], msn[3]]);
    }
}

/// NAK codes of an AETH syndrome `011x xxxx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    Reserved(u8),
}

impl NakCode {
    #[inline]
    pub fn from_u5(v: u8) -> NakCode {
        match v {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            v => NakCode::Reserved(v),
        }
    }
    #[inline]
    pub fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(v) => v & 0x1F,
        }
    }
    #[inline]
    pub fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "PSN sequence error",
            NakCode::InvalidRequest => "invalid request",
            NakCode::RemoteAccessError => "remote access error",
            NakCode::RemoteOperationalError => "remote operational error",
            NakCode::InvalidRdRequest => "invalid RD request",
            NakCode::Reserved(_) => "reserved NAK code",
        }
    }
}

/// The decoded AETH syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive ACK with its credit count (31 = credits not limited).
    Ack {
        credits: u8,
    },
    /// Receiver Not Ready NAK with the 5-bit timer code.
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
    /// Type bits `10`, or bit 7 set.
    Reserved(u8),
}

/// IBTA RNR NAK timer field values in µs × 100 (index = 5-bit code).
const RNR_TIMER_10NS: [u32; 32] = [
    65_536_000, 1_000, 2_000, 3_000, 4_000, 6_000, 8_000, 12_000, 16_000, 24_000, 32_000, 48_000,
    64_000, 96_000, 128_000, 192_000, 256_000, 384_000, 512_000, 768_000, 1_024_000, 1_536_000,
    2_048_000, 3_072_000, 4_096_000, 6_144_000, 8_192_000, 12_288_000, 16_384_000, 24_576_000,
    32_768_000, 49_152_000,
];

impl Syndrome {
    #[inline]
    pub fn from_u8(s: u8) -> Syndrome {
        let value = s & 0x1F;
        if s & 0x80 != 0 {
            return Syndrome::Reserved(s);
        }
        match (s >> 5) & 3 {
            0 => Syndrome::Ack { credits: value },
            1 => Syndrome::RnrNak { timer: value },
            3 => Syndrome::Nak(NakCode::from_u5(value)),
            _ => Syndrome::Reserved(s),
        }
    }

    #[inline]
    pub fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1F,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1F),
            Syndrome::Nak(code) => 0x60 | code.code(),
            Syndrome::Reserved(s) => s,
        }
    }

    /// The RNR NAK wait in ns (code 0 = 655.36 ms, 1 = 10 µs ... 31 = 491.52 ms).
    #[inline]
    pub fn rnr_timer_ns(timer: u8) -> u64 {
        u64::from(RNR_TIMER_10NS[usize::from(timer & 0x1F)]) * 10
    }

    #[inline]
    pub fn is_nak(self) -> bool {
        matches!(self, Syndrome::Nak(_) | Syndrome::RnrNak { .. })
    }

    /// The kind names, indexed by [`Syndrome::kind_index`].
    pub const KIND_NAMES: [&'static str; 9] = [
        "ack",
        "rnr",
        "psn_seq_err",
        "invalid_request",
        "remote_access_err",
        "remote_op_err",
        "invalid_rd_request",
        "nak_reserved",
        "reserved",
    ];

    /// A small number per kind (an index into [`Syndrome::KIND_NAMES`]), for
    /// tables that keep kinds as dictionary keys.
    #[inline]
    pub fn kind_index(self) -> u8 {
        match self {
            Syndrome::Ack { .. } => 0,
            Syndrome::RnrNak { .. } => 1,
            Syndrome::Nak(NakCode::PsnSequenceError) => 2,
            Syndrome::Nak(NakCode::InvalidRequest) => 3,
            Syndrome::Nak(NakCode::RemoteAccessError) => 4,
            Syndrome::Nak(NakCode::RemoteOperationalError) => 5,
            Syndrome::Nak(NakCode::InvalidRdRequest) => 6,
            Syndrome::Nak(NakCode::Reserved(_)) => 7,
            Syndrome::Reserved(_) => 8,
        }
    }

    /// Short kind name used in flags and JSON (`ack`, `rnr`, `psn_seq_err`, ...).
    #[inline]
    pub fn kind_name(self) -> &'static str {
        Self::KIND_NAMES[usize::from(self.kind_index())]
    }
}

fixed_view!(
    /// Atomic Extended Transport Header: VA, R_Key, swap/add data, compare data.
    AtomicEthSlice, Layer::AtomicEth, 28
);

impl AtomicEthSlice<'_> {
    #[inline]
    pub fn va(&self) -> u64 {
        u64_at(self.0, 0)
    }
    #[inline]
    pub fn rkey(&self) -> u32 {
        u32_at(self.0, 8)
    }
    #[inline]
    pub fn swap_add(&self) -> u64 {
        u64_at(self.0, 12)
    }
    #[inline]
    pub fn compare(&self) -> u64 {
        u64_at(self.0, 20)
    }
    #[inline]
    pub fn to_owned(&self) -> AtomicEth {
        AtomicEth {
            va: self.va(),
            rkey: self.rkey(),
            swap_add: self.swap_add(),
            compare: self.compare(),
        }
    }
}

/// Owned AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicEth {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

impl AtomicEth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.rkey.to_be_bytes());
        out.extend_from_slice(&self.swap_add.to_be_bytes());
        out.extend_from_slice(&self.compare.to_be_bytes());
    }
}

fixed_view!(
    /// Atomic ACK Extended Transport Header: the original remote data.
    AtomicAckEthSlice, Layer::AtomicAckEth, 8
);

impl AtomicAckEthSlice<'_> {
    #[inline]
    pub fn orig_rem_data(&self) -> u64 {
        u64_at(self.0, 0)
    }
}

fixed_view!(
    /// Immediate data (4 bytes).
    ImmDtSlice, Layer::ImmDt, 4
);

impl ImmDtSlice<'_> {
    #[inline]
    pub fn value(&self) -> u32 {
        u32_at(self.0, 0)
    }
}

fixed_view!(
    /// Invalidate Extended Transport Header: the R_Key to invalidate.
    IethSlice, Layer::Ieth, 4
);

impl IethSlice<'_> {
    #[inline]
    pub fn rkey(&self) -> u32 {
        u32_at(self.0, 0)
    }
}

fixed_view!(
    /// Datagram Extended Transport Header: Q_Key and source QP.
    DethSlice, Layer::Deth, 8
);

impl DethSlice<'_> {
    #[inline]
    pub fn qkey(&self) -> u32 {
        u32_at(self.0, 0)
    }
    #[inline]
    pub fn src_qp(&self) -> u32 {
        u24_at(self.0, 5)
    }
    #[inline]
    pub fn to_owned(&self) -> Deth {
        Deth {
            qkey: self.qkey(),
            src_qp: self.src_qp(),
        }
    }
}

/// Owned DETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deth {
    pub qkey: u32,
    /// 24 bits.
    pub src_qp: u32,
}

impl Deth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.qkey.to_be_bytes());
        out.push(0);
        out.extend_from_slice(&self.src_qp.to_be_bytes()[1..]);
    }
}

fixed_view!(
    /// XRC Extended Transport Header: the XRC shared receive queue number.
    XrcEthSlice, Layer::Xrceth, 4
);

impl XrcEthSlice<'_> {
    #[inline]
    pub fn xrc_srq(&self) -> u32 {
        u24_at(self.0, 1)
    }
}

fixed_view!(
    /// Reliable Datagram Extended Transport Header: the EE context.
    RdethSlice, Layer::Rdeth, 4
);

impl RdethSlice<'_> {
    #[inline]
    pub fn ee_context(&self) -> u32 {
        u24_at(self.0, 1)
    }
}

fixed_view!(
    /// FLUSH Extended Transport Header: selectivity level and placement type.
    FethSlice, Layer::Feth, 4
);

impl FethSlice<'_> {
    #[inline]
    pub fn selectivity(&self) -> u8 {
        (u8_at(self.0, 3) >> 4) & 3
    }
    #[inline]
    pub fn placement(&self) -> u8 {
        u8_at(self.0, 3) & 0x0F
    }
}

fixed_view!(
    /// The 16 reserved bytes that follow the BTH of a RoCEv2 CNP.
    CnpSlice, Layer::Cnp, 16
);

impl CnpSlice<'_> {
    /// Number of reserved bytes that are not zero (a conforming CNP has none).
    #[inline]
    pub fn reserved_nonzero(&self) -> u32 {
        self.0.iter().filter(|b| **b != 0).count() as u32
    }
}

/// The extended headers of one packet; each present only if its opcode has it
/// and the capture holds it. Kept as byte offsets into the frame (0 = absent)
/// so that a decoded packet stays small; the accessors hand out views.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtHeaders<'a> {
    frame: &'a [u8],
    offsets: [u16; 11],
}

/// Index of each extended header in [`ExtHeaders`]'s offset table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtKind {
    Rdeth,
    Deth,
    Xrceth,
    Feth,
    Reth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Cnp,
}

macro_rules! ext_accessor {
    ($(#[$m:meta])* $name:ident, $kind:ident, $ty:ident) => {
        $(#[$m])*
        #[inline]
        pub fn $name(&self) -> Option<$ty<'a>> {
            match self.offsets[ExtKind::$kind as usize] {
                0 => None,
                off => $ty::from_slice(self.frame, usize::from(off)).ok(),
            }
        }
    };
}

impl<'a> ExtHeaders<'a> {
    /// The frame the offsets point into.
    #[inline]
    pub fn frame(&self) -> &'a [u8] {
        self.frame
    }

    pub(crate) fn new(frame: &'a [u8]) -> Self {
        ExtHeaders {
            frame,
            offsets: [0; 11],
        }
    }

    /// Record that header `kind` starts at `offset` (always after the BTH, so never 0).
    #[inline]
    pub(crate) fn set(&mut self, kind: ExtKind, offset: usize) {
        self.offsets[kind as usize] = u16::try_from(offset).unwrap_or(0);
    }

    ext_accessor!(rdeth, Rdeth, RdethSlice);
    ext_accessor!(deth, Deth, DethSlice);
    ext_accessor!(xrceth, Xrceth, XrcEthSlice);
    ext_accessor!(feth, Feth, FethSlice);
    ext_accessor!(reth, Reth, RethSlice);
    ext_accessor!(atomic_eth, AtomicEth, AtomicEthSlice);
    ext_accessor!(aeth, Aeth, AethSlice);
    ext_accessor!(atomic_ack_eth, AtomicAckEth, AtomicAckEthSlice);
    ext_accessor!(immdt, ImmDt, ImmDtSlice);
    ext_accessor!(ieth, Ieth, IethSlice);
    ext_accessor!(cnp, Cnp, CnpSlice);
}

/// Owned extended headers for the builder. Which ones are written is decided
/// by the opcode (see [`crate::Opcode::headers`]); missing values are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ext {
    pub rdeth_ee_context: u32,
    pub deth: Deth,
    pub xrc_srq: u32,
    pub feth_selectivity: u8,
    pub feth_placement: u8,
    pub reth: Reth,
    pub atomic_eth: AtomicEth,
    pub aeth: Aeth,
    pub atomic_ack_orig: u64,
    pub immdt: u32,
    pub ieth_rkey: u32,
}

impl ExtHeaders<'_> {
    /// The owned values of the present headers (absent ones are zero).
    #[inline]
    pub fn to_owned(&self) -> Ext {
        Ext {
            rdeth_ee_context: self.rdeth().map_or(0, |h| h.ee_context()),
            deth: self.deth().map(|h| h.to_owned()).unwrap_or_default(),
            xrc_srq: self.xrceth().map_or(0, |h| h.xrc_srq()),
            feth_selectivity: self.feth().map_or(0, |h| h.selectivity()),
            feth_placement: self.feth().map_or(0, |h| h.placement()),
            reth: self.reth().map(|h| h.to_owned()).unwrap_or_default(),
            atomic_eth: self.atomic_eth().map(|h| h.to_owned()).unwrap_or_default(),
            aeth: self.aeth().map(|h| h.to_owned()).unwrap_or_default(),
            atomic_ack_orig: self.atomic_ack_eth().map_or(0, |h| h.orig_rem_data()),
            immdt: self.immdt().map_or(0, |h| h.value()),
            ieth_rkey: self.ieth().map_or(0, |h| h.rkey()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndrome_decoding_covers_every_byte() {
        assert_eq!(Syndrome::from_u8(0x1F), Syndrome::Ack { credits: 31 });
        assert_eq!(
            Syndrome::from_u8(0x60),
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(
            Syndrome::from_u8(0x63),
            Syndrome::Nak(NakCode::RemoteOperationalError)
        );
        assert_eq!(Syndrome::from_u8(0x2E), Syndrome::RnrNak { timer: 14 });
        assert_eq!(Syndrome::from_u8(0x41), Syndrome::Reserved(0x41));
        assert_eq!(Syndrome::from_u8(0x80), Syndrome::Reserved(0x80));
        for s in 0..=255u8 {
            let d = Syndrome::from_u8(s);
            if s & 0x80 == 0 {
                assert_eq!(d.to_u8(), s);
            }
        }
        assert_eq!(Syndrome::rnr_timer_ns(0), 655_360_000);
        assert_eq!(Syndrome::rnr_timer_ns(1), 10_000);
        assert_eq!(Syndrome::rnr_timer_ns(31), 491_520_000);
    }

    #[test]
    fn ipv4_rejects_bad_ihl_and_version() {
        let mut h = [0u8; 20];
        h[0] = 0x44;
        let e = Ipv4Slice::from_slice(&h, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "IPv4 at byte 0: invalid header length (bytes) (16)"
        );
        h[0] = 0x65;
        assert!(Ipv4Slice::from_slice(&h, 0).is_err());
    }
}
