//! The ERF record header (Endace; ibdump writes InfiniBand ports as
//! LINKTYPE_ERF pcap records): 16 bytes, then extension headers.

use super::*;

field_offsets! {
    /// ERF header field offsets.
    pub(crate) mod erf_field {
        /// Fixed-point time, little-endian (seconds in the high 32 bits).
        TS: 0..8,
        /// Record type (7 bits); the top bit says an extension header follows.
        TYPE: 8..9,
        FLAGS: 9..10,
        /// Record length in bytes (header, extension headers, frame, padding).
        RLEN: 10..12,
        /// Loss counter (or colour).
        LCTR: 12..14,
        /// Wire length of the frame.
        WLEN: 14..16,
    }
}

/// ERF_TYPE_INFINIBAND: the frame is an IB packet from its LRH.
pub const ERF_TYPE_INFINIBAND: u8 = 21;
/// Extension headers are 8 bytes; a chain longer than this is refused.
const MAX_EXT_HEADERS: usize = 16;

fixed_view!(
    /// ERF record header (16 bytes, without extension headers).
    ErfSlice, Layer::Erf, 16, erf_field {
        ts_raw: u64 = array_at(TS) |v| u64::from_le_bytes(v);
        /// Record type without the extension bit.
        record_type: u8 = u8_at(TYPE) |v| v & 0x7F;
        has_ext: bool = u8_at(TYPE) |v| v & 0x80 != 0;
        flags: u8 = u8_at(FLAGS);
        rlen: u16 = u16_at(RLEN);
        lctr: u16 = u16_at(LCTR);
        wlen: u16 = u16_at(WLEN);
    }
);

/// Offset of the frame after the ERF header at `offset` of `frame` and its
/// extension headers (each says in its top type bit whether another follows).
pub fn erf_frame_offset(frame: &[u8], offset: usize) -> Result<(ErfSlice<'_>, usize), DecodeError> {
    let h = ErfSlice::from_slice(frame, offset)?;
    let mut off = offset + ErfSlice::LEN;
    let mut more = h.has_ext();
    let mut n = 0;
    while more {
        if n == MAX_EXT_HEADERS {
            return Err(DecodeError::invalid(
                Layer::Erf,
                off,
                "extension header count",
                n as u64,
            ));
        }
        let ext = take(frame, off, 8, Layer::Erf)?;
        more = ext.first().is_some_and(|t| t & 0x80 != 0);
        off += 8;
        n += 1;
    }
    Ok((h, off))
}
