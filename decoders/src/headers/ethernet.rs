//! Ethernet II and 802.1Q tags.

use super::*;

field_offsets! {
    /// Ethernet II field offsets; the accessors, the builder and the field walk
    /// use these.
    pub(crate) mod eth_field {
        DST: 0..6,
        SRC: 6..12,
        /// EtherType, or the TPID of the first tag.
        ETHERTYPE: 12..14,
    }
}

field_offsets! {
    /// 802.1Q tag field offsets (after the TPID).
    pub(crate) mod vlan_field {
        /// The byte holding PCP (3 bits) and DEI (1 bit).
        PCP_DEI: 0..1,
        /// Tag control information: PCP, DEI, VID (12 bits).
        TCI: 0..2,
        ETHERTYPE: 2..4,
    }
}

fixed_view!(
    /// Ethernet II header (without 802.1Q tags, which follow as [`VlanSlice`]s).
    EthernetSlice, Layer::Ethernet, 14, eth_field {
        dst: [u8; 6] = array_at(DST);
        src: [u8; 6] = array_at(SRC);
        /// EtherType or TPID of the first tag.
        ethertype: u16 = u16_at(ETHERTYPE);
    }
);

fixed_view!(
    /// An 802.1Q / 802.1ad tag body: TCI and the next EtherType.
    VlanSlice, Layer::Vlan, 4, vlan_field {
        pcp: u8 = u8_at(PCP_DEI) |v| v >> 5;
        dei: bool = u8_at(PCP_DEI) |v| v & 0x10 != 0;
        vid: u16 = u16_at(TCI) |v| v & 0x0FFF;
        ethertype: u16 = u16_at(ETHERTYPE);
    }
);
