//! A chunk's memory: its six columns in one zeroed block, a whole chunk
//! (2 MiB) mapped on its own and faulted in with one system call.
//!
//! With six columns in separate heap allocations, each faulted in on its
//! own and filled through `Vec::extend`, `rocescope stats` on a 2 M-frame
//! capture took 0.096 s; with one block per chunk written through slices,
//! 0.084 s (BENCHMARKS.md, "One mapping per chunk"). Huge pages would save
//! the page faults too, but on a virtual machine that hands free memory
//! back to its host they made a first run after a pause twice as slow:
//! the 2 MiB blocks they need are the ones the host took back.

/// Slabs this large or larger are mapped on their own: a whole chunk.
const MAPPED_MIN_BYTES: usize = 2 << 20;

/// Bytes a row takes: two 8-byte columns, four 4-byte ones.
pub(crate) const ROW_BYTES: usize = 8 + 8 + 4 + 4 + 4 + 4;

/// Memory for `cap` rows of each column, zeroed: the two `u64` columns one
/// after the other, then the four `u32` ones (the segment file's layout).
pub(crate) struct Slab {
    mem: Mem,
    cap: usize,
}

enum Mem {
    Heap(Vec<u64>),
    Mapped(memmap2::MmapMut),
}

/// All six columns of a slab, each `cap` rows long.
pub(crate) struct Cols<'a> {
    pub(crate) ts_ns: &'a [u64],
    pub(crate) file_offset: &'a [u64],
    pub(crate) lens: &'a [u32],
    pub(crate) conversation: &'a [u32],
    pub(crate) psn_opcode: &'a [u32],
    pub(crate) meta: &'a [u32],
}

/// [`Cols`], writable.
pub(crate) struct ColsMut<'a> {
    pub(crate) ts_ns: &'a mut [u64],
    pub(crate) file_offset: &'a mut [u64],
    pub(crate) lens: &'a mut [u32],
    pub(crate) conversation: &'a mut [u32],
    pub(crate) psn_opcode: &'a mut [u32],
    pub(crate) meta: &'a mut [u32],
}

impl Slab {
    /// Zeroed room for `cap` rows. A whole chunk is mapped on its own and
    /// faulted in at once; smaller slabs (a small capture's first chunk)
    /// come from the heap.
    pub(crate) fn new(cap: usize) -> Slab {
        let bytes = cap * ROW_BYTES;
        let mem = if bytes >= MAPPED_MIN_BYTES {
            map_populated(bytes)
        } else {
            None
        };
        let mem = mem.unwrap_or_else(|| Mem::Heap(vec![0; bytes / 8]));
        Slab { mem, cap }
    }

    /// Rows of each column.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes of memory the slab holds.
    pub(crate) fn bytes(&self) -> usize {
        self.cap * ROW_BYTES
    }

    fn words(&self) -> &[u64] {
        match &self.mem {
            Mem::Heap(v) => v,
            // `map_populated` checked that the mapping casts.
            Mem::Mapped(map) => bytemuck::try_cast_slice(map).unwrap_or(&[]),
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.mem {
            Mem::Heap(v) => v,
            Mem::Mapped(map) => bytemuck::try_cast_slice_mut(map).unwrap_or(&mut []),
        }
    }

    pub(crate) fn cols(&self) -> Cols<'_> {
        let cap = self.cap;
        let (wide, narrow) = self.words().split_at(2 * cap);
        let (ts_ns, file_offset) = wide.split_at(cap);
        let narrow: &[u32] = bytemuck::cast_slice(narrow);
        let (lens, rest) = narrow.split_at(cap);
        let (conversation, rest) = rest.split_at(cap);
        let (psn_opcode, meta) = rest.split_at(cap);
        Cols {
            ts_ns,
            file_offset,
            lens,
            conversation,
            psn_opcode,
            meta,
        }
    }

