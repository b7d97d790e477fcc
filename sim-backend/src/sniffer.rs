//! The BALBOA traffic sniffer next to the 100G MAC: its 64-bit filter word,
//! header-only cuts, the RoCE port byte-order trap of the card as built, and
//! the RX-cut quirk (`replay/FORMAT.md`, "Filter word").

/// Filter word bits: the ones the capture reader decodes (one definition,
/// `rocescope_replay::SnifferFilter`), under the names the model uses.
pub mod filter {
    use rocescope_replay::SnifferFilter as F;

    pub const IGNORE_IPV4: u64 = F::IGNORE_IPV4;
    pub const IGNORE_IPV6: u64 = F::IGNORE_IPV6;
    pub const IGNORE_ARP: u64 = F::IGNORE_ARP;
    pub const IGNORE_ICMPV4: u64 = F::IGNORE_ICMPV4;
    pub const IGNORE_ICMPV6: u64 = F::IGNORE_ICMPV6;
    pub const IGNORE_UDPV4: u64 = F::IGNORE_UDPV4;
    pub const UDPV4_HEADER_ONLY: u64 = F::UDPV4_HEADER_ONLY;
    pub const IGNORE_UDPV6: u64 = F::IGNORE_UDPV6;
    pub const UDPV6_HEADER_ONLY: u64 = F::UDPV6_HEADER_ONLY;
    pub const IGNORE_TCPV4: u64 = F::IGNORE_TCPV4;
    pub const TCPV4_HEADER_ONLY: u64 = F::TCPV4_HEADER_ONLY;
    pub const IGNORE_ROCE_V4: u64 = F::IGNORE_ROCEV4;
    pub const ROCE_V4_HEADER_ONLY: u64 = F::ROCEV4_HEADER_ONLY;
}

/// What the sniffer does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// Not captured.
    Ignore,
    /// Captured whole.
    Whole,
    /// Captured up to this many bytes.
    Cut(usize),
}

/// Opcode flags the RTL uses to pick the RoCE header-only cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CutFlags {
    /// The opcode carries an AETH (58 B).
    pub aeth: bool,
    /// The opcode carries a RETH (70 B).
    pub reth: bool,
}

impl CutFlags {
    /// The header-only length for these flags.
    pub fn cut(self) -> usize {
        if self.reth {
            70
        } else if self.aeth {
            58
        } else {
            54
        }
    }

    /// Flags of a RoCE opcode byte.
    pub fn of_opcode(opcode: u8) -> CutFlags {
        let h = rocescope_decoders::Opcode(opcode).headers();
        CutFlags {
            aeth: h.contains(rocescope_decoders::Headers::AETH),
            reth: h.contains(rocescope_decoders::Headers::RETH),
        }
    }
}

/// The card's decision for `frame` under filter word `word`.
///
/// `fixed_card` models a card whose RoCE detection compares the UDP
/// destination port as `12 b7` (4791 on the wire); the card as built compares
/// `b7 12`, so RoCE frames fall under the UDPv4 rules. `flags` are the opcode
/// flags the RTL uses for the RoCE cut (for RX frames, the TX side's: the
/// quirk).
pub fn decide(frame: &[u8], word: u64, fixed_card: bool, flags: CutFlags) -> Capture {
    let b = |i: usize| frame.get(i).copied().unwrap_or(0);
    let set = |bit: u64| word & bit != 0;
    let ethertype = u16::from_be_bytes([b(12), b(13)]);
    match ethertype {
        0x0806 if set(filter::IGNORE_ARP) => Capture::Ignore,
        0x0800 => {
            if set(filter::IGNORE_IPV4) {
                return Capture::Ignore;
            }
            match b(23) {
                1 if set(filter::IGNORE_ICMPV4) => Capture::Ignore,
                6 if set(filter::IGNORE_TCPV4) => Capture::Ignore,
                6 if set(filter::TCPV4_HEADER_ONLY) => Capture::Cut(54),
                17 => {
                    let port = [b(36), b(37)];
                    let roce = if fixed_card {
                        port == [0x12, 0xb7]
                    } else {
                        port == [0xb7, 0x12]
                    };
                    if roce && set(filter::IGNORE_ROCE_V4) {
                        Capture::Ignore
                    } else if roce && set(filter::ROCE_V4_HEADER_ONLY) {
                        Capture::Cut(flags.cut())
                    } else if roce {
                        Capture::Whole
                    } else if set(filter::IGNORE_UDPV4) {
                        Capture::Ignore
                    } else if set(filter::UDPV4_HEADER_ONLY) {
                        Capture::Cut(42)
                    } else {
                        Capture::Whole
                    }
                }
                _ => Capture::Whole,
            }
        }
        0x86DD => {
            if set(filter::IGNORE_IPV6) {
                return Capture::Ignore;
            }
            match b(20) {
                58 if set(filter::IGNORE_ICMPV6) => Capture::Ignore,
                17 if set(filter::IGNORE_UDPV6) => Capture::Ignore,
                17 if set(filter::UDPV6_HEADER_ONLY) => Capture::Cut(62),
                _ => Capture::Whole,
            }
        }
        _ => Capture::Whole,
    }
}

/// Bytes a captured frame occupies in the card's dump: whole 64-byte slots.
pub fn dump_slot_bytes(captured: usize) -> u64 {
    (captured.max(1) as u64).div_ceil(64) * 64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_decoders::{Opcode, PacketBuilder};

    #[test]
    fn card_as_built_never_applies_roce_bits() {
        let f = PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            Opcode::RC_WRITE_FIRST,
            0x11,
            5,
        )
        .build(&[0u8; 256]);
        let flags = CutFlags::of_opcode(0x06);
        let word = filter::ROCE_V4_HEADER_ONLY;
        assert_eq!(decide(&f, word, false, flags), Capture::Whole);
        assert_eq!(decide(&f, word, true, flags), Capture::Cut(70));
        assert_eq!(
            decide(&f, filter::UDPV4_HEADER_ONLY, false, flags),
            Capture::Cut(42)
        );
        assert_eq!(
            decide(&f, filter::IGNORE_ROCE_V4, true, flags),
            Capture::Ignore
        );
        assert_eq!(CutFlags::of_opcode(0x11).cut(), 58);
        assert_eq!(CutFlags::of_opcode(0x07).cut(), 54);
        assert_eq!(dump_slot_bytes(70), 128);
    }
}
