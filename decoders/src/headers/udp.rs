//! UDP.

use super::*;

field_offsets! {
    /// UDP field offsets; the accessors, the builder and the field walk use
    /// these.
    pub(crate) mod udp_field {
        SRC_PORT: 0..2,
        DST_PORT: 2..4,
        /// UDP header + payload, bytes.
        LENGTH: 4..6,
        CHECKSUM: 6..8,
    }
}

fixed_view!(
    /// UDP header.
    UdpSlice, Layer::Udp, 8, udp_field {
        src_port: u16 = u16_at(SRC_PORT);
        dst_port: u16 = u16_at(DST_PORT);
        /// Length of UDP header + payload in bytes.
        length: u16 = u16_at(LENGTH);
        checksum: u16 = u16_at(CHECKSUM);
    }
);
