//! 24-bit PSN arithmetic: compare modulo 2^24 in half space.

/// PSNs are 24 bits wide.
pub const PSN_MASK: u32 = 0xFF_FFFF;

/// Signed distance `a - b` in the 24-bit PSN space (-2^23 ..= 2^23-1).
#[inline]
pub fn psn_diff(a: u32, b: u32) -> i32 {
    (a.wrapping_sub(b) << 8) as i32 >> 8
}

/// `a + n` modulo 2^24.
#[inline]
pub fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_in_half_space() {
        assert_eq!(psn_diff(5, 3), 2);
        assert_eq!(psn_diff(3, 5), -2);
        assert_eq!(psn_diff(1, PSN_MASK), 2);
        assert_eq!(psn_diff(PSN_MASK, 1), -2);
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000);
    }
}
