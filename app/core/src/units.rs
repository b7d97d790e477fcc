//! Quantities typed by people: durations and sizes on the command lines.

/// A duration with its unit, `ns`, `us` (or `µs`), `ms`, `s`, `m` (or
/// `min`) or `h`, in ns: `"10ms"` is 10,000,000. More than 0 and at most an
/// hour (simulated spans, time windows).
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    parse_duration_ns_up_to(s, HOUR_NS)
}

/// [`parse_duration_ns`] with its own upper bound (a soak may run for days).
pub fn parse_duration_ns_up_to(s: &str, max_ns: u64) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| {
        format!("duration {s:?}: expected a number and a unit (ns, us, ms, s, m, h)")
    })?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "" => {
            return Err(format!(
                "duration {s:?}: no unit (use ns, us, ms, s, m or h)"
            ));
        }
        other => {
            return Err(format!(
                "duration {s:?}: unknown unit {other:?} (use ns, us, ms, s, m or h)"
            ));
        }
    };
    let ns = v * scale;
    if !ns.is_finite() || ns <= 0.0 || ns > max_ns as f64 {
        return Err(format!(
            "duration {s:?}: must be more than 0 and at most {}",
            format_duration_ns(max_ns)
        ));
    }
    Ok(ns as u64)
}

const HOUR_NS: u64 = 3_600_000_000_000;

/// A duration in ns, in the largest unit that keeps it whole (`1s`,
/// `250ms`, `7ns`): what [`parse_duration_ns`] reads back.
pub fn format_duration_ns(ns: u64) -> String {
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

/// A simulated or capture time for people, one decimal in the unit that
/// fits (`10.0 ms`, `21.3 µs`, `2.5 s`).
pub fn format_time_ns(ns: u64) -> String {
    let t = ns as f64;
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", t / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", t / 1e6),
        _ => format!("{:.1} s", t / 1e9),
    }
}

/// A size with its unit, `B`, `KiB`, `MiB`, `GiB`, `TiB` (or `K`, `M`, `G`,
/// `T`, the same powers of two; `KB`, `MB`, `GB`, `TB` are powers of ten),
/// in bytes: `"512MiB"` is 536,870,912. More than 0.
pub fn parse_size_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("size {s:?}: expected a number and a unit (MiB, GiB, ...)"))?;
    let scale = match unit.trim() {
        "B" => 1.0,
        "K" | "KiB" => 1024.0,
        "M" | "MiB" => 1024.0 * 1024.0,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "" => return Err(format!("size {s:?}: no unit (use B, KiB, MiB, GiB or TiB)")),
        other => {
            return Err(format!(
                "size {s:?}: unknown unit {other:?} (use B, KiB, MiB, GiB or TiB)"
            ));
        }
    };
    let bytes = v * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("size {s:?}: must be at least 1 byte"));
    }
    Ok(bytes as u64)
}

/// Bytes in the largest binary unit that keeps one decimal (`512.0 MiB`).
pub fn format_size_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(parse_size_bytes("512").unwrap_err().contains("no unit"));
        assert_eq!(format_size_bytes(512 << 20), "512.0 MiB");
        assert_eq!(format_size_bytes(100), "100 B");
    }

    #[test]
    fn durations_take_their_unit() {
        assert_eq!(parse_duration_ns("10ms"), Ok(10_000_000));
        assert_eq!(parse_duration_ns(" 1.5s "), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("7ns"), Ok(7));
        assert_eq!(parse_duration_ns("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("1h"), Ok(HOUR_NS));
        for bad in ["", "10", "5 parsecs", "0s", "2h", "61min", "-1s", "1e400s"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad:?}");
        }
        assert!(parse_duration_ns("10").unwrap_err().contains("no unit"));
        let err = parse_duration_ns("2h").unwrap_err();
        assert!(err.contains("at most 1h"), "{err}");
        assert_eq!(
            parse_duration_ns_up_to("48h", 48 * HOUR_NS),
            Ok(48 * HOUR_NS)
        );
        assert!(parse_duration_ns_up_to("49h", 48 * HOUR_NS).is_err());
    }

    #[test]
    fn durations_print_as_they_are_read() {
        for ns in [
            HOUR_NS,
            120_000_000_000,
            1_000_000_000,
            250_000_000,
            1_500_000_000,
            40_000,
            7,
        ] {
            let text = format_duration_ns(ns);
            assert_eq!(parse_duration_ns(&text), Ok(ns), "{text}");
        }
        assert_eq!(format_duration_ns(1_000_000_000), "1s");
        assert_eq!(format_duration_ns(1_500_000_000), "1500ms");
    }

    #[test]
    fn times_for_people_take_the_unit_that_fits() {
        assert_eq!(format_time_ns(10_000_000), "10.0 ms");
        assert_eq!(format_time_ns(21_340), "21.3 µs");
        assert_eq!(format_time_ns(2_500_000_000), "2.5 s");
        assert_eq!(format_time_ns(999), "999 ns");
    }
}