    pub(crate) fn cols_mut(&mut self) -> ColsMut<'_> {
        let cap = self.cap;
        let (wide, narrow) = self.words_mut().split_at_mut(2 * cap);
        let (ts_ns, file_offset) = wide.split_at_mut(cap);
        let narrow: &mut [u32] = bytemuck::cast_slice_mut(narrow);
        let (lens, rest) = narrow.split_at_mut(cap);
        let (conversation, rest) = rest.split_at_mut(cap);
        let (psn_opcode, meta) = rest.split_at_mut(cap);
        ColsMut {
            ts_ns,
            file_offset,
            lens,
            conversation,
            psn_opcode,
            meta,
        }
    }
}

/// An anonymous mapping of `bytes`, faulted in for writing with one
/// system call. `None` when the system refuses the mapping (the slab then
/// comes from the heap).
fn map_populated(bytes: usize) -> Option<Mem> {
    let map = memmap2::MmapMut::map_anon(bytes).ok()?;
    // A hint: before Linux 5.14 (no MADV_POPULATE_WRITE) the pages fault in
    // one at a time as rows arrive.
    #[cfg(target_os = "linux")]
    let _ = map.advise_range(memmap2::Advice::PopulateWrite, 0, bytes);
    // Page-aligned, so it casts; checked once here rather than trusted.
    bytemuck::try_cast_slice::<u8, u64>(&map).ok()?;
    Some(Mem::Mapped(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns do not overlap, start zeroed and keep what is written, for
    /// heap slabs and mapped ones alike.
    #[test]
    fn columns_are_disjoint_and_keep_their_values() {
        for cap in [
            1,
            1024,
            MAPPED_MIN_BYTES / ROW_BYTES,
            2 * MAPPED_MIN_BYTES / ROW_BYTES,
        ] {
            let mut s = Slab::new(cap);
            assert_eq!(s.cap(), cap);
            assert_eq!(s.bytes(), cap * 32);
            {
                let c = s.cols();
                for len in [c.ts_ns.len(), c.file_offset.len(), c.lens.len()] {
                    assert_eq!(len, cap);
                }
                for len in [c.conversation.len(), c.psn_opcode.len(), c.meta.len()] {
                    assert_eq!(len, cap);
                }
                assert!(c.ts_ns.iter().chain(c.file_offset).all(|&v| v == 0));
                assert!(c.meta.iter().all(|&v| v == 0));
            }
            let c = s.cols_mut();
            for i in 0..cap {
                let k = i as u64;
                c.ts_ns[i] = k;
                c.file_offset[i] = k + 1;
                c.lens[i] = i as u32 + 2;
                c.conversation[i] = i as u32 + 3;
                c.psn_opcode[i] = i as u32 + 4;
                c.meta[i] = i as u32 + 5;
            }
            let c = s.cols();
            for i in 0..cap {
                let k = i as u64;
                assert_eq!((c.ts_ns[i], c.file_offset[i]), (k, k + 1));
                assert_eq!((c.lens[i], c.conversation[i]), (i as u32 + 2, i as u32 + 3));
                assert_eq!((c.psn_opcode[i], c.meta[i]), (i as u32 + 4, i as u32 + 5));
            }
        }
    }

    /// A whole chunk is mapped on its own and already faulted in: filling
    /// it takes (almost) no page faults.
    #[test]
    fn a_whole_chunk_is_mapped_and_faulted_in() {
        let mut s = Slab::new(MAPPED_MIN_BYTES / ROW_BYTES);
        assert!(matches!(s.mem, Mem::Mapped(_)), "a chunk is mapped");
        assert!(matches!(Slab::new(1024).mem, Mem::Heap(_)));
        let before = super::super::prefault::minor_faults();
        s.words_mut().fill(7);
        let after = super::super::prefault::minor_faults();
        assert!(s.words().iter().all(|&w| w == 7));
        if let (Some(before), Some(after)) = (before, after)
            && super::super::prefault::has_populate_write()
        {
            // 2 MiB is 512 pages; faulted in ahead, a handful at most.
            assert!(after - before < 16, "{} faults", after - before);
        }
    }
}
