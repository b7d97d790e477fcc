//! The Base Transport Header: view and owned value.

use super::*;

field_offsets! {
    /// BTH field offsets; the accessors, [`Bth::write`] and the field walk use
    /// these.
    pub(crate) mod bth_field {
        OPCODE: 0..1,
        /// SE, MigReq, pad count (2 bits), TVer (4 bits).
        FLAGS: 1..2,
        PKEY: 2..4,
        /// FECN, BECN and 6 reserved bits.
        ECN: 4..5,
        DEST_QP: 5..8,
        /// AckReq and 7 reserved bits.
        ACK_REQ: 8..9,
        PSN: 9..12,
    }
}

fixed_view!(
    /// Base Transport Header (12 bytes).
    BthSlice, Layer::Bth, 12, bth_field {
        opcode: crate::Opcode = u8_at(OPCODE) |v| crate::Opcode(v);
        solicited: bool = u8_at(FLAGS) |v| v & 0x80 != 0;
        mig_req: bool = u8_at(FLAGS) |v| v & 0x40 != 0;
        pad_count: u8 = u8_at(FLAGS) |v| (v >> 4) & 3;
        tver: u8 = u8_at(FLAGS) |v| v & 0x0F;
        pkey: u16 = u16_at(PKEY);
        /// Forward ECN: the packet met congestion (RoCEv2 uses IP ECN instead).
        fecn: bool = u8_at(ECN) |v| v & 0x80 != 0;
        /// Backward ECN: set in CNPs.
        becn: bool = u8_at(ECN) |v| v & 0x40 != 0;
        /// The six reserved bits after FECN/BECN.
        reserved6: u8 = u8_at(ECN) |v| v & 0x3F;
        dest_qp: u32 = u24_at(DEST_QP);
        ack_req: bool = u8_at(ACK_REQ) |v| v & 0x80 != 0;
        reserved7: u8 = u8_at(ACK_REQ) |v| v & 0x7F;
        psn: u32 = u24_at(PSN);
    }
);

impl BthSlice<'_> {
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
