//! Timestamp resolution: pcapng time units (`if_tsresol`, `if_tsoffset`)
//! to ns since 1970.

/// Converts a pcapng timestamp to ns since 1970 with integer math only.
///
/// `units` counts `10^-n` s (`tsresol` high bit clear) or `2^-n` s (high bit
/// set); resolutions finer than 1 ns are truncated. `tsoffset_s` seconds are
/// added. `Err` carries the value clamped to `0..=u64::MAX` when the result
/// does not fit.
#[inline]
pub fn timestamp_ns(units: u64, tsresol: u8, tsoffset_s: i64) -> Result<u64, u64> {
    // Fast path for the usual µs / ns interfaces without offset.
    if let Some(ns) = ns_per_unit(tsresol, tsoffset_s).and_then(|m| units.checked_mul(m)) {
        return Ok(ns);
    }
    let n = u32::from(tsresol & 0x7f);
    let ns: u128 = if tsresol & 0x80 != 0 {
        // units < 2^64, 1e9 < 2^30: the product fits in u128; n <= 127.
        (u128::from(units) * 1_000_000_000) >> n
    } else if n <= 9 {
        u128::from(units) * 10u128.pow(9 - n)
    } else if n - 9 <= 38 {
        u128::from(units) / 10u128.pow(n - 9)
    } else {
        0
    };
    // |tsoffset_s| * 1e9 < 9.3e27 and ns < 2^94: fits in i128.
    let total = ns as i128 + i128::from(tsoffset_s) * 1_000_000_000;
    u64::try_from(total).map_err(|_| if total < 0 { 0 } else { u64::MAX })
}

/// Nanoseconds per unit where a timestamp is one multiply away (a decimal
/// resolution of at most 1 ns, no offset): [`timestamp_ns`]'s fast path,
/// which a reader can compute once per interface.
#[inline]
pub(crate) fn ns_per_unit(tsresol: u8, tsoffset_s: i64) -> Option<u64> {
    (tsresol <= 9 && tsoffset_s == 0).then(|| 10u64.pow(9 - u32::from(tsresol)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_resolutions() {
        assert_eq!(timestamp_ns(1_500_000, 6, 0), Ok(1_500_000_000));
        assert_eq!(timestamp_ns(1_500, 3, 0), Ok(1_500_000_000));
        assert_eq!(timestamp_ns(7, 0, 0), Ok(7_000_000_000));
        assert_eq!(timestamp_ns(123_456_789, 9, 0), Ok(123_456_789));
        // Picoseconds: truncated to ns.
        assert_eq!(timestamp_ns(1_234_567, 12, 0), Ok(1_234));
        assert_eq!(timestamp_ns(u64::MAX, 19, 0), Ok(1_844_674_407));
        assert_eq!(timestamp_ns(u64::MAX, 60, 0), Ok(0));
    }

    #[test]
    fn binary_resolutions() {
        // 2^-20 s units: 5.5 s.
        assert_eq!(
            timestamp_ns(5 << 20 | 1 << 19, 0x80 | 20, 0),
            Ok(5_500_000_000)
        );
        // 2^-30: 1 unit is 0.93 ns, truncated.
        assert_eq!(timestamp_ns(1, 0x80 | 30, 0), Ok(0));
        assert_eq!(timestamp_ns(1 << 30, 0x80 | 30, 0), Ok(1_000_000_000));
        assert_eq!(timestamp_ns(u64::MAX, 0x80 | 127, 0), Ok(0));
        assert_eq!(timestamp_ns(3, 0x80, 0), Ok(3_000_000_000));
    }

    #[test]
    fn offsets_and_clamping() {
        assert_eq!(timestamp_ns(1_000, 6, 100), Ok(100_001_000_000));
        assert_eq!(timestamp_ns(1_000_000, 6, -1), Ok(0));
        assert_eq!(timestamp_ns(0, 6, -1), Err(0));
        assert_eq!(timestamp_ns(u64::MAX, 0, 0), Err(u64::MAX));
        assert_eq!(timestamp_ns(0, 6, i64::MAX), Err(u64::MAX));
    }
}
