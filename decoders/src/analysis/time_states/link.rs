//! A host's link as the accounting reads it: its latest stretches of
//! frames back to back, and the time bytes take on the wire.

/// A stretch of a link's frames back to back: (first bit, end), ns.
type Stretch = (u64, u64);

/// Frames a host's link keeps for placing other QPs' frames in a wait.
const LINK_FRAMES: usize = 1024;

/// A host's link busy, as its latest stretches of frames back to back
/// (from the first frame's first bit to the last one's end), oldest first:
/// a ring of [`LINK_FRAMES`]. A frame that starts where the last stretch
/// ends lengthens it, so a busy link is a few entries, not one a frame
/// (a QP's wait between two of its packets reads only these).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FrameRing {
    buf: Vec<(u64, u64)>,
    /// The oldest entry's place once the ring is full.
    head: usize,
    /// The newest entry's place.
    last: usize,
}

impl FrameRing {
    /// A frame on the link from `ts_ns` to `end_ns`.
    #[inline(always)]
    pub fn push(&mut self, ts_ns: u64, end_ns: u64) {
        if let Some(l) = self.buf.get_mut(self.last)
            && ts_ns <= l.1 + ROUNDING_NS
            && ts_ns >= l.0
        {
            l.1 = l.1.max(end_ns);
            return;
        }
        self.push_new(ts_ns, end_ns);
    }

    #[inline(never)]
    fn push_new(&mut self, ts_ns: u64, end_ns: u64) {
        if self.buf.len() < LINK_FRAMES {
            self.last = self.buf.len();
            self.buf.push((ts_ns, end_ns));
        } else {
            self.last = self.head;
            self.buf[self.head] = (ts_ns, end_ns);
            self.head = if self.head + 1 == LINK_FRAMES {
                0
            } else {
                self.head + 1
            };
        }
    }

    pub(super) fn len(&self) -> usize {
        self.buf.len()
    }

    /// The end of the one stretch of frames placing a wait `[from, to)`,
    /// when one does: the oldest kept starts at or before `from`, and
    /// either the newest starts before `from`, or it starts at or after
    /// `to` (the sender's own frame) and the one before it before `from`.
    /// None otherwise (the walk then). The newest is read first: it
    /// decides most waits, without the one before it.
    #[inline(always)]
    pub(super) fn stretch_over(&self, from: u64, to: u64) -> Option<u64> {
        let newest = *self.buf.get(self.last)?;
        if self.buf.get(self.head)?.0 > from {
            return None;
        }
        if newest.0 < from {
            return Some(newest.1);
        }
        if newest.0 < to {
            return None;
        }
        let before = match self.last {
            0 if self.buf.len() == LINK_FRAMES => self.buf.get(LINK_FRAMES - 1),
            0 => None,
            l => self.buf.get(l - 1),
        }?;
        (before.0 < from).then_some(before.1)
    }

    /// The `i`-th oldest.
    #[inline]
    pub(super) fn get(&self, i: usize) -> (u64, u64) {
        let j = self.head + i;
        self.buf[if j >= self.buf.len() {
            j - self.buf.len()
        } else {
            j
        }]
    }

    /// The stretches oldest first, as two slices (the ring's wrap between
    /// them): walked by slice, not by index through the wrap.
    #[inline]
    pub(super) fn ordered(&self) -> (&[Stretch], &[Stretch]) {
        let (wrapped, oldest) = self.buf.split_at(self.head.min(self.buf.len()));
        (oldest, wrapped)
    }

    /// From the one before the first frame starting at or after `ts_ns`,
    /// oldest first, as two slices (the ring's wrap between them): that
    /// first frame is looked for from the newest, as a wait is (a long one
    /// walks them all anyway).
    #[inline]
    pub(super) fn walk_from_before(&self, ts_ns: u64) -> (&[Stretch], &[Stretch]) {
        let (older, wrapped) = self.ordered();
        let mut n = wrapped.len();
        while n > 0 && wrapped[n - 1].0 >= ts_ns {
            n -= 1;
        }
        if n > 0 {
            return (&wrapped[n - 1..], &[]);
        }
        let mut n = older.len();
        while n > 0 && older[n - 1].0 >= ts_ns {
            n -= 1;
        }
        (&older[n.saturating_sub(1)..], wrapped)
    }
}

/// No frames (a host the analysis has not seen).
pub(crate) const NO_FRAMES: &FrameRing = &FrameRing {
    buf: Vec::new(),
    head: 0,
    last: 0,
};

/// Bytes an Ethernet frame of `frame_bytes` (no FCS) takes on the wire:
/// padding, FCS, preamble and the inter-frame gap.
#[inline]
pub(crate) fn wire_bytes(frame_bytes: u32) -> u64 {
    u64::from(frame_bytes.max(60)) + 24
}

/// Femtoseconds a byte takes on a link of `gbps` (integer arithmetic per
/// packet: exact for the standard rates).
pub(crate) fn fs_per_byte(gbps: f64) -> u64 {
    ((8e6 / gbps).round() as u64).max(1)
}

/// Nanoseconds `bytes` of wire take at `fs_per_byte`.
#[inline(always)]
pub(crate) fn wire_ns(bytes: u64, fs_per_byte: u64) -> u64 {
    bytes.saturating_mul(fs_per_byte) / 1_000_000
}

/// A wait this short after the sender's own frame is the rounding of the
/// frames' times to whole nanoseconds (the next frame right after it), not
/// a wait: it stays sending, rather than a run of its own (and a link's
/// frames this close are one stretch of it busy).
pub(super) const ROUNDING_NS: u64 = 2;
