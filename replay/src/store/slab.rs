//! A chunk's memory: its six columns in one zeroed block, a whole chunk
//! (2 MiB) on one huge page where the kernel has them.
//!
//! Six columns in separate allocations of 4 KiB pages cost the indexer's
//! append thread about a tenth of its time in the kernel: 512 pages to
//! fault in (or populate) per chunk, each with its own bookkeeping. One
//! block aligned to 2 MiB and advised as a huge page is one fault, and its
//! rows take no TLB misses (BENCHMARKS.md, "Huge pages for the index").

/// Bytes of an x86-64 or AArch64 (4 KiB granule) transparent huge page.
const HUGE_PAGE_BYTES: usize = 2 << 20;

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
    /// `HUGE_PAGE_BYTES`-aligned window of a mapping, starting `at` bytes in.
    Mapped {
        map: memmap2::MmapMut,
        at: usize,
    },
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
    /// Zeroed room for `cap` rows. A slab of whole huge pages is mapped on
    /// its own, aligned, advised as huge and faulted in at once; smaller
    /// ones (a small capture's first chunk) come from the heap.
    pub(crate) fn new(cap: usize) -> Slab {
        let bytes = cap * ROW_BYTES;
        let mem = if bytes >= HUGE_PAGE_BYTES && bytes.is_multiple_of(HUGE_PAGE_BYTES) {
            map_aligned(bytes)
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
        let words: &[u64] = match &self.mem {
            Mem::Heap(v) => v,
            // `map_aligned` checked that the window casts.
            Mem::Mapped { map, at } => map
                .get(*at..*at + self.bytes())
                .and_then(|b| bytemuck::try_cast_slice(b).ok())
                .unwrap_or(&[]),
        };
        words
    }

    fn words_mut(&mut self) -> &mut [u64] {
        let bytes = self.bytes();
        match &mut self.mem {
            Mem::Heap(v) => v,
            Mem::Mapped { map, at } => map
                .get_mut(*at..*at + bytes)
                .and_then(|b| bytemuck::try_cast_slice_mut(b).ok())
                .unwrap_or(&mut []),
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

/// An anonymous mapping of `bytes` aligned to a huge page, advised as huge
/// and faulted in. Linux 6.7 and later align mappings of this size by
/// themselves; elsewhere a mapping a huge page larger is cut to an
/// aligned window (the rest is never touched, so it costs address space,
/// not memory). `None` when the system refuses the mapping.
fn map_aligned(bytes: usize) -> Option<Mem> {
    let aligned = |map: &memmap2::MmapMut| (map.as_ptr() as usize).is_multiple_of(HUGE_PAGE_BYTES);
    let map = memmap2::MmapMut::map_anon(bytes).ok()?;
    let (map, at) = if aligned(&map) {
        (map, 0)
    } else {
        drop(map);
        let map = memmap2::MmapMut::map_anon(bytes + HUGE_PAGE_BYTES).ok()?;
        let at = (HUGE_PAGE_BYTES - map.as_ptr() as usize % HUGE_PAGE_BYTES) % HUGE_PAGE_BYTES;
        (map, at)
    };
    // Hints: where the kernel has no huge pages, or no MADV_POPULATE_WRITE
    // (before Linux 5.14), the pages fault in one at a time as rows arrive.
    #[cfg(target_os = "linux")]
    {
        use memmap2::Advice;
        let _ = map.advise_range(Advice::HugePage, at, bytes);
        let _ = map.advise_range(Advice::PopulateWrite, at, bytes);
    }
    let window = map.get(at..at + bytes)?;
    bytemuck::try_cast_slice::<u8, u64>(window).ok()?;
    Some(Mem::Mapped { map, at })
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
            HUGE_PAGE_BYTES / ROW_BYTES,
            2 * HUGE_PAGE_BYTES / ROW_BYTES,
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

    /// A whole chunk is mapped, aligned to a huge page, so that the kernel
    /// can back it with one.
    #[test]
    fn a_whole_chunk_is_mapped_on_a_huge_page_boundary() {
        let s = Slab::new(HUGE_PAGE_BYTES / ROW_BYTES);
        #[cfg(unix)]
        assert!(matches!(s.mem, Mem::Mapped { .. }), "a chunk is mapped");
        assert_eq!(s.cols().ts_ns.as_ptr() as usize % HUGE_PAGE_BYTES, 0);
        assert!(matches!(Slab::new(1024).mem, Mem::Heap(_)));
    }
}
