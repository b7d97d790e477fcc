//! What a dump's data says about its filter word, and reading statistics.

use std::fmt;

use super::filter::Rule;

/// What the sniffer did (or should have done) with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Treatment {
    /// Captured whole.
    Whole,
    /// Captured up to this many bytes (a header-only rule).
    Cut(u32),
    /// Not captured.
    Dropped,
}

impl Treatment {
    pub(crate) fn from_rule(rule: Rule, full: u32) -> Self {
        match rule {
            Rule::Drop => Self::Dropped,
            Rule::Cut(n) if n < full => Self::Cut(n),
            Rule::Cut(_) | Rule::Whole => Self::Whole,
        }
    }
}

impl fmt::Display for Treatment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Whole => f.write_str("whole"),
            Self::Cut(n) => write!(f, "cut to {n} B"),
            Self::Dropped => f.write_str("dropped"),
        }
    }
}

/// A way the frames in a dump disagree with its filter word.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MismatchKind {
    /// Bit 31 asks for RoCE header-only but RoCE frames are whole: today's
    /// card, whose RoCE detection matches `b7 12` (known card issue).
    RoceWhole,
    /// Bit 30 asks to ignore RoCE but RoCE frames were captured: the same
    /// known card issue.
    RoceNotIgnored,
    /// A RoCE frame cut to a different one of 54/58/70 bytes than its opcode
    /// calls for: the RX branch picks the cut from the TX side's opcode flags
    /// (known card issue of a card with the RoCE comparison fixed).
    RoceWrongCut,
    /// Frames of a type the filter drops were captured.
    NotIgnored {
        /// The frame type, e.g. `UDPv4`.
        class: &'static str,
    },
    /// Any other disagreement.
    Unexpected {
        /// The frame type, e.g. `UDPv4`.
        class: &'static str,
        /// What the filter word asks for.
        expected: Treatment,
        /// What the dump holds.
        actual: Treatment,
    },
}

impl MismatchKind {
    /// A known issue of the card's sniffer rather than a surprise.
    pub fn is_known_card_issue(&self) -> bool {
        matches!(
            self,
            Self::RoceWhole | Self::RoceNotIgnored | Self::RoceWrongCut
        )
    }
}

/// One kind of disagreement, counted over the dump.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mismatch {
    /// What disagrees.
    pub kind: MismatchKind,
    /// How many frames.
    pub count: u64,
    /// Dump offset of the first such frame.
    pub first_offset: u64,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.count;
        let at = self.first_offset;
        match &self.kind {
            MismatchKind::RoceWhole => write!(
                f,
                "filter requests RoCE header-only (bit 31) but {n} RoCE frames are whole: known \
                 card issue (RoCE detection matches b7 12, not 12 b7 = UDP port 4791); first at \
                 byte {at}"
            ),
            MismatchKind::RoceNotIgnored => write!(
                f,
                "filter ignores RoCE (bit 30) but {n} RoCE frames were captured: known card \
                 issue (RoCE detection matches b7 12, not 12 b7 = UDP port 4791); first at byte \
                 {at}"
            ),
            MismatchKind::RoceWrongCut => write!(
                f,
                "{n} RoCE frames are cut to another of 54/58/70 bytes than their opcode calls \
                 for: known card issue (the RX branch takes the cut from the TX side's opcode \
                 flags); first at byte {at}"
            ),
            MismatchKind::NotIgnored { class } => write!(
                f,
                "filter drops {class} frames but {n} were captured; first at byte {at}"
            ),
            MismatchKind::Unexpected {
                class,
                expected,
                actual,
            } => write!(
                f,
                "filter asks for {class} frames {expected} but {n} are {actual}; first at byte \
                 {at}"
            ),
        }
    }
}

/// Counts of a dump read so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnifferStats {
    /// Frames returned.
    pub frames: u64,
    /// ... of which captured whole.
    pub whole: u64,
    /// ... of which cut by a header-only rule.
    pub header_only: u64,
    /// ... of which cut by the end of the dump or a gap in it.
    pub dump_cut: u64,
    /// Slots occupied by the frames returned.
    pub frame_slots: u64,
    /// Non-zero slots that started no plausible frame, skipped (each run
    /// has a warning with its offset).
    pub skipped_slots: u64,
    /// Text-dump bytes that fitted no slot (damaged or misplaced lines),
    /// skipped with warnings.
    pub skipped_bytes: u64,
    /// All-zero slots (padding, unused buffer), not frames.
    pub padding_slots: u64,
    /// Where the frames disagree with the filter word.
    pub mismatches: Vec<Mismatch>,
}

impl SnifferStats {
    pub(crate) fn mismatch(&mut self, kind: MismatchKind, offset: u64) {
        if let Some(m) = self.mismatches.iter_mut().find(|m| m.kind == kind) {
            m.count += 1;
        } else {
            self.mismatches.push(Mismatch {
                kind,
                count: 1,
                first_offset: offset,
            });
        }
    }
}
