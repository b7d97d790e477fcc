//! IPv4 (with its checksum) and IPv6, which is also RoCEv1's GRH.

use super::*;

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
