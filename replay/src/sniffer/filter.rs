//! The sniffer's 64-bit filter word, and the rules the card's RTL applies to
//! each frame under it.
//!
//! The rules mirror the card's `packet_filter` module: the EtherType is read
//! at bytes 12-13 only (a VLAN-tagged frame matches no rule and is captured
//! whole), the IP protocol at byte 23 (IPv4) or 20 (IPv6), the UDP
//! destination port at bytes 36-37 and the BTH opcode at byte 42, i.e. for a
//! 20-byte IPv4 header.

use std::fmt;

/// The sniffer's filter word (the FILTER register; the first line of a text
/// dump).
///
/// Bits: 8/9 ignore IPv4/IPv6, 16 ARP, 18/20 ICMPv4/v6, 22/23 UDPv4 ignore /
/// header-only (42 B), 24/25 UDPv6 (62 B), 26/27 TCPv4 (54 B), 30/31 RoCEv2
/// over IPv4 ignore / header-only (54 B, 58 B with AETH, 70 B with RETH).
/// "Ignore" drops the frames; "header-only" keeps the first bytes. The
/// header-only rules are tried in the order UDPv4, UDPv6, TCPv4, RoCE, so
/// bit 23 cuts RoCEv2 frames (which are UDPv4) to 42 bytes before bit 31 is
/// looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SnifferFilter(pub u64);

/// The bits the card knows, with what each one asks for.
const BITS: [(u32, &str); 13] = [
    (8, "ignore IPv4"),
    (9, "ignore IPv6"),
    (16, "ignore ARP"),
    (18, "ignore ICMPv4"),
    (20, "ignore ICMPv6"),
    (22, "ignore UDPv4"),
    (23, "UDPv4 header-only (42 B)"),
    (24, "ignore UDPv6"),
    (25, "UDPv6 header-only (62 B)"),
    (26, "ignore TCPv4"),
    (27, "TCPv4 header-only (54 B)"),
    (30, "ignore RoCEv2/IPv4"),
    (31, "RoCEv2/IPv4 header-only (54/58/70 B)"),
];

impl SnifferFilter {
    /// Bit 8: drop IPv4 frames.
    pub const IGNORE_IPV4: u64 = 1 << 8;
    /// Bit 9: drop IPv6 frames.
    pub const IGNORE_IPV6: u64 = 1 << 9;
    /// Bit 16: drop ARP frames.
    pub const IGNORE_ARP: u64 = 1 << 16;
    /// Bit 18: drop ICMP over IPv4.
    pub const IGNORE_ICMPV4: u64 = 1 << 18;
    /// Bit 20: drop ICMPv6.
    pub const IGNORE_ICMPV6: u64 = 1 << 20;
    /// Bit 22: drop UDP over IPv4.
    pub const IGNORE_UDPV4: u64 = 1 << 22;
    /// Bit 23: cut UDP over IPv4 to 42 bytes (Ethernet, IPv4, UDP headers).
    pub const UDPV4_HEADER_ONLY: u64 = 1 << 23;
    /// Bit 24: drop UDP over IPv6.
    pub const IGNORE_UDPV6: u64 = 1 << 24;
    /// Bit 25: cut UDP over IPv6 to 62 bytes.
    pub const UDPV6_HEADER_ONLY: u64 = 1 << 25;
    /// Bit 26: drop TCP over IPv4.
    pub const IGNORE_TCPV4: u64 = 1 << 26;
    /// Bit 27: cut TCP over IPv4 to 54 bytes.
    pub const TCPV4_HEADER_ONLY: u64 = 1 << 27;
    /// Bit 30: drop RoCEv2 over IPv4 (never applies on today's card).
    pub const IGNORE_ROCEV4: u64 = 1 << 30;
    /// Bit 31: cut RoCEv2 over IPv4 to 54 B (58 B with AETH, 70 B with RETH;
    /// never applies on today's card).
    pub const ROCEV4_HEADER_ONLY: u64 = 1 << 31;
    /// Every bit the card knows.
    pub const KNOWN_BITS: u64 = {
        let mut m = 0u64;
        let mut i = 0;
        while i < BITS.len() {
            m |= 1 << BITS[i].0;
            i += 1;
        }
        m
    };

