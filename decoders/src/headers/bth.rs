//! The Base Transport Header: view and owned value.

use super::*;

/// BTH field offsets; the accessors, [`Bth::write`] and the field walk use
/// these.
pub(crate) mod bth_field {
    use core::ops::Range;
    pub const OPCODE: Range<usize> = 0..1;
    /// SE, MigReq, pad count (2 bits), TVer (4 bits).
    pub const FLAGS: Range<usize> = 1..2;
    pub const PKEY: Range<usize> = 2..4;
    /// FECN, BECN and 6 reserved bits.
    pub const ECN: Range<usize> = 4..5;
    pub const DEST_QP: Range<usize> = 5..8;
    /// AckReq and 7 reserved bits.
    pub const ACK_REQ: Range<usize> = 8..9;
    pub const PSN: Range<usize> = 9..12;
}

fixed_view!(
    /// Base Transport Header (12 bytes).
    BthSlice, Layer::Bth, 12
);

impl BthSlice<'_> {
    #[inline]
    pub fn opcode(&self) -> crate::Opcode {
        crate::Opcode(u8_at(self.0, bth_field::OPCODE.start))
    }
    #[inline]
    pub fn solicited(&self) -> bool {
        u8_at(self.0, bth_field::FLAGS.start) & 0x80 != 0
    }
    #[inline]
    pub fn mig_req(&self) -> bool {
        u8_at(self.0, bth_field::FLAGS.start) & 0x40 != 0
    }
    #[inline]
    pub fn pad_count(&self) -> u8 {
        (u8_at(self.0, bth_field::FLAGS.start) >> 4) & 3
    }
    #[inline]
    pub fn tver(&self) -> u8 {
        u8_at(self.0, bth_field::FLAGS.start) & 0x0F
    }
    #[inline]
    pub fn pkey(&self) -> u16 {
        u16_at(self.0, bth_field::PKEY.start)
    }
    /// Forward ECN: the packet met congestion (RoCEv2 uses IP ECN instead).
    #[inline]
    pub fn fecn(&self) -> bool {
        u8_at(self.0, bth_field::ECN.start) & 0x80 != 0
    }
    /// Backward ECN: set in CNPs.
    #[inline]
    pub fn becn(&self) -> bool {
        u8_at(self.0, bth_field::ECN.start) & 0x40 != 0
    }
    /// The six reserved bits after FECN/BECN.
    #[inline]
    pub fn reserved6(&self) -> u8 {
        u8_at(self.0, bth_field::ECN.start) & 0x3F
    }
    #[inline]
    pub fn dest_qp(&self) -> u32 {
        u24_at(self.0, bth_field::DEST_QP.start)
    }
    #[inline]
    pub fn ack_req(&self) -> bool {
        u8_at(self.0, bth_field::ACK_REQ.start) & 0x80 != 0
    }
    #[inline]
    pub fn reserved7(&self) -> u8 {
        u8_at(self.0, bth_field::ACK_REQ.start) & 0x7F
    }
    #[inline]
    pub fn psn(&self) -> u32 {
        u24_at(self.0, bth_field::PSN.start)
    }
    #[inline]
    pub fn to_owned(&self) -> Bth {
        Bth {
            opcode: self.opcode().0,
            solicited: self.solicited(),
            mig_req: self.mig_req(),
            pad_count: self.pad_count(),
            tver: self.tver(),
            pkey: self.pkey(),
            fecn: self.fecn(),
            becn: self.becn(),
            dest_qp: self.dest_qp(),
            ack_req: self.ack_req(),
            psn: self.psn(),
        }
    }
}

/// Owned BTH for building packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    pub solicited: bool,
    pub mig_req: bool,
    /// Written by the builder from the payload length; kept here for round trips.
    pub pad_count: u8,
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// 24 bits.
    pub dest_qp: u32,
    pub ack_req: bool,
    /// 24 bits.
    pub psn: u32,
}

impl Default for Bth {
    fn default() -> Self {
        Bth {
            opcode: 0,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 0,
            ack_req: false,
            psn: 0,
        }
    }
}

impl Bth {
    #[inline]
    pub fn write(&self, out: &mut [u8; 12]) {
        out[bth_field::OPCODE.start] = self.opcode;
        out[bth_field::FLAGS.start] = (u8::from(self.solicited) << 7)
            | (u8::from(self.mig_req) << 6)
            | ((self.pad_count & 3) << 4)
            | (self.tver & 0x0F);
        out[bth_field::PKEY].copy_from_slice(&self.pkey.to_be_bytes());
        out[bth_field::ECN.start] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        out[bth_field::DEST_QP].copy_from_slice(&self.dest_qp.to_be_bytes()[1..]);
        out[bth_field::ACK_REQ.start] = u8::from(self.ack_req) << 7;
        out[bth_field::PSN].copy_from_slice(&self.psn.to_be_bytes()[1..]);
    }
}
