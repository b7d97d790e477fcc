//! How a waveform signal's value is written: a radix, or a translation
//! where rocescope knows what the bits mean (the decoders' own names).

use rocescope_decoders::{Opcode, Syndrome};
use serde::{Deserialize, Serialize};

/// A signal's display format, switchable per signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Radix {
    Binary,
    Hex,
    Decimal,
    /// Two's complement over the signal's width.
    Signed,
    /// An 8-bit BTH opcode as its name (`RC SEND Only`).
    Opcode,
    /// A 24-bit PSN, in decimal.
    Psn,
    /// An AETH syndrome as its ACK/NAK kind (`ACK credits=31`, `NAK (PSN sequence error)`).
    Syndrome,
}

impl Radix {
    pub const ALL: [Radix; 7] = [
        Radix::Binary,
        Radix::Hex,
        Radix::Decimal,
        Radix::Signed,
        Radix::Opcode,
        Radix::Psn,
        Radix::Syndrome,
    ];

    /// The word the command line takes and the views show.
    pub fn word(self) -> &'static str {
        match self {
            Radix::Binary => "bin",
            Radix::Hex => "hex",
            Radix::Decimal => "dec",
            Radix::Signed => "signed",
            Radix::Opcode => "opcode",
            Radix::Psn => "psn",
            Radix::Syndrome => "aeth",
        }
    }

    pub fn from_word(w: &str) -> Option<Radix> {
        Radix::ALL.into_iter().find(|r| r.word() == w)
    }

    /// What a signal of this name and width is shown as at first: a
    /// translation when the name says what it holds, else binary for one
    /// bit and hex for a bus.
    pub fn default_for(path: &str, width_bits: u32) -> Radix {
        let name = path.rsplit('.').next().unwrap_or(path).to_ascii_lowercase();
        match width_bits {
            8 if name.contains("opcode") => Radix::Opcode,
            8 if name.contains("syndrome") => Radix::Syndrome,
            24 if name.contains("psn") => Radix::Psn,
            1 => Radix::Binary,
            _ => Radix::Hex,
        }
    }
}

/// `value`'s low `width_bits` bits (at most 64 held) as `radix` writes them.
/// `known` false (an X or Z bit) is written `x`.
pub fn format_value(value: u64, known: bool, width_bits: u32, radix: Radix) -> String {
    if !known {
        return "x".into();
    }
    let w = width_bits.clamp(1, 64);
    let v = if w == 64 {
        value
    } else {
        value & ((1u64 << w) - 1)
    };
    match radix {
        Radix::Binary => format!("{v:0width$b}", width = w as usize),
        Radix::Hex => format!("0x{v:0width$x}", width = w.div_ceil(4) as usize),
        Radix::Decimal | Radix::Psn => v.to_string(),
        Radix::Signed => {
            let shift = 64 - w;
            (((v << shift) as i64) >> shift).to_string()
        }
        Radix::Opcode => Opcode(v as u8).name().to_string(),
        Radix::Syndrome => match Syndrome::from_u8(v as u8) {
            // The packet list's words for the same syndromes.
            Syndrome::Ack { credits } => format!("ACK credits={credits}"),
            Syndrome::RnrNak { timer } => {
                format!(
                    "RNR NAK timer={}",
                    rocescope_decoders::units::duration_text(Syndrome::rnr_timer_ns(timer))
                )
            }
            Syndrome::Nak(code) => format!("NAK ({})", code.name()),
            Syndrome::Reserved(s) => format!("syndrome=0x{s:02x} (reserved)"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radixes_and_translations() {
        assert_eq!(format_value(5, true, 4, Radix::Binary), "0101");
        assert_eq!(format_value(0xab, true, 12, Radix::Hex), "0x0ab");
        assert_eq!(format_value(0xff, true, 8, Radix::Decimal), "255");
        assert_eq!(format_value(0xff, true, 8, Radix::Signed), "-1");
        assert_eq!(format_value(0x7f, true, 8, Radix::Signed), "127");
        assert_eq!(format_value(u64::MAX, true, 64, Radix::Signed), "-1");
        // Bits above the width are not the signal's.
        assert_eq!(format_value(0x1_0003, true, 16, Radix::Decimal), "3");
        assert_eq!(format_value(0x04, true, 8, Radix::Opcode), "RC SEND Only");
        assert_eq!(format_value(0x11, true, 8, Radix::Opcode), "RC Acknowledge");
        assert_eq!(format_value(0xff_ffff, true, 24, Radix::Psn), "16777215");
        assert_eq!(
            format_value(0x1f, true, 8, Radix::Syndrome),
            "ACK credits=31"
        );
        assert_eq!(
            format_value(0x60, true, 8, Radix::Syndrome),
            "NAK (PSN sequence error)"
        );
        assert_eq!(format_value(3, false, 8, Radix::Hex), "x");
    }

    #[test]
    fn defaults_follow_name_and_width() {
        assert_eq!(Radix::default_for("tb.dut.rx_opcode", 8), Radix::Opcode);
        assert_eq!(Radix::default_for("tb.dut.bth_psn", 24), Radix::Psn);
        assert_eq!(Radix::default_for("tb.aeth_syndrome", 8), Radix::Syndrome);
        assert_eq!(Radix::default_for("tb.opcode", 16), Radix::Hex);
        assert_eq!(Radix::default_for("tb.clk", 1), Radix::Binary);
        for r in Radix::ALL {
            assert_eq!(Radix::from_word(r.word()), Some(r));
        }
    }
}
