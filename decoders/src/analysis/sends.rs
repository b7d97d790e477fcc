//! A flow's outstanding sends: a queue in fixed blocks.
//!
//! A capture of one direction (or one whose ACKs never cover the sends)
//! keeps [`MAX_TRACKED_SENDS`](super::MAX_TRACKED_SENDS) outstanding per
//! flow. In a `VecDeque` they grew by doubling, copied each time into fresh
//! pages, on the indexer's critical thread (BENCHMARKS.md, "The analysis'
//! design measurements": the outstanding sends in blocks). Blocks are never
//! copied, and a flow at its cap frees a block at the front as it takes
//! one at the back.

/// A request sent and not yet acknowledged: 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Sent {
    /// The PSN (24 bits) with the flags above it.
    psn_flags: u32,
    /// PSNs it consumes (READ: one per response packet).
    pub(super) psn_count: u32,
    pub(super) ts_ns: u64,
}

pub(super) const PSN_MASK: u32 = 0xFF_FFFF;
const RESENT: u32 = 1 << 24;
const READ: u32 = 1 << 25;

impl Sent {
    pub(super) fn new(psn: u32, psn_count: u32, ts_ns: u64, read: bool) -> Sent {
        Sent {
            psn_flags: (psn & PSN_MASK) | if read { READ } else { 0 },
            psn_count,
            ts_ns,
        }
    }
    #[inline]
    pub(super) fn psn(&self) -> u32 {
        self.psn_flags & PSN_MASK
    }
    /// A READ request (its responses are not ACK round trips).
    #[inline]
    pub(super) fn read(&self) -> bool {
        self.psn_flags & READ != 0
    }
    /// Sent more than once (no round trip is taken from it).
    #[inline]
    pub(super) fn resent(&self) -> bool {
        self.psn_flags & RESENT != 0
    }
    pub(super) fn mark_resent(&mut self) {
        self.psn_flags |= RESENT;
    }
}

/// Sends a block holds (16 KiB). A flow's first block grows from a few
/// sends, so that a capture of many quiet QPs stays small.
const BLOCK: usize = 1024;

/// Outstanding sends, oldest first. 32 bytes, as a `VecDeque` (the flow's
/// hot fields around it keep their cache lines).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct SendQueue {
    /// Every block but the last is full; the first block's first `head`
    /// sends are taken off already. A block the front empties is freed and
    /// the allocator hands the same memory to the next block at the back.
    blocks: Vec<Vec<Sent>>,
    head: u32,
    len: u32,
}

impl SendQueue {
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(super) fn push_back(&mut self, sent: Sent) {
        // Room first, then the push: a send handed to the cold path as well
        // was built on the stack field by field and copied whole, a
        // store-forwarding stall on every request.
        let room = match self.blocks.last() {
            Some(b) => b.len() < b.capacity(),
            None => false,
        };
        if !room {
            self.make_room();
        }
        if let Some(b) = self.blocks.last_mut() {
            b.push(sent);
        }
        self.len += 1;
    }

    /// Room for one more send at the back: the first block grows as a
    /// `Vec` does (a quiet QP stays small); later blocks are whole.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) {
        match self.blocks.last_mut() {
            Some(b) if b.len() < BLOCK => b.reserve(b.len().max(4)),
            Some(_) => self.blocks.push(Vec::with_capacity(BLOCK)),
            None => self.blocks.push(Vec::with_capacity(4)),
        }
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<Sent> {
        let front = self.blocks.first()?;
        let sent = *front.get(self.head as usize)?;
        self.head += 1;
        self.len -= 1;
        if self.head as usize == front.len() {
            self.front_emptied();
        }
        Some(sent)
    }

