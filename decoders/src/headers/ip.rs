//! IPv4 (with its checksum) and IPv6, which is also RoCEv1's GRH.

use super::*;

field_offsets! {
    /// IPv4 field offsets (options follow at [`Ipv4Slice::MIN_LEN`]); the
    /// accessors, the builder and the field walk use these.
    pub(crate) mod ipv4_field {
        /// Version (4 bits) and IHL (4 bits).
        VER_IHL: 0..1,
        /// DSCP (6 bits) and ECN (2 bits).
        DSCP_ECN: 1..2,
        TOTAL_LEN: 2..4,
        IDENT: 4..6,
        /// The byte holding the DF and MF flags.
        FLAGS: 6..7,
        /// Flags (3 bits) and fragment offset (13 bits).
        FLAGS_FRAG: 6..8,
        TTL: 8..9,
        PROTOCOL: 9..10,
        CHECKSUM: 10..12,
        SRC: 12..16,
        DST: 16..20,
    }
}

field_offsets! {
    /// IPv6 (and GRH) field offsets.
    pub(crate) mod ipv6_field {
        /// The byte holding the version (4 bits).
        VERSION: 0..1,
        /// Version (4 bits), traffic class (8 bits), flow label (20 bits).
        VER_TC_FLOW: 0..4,
        /// The bytes holding the traffic class.
        TCLASS: 0..2,
        /// The bytes holding the flow label.
        FLOW: 1..4,
        PAYLOAD_LEN: 4..6,
        NEXT_HEADER: 6..7,
        HOP_LIMIT: 7..8,
        SRC: 8..24,
        DST: 24..40,
    }
}

/// IPv4 header including its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Slice<'a>(&'a [u8]);

impl<'a> Ipv4Slice<'a> {
    pub const MIN_LEN: usize = 20;

    #[inline]
    pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
        let fixed = take(frame, offset, Self::MIN_LEN, Layer::Ipv4)?;
        let version = u8_at(fixed, ipv4_field::VER_IHL.start) >> 4;
        if version != 4 {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "version",
                version.into(),
            ));
        }
        let ihl_bytes = usize::from(u8_at(fixed, ipv4_field::VER_IHL.start) & 0x0F) * 4;
        if ihl_bytes < Self::MIN_LEN {
            return Err(DecodeError::invalid(
                Layer::Ipv4,
                offset,
                "header length (bytes)",
                ihl_bytes as u64,
            ));
        }
        let hdr = take(frame, offset, ihl_bytes, Layer::Ipv4)?;
        let total = usize::from(u16_at(hdr, ipv4_field::TOTAL_LEN.start));
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
    /// Bytes of IPv4 options (empty without options).
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        self.0.get(Self::MIN_LEN..).unwrap_or(&[])
    }
    /// Recompute the header checksum and compare.
    #[inline]
    pub fn checksum_ok(&self) -> bool {
        ipv4_checksum(self.0) == 0
    }
}

accessors!(Ipv4Slice, ipv4_field {
    dscp: u8 = u8_at(DSCP_ECN) |v| v >> 2;
    ecn: u8 = u8_at(DSCP_ECN) |v| v & 3;
    total_len: u16 = u16_at(TOTAL_LEN);
    identification: u16 = u16_at(IDENT);
    dont_fragment: bool = u8_at(FLAGS) |v| v & 0x40 != 0;
    more_fragments: bool = u8_at(FLAGS) |v| v & 0x20 != 0;
    fragment_offset: u16 = u16_at(FLAGS_FRAG) |v| v & 0x1FFF;
    ttl: u8 = u8_at(TTL);
    protocol: u8 = u8_at(PROTOCOL);
    checksum: u16 = u16_at(CHECKSUM);
    src: [u8; 4] = array_at(SRC);
    dst: [u8; 4] = array_at(DST);
});

/// The one's complement of the one's-complement sum of an IPv4 header's
/// 16-bit words: 0 when its stored checksum is right; over a header whose
/// checksum field is 0, the checksum to store.
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
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
        let version = u8_at(hdr, ipv6_field::VER_TC_FLOW.start) >> 4;
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
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }
}

accessors!(Ipv6Slice, ipv6_field {
    traffic_class: u8 = u16_at(TCLASS) |v| ((v >> 4) & 0xFF) as u8;
    flow_label: u32 = u32_at(VER_TC_FLOW) |v| v & 0x000F_FFFF;
    payload_len: u16 = u16_at(PAYLOAD_LEN);
    next_header: u8 = u8_at(NEXT_HEADER);
    hop_limit: u8 = u8_at(HOP_LIMIT);
    src: [u8; 16] = array_at(SRC);
    dst: [u8; 16] = array_at(DST);
});