    /// Parses a filter word written in hex, as the host tool's `%lx` writes
    /// it: with or without `0x`, either case, surrounded by whitespace; at
    /// most 16 digits.
    pub fn parse(text: &str) -> Option<Self> {
        parse_hex_word(text.as_bytes()).map(Self)
    }

    /// Whether all bits of `mask` are set.
    pub fn has(self, mask: u64) -> bool {
        self.0 & mask == mask
    }

    /// The set bits the card knows, with what each asks for, lowest first.
    pub fn set_bits(self) -> impl Iterator<Item = (u32, &'static str)> {
        BITS.into_iter()
            .filter(move |(bit, _)| self.0 & (1 << bit) != 0)
    }

    /// Set bits that the card does not define (reserved).
    pub fn reserved_bits(self) -> u64 {
        self.0 & !Self::KNOWN_BITS
    }

    /// Known card issues this filter word runs into, one sentence each.
    pub fn issues(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.0 & (Self::IGNORE_ROCEV4 | Self::ROCEV4_HEADER_ONLY) != 0 {
            out.push(
                "known card issue: bits 30/31 (RoCE) never apply on today's card, whose RoCE \
                 detection compares bytes 36-37 with b7 12 while port 4791 is 12 b7 on the wire; \
                 RoCE frames fall under the UDPv4 rules (bits 22/23) and are captured whole",
            );
        }
        if self.has(Self::ROCEV4_HEADER_ONLY) {
            out.push(
                "known card issue: with that comparison fixed, the RX branch picks the 58/70-byte \
                 cut from the TX side's opcode flags, so an RX frame can be cut to the wrong one \
                 of 54/58/70 bytes",
            );
        }
        if self.has(Self::UDPV4_HEADER_ONLY)
            && self.0 & (Self::IGNORE_ROCEV4 | Self::ROCEV4_HEADER_ONLY) != 0
        {
            out.push(
                "bit 23 (UDPv4 header-only) is checked before the RoCE bits: RoCEv2 frames are \
                 UDPv4 and are cut to 42 bytes",
            );
        }
        out
    }
}

impl fmt::Display for SnifferFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x} (", self.0)?;
        let mut first = true;
        for (bit, what) in self.set_bits() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "bit {bit}: {what}")?;
        }
        let reserved = self.reserved_bits();
        if reserved != 0 {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "reserved bits 0x{reserved:x}")?;
        }
        if first {
            f.write_str("no filter: every frame whole")?;
        }
        f.write_str(")")?;
        if self.0 & (Self::IGNORE_ROCEV4 | Self::ROCEV4_HEADER_ONLY) != 0 {
            f.write_str(
                " [known card issue: the RoCE bits never apply on today's card, its RoCE \
                 detection matches b7 12 instead of 12 b7]",
            )?;
        }
        Ok(())
    }
}

/// Parses trimmed ASCII hex with an optional `0x`, 1 to 16 digits.
pub(crate) fn parse_hex_word(text: &[u8]) -> Option<u64> {
    let t = text.trim_ascii();
    let t = match t {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => t,
    };
    if t.is_empty() || t.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in t {
        v = (v << 4) | u64::from(hex_digit(c)?);
    }
    Some(v)
}

/// The value of one ASCII hex digit.
#[inline]
pub(crate) fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Which card the rules are evaluated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Card {
    /// Today's card: RoCE detection compares bytes 36-37 with `b7 12`.
    Today,
    /// A card with the comparison fixed (`12 b7`, port 4791).
    Fixed,
}

/// What the filter does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The frame is not captured.
    Drop,
    /// Captured whole.
    Whole,
    /// Captured up to this many bytes.
    Cut(u32),
}