    /// Not cold: a flow with a send or two out at a time empties its queue
    /// on most ACKs.
    fn front_emptied(&mut self) {
        self.head = 0;
        if self.blocks.len() == 1 {
            // Empty now: the block stays for the next send (a flow with a
            // few sends out at a time allocates once).
            if let Some(b) = self.blocks.first_mut() {
                b.clear();
            }
        } else {
            // At most 65 blocks: the shift is once per 1,024 sends.
            self.blocks.remove(0);
        }
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&Sent> {
        self.blocks.first()?.get(self.head as usize)
    }

    pub(super) fn back_mut(&mut self) -> Option<&mut Sent> {
        self.blocks.last_mut()?.last_mut()
    }

    /// The `i`th send from the front.
    #[cfg(test)]
    pub(super) fn get(&self, i: usize) -> Option<&Sent> {
        let at = self.head as usize + i;
        self.blocks.get(at / BLOCK)?.get(at % BLOCK)
    }

    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = &Sent> {
        let head = self.head as usize;
        self.blocks
            .iter()
            .enumerate()
            .flat_map(move |(i, b)| b.get(if i == 0 { head } else { 0 }..).unwrap_or_default())
    }

    pub(super) fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Sent> {
        let head = self.head as usize;
        self.blocks.iter_mut().enumerate().flat_map(move |(i, b)| {
            b.get_mut(if i == 0 { head } else { 0 }..)
                .unwrap_or_default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::MAX_TRACKED_SENDS;
    use super::*;
    use std::collections::VecDeque;

    fn sent(i: u32) -> Sent {
        Sent::new(i, 1 + i % 3, u64::from(i) * 10, i.is_multiple_of(5))
    }

    #[test]
    fn a_sent_packs_its_psn_and_flags_into_one_word() {
        assert_eq!(std::mem::size_of::<Sent>(), 16);
        let mut s = Sent::new(0xFF_FFFF, 4, 99, true);
        assert_eq!((s.psn(), s.read(), s.resent()), (0xFF_FFFF, true, false));
        s.mark_resent();
        assert_eq!((s.psn(), s.read(), s.resent()), (0xFF_FFFF, true, true));
        let s = Sent::new(7, 1, 0, false);
        assert_eq!((s.psn(), s.read(), s.resent()), (7, false, false));
    }

    /// Every operation against a `VecDeque` doing the same, across block
    /// boundaries, with the queue drained empty and refilled.
    #[test]
    fn the_queue_behaves_as_a_deque_across_blocks() {
        let mut q = SendQueue::default();
        let mut model = VecDeque::new();
        let mut next = 0u32;
        // Push runs and pop runs of uneven lengths.
        for (push, pop) in [
            (5, 2),
            (3000, 1000),
            (1, 2003),
            (2500, 2500),
            (1024, 0),
            (1, 1025),
        ] {
            for _ in 0..push {
                q.push_back(sent(next));
                model.push_back(sent(next));
                next += 1;
            }
            for _ in 0..pop {
                assert_eq!(q.pop_front(), model.pop_front());
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.is_empty(), model.is_empty());
            assert_eq!(q.front(), model.front());
            for i in [
                0,
                1,
                1023,
                1024,
                1025,
                model.len().saturating_sub(1),
                model.len(),
            ] {
                assert_eq!(q.get(i), model.get(i), "get({i})");
            }
            assert!(q.iter().eq(model.iter()));
            assert!(q.iter().rev().eq(model.iter().rev()));
            if let (Some(a), Some(b)) = (q.back_mut(), model.back_mut()) {
                a.psn_count += 1;
                b.psn_count += 1;
            }
            for (a, b) in q.iter_mut().zip(model.iter_mut()).step_by(7) {
                a.mark_resent();
                b.mark_resent();
            }
            assert!(q.iter().eq(model.iter()));
        }
        while let Some(s) = model.pop_front() {
            assert_eq!(q.pop_front(), Some(s));
        }
        assert_eq!((q.pop_front(), q.front(), q.len()), (None, None, 0));
    }

    /// At its cap (a pop for each push), the queue holds at most one block
    /// more than it needs.
    #[test]
    fn a_full_queue_reuses_its_blocks() {
        let mut q = SendQueue::default();
        for i in 0..MAX_TRACKED_SENDS as u32 {
            q.push_back(sent(i));
        }
        for i in 0..(10 * BLOCK) as u32 {
            q.pop_front();
            q.push_back(sent(i));
        }
        assert_eq!(q.len(), MAX_TRACKED_SENDS);
        assert!(q.blocks.len() <= MAX_TRACKED_SENDS / BLOCK + 1);
        let held: usize = q.blocks.iter().map(Vec::capacity).sum();
        assert!(held <= MAX_TRACKED_SENDS + BLOCK, "{held}");
        assert_eq!(std::mem::size_of::<SendQueue>(), 32);
    }
}
