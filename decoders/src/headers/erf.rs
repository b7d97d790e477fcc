//! The ERF record header (Endace; ibdump writes InfiniBand ports as
//! LINKTYPE_ERF pcap records): 16 bytes, then extension headers.

use super::*;

/// ERF header field offsets.
pub(crate) mod erf_field {
    use core::ops::Range;
    /// Fixed-point time, little-endian (seconds in the high 32 bits).
    pub const TS: Range<usize> = 0..8;
    /// Record type (7 bits); the top bit says an extension header follows.
    pub const TYPE: Range<usize> = 8..9;
    pub const FLAGS: Range<usize> = 9..10;
    /// Record length in bytes (header, extension headers, frame, padding).
    pub const RLEN: Range<usize> = 10..12;
    /// Loss counter (or colour).
    pub const LCTR: Range<usize> = 12..14;
    /// Wire length of the frame.
    pub const WLEN: Range<usize> = 14..16;
}

/// ERF_TYPE_INFINIBAND: the frame is an IB packet from its LRH.
pub const ERF_TYPE_INFINIBAND: u8 = 21;
/// Extension headers are 8 bytes; a chain longer than this is refused.
const MAX_EXT_HEADERS: usize = 16;

fixed_view!(
    /// ERF record header (16 bytes, without extension headers).
    ErfSlice, Layer::Erf, 16
);

impl<'a> ErfSlice<'a> {
    #[inline]
    pub fn ts_raw(&self) -> u64 {
        u64::from_le_bytes(array_at(self.0, erf_field::TS.start))
    }
    /// Record type without the extension bit.
    #[inline]
    pub fn record_type(&self) -> u8 {
        u8_at(self.0, erf_field::TYPE.start) & 0x7F
    }
    #[inline]
    pub fn has_ext(&self) -> bool {
        u8_at(self.0, erf_field::TYPE.start) & 0x80 != 0
    }
    #[inline]
    pub fn flags(&self) -> u8 {
        u8_at(self.0, erf_field::FLAGS.start)
    }
    #[inline]
    pub fn rlen(&self) -> u16 {
        u16_at(self.0, erf_field::RLEN.start)
    }
    #[inline]
    pub fn lctr(&self) -> u16 {
        u16_at(self.0, erf_field::LCTR.start)
    }
    #[inline]
    pub fn wlen(&self) -> u16 {
        u16_at(self.0, erf_field::WLEN.start)
    }
}

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
