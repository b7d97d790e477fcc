//! The InfiniBand Local Route Header (native IB frames start with it).

use super::*;

/// LRH field offsets; the accessors, [`Lrh::write`] and the field walk use
/// these.
pub(crate) mod lrh_field {
    use core::ops::Range;
    /// VL (4 bits), LVer (4 bits).
    pub const VL_LVER: Range<usize> = 0..1;
    /// SL (4 bits), 2 reserved bits, LNH (2 bits).
    pub const SL_LNH: Range<usize> = 1..2;
    pub const DLID: Range<usize> = 2..4;
    /// 5 reserved bits, PktLen (11 bits, in 4-byte words).
    pub const PKTLEN: Range<usize> = 4..6;
    pub const SLID: Range<usize> = 6..8;
}

/// Link Next Header: what follows the LRH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lnh {
    /// Raw packet (0b00).
    Raw,
    /// IPv6 or another non-IBA transport (0b01).
    IpNonIba,
    /// BTH follows (0b10).
    IbaLocal,
    /// GRH, then BTH (0b11).
    IbaGlobal,
}

impl Lnh {
    #[inline]
    pub fn from_bits(b: u8) -> Lnh {
        match b & 3 {
            0 => Lnh::Raw,
            1 => Lnh::IpNonIba,
            2 => Lnh::IbaLocal,
            _ => Lnh::IbaGlobal,
        }
    }
    #[inline]
    pub fn bits(self) -> u8 {
        match self {
            Lnh::Raw => 0,
            Lnh::IpNonIba => 1,
            Lnh::IbaLocal => 2,
            Lnh::IbaGlobal => 3,
        }
    }
}

fixed_view!(
    /// Local Route Header (8 bytes).
    LrhSlice, Layer::Lrh, 8
);

impl LrhSlice<'_> {
    /// Virtual lane (15 is the management lane).
    #[inline]
    pub fn vl(&self) -> u8 {
        u8_at(self.0, lrh_field::VL_LVER.start) >> 4
    }
    #[inline]
    pub fn lver(&self) -> u8 {
        u8_at(self.0, lrh_field::VL_LVER.start) & 0x0F
    }
    /// Service level.
    #[inline]
    pub fn sl(&self) -> u8 {
        u8_at(self.0, lrh_field::SL_LNH.start) >> 4
    }
    #[inline]
    pub fn reserved2(&self) -> u8 {
        (u8_at(self.0, lrh_field::SL_LNH.start) >> 2) & 3
    }
    #[inline]
    pub fn lnh(&self) -> Lnh {
        Lnh::from_bits(u8_at(self.0, lrh_field::SL_LNH.start))
    }
    #[inline]
    pub fn dlid(&self) -> u16 {
        u16_at(self.0, lrh_field::DLID.start)
    }
    #[inline]
    pub fn reserved5(&self) -> u16 {
        u16_at(self.0, lrh_field::PKTLEN.start) >> 11
    }
    /// Packet length in 4-byte words, LRH through ICRC (not the VCRC).
    #[inline]
    pub fn pkt_len_words(&self) -> u16 {
        u16_at(self.0, lrh_field::PKTLEN.start) & 0x07FF
    }
    #[inline]
    pub fn slid(&self) -> u16 {
        u16_at(self.0, lrh_field::SLID.start)
    }
    pub fn to_owned(&self) -> Lrh {
        Lrh {
            vl: self.vl(),
            lver: self.lver(),
            sl: self.sl(),
            lnh: self.lnh(),
            dlid: self.dlid(),
            pkt_len_words: self.pkt_len_words(),
            slid: self.slid(),
        }
    }
}

/// An LRH's values (`pkt_len_words` is set by the builder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lrh {
    pub vl: u8,
    pub lver: u8,
    pub sl: u8,
    pub lnh: Lnh,
    pub dlid: u16,
    pub pkt_len_words: u16,
    pub slid: u16,
}

impl Lrh {
    pub fn write(&self, out: &mut [u8; LrhSlice::LEN]) {
        out[lrh_field::VL_LVER.start] = (self.vl << 4) | (self.lver & 0x0F);
        out[lrh_field::SL_LNH.start] = (self.sl << 4) | self.lnh.bits();
        out[lrh_field::DLID].copy_from_slice(&self.dlid.to_be_bytes());
        out[lrh_field::PKTLEN].copy_from_slice(&(self.pkt_len_words & 0x07FF).to_be_bytes());
        out[lrh_field::SLID].copy_from_slice(&self.slid.to_be_bytes());
    }
}

impl Default for Lrh {
    /// VL 0, LVer 0, SL 0, a local packet (BTH next), LIDs 0.
    fn default() -> Self {
        Lrh {
            vl: 0,
            lver: 0,
            sl: 0,
            lnh: Lnh::IbaLocal,
            dlid: 0,
            pkt_len_words: 0,
            slid: 0,
        }
    }
}
