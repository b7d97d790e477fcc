//! The ACK Extended Transport Header and its syndromes (ACK, RNR NAK, NAK
//! codes).

use super::*;

field_offsets! {
    /// AETH field offsets; the accessors, the builder and the field walk use
    /// these.
    pub(crate) mod aeth_field {
        SYNDROME: 0..1,
        MSN: 1..4,
    }
}

fixed_view!(
    /// ACK Extended Transport Header: syndrome and MSN.
    AethSlice, Layer::Aeth, 4, aeth_field {
        syndrome_raw: u8 = u8_at(SYNDROME);
        msn: u32 = u24_at(MSN);
    }
);

impl AethSlice<'_> {
    #[inline]
    pub fn syndrome(&self) -> Syndrome {
        Syndrome::from_u8(self.syndrome_raw())
    }
    #[inline]
    pub fn to_owned(&self) -> Aeth {
        Aeth {
            syndrome: self.syndrome_raw(),
            msn: self.msn(),
        }
    }
}

/// Owned AETH; `syndrome` is the raw byte (see [`Syndrome`] to build one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Aeth {
    pub syndrome: u8,
    /// 24 bits.
    pub msn: u32,
}

impl Aeth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut h = [0u8; AethSlice::LEN];
        h[aeth_field::SYNDROME.start] = self.syndrome;
        h[aeth_field::MSN].copy_from_slice(&self.msn.to_be_bytes()[1..]);
        out.extend_from_slice(&h);
    }
}

/// NAK codes of an AETH syndrome `011x xxxx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    Reserved(u8),
}

impl NakCode {
    #[inline]
    pub fn from_u5(v: u8) -> NakCode {
        match v {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            v => NakCode::Reserved(v),
        }
    }
    #[inline]
    pub fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(v) => v & 0x1F,
        }
    }
    #[inline]
    pub fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "PSN sequence error",
            NakCode::InvalidRequest => "invalid request",
            NakCode::RemoteAccessError => "remote access error",
            NakCode::RemoteOperationalError => "remote operational error",
            NakCode::InvalidRdRequest => "invalid RD request",
            NakCode::Reserved(_) => "reserved NAK code",
        }
    }
}

/// The decoded AETH syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive ACK with its credit count (31 = credits not limited).
    Ack {
        credits: u8,
    },
    /// Receiver Not Ready NAK with the 5-bit timer code.
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
    /// Type bits `10`, or bit 7 set.
    Reserved(u8),
}

/// IBTA RNR NAK timer field values in µs × 100 (index = 5-bit code).
const RNR_TIMER_10NS: [u32; 32] = [
    65_536_000, 1_000, 2_000, 3_000, 4_000, 6_000, 8_000, 12_000, 16_000, 24_000, 32_000, 48_000,
    64_000, 96_000, 128_000, 192_000, 256_000, 384_000, 512_000, 768_000, 1_024_000, 1_536_000,
    2_048_000, 3_072_000, 4_096_000, 6_144_000, 8_192_000, 12_288_000, 16_384_000, 24_576_000,
    32_768_000, 49_152_000,
];

impl Syndrome {
    #[inline]
    pub fn from_u8(s: u8) -> Syndrome {
        let value = s & 0x1F;
        if s & 0x80 != 0 {
            return Syndrome::Reserved(s);
        }
        match (s >> 5) & 3 {
            0 => Syndrome::Ack { credits: value },
            1 => Syndrome::RnrNak { timer: value },
            3 => Syndrome::Nak(NakCode::from_u5(value)),
            _ => Syndrome::Reserved(s),
        }
    }

    #[inline]
    pub fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1F,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1F),
            Syndrome::Nak(code) => 0x60 | code.code(),
            Syndrome::Reserved(s) => s,
        }
    }

    /// The RNR NAK wait in ns (code 0 = 655.36 ms, 1 = 10 µs ... 31 = 491.52 ms).
    #[inline]
    pub fn rnr_timer_ns(timer: u8) -> u64 {
        u64::from(RNR_TIMER_10NS[usize::from(timer & 0x1F)]) * 10
    }

    #[inline]
    pub fn is_nak(self) -> bool {
        matches!(self, Syndrome::Nak(_) | Syndrome::RnrNak { .. })
    }

    /// `Syndrome::from_u8(s).is_nak()` from the raw byte, without building
    /// the syndrome (the indexer asks it of every ACK): bit 7 clear and the
    /// kind bits 01 (RNR NAK) or 11 (NAK).
    #[inline(always)]
    pub fn is_nak_raw(s: u8) -> bool {
        s & 0x80 == 0 && (s >> 5) & 1 == 1
    }

    /// The kind names, indexed by [`Syndrome::kind_index`].
    pub const KIND_NAMES: [&'static str; 9] = [
        "ack",
        "rnr",
        "psn_seq_err",
        "invalid_request",
        "remote_access_err",
        "remote_op_err",
        "invalid_rd_request",
        "nak_reserved",
        "reserved",
    ];

    /// A small number per kind (an index into [`Syndrome::KIND_NAMES`]), for
    /// tables that keep kinds as dictionary keys.
    #[inline]
    pub fn kind_index(self) -> u8 {
        match self {
            Syndrome::Ack { .. } => 0,
            Syndrome::RnrNak { .. } => 1,
            Syndrome::Nak(NakCode::PsnSequenceError) => 2,
            Syndrome::Nak(NakCode::InvalidRequest) => 3,
            Syndrome::Nak(NakCode::RemoteAccessError) => 4,
            Syndrome::Nak(NakCode::RemoteOperationalError) => 5,
            Syndrome::Nak(NakCode::InvalidRdRequest) => 6,
            Syndrome::Nak(NakCode::Reserved(_)) => 7,
            Syndrome::Reserved(_) => 8,
        }
    }

    /// Short kind name used in flags and JSON (`ack`, `rnr`, `psn_seq_err`, ...).
    #[inline]
    pub fn kind_name(self) -> &'static str {
        Self::KIND_NAMES[usize::from(self.kind_index())]
    }
}

#[cfg(test)]
mod is_nak_raw_tests {
    use super::Syndrome;

    #[test]
    fn is_nak_raw_agrees_with_the_syndrome_for_every_byte() {
        for s in 0..=u8::MAX {
            assert_eq!(
                Syndrome::is_nak_raw(s),
                Syndrome::from_u8(s).is_nak(),
                "{s:#04x}"
            );
        }
    }
}
