//! The one walk of a pcapng option list.

use super::consts::OPT_ENDOFOPT;
use crate::endian::u16_at;

/// Calls `f(code, value)` for each option in `opts` (in the section's byte
/// order) up to `opt_endofopt` or the end. `Err` holds the offset in `opts`
/// of an option whose value overruns it; the walk stops there.
#[inline]
pub fn for_each_option(
    opts: &[u8],
    big_endian: bool,
    mut f: impl FnMut(u16, &[u8]),
) -> Result<(), usize> {
    let mut at = 0;
    while at + 4 <= opts.len() {
        let code = u16_at(opts, at, big_endian);
        if code == OPT_ENDOFOPT {
            return Ok(());
        }
        let len = usize::from(u16_at(opts, at + 2, big_endian));
        let Some(value) = opts.get(at + 4..at + 4 + len) else {
            return Err(at);
        };
        f(code, value);
        at += 4 + len.div_ceil(4) * 4;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_to_the_end_marker_and_reports_an_overrun() {
        // code 9 len 1 [6] pad; code 2 len 4 [1 2 3 4]; end.
        let opts = [
            9, 0, 1, 0, 6, 0, 0, 0, 2, 0, 4, 0, 1, 2, 3, 4, 0, 0, 0, 0, 7, 0,
        ];
        let mut seen = Vec::new();
        assert_eq!(
            for_each_option(&opts, false, |c, v| seen.push((c, v.to_vec()))),
            Ok(())
        );
        assert_eq!(seen, vec![(9, vec![6]), (2, vec![1, 2, 3, 4])]);
        let cut = [0, 9, 0, 8, 1, 2];
        assert_eq!(for_each_option(&cut, true, |_, _| {}), Err(0));
    }
}
