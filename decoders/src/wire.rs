//! Big-endian field reads on slices whose length the caller has checked.
//!
//! Every header view is constructed only after its full length was verified,
//! so these fixed-offset reads cannot fail; they still go through `get` and
//! fall back to zero so that no code path can panic.

#[inline(always)]
pub(crate) fn u8_at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

#[inline(always)]
pub(crate) fn u16_at(b: &[u8], i: usize) -> u16 {
    match b.get(i..i + 2) {
        Some(&[x, y]) => u16::from_be_bytes([x, y]),
        _ => 0,
    }
}

#[inline(always)]
pub(crate) fn u24_at(b: &[u8], i: usize) -> u32 {
    match b.get(i..i + 3) {
        Some(&[x, y, z]) => u32::from_be_bytes([0, x, y, z]),
        _ => 0,
    }
}

#[inline(always)]
pub(crate) fn u32_at(b: &[u8], i: usize) -> u32 {
    match b.get(i..i + 4) {
        Some(&[w, x, y, z]) => u32::from_be_bytes([w, x, y, z]),
        _ => 0,
    }
}

#[inline(always)]
pub(crate) fn u64_at(b: &[u8], i: usize) -> u64 {
    match b.get(i..i + 8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_be_bytes(a)
        }
        None => 0,
    }
}

#[inline(always)]
pub(crate) fn array_at<const N: usize>(b: &[u8], i: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = b.get(i..i + N) {
        a.copy_from_slice(s);
    }
    a
}
