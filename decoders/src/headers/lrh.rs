//! The InfiniBand Local Route Header (native IB frames start with it).

use super::*;

field_offsets! {
    /// LRH field offsets; the accessors, [`Lrh::write`] and the field walk use
    /// these.
    pub(crate) mod lrh_field {
        /// VL (4 bits), LVer (4 bits).
        VL_LVER: 0..1,
        /// SL (4 bits), 2 reserved bits, LNH (2 bits).
        SL_LNH: 1..2,
        DLID: 2..4,
        /// 5 reserved bits, PktLen (11 bits, in 4-byte words).
        PKTLEN: 4..6,
        SLID: 6..8,
    }
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
    LrhSlice, Layer::Lrh, 8, lrh_field {
        /// Virtual lane (15 is the management lane).
        vl: u8 = u8_at(VL_LVER) |v| v >> 4;
        lver: u8 = u8_at(VL_LVER) |v| v & 0x0F;
        /// Service level.
        sl: u8 = u8_at(SL_LNH) |v| v >> 4;
        reserved2: u8 = u8_at(SL_LNH) |v| (v >> 2) & 3;
        lnh: Lnh = u8_at(SL_LNH) |v| Lnh::from_bits(v);
        dlid: u16 = u16_at(DLID);
        reserved5: u16 = u16_at(PKTLEN) |v| v >> 11;
        /// Packet length in 4-byte words, LRH through ICRC (not the VCRC).
        pkt_len_words: u16 = u16_at(PKTLEN) |v| v & 0x07FF;
        slid: u16 = u16_at(SLID);
    }
);

impl LrhSlice<'_> {
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
