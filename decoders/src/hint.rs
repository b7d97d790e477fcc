//! A hint to the CPU for the per-packet loops (the RC analysis, the
//! indexer's append thread): data they will read soon that is likely out
//! of the cache.

/// Asks the CPU to bring `value`'s cache line in (and the next one for a
/// value longer than a line), ahead of reading it.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: a prefetch is a hint: it reads no byte and cannot fault, and
    // the address is of a live value (and at most the line after it).
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = (value as *const T).cast::<i8>();
        _mm_prefetch::<_MM_HINT_T0>(p);
        if std::mem::size_of::<T>() > 64 {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
