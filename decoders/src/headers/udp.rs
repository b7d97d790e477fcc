//! UDP.

use super::*;

/// UDP field offsets; the accessors, the builder and the field walk use
/// these.
pub(crate) mod udp_field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    /// UDP header + payload, bytes.
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

fixed_view!(
    /// UDP header.
    UdpSlice, Layer::Udp, 8
);

impl UdpSlice<'_> {
    #[inline]
    pub fn src_port(&self) -> u16 {
        u16_at(self.0, udp_field::SRC_PORT.start)
    }
    #[inline]
    pub fn dst_port(&self) -> u16 {
        u16_at(self.0, udp_field::DST_PORT.start)
    }
    /// Length of UDP header + payload in bytes.
    #[inline]
    pub fn length(&self) -> u16 {
        u16_at(self.0, udp_field::LENGTH.start)
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        u16_at(self.0, udp_field::CHECKSUM.start)
    }
}
