//! Quantities typed by people: durations on the command lines.

/// A duration with its unit, `ns`, `us` (or `µs`), `ms` or `s`, in ns:
/// `"10ms"` is 10,000,000. More than 0 and at most an hour.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("duration {s:?}: expected a number and a unit (ns, us, ms, s)"))?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => {
            return Err(format!(
                "duration {s:?}: unknown unit {other:?} (use ns, us, ms or s)"
            ));
        }
    };
    let ns = v * scale;
    if !ns.is_finite() || ns <= 0.0 || ns > 3.6e12 {
        return Err(format!(
            "duration {s:?}: must be more than 0 and at most an hour"
        ));
    }
    Ok(ns as u64)
}

/// A duration in ns, in the largest unit that keeps it whole (`1s`,
/// `250ms`, `7ns`): what [`parse_duration_ns`] reads back.
pub fn format_duration_ns(ns: u64) -> String {
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= scale && ns % scale == 0 {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_their_unit() {
        assert_eq!(parse_duration_ns("10ms"), Ok(10_000_000));
        assert_eq!(parse_duration_ns(" 1.5s "), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("7ns"), Ok(7));
        for bad in ["", "10", "5 parsecs", "0s", "2h", "-1s", "1e400s"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations_print_as_they_are_read() {
        for ns in [1_000_000_000, 250_000_000, 1_500_000_000, 40_000, 7] {
            let text = format_duration_ns(ns);
            assert_eq!(parse_duration_ns(&text), Ok(ns), "{text}");
        }
        assert_eq!(format_duration_ns(1_000_000_000), "1s");
        assert_eq!(format_duration_ns(1_500_000_000), "1500ms");
    }
}
