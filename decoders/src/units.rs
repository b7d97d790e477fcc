//! Quantities as people read and type them, one way each: every output
//! (the tables, the views, the diagnosis, the report) formats durations and
//! sizes here, and every command line parses them here.

/// A duration for people: whole ns below a microsecond, else the largest
/// unit (µs, ms, s) with at most three decimals, trailing zeros dropped:
/// `999 ns`, `21.34 µs`, `46.062 µs`, `10 ms`, `2.5 s`. Exact to the ns up
/// to a millisecond.
pub fn duration_text(ns: u64) -> String {
    let (scale, unit) = match ns {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (1e3, "µs"),
        1_000_000..1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    let text = format!("{:.3}", ns as f64 / scale);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// A size for people in binary units, one decimal: `100 B`, `9.1 KiB`,
/// `512.0 MiB`, `1.5 GiB` (what `--max-memory` and `--max-disk` read).
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A duration in the largest unit that keeps it whole (`1s`, `250ms`,
/// `7ns`): what [`parse_duration_ns`] reads back, for command lines.
pub fn duration_arg(ns: u64) -> String {
    for (unit, scale) in [
        ("h", HOUR_NS),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if ns >= scale && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

/// An hour in ns, the bound of most durations typed.
pub const HOUR_NS: u64 = 3_600_000_000_000;

/// Why a typed quantity was refused; it names what was typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("{what} {text:?}: expected a number and a unit ({units})")]
    NotANumber {
        what: &'static str,
        text: String,
        units: &'static str,
    },
    #[error("{what} {text:?}: no unit (use {units})")]
    NoUnit {
        what: &'static str,
        text: String,
        units: &'static str,
    },
    #[error("{what} {text:?}: unknown unit {unit:?} (use {units})")]
    UnknownUnit {
        what: &'static str,
        text: String,
        unit: String,
        units: &'static str,
    },
    #[error("duration {text:?}: must be more than 0 and at most {max}")]
    DurationOutOfRange { text: String, max: String },
    #[error("size {text:?}: must be at least 1 byte")]
    SizeOutOfRange { text: String },
}

const DURATION_UNITS: &str = "ns, us, ms, s, m or h";
const SIZE_UNITS: &str = "B, KiB, MiB, GiB or TiB";

/// A duration with its unit, `ns`, `us` (or `µs`), `ms`, `s`, `m` (or
/// `min`) or `h`, in ns: `"10ms"` is 10,000,000. More than 0 and at most
/// `max_ns`.
pub fn parse_duration_ns(s: &str, max_ns: u64) -> Result<u64, UnitError> {
    let (v, unit, text) = split_number("duration", s, DURATION_UNITS)?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => return Err(unit_error("duration", text, other, DURATION_UNITS)),
    };
    let ns = v * scale;
    if !ns.is_finite() || ns <= 0.0 || ns > max_ns as f64 {
        return Err(UnitError::DurationOutOfRange {
            text,
            max: duration_arg(max_ns),
        });
    }
    Ok(ns as u64)
}

/// A size with its unit, `B`, `KiB`, `MiB`, `GiB`, `TiB` (or `K`, `M`, `G`,
/// `T`, the same powers of two; `KB`, `MB`, `GB`, `TB` are powers of ten),
/// in bytes: `"512MiB"` is 536,870,912. At least a byte.
pub fn parse_size_bytes(s: &str) -> Result<u64, UnitError> {
    let (v, unit, text) = split_number("size", s, SIZE_UNITS)?;
    let scale = match unit {
        "B" => 1.0,
        "K" | "KiB" => 1024.0,
        "M" | "MiB" => 1024.0 * 1024.0,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => return Err(unit_error("size", text, other, SIZE_UNITS)),
    };
    let bytes = v * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(UnitError::SizeOutOfRange { text });
    }
    Ok(bytes as u64)
}

/// A unit `parse_*` does not take: none given, or one not among `units`.
fn unit_error(what: &'static str, text: String, unit: &str, units: &'static str) -> UnitError {
    if unit.is_empty() {
        UnitError::NoUnit { what, text, units }
    } else {
        UnitError::UnknownUnit {
            what,
            text,
            unit: unit.to_owned(),
            units,
        }
    }
}

/// The number in front and the unit after it, trimmed.
fn split_number<'a>(
    what: &'static str,
    s: &'a str,
    units: &'static str,
) -> Result<(f64, &'a str, String), UnitError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| UnitError::NotANumber {
        what,
        text: s.to_owned(),
        units,
    })?;
    Ok((v, unit.trim(), s.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_for_people() {
        assert_eq!(duration_text(0), "0 ns");
        assert_eq!(duration_text(999), "999 ns");
        assert_eq!(duration_text(1_000), "1 µs");
        assert_eq!(duration_text(21_340), "21.34 µs");
        assert_eq!(duration_text(46_062), "46.062 µs");
        assert_eq!(duration_text(20_500), "20.5 µs");
        assert_eq!(duration_text(10_000_000), "10 ms");
        assert_eq!(duration_text(1_703_875), "1.704 ms");
        assert_eq!(duration_text(2_500_000_000), "2.5 s");
        assert_eq!(duration_text(u64::MAX), "18446744073.71 s");
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(size_text(100), "100 B");
        assert_eq!(size_text(9_100), "8.9 KiB");
        assert_eq!(size_text(512 << 20), "512.0 MiB");
        assert_eq!(size_text(3 << 30), "3.0 GiB");
    }

    #[test]
    fn sizes_take_their_unit() {
        assert_eq!(parse_size_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size_bytes("64M"), Ok(64 << 20));
        assert_eq!(parse_size_bytes("1.5 KiB"), Ok(1536));
        assert_eq!(parse_size_bytes("10GB"), Ok(10_000_000_000));
        for bad in ["", "512", "0MiB", "-1GiB", "12 parsecs", "1e30TiB"] {
            assert!(parse_size_bytes(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_size_bytes("512")
                .unwrap_err()
                .to_string()
                .contains("no unit")
        );
    }

    #[test]
    fn durations_take_their_unit_and_print_as_read() {
        let hour = |s: &str| parse_duration_ns(s, HOUR_NS);
        assert_eq!(hour("10ms"), Ok(10_000_000));
        assert_eq!(hour(" 1.5s "), Ok(1_500_000_000));
        assert_eq!(hour("250us"), Ok(250_000));
        assert_eq!(hour("7ns"), Ok(7));
        assert_eq!(hour("2m"), Ok(120_000_000_000));
        assert_eq!(hour("1h"), Ok(HOUR_NS));
        for bad in ["", "10", "5 parsecs", "0s", "2h", "61min", "-1s", "1e400s"] {
            assert!(hour(bad).is_err(), "{bad:?}");
        }
        assert!(hour("10").unwrap_err().to_string().contains("no unit"));
        let err = hour("2h").unwrap_err().to_string();
        assert!(err.contains("at most 1h"), "{err}");
        assert_eq!(parse_duration_ns("48h", 48 * HOUR_NS), Ok(48 * HOUR_NS));
        assert!(parse_duration_ns("49h", 48 * HOUR_NS).is_err());
        for ns in [
            HOUR_NS,
            120_000_000_000,
            1_000_000_000,
            250_000_000,
            1_500_000_000,
            40_000,
            7,
        ] {
            let text = duration_arg(ns);
            assert_eq!(hour(&text), Ok(ns), "{text}");
        }
        assert_eq!(duration_arg(1_500_000_000), "1500ms");
    }
}
