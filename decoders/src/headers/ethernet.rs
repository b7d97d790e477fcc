//! Ethernet II and 802.1Q tags.

use super::*;

/// Ethernet II field offsets; the accessors, the builder and the field walk
/// use these.
pub(crate) mod eth_field {
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    /// EtherType, or the TPID of the first tag.
    pub const ETHERTYPE: Range<usize> = 12..14;
}

/// 802.1Q tag field offsets (after the TPID).
pub(crate) mod vlan_field {
    use core::ops::Range;
    /// The byte holding PCP (3 bits) and DEI (1 bit).
    pub const PCP_DEI: Range<usize> = 0..1;
    /// Tag control information: PCP, DEI, VID (12 bits).
    pub const TCI: Range<usize> = 0..2;
    pub const ETHERTYPE: Range<usize> = 2..4;
}

fixed_view!(
    /// Ethernet II header (without 802.1Q tags, which follow as [`VlanSlice`]s).
    EthernetSlice, Layer::Ethernet, 14
);

impl EthernetSlice<'_> {
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        array_at(self.0, eth_field::DST.start)
    }
    #[inline]
    pub fn src(&self) -> [u8; 6] {
        array_at(self.0, eth_field::SRC.start)
    }
    /// EtherType or TPID of the first tag.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        u16_at(self.0, eth_field::ETHERTYPE.start)
    }
}

fixed_view!(
    /// An 802.1Q / 802.1ad tag body: TCI and the next EtherType.
    VlanSlice, Layer::Vlan, 4
);

impl VlanSlice<'_> {
    #[inline]
    pub fn pcp(&self) -> u8 {
        u8_at(self.0, vlan_field::PCP_DEI.start) >> 5
    }
    #[inline]
    pub fn dei(&self) -> bool {
        u8_at(self.0, vlan_field::PCP_DEI.start) & 0x10 != 0
    }
    #[inline]
    pub fn vid(&self) -> u16 {
        u16_at(self.0, vlan_field::TCI.start) & 0x0FFF
    }
    #[inline]
    pub fn ethertype(&self) -> u16 {
        u16_at(self.0, vlan_field::ETHERTYPE.start)
    }
}
