//! Ethernet II and 802.1Q tags.

use super::*;

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
