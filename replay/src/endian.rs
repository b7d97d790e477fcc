//! Fixed-size integers read from bytes in a given byte order: the one
//! helper every reader of a capture (pcap, pcapng, the agent's stream)
//! uses. `big_endian` is the file's or section's order. A read that runs
//! past the end of `b` gives 0, never a panic; where a short field means
//! something, the caller checks the length first.

/// The `N` bytes at `at`, or zeros if `b` has fewer.
#[inline]
fn array_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b.get(at..)
        .and_then(|s| s.first_chunk::<N>())
        .copied()
        .unwrap_or([0; N])
}

/// The `u16` at `at`; 0 if `b` has no 2 bytes there.
#[inline]
pub fn u16_at(b: &[u8], at: usize, big_endian: bool) -> u16 {
    let w = array_at(b, at);
    if big_endian {
        u16::from_be_bytes(w)
    } else {
        u16::from_le_bytes(w)
    }
}

/// The `u32` at `at`; 0 if `b` has no 4 bytes there.
#[inline]
pub fn u32_at(b: &[u8], at: usize, big_endian: bool) -> u32 {
    let w = array_at(b, at);
    if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    }
}

/// The `u64` at `at`; 0 if `b` has no 8 bytes there.
#[inline]
pub fn u64_at(b: &[u8], at: usize, big_endian: bool) -> u64 {
    let w = array_at(b, at);
    if big_endian {
        u64::from_be_bytes(w)
    } else {
        u64::from_le_bytes(w)
    }
}

/// The `i64` at `at`; 0 if `b` has no 8 bytes there.
#[inline]
pub fn i64_at(b: &[u8], at: usize, big_endian: bool) -> i64 {
    let w = array_at(b, at);
    if big_endian {
        i64::from_be_bytes(w)
    } else {
        i64::from_le_bytes(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_and_short_input() {
        let b = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(u16_at(&b, 0, false), 0x0201);
        assert_eq!(u16_at(&b, 0, true), 0x0102);
        assert_eq!(u32_at(&b, 4, false), 0x0807_0605);
        assert_eq!(u32_at(&b, 4, true), 0x0506_0708);
        assert_eq!(u64_at(&b, 0, true), 0x0102_0304_0506_0708);
        assert_eq!(i64_at(&b, 0, false), 0x0807_0605_0403_0201);
        assert_eq!(u32_at(&b, 5, false), 0);
        assert_eq!(u16_at(&b, usize::MAX, true), 0);
        assert_eq!(u64_at(&[], 0, false), 0);
    }
}
