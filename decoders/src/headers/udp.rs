//! UDP.

use super::*;

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
