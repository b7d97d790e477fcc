//! One indexed packet: what every view needs without touching the bytes.

use std::fmt;

use crate::record::Direction;

/// Per-packet flags, set at ingest by the decoder and the RC analysis.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u16);

impl Flags {
    /// RoCE frame whose BTH was decoded.
    pub const ROCE: Flags = Flags(1 << 0);
    /// The ICRC did not verify.
    pub const ICRC_BAD: Flags = Flags(1 << 1);
    /// The capture ends before the frame does (header-only or snaplen).
    pub const CUT: Flags = Flags(1 << 2);
    /// A length or field the decoder could not go on from.
    pub const MALFORMED: Flags = Flags(1 << 3);
    pub const ACK_REQ: Flags = Flags(1 << 4);
    /// IP ECN field = CE (11): a switch marked congestion.
    pub const ECN_CE: Flags = Flags(1 << 5);
    pub const BECN: Flags = Flags(1 << 6);
    pub const FECN: Flags = Flags(1 << 7);
    /// AETH with an RNR or NAK syndrome.
    pub const NAK: Flags = Flags(1 << 8);
    pub const CNP: Flags = Flags(1 << 9);
    /// RC analysis: a request re-sent over a PSN span already sent.
    pub const RETRANSMISSION: Flags = Flags(1 << 10);
    /// RC analysis: a duplicate READ response or duplicate ACK.
    pub const DUPLICATE: Flags = Flags(1 << 11);
    /// RC analysis: PSN beyond the expected one.
    pub const OUT_OF_SEQUENCE: Flags = Flags(1 << 12);
    /// RC analysis: packets before this one were missed by the capture.
    pub const CAPTURE_LOSS: Flags = Flags(1 << 13);
    /// A request whose response direction is the reverse of its own (ACK,
    /// READ response): set for responses.
    pub const RESPONSE: Flags = Flags(1 << 14);
    /// The link type is not one rocescope decodes.
    pub const UNDECODED: Flags = Flags(1 << 15);

    /// Every flag of `f` is set.
    #[inline]
    pub fn contains(self, f: Flags) -> bool {
        self.0 & f.0 == f.0
    }
    /// Any flag of `f` is set.
    #[inline]
    pub fn intersects(self, f: Flags) -> bool {
        self.0 & f.0 != 0
    }
    #[inline]
    pub fn set(&mut self, f: Flags, on: bool) {
        if on {
            self.0 |= f.0;
        } else {
            self.0 &= !f.0;
        }
    }
    /// The name of each flag, by bit: display, JSON and table columns.
    pub const NAMES: [&'static str; 16] = [
        "roce",
        "icrc_bad",
        "cut",
        "malformed",
        "ack_req",
        "ecn_ce",
        "becn",
        "fecn",
        "nak",
        "cnp",
        "retransmission",
        "duplicate",
        "out_of_sequence",
        "capture_loss",
        "response",
        "undecoded",
    ];

    /// Names of the set flags, for display and JSON.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        (0..16)
            .filter(move |b| self.0 & (1 << b) != 0)
            .map(|b| Flags::NAMES[b])
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Conversation id of frames that belong to none (not RoCE, or undecoded).
pub const NO_CONVERSATION: u32 = u32::MAX;

/// Lengths at or above this are kept in a side table, not in a row's
/// packed lengths word.
pub(crate) const LEN_ESCAPE: u32 = 0xFFFF;
/// The packed lengths of a row whose lengths do not fit the word.
pub(crate) const ESCAPED_LENS: u32 = LEN_ESCAPE | (LEN_ESCAPE << 16);

/// The packed 32-bit words a row is stored as (`columns.rs`): caplen (low
/// 16) | origlen (high 16), both `LEN_ESCAPE` when either does not fit;
/// psn (low 24) | opcode (high 8); flags (low 16) | port (bits 16..24) |
/// dir (bits 24..26: 0 none, 1 rx, 2 tx).
impl Row {
    #[inline]
    pub(crate) fn packed_lens(&self) -> u32 {
        if self.caplen >= LEN_ESCAPE || self.origlen >= LEN_ESCAPE {
            ESCAPED_LENS
        } else {
            self.caplen | (self.origlen << 16)
        }
    }

    #[inline]
    pub(crate) fn packed_psn_opcode(&self) -> u32 {
        (self.psn & 0xFF_FFFF) | (u32::from(self.opcode) << 24)
    }

    #[inline]
    pub(crate) fn packed_meta(&self) -> u32 {
        let dir = match self.dir {
            None => 0,
            Some(Direction::Rx) => 1,
            Some(Direction::Tx) => 2,
        };
        u32::from(self.flags.0) | (u32::from(self.port) << 16) | (dir << 24)
    }

    /// A row from its stored columns (the lengths already unescaped).
    #[inline]
    pub(crate) fn from_packed(
        ts_ns: u64,
        file_offset: u64,
        (caplen, origlen): (u32, u32),
        conversation: u32,
        psn_opcode: u32,
        meta: u32,
    ) -> Row {
        Row {
            ts_ns,
            file_offset,
            caplen,
            origlen,
            conversation,
            opcode: (psn_opcode >> 24) as u8,
            psn: psn_opcode & 0xFF_FFFF,
            flags: Flags(meta as u16),
            port: (meta >> 16) as u8,
            dir: match (meta >> 24) & 3 {
                1 => Some(Direction::Rx),
                2 => Some(Direction::Tx),
                _ => None,
            },
        }
    }
}

/// One indexed packet, as queries return it. The store keeps it in 24 bytes
/// of columns (32 in a chunk whose times or offsets do not fit 32-bit steps); this struct is the unpacked view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Capture time in ns since the epoch, or the ordinal index (see
    /// [`crate::TimeBase`]).
    pub ts_ns: u64,
    /// Where the frame's bytes start in the backing file.
    pub file_offset: u64,
    pub caplen: u32,
    /// Length on the wire.
    pub origlen: u32,
    /// Index into the store's conversation table, or [`NO_CONVERSATION`].
    pub conversation: u32,
    /// BTH opcode (meaningful with [`Flags::ROCE`]).
    pub opcode: u8,
    /// 24-bit PSN (meaningful with [`Flags::ROCE`]).
    pub psn: u32,
    pub flags: Flags,
    /// Capture interface / card port.
    pub port: u8,
    pub dir: Option<Direction>,
}

/// What holds a row: the columns take rows from a slice of these.
pub(crate) trait AsRow {
    fn row(&self) -> &Row;
}

impl AsRow for Row {
    #[inline]
    fn row(&self) -> &Row {
        self
    }
}

impl Default for Row {
    fn default() -> Self {
        Row {
            ts_ns: 0,
            file_offset: 0,
            caplen: 0,
            origlen: 0,
            conversation: NO_CONVERSATION,
            opcode: 0,
            psn: 0,
            flags: Flags::default(),
            port: 0,
            dir: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_asks_for_all_and_intersects_for_any() {
        let f = Flags::ROCE | Flags::NAK;
        assert!(f.contains(Flags::ROCE));
        assert!(!f.contains(Flags::ROCE | Flags::CNP));
        assert!(f.intersects(Flags::ROCE | Flags::CNP));
        assert!(!f.intersects(Flags::CNP | Flags::ECN_CE));
        assert!(!f.intersects(Flags::default()));
    }
}