/// The frame as the RTL sees it: flags computed from fixed byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct RtlView {
    pub(crate) ipv4: bool,
    pub(crate) ipv6: bool,
    pub(crate) arp: bool,
    pub(crate) icmp4: bool,
    pub(crate) icmp6: bool,
    pub(crate) udp4: bool,
    pub(crate) udp6: bool,
    pub(crate) tcp4: bool,
    /// UDPv4 with bytes 36-37 = `12 b7` (port 4791): RoCE for a fixed card.
    pub(crate) roce_wire: bool,
    /// UDPv4 with bytes 36-37 = `b7 12`: RoCE for today's card.
    pub(crate) roce_swapped: bool,
    /// Opcode byte 42 is one of RC READ RESPONSE FIRST/LAST/ONLY or ACK.
    pub(crate) aeth: bool,
    /// Opcode byte 42 is one of RC WRITE FIRST/ONLY(/IMM) or READ REQUEST.
    pub(crate) reth: bool,
}

impl RtlView {
    /// Flags of the frame starting at `b[0]` (missing bytes read as 0).
    pub(crate) fn of(b: &[u8]) -> Self {
        let at = |i: usize| b.get(i).copied().unwrap_or(0);
        let ethertype = u16::from_be_bytes([at(12), at(13)]);
        let ipv4 = ethertype == 0x0800;
        let ipv6 = ethertype == 0x86dd;
        let udp4 = ipv4 && at(23) == 0x11;
        let opcode = at(42);
        RtlView {
            ipv4,
            ipv6,
            arp: ethertype == 0x0806,
            icmp4: ipv4 && at(23) == 0x01,
            icmp6: ipv6 && at(20) == 0x3a,
            udp4,
            udp6: ipv6 && at(20) == 0x11,
            tcp4: ipv4 && at(23) == 0x06,
            roce_wire: udp4 && at(36) == 0x12 && at(37) == 0xb7,
            roce_swapped: udp4 && at(36) == 0xb7 && at(37) == 0x12,
            aeth: matches!(opcode, 0x10 | 0x0d | 0x0f | 0x11),
            reth: matches!(opcode, 0x0a | 0x06 | 0x0b | 0x0c),
        }
    }

    /// RoCE for either card.
    pub(crate) fn roce(&self) -> bool {
        self.roce_wire || self.roce_swapped
    }

    /// Whether some card could cut this frame to `len` bytes.
    pub(crate) fn may_cut_to(&self, len: u32) -> bool {
        match len {
            42 => self.udp4,
            54 => self.tcp4 || self.roce(),
            58 | 70 => self.roce(),
            62 => self.udp6,
            _ => false,
        }
    }

    /// The RoCE header-only cut the frame's own opcode calls for (what the
    /// TX branch does, and the RX branch when its TX side agrees).
    pub(crate) fn roce_cut(&self) -> u32 {
        if self.aeth {
            58
        } else if self.reth {
            70
        } else {
            54
        }
    }

    /// What `filter` does with this frame on `card`.
    pub(crate) fn rule(&self, filter: SnifferFilter, card: Card) -> Rule {
        let roce = match card {
            Card::Today => self.roce_swapped,
            Card::Fixed => self.roce_wire,
        };
        let bit = |mask: u64| filter.0 & mask != 0;
        let dropped = (self.ipv4 && bit(SnifferFilter::IGNORE_IPV4))
            || (self.ipv6 && bit(SnifferFilter::IGNORE_IPV6))
            || (self.arp && bit(SnifferFilter::IGNORE_ARP))
            || (self.icmp4 && bit(SnifferFilter::IGNORE_ICMPV4))
            || (self.icmp6 && bit(SnifferFilter::IGNORE_ICMPV6))
            || (self.udp4 && bit(SnifferFilter::IGNORE_UDPV4))
            || (self.udp6 && bit(SnifferFilter::IGNORE_UDPV6))
            || (self.tcp4 && bit(SnifferFilter::IGNORE_TCPV4))
            || (roce && bit(SnifferFilter::IGNORE_ROCEV4));
        if dropped {
            Rule::Drop
        } else if self.udp4 && bit(SnifferFilter::UDPV4_HEADER_ONLY) {
            Rule::Cut(42)
        } else if self.udp6 && bit(SnifferFilter::UDPV6_HEADER_ONLY) {
            Rule::Cut(62)
        } else if self.tcp4 && bit(SnifferFilter::TCPV4_HEADER_ONLY) {
            Rule::Cut(54)
        } else if roce && bit(SnifferFilter::ROCEV4_HEADER_ONLY) {
            Rule::Cut(self.roce_cut())
        } else {
            Rule::Whole
        }
    }

