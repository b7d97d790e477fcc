//! Faulting in the store's growing memory ahead of use, many pages per
//! system call. A live store takes about 100 fresh bytes a frame; touched
//! one page at a time, the page-fault traps alone cost a sixth of the CPU
//! a simulator-fed link has (BENCHMARKS.md, "Live link and sessions").
//! Also huge pages asked for a large fresh buffer (the matching's
//! entries), a fault per 2 MiB.

/// Bytes faulted in per call: small enough that a call (about 100 µs)
/// never holds ingest up for long.
pub(crate) const WINDOW_BYTES: usize = 2 << 20;

const PAGE_BYTES: usize = 4096;

const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Fault in the whole pages of `spare` (a `Vec`'s unused capacity) for
/// writing, so that the writes that fill it take no page faults. Best
/// effort: where the kernel lacks `MADV_POPULATE_WRITE` (before Linux 5.14)
/// or off Linux, nothing happens and the pages fault in as they are used.
pub(crate) fn populate<T>(spare: &mut [std::mem::MaybeUninit<T>]) {
    advise(spare, PAGE_BYTES, Advice::PopulateWrite);
}

/// Ask for the whole 2 MiB pages of `fresh` (memory not yet touched) to
/// be transparent huge pages: a page fault (and TLB entry) per 2 MiB
/// rather than per 4 KiB. Best effort, as [`populate`].
pub(crate) fn advise_huge<T: Copy>(fresh: &mut [T]) {
    advise(fresh, HUGE_PAGE_BYTES, Advice::HugePage);
}

/// The two pieces of advice, each changing no byte of the range:
/// `PopulateWrite` maps its pages in as a write of what they already hold
/// would; `HugePage` changes only how its pages are backed.
#[derive(Clone, Copy)]
enum Advice {
    PopulateWrite,
    HugePage,
}

/// `advice` for the whole `page_bytes` pages inside `region` (none when
/// the region holds no whole page). A failure (an old kernel) is harmless:
/// the pages fault in later, as they would have.
fn advise<T>(region: &mut [T], page_bytes: usize, advice: Advice) {
    let start = region.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(region);
    let first = start.next_multiple_of(page_bytes);
    let last = end & !(page_bytes - 1);
    if last > first {
        madvise_range(first, last - first, advice);
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn madvise_range(addr: usize, len: usize, advice: Advice) {
    const MADV_HUGEPAGE: i32 = 14;
    const MADV_POPULATE_WRITE: i32 = 23;
    unsafe extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    let advice = match advice {
        Advice::PopulateWrite => MADV_POPULATE_WRITE,
        Advice::HugePage => MADV_HUGEPAGE,
    };
    // SAFETY: `advise` passes whole pages inside a region borrowed mutably
    // from a live allocation this process owns, and neither advice changes
    // a byte of it (see `Advice`).
    let _ = unsafe { madvise(addr as *mut std::ffi::c_void, len, advice) };
}

#[cfg(not(target_os = "linux"))]
fn madvise_range(_addr: usize, _len: usize, _advice: Advice) {}

/// Minor page faults this thread has taken (Linux), for tests.
#[cfg(test)]
pub(crate) fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command's closing parenthesis; minflt is the 10th
    // field overall, the 8th after it.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(7)?
        .parse()
        .ok()
}

/// Whether the kernel has MADV_POPULATE_WRITE (Linux 5.14), for tests.
#[cfg(test)]
pub(crate) fn has_populate_write() -> bool {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut nums = kernel
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    (nums.next().unwrap_or(0), nums.next().unwrap_or(0)) >= (5, 14)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Advised huge, a fresh zeroed allocation keeps its zeros and takes
    /// every write; so do a too-small one and an empty one.
    #[test]
    fn huge_advice_changes_no_byte() {
        let mut v: Vec<u64> = vec![0; 3 * HUGE_PAGE_BYTES / 8 + 5];
        advise_huge(&mut v);
        advise_huge(&mut v[..1]);
        advise_huge(&mut v[..0]);
        assert!(v.iter().all(|&x| x == 0));
        for (i, x) in v.iter_mut().enumerate() {
            *x = i as u64 * 7;
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 7));
    }

    /// Faulting in leaves every byte as it was, and the writes that fill
    /// the faulted range then take (almost) no page faults.
    #[test]
    fn populated_capacity_fills_without_faults() {
        let mut v: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        v.reserve_exact(4 * WINDOW_BYTES);
        populate(v.spare_capacity_mut());
        populate(&mut v.spare_capacity_mut()[..1]);
        populate(&mut v.spare_capacity_mut()[..0]);
        let before = minor_faults();
        v.resize(v.capacity(), 7);
        let after = minor_faults();
        assert!(
            v[..100_000]
                .iter()
                .copied()
                .eq((0..100_000u32).map(|i| i as u8))
        );
        assert!(v[100_000..].iter().all(|&b| b == 7));
        let (Some(before), Some(after)) = (before, after) else {
            return; // no per-thread fault counts here
        };
        if !has_populate_write() {
            return;
        }
        // 8 MiB is 2,048 pages; faulted in ahead, a handful at most.
        assert!(after - before < 64, "{} faults", after - before);
    }
}