    /// A short name of the frame's class, for messages.
    pub(crate) fn class_name(&self) -> &'static str {
        if self.roce() {
            "RoCEv2/IPv4"
        } else if self.udp4 {
            "UDPv4"
        } else if self.udp6 {
            "UDPv6"
        } else if self.tcp4 {
            "TCPv4"
        } else if self.icmp4 {
            "ICMPv4"
        } else if self.icmp6 {
            "ICMPv6"
        } else if self.arp {
            "ARP"
        } else if self.ipv4 {
            "IPv4"
        } else if self.ipv6 {
            "IPv6"
        } else {
            "other"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_variants() {
        for s in [
            "80000000",
            "0x80000000",
            "0X80000000",
            "  80000000\r\n",
            "0000000080000000",
        ] {
            assert_eq!(
                SnifferFilter::parse(s),
                Some(SnifferFilter(0x8000_0000)),
                "{s:?}"
            );
        }
        assert_eq!(SnifferFilter::parse("0"), Some(SnifferFilter(0)));
        assert_eq!(SnifferFilter::parse("8080_0000"), None);
        assert_eq!(SnifferFilter::parse(""), None);
        assert_eq!(SnifferFilter::parse("0x"), None);
        assert_eq!(SnifferFilter::parse("11112222333344445"), None);
        assert_eq!(SnifferFilter::parse("00000000: 00"), None);
    }

    #[test]
    fn display_names_bits_and_issue() {
        let f = SnifferFilter(0x8080_0000);
        let s = f.to_string();
        assert!(s.starts_with("0x0000000080800000 ("), "{s}");
        assert!(s.contains("bit 23: UDPv4 header-only (42 B)"), "{s}");
        assert!(s.contains("bit 31: RoCEv2/IPv4 header-only"), "{s}");
        assert!(s.contains("b7 12"), "{s}");
        assert_eq!(f.issues().len(), 3);
        assert!(SnifferFilter(0).to_string().contains("every frame whole"));
        assert!(SnifferFilter(1).to_string().contains("reserved bits 0x1"));
        assert!(SnifferFilter(0).issues().is_empty());
    }

    #[test]
    fn rules_follow_the_rtl_order() {
        let mut b = [0u8; 64];
        b[12] = 0x08;
        b[14] = 0x45;
        b[23] = 0x11;
        b[36] = 0x12;
        b[37] = 0xb7;
        b[42] = 0x11; // ACK
        let v = RtlView::of(&b);
        assert!(v.roce_wire && !v.roce_swapped && v.aeth);
        let f = SnifferFilter(SnifferFilter::ROCEV4_HEADER_ONLY);
        assert_eq!(v.rule(f, Card::Fixed), Rule::Cut(58));
        assert_eq!(v.rule(f, Card::Today), Rule::Whole);
        let f = SnifferFilter(SnifferFilter::ROCEV4_HEADER_ONLY | SnifferFilter::UDPV4_HEADER_ONLY);
        assert_eq!(v.rule(f, Card::Fixed), Rule::Cut(42));
        let f = SnifferFilter(SnifferFilter::IGNORE_ROCEV4);
        assert_eq!(v.rule(f, Card::Fixed), Rule::Drop);
        assert_eq!(v.rule(f, Card::Today), Rule::Whole);
        // A tagged frame matches no rule.
        b[12] = 0x81;
        assert_eq!(
            RtlView::of(&b).rule(SnifferFilter(u64::MAX), Card::Fixed),
            Rule::Whole
        );
    }
}
