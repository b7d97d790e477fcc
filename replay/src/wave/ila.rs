//! Vivado ILA captures: what `write_hw_ila_data` and ChipScoPy's
//! `ILAWaveform.export_waveform` write, as CSV or VCD.
//!
//! An Integrated Logic Analyzer samples its probes once per cycle of the
//! clock it sits on, into one or more capture windows around a trigger.
//! Neither file holds that clock: a CSV row, and a VCD time step (1 ps),
//! is one sample. So sample `s` of the buffer is at `s` periods of the
//! sample clock (`--sample-clock`, the card's 250 MHz by default), and a
//! beat transfers on every sample where `tvalid` (and `tready`) are high.
//! Windows are separate stretches of time whose distance apart the file
//! does not hold: their samples run on in buffer order, and a frame a
//! window's edge cuts is counted, not kept ([`super::beats::Sampler::new_window`]).
//!
//! - CSV: `Sample in Buffer,Sample in Window,TRIGGER,[GAP,]<probe>[msb:lsb],...`,
//!   a radix row (`Radix - UNSIGNED,UNSIGNED,UNSIGNED,HEX,...`), then a
//!   row per sample; a new window where `Sample in Window` starts again.
//! - VCD: one scope; a variable per probe (`<probe> [msb:lsb]`), and
//!   `_TRIGGER` (high on the trigger sample) and `_WINDOW` (toggled at each
//!   window's first sample); `#N` is sample N.

use std::io::BufRead;

/// The card's user clock: what an ILA on its AXI4-Stream interfaces samples at.
pub const DEFAULT_SAMPLE_CLOCK_HZ: u64 = 250_000_000;

/// Longest CSV line read (a 4,096-bit probe in hex is 1,024 characters).
const MAX_LINE_BYTES: usize = 4 << 20;

/// Reads a sample clock: `250MHz`, `322.265625 MHz`, `1GHz`, `156250000`
/// (Hz), or a period, `4ns`.
pub fn parse_sample_clock(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase().replace(' ', "");
    let bad = || {
        format!(
            "--sample-clock {text:?}: give a frequency (250MHz, 322.265625MHz, 1GHz, 156250000) or a period (4ns)"
        )
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '+' || c == '-'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let v: f64 = number.parse().map_err(|_| bad())?;
    let hz = match unit {
        "" | "hz" => v,
        "khz" => v * 1e3,
        "mhz" => v * 1e6,
        "ghz" => v * 1e9,
        "ns" => 1e9 / v,
        "ps" => 1e12 / v,
        "us" | "µs" => 1e6 / v,
        _ => return Err(bad()),
    };
    if !hz.is_finite() || !(1.0..=1e12).contains(&hz) {
        return Err(bad());
    }
    Ok(hz.round() as u64)
}

/// A sample clock in words: `250 MHz`, `322.265625 MHz`.
pub fn clock_text(hz: u64) -> String {
    if hz.is_multiple_of(1_000_000) {
        format!("{} MHz", hz / 1_000_000)
    } else {
        let mhz = format!("{:.6}", hz as f64 / 1e6);
        format!("{} MHz", mhz.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// Splits `name[msb:lsb]` or `name [msb:lsb]` (or `name[i]`) into the name
/// and the width the range gives.
pub fn split_range(text: &str) -> (String, Option<u32>) {
    let t = text.trim();
    if let Some(open) = t.rfind('[')
        && t.ends_with(']')
    {
        let inner = &t[open + 1..t.len() - 1];
        let width = match inner.split_once(':') {
            Some((a, b)) => match (a.trim().parse::<i64>(), b.trim().parse::<i64>()) {
                (Ok(a), Ok(b)) => u32::try_from((a - b).abs() + 1).ok(),
                _ => None,
            },
            None => inner.trim().parse::<i64>().ok().map(|_| 1),
        };
        if width.is_some() {
            return (t[..open].trim_end().to_owned(), width);
        }
    }
    (t.to_owned(), None)
}

/// One probe of a capture: its name without the bit range, its width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IlaProbe {
    /// As the tool wrote it (`design_1_i/cmac/rx_axis_tdata`, `probe0`).
    pub name: String,
    pub width_bits: u32,
}

/// One capture window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IlaWindow {
    /// Its first sample's index in the buffer.
    pub first_sample: u64,
    /// Samples in it.
    pub samples: u64,
    /// The trigger's sample (index in the buffer), if the window holds it.
    pub trigger_sample: Option<u64>,
}

/// What an ILA capture held beside its frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IlaSummary {
    /// The clock the samples are placed at.
    pub sample_clock_hz: u64,
    pub windows: Vec<IlaWindow>,
    /// Frames a window's start cut (their first beats were not captured).
    pub cut_at_start: u64,
    /// Frames a window's end cut.
    pub cut_at_end: u64,
}

impl IlaSummary {
    /// A sample index in ns.
    pub fn sample_ns(&self, sample: u64) -> u64 {
        sample_ns(sample, self.sample_clock_hz)
    }

    /// The triggers' times in ns, one per window that has one.
    pub fn triggers_ns(&self) -> Vec<u64> {
        self.windows
            .iter()
            .filter_map(|w| w.trigger_sample)
            .map(|s| self.sample_ns(s))
            .collect()
    }

    /// One line: the windows, the clock, the cut frames, and what the
    /// times between windows mean.
    pub fn describe(&self) -> String {
        let sizes: Vec<u64> = self.windows.iter().map(|w| w.samples).collect();
        let size = match (sizes.iter().min(), sizes.iter().max()) {
            (Some(a), Some(b)) if a == b => format!("{a} samples"),
            (Some(a), Some(b)) => format!("{a} to {b} samples"),
            _ => "no samples".into(),
        };
        let cut = self.cut_at_start + self.cut_at_end;
        let cut = if cut == 0 {
            "no frame cut by a window's edge".to_owned()
        } else {
            format!(
                "{cut} frames cut by a window's edge not kept ({} at a start, {} at an end)",
                self.cut_at_start, self.cut_at_end
            )
        };
        let apart = if self.windows.len() > 1 {
            "; the time between windows is unknown: their samples are placed end to end"
        } else {
            ""
        };
        format!(
            "ILA capture: {} window{} of {size} at {}; {cut}{apart}",
            self.windows.len(),
            if self.windows.len() == 1 { "" } else { "s" },
            clock_text(self.sample_clock_hz)
        )
    }
}

/// Sample `sample` at `hz`, in ns.
pub fn sample_ns(sample: u64, hz: u64) -> u64 {
    let ns = u128::from(sample) * 1_000_000_000 / u128::from(hz.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// How a probe's values are written in a CSV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Radix {
    Hex,
    Binary,
    Octal,
    Unsigned,
    Signed,
}

/// The header words of an ILA CSV.
pub(crate) const CSV_HEAD: &str = "Sample in Buffer,Sample in Window,TRIGGER";

/// One sample of a CSV: where it is and its probes' values.
#[derive(Debug, Default)]
pub(crate) struct Row {
    pub sample: u64,
    pub in_window: u64,
    pub trigger: bool,
    /// The GAP column, or any value X: nothing is known of this sample.
    pub gap: bool,
    /// Per probe: little-endian bytes.
    pub values: Vec<Vec<u8>>,
}

/// An ILA CSV read row by row.
#[derive(Debug)]
pub(crate) struct CsvReader<R> {
    input: R,
    pub probes: Vec<IlaProbe>,
    radix: Vec<Radix>,
    has_gap: bool,
    line: String,
    /// The line last read (1-based).
    pub line_number: u64,
}

impl<R: BufRead> CsvReader<R> {
    /// Reads the two header lines.
    pub fn new(mut input: R) -> Result<Self, String> {
        let mut line = String::new();
        read_line(&mut input, &mut line, 1)?;
        let names: Vec<&str> = line.trim_end().split(',').map(str::trim).collect();
        if names.len() < 3 || names[..3].join(",") != CSV_HEAD {
            return Err(format!("line 1: not an ILA CSV header ({CSV_HEAD},...)"));
        }
        let has_gap = names.get(3) == Some(&"GAP");
        let first_probe = if has_gap { 4 } else { 3 };
        let mut probes = Vec::new();
        for (i, n) in names[first_probe..].iter().enumerate() {
            let (name, width) = split_range(n);
            probes.push(IlaProbe {
                name,
                // A probe written without a range is one bit.
                width_bits: width.unwrap_or(1),
            });
            if probes[i].name.is_empty() {
                return Err(format!(
                    "line 1: column {} has no probe name",
                    first_probe + i + 1
                ));
            }
        }
        if probes.is_empty() {
            return Err("line 1: no probes".into());
        }
        let mut radix_line = String::new();
        read_line(&mut input, &mut radix_line, 2)?;
        let words: Vec<&str> = radix_line.trim_end().split(',').map(str::trim).collect();
        if words.len() != names.len() || !words[0].starts_with("Radix") {
            return Err(format!(
                "line 2: a radix row (Radix - UNSIGNED,UNSIGNED,UNSIGNED,HEX,...) of {} columns, not {:?}",
                names.len(),
                radix_line.trim_end()
            ));
        }
        let radix = words[first_probe..]
            .iter()
            .enumerate()
            .map(|(i, w)| match w.to_ascii_uppercase().as_str() {
                "HEX" | "HEXADECIMAL" => Ok(Radix::Hex),
                "BINARY" | "BIN" => Ok(Radix::Binary),
                "OCTAL" | "OCT" => Ok(Radix::Octal),
                "UNSIGNED" | "UNSIGNED_DECIMAL" => Ok(Radix::Unsigned),
                "SIGNED" | "SIGNED_DECIMAL" => Ok(Radix::Signed),
                other => Err(format!(
                    "line 2: probe {} is written in radix {other}; rocescope reads HEX, BINARY, OCTAL, UNSIGNED and SIGNED (set the probe's radix before writing the file)",
                    probes[i].name
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            input,
            probes,
            radix,
            has_gap,
            line: String::new(),
            line_number: 2,
        })
    }

    /// The next sample into `row`; false at the end.
    pub fn next(&mut self, row: &mut Row) -> Result<bool, String> {
        loop {
            self.line.clear();
            let n = self.line_number + 1;
            if !read_line(&mut self.input, &mut self.line, n)? {
                return Ok(false);
            }
            self.line_number = n;
            if !self.line.trim().is_empty() {
                break;
            }
        }
        let n = self.line_number;
        let line = self.line.trim_end();
        let mut cells = line.split(',');
        let mut number = |what: &str| -> Result<u64, String> {
            let c = cells
                .next()
                .ok_or_else(|| format!("line {n}: no {what}"))?
                .trim();
            c.parse::<u64>()
                .map_err(|_| format!("line {n}: {what} {c:?} is not a number"))
        };
        row.sample = number("sample in buffer")?;
        row.in_window = number("sample in window")?;
        row.trigger = number("trigger")? != 0;
        row.gap = self.has_gap && number("gap")? != 0;
        row.values.resize_with(self.probes.len(), Vec::new);
        for (i, probe) in self.probes.iter().enumerate() {
            let cell = cells
                .next()
                .ok_or_else(|| {
                    format!(
                        "line {n}: {} values, not {} (the header's probes)",
                        i,
                        self.probes.len()
                    )
                })?
                .trim();
            let out = &mut row.values[i];
            match parse_value(cell, self.radix[i], probe.width_bits, out) {
                Ok(true) => {}
                Ok(false) => row.gap = true,
                Err(e) => {
                    return Err(format!("line {n}: probe {}: {e}", probe.name));
                }
            }
        }
        if cells.next().is_some() {
            return Err(format!(
                "line {n}: more values than the header's {} probes",
                self.probes.len()
            ));
        }
        Ok(true)
    }
}

/// Reads one line, bounded; false at the end of the input.
fn read_line(input: &mut impl BufRead, line: &mut String, number: u64) -> Result<bool, String> {
    let mut limited = std::io::Read::take(&mut *input, MAX_LINE_BYTES as u64 + 1);
    let read = limited
        .read_line(line)
        .map_err(|e| format!("line {number}: {e}"))?;
    if line.len() > MAX_LINE_BYTES {
        return Err(format!(
            "line {number} is longer than {MAX_LINE_BYTES} bytes"
        ));
    }
    if read > 0 && !line.ends_with('\n') && line.len() >= MAX_LINE_BYTES {
        return Err(format!(
            "line {number} is longer than {MAX_LINE_BYTES} bytes"
        ));
    }
    Ok(read > 0)
}

/// A value of `width` bits in `radix` as little-endian bytes; false when
/// it is unknown (X).
fn parse_value(cell: &str, radix: Radix, width: u32, out: &mut Vec<u8>) -> Result<bool, String> {
    let bytes = width.div_ceil(8) as usize;
    out.clear();
    out.resize(bytes, 0);
    if cell
        .chars()
        .any(|c| matches!(c, 'x' | 'X' | 'z' | 'Z' | '?'))
        && radix != Radix::Hex
        || cell.chars().all(|c| matches!(c, 'x' | 'X'))
    {
        return Ok(false);
    }
    let too_wide = || format!("{cell:?} is wider than its {width} bits");
    let bits_per_digit = match radix {
        Radix::Hex => 4,
        Radix::Binary => 1,
        Radix::Octal => 3,
        Radix::Unsigned | Radix::Signed => 0,
    };
    if bits_per_digit > 0 {
        let mut bit = 0usize;
        for c in cell.chars().rev() {
            if matches!(c, 'x' | 'X') {
                return Ok(false);
            }
            let d = c
                .to_digit(1 << bits_per_digit)
                .ok_or_else(|| format!("{cell:?} is not a value"))?;
            for k in 0..bits_per_digit {
                if d >> k & 1 == 1 {
                    if bit >= width as usize {
                        return Err(too_wide());
                    }
                    out[bit / 8] |= 1 << (bit % 8);
                }
                bit += 1;
            }
        }
        return Ok(true);
    }
    // Decimal: up to 128 bits, sign-extended to the width when signed.
    let v: i128 = if radix == Radix::Signed {
        cell.parse::<i128>()
            .map_err(|_| format!("{cell:?} is not a value"))?
    } else {
        cell.parse::<u128>()
            .map_err(|_| format!("{cell:?} is not a value"))? as i128
    };
    let le = v.to_le_bytes();
    for (i, b) in out.iter_mut().enumerate() {
        *b = le.get(i).copied().unwrap_or(if v < 0 { 0xff } else { 0 });
    }
    if !width.is_multiple_of(8)
        && let Some(last) = out.last_mut()
    {
        *last &= (1u8 << (width % 8)) - 1;
    }
    if v >= 0 && width < 128 && (v as u128) >> width != 0 {
        return Err(too_wide());
    }
    Ok(true)
}

/// An AXI4-Stream interface over probes, by their indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeInterface {
    /// The probes' common path and prefix (`design_1_i/cmac/rx_axis`), or
    /// `tdata`'s probe name when mapped.
    pub name: String,
    pub tdata: usize,
    pub tvalid: usize,
    pub tlast: usize,
    pub tkeep: Option<usize>,
    pub tready: Option<usize>,
}

/// `--axis tdata=probe0,tkeep=probe1,...`: which probe is which signal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AxisMap {
    pub tdata: String,
    pub tvalid: String,
    pub tlast: String,
    pub tkeep: Option<String>,
    pub tready: Option<String>,
}

impl AxisMap {
    /// A `KEY=VALUE,...` list; `None` when `text` has no `=` (a name to
    /// choose interfaces by).
    pub fn parse(text: &str) -> Option<Result<AxisMap, String>> {
        if !text.contains('=') {
            return None;
        }
        let mut m = AxisMap::default();
        let (mut data, mut valid, mut last) = (None, None, None);
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((k, v)) = part.split_once('=') else {
                return Some(Err(format!("--axis {text:?}: {part:?} is not KEY=PROBE")));
            };
            let v = v.trim().to_owned();
            match k.trim() {
                "tdata" => data = Some(v),
                "tvalid" => valid = Some(v),
                "tlast" => last = Some(v),
                "tkeep" => m.tkeep = Some(v),
                "tready" => m.tready = Some(v),
                other => {
                    return Some(Err(format!(
                        "--axis {text:?}: {other:?} is not one of tdata, tvalid, tlast, tkeep, tready"
                    )));
                }
            }
        }
        match (data, valid, last) {
            (Some(d), Some(v), Some(l)) => {
                m.tdata = d;
                m.tvalid = v;
                m.tlast = l;
                Some(Ok(m))
            }
            _ => Some(Err(format!(
                "--axis {text:?}: a mapping needs tdata, tvalid and tlast (tkeep and tready when the capture has them)"
            ))),
        }
    }
}

/// The leaf of a probe's name: after the last `/` or `.`.
fn leaf(name: &str) -> &str {
    name.rsplit(['/', '.']).next().unwrap_or(name)
}

/// The interfaces among `probes`: mapped by `map`, or found by their names
/// as in a VCD (`<prefix>tdata`, `<prefix>tvalid`, `<prefix>tlast` and the
/// optional `tkeep`, `tready`, in one scope). One-bit signals must be one
/// bit wide.
pub fn find_interfaces(
    probes: &[IlaProbe],
    map: Option<&AxisMap>,
) -> Result<Vec<ProbeInterface>, String> {
    let width = |i: usize| probes[i].width_bits;
    if let Some(m) = map {
        let find = |want: &str, one_bit: bool| -> Result<usize, String> {
            let want = split_range(want).0;
            let hits: Vec<usize> = (0..probes.len())
                .filter(|&i| probes[i].name == want || leaf(&probes[i].name) == want)
                .collect();
            match hits.as_slice() {
                [i] if one_bit && width(*i) != 1 => Err(format!(
                    "--axis: {want} is {} bits wide, not one",
                    width(*i)
                )),
                [i] => Ok(*i),
                [] => Err(format!(
                    "--axis: no probe {want:?}; the capture has {}",
                    probes
                        .iter()
                        .map(|p| p.name.escape_debug().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                _ => Err(format!(
                    "--axis: {want:?} names {} probes; give the full name",
                    hits.len()
                )),
            }
        };
        return Ok(vec![ProbeInterface {
            name: m.tdata.clone(),
            tdata: find(&m.tdata, false)?,
            tvalid: find(&m.tvalid, true)?,
            tlast: find(&m.tlast, true)?,
            tkeep: m.tkeep.as_deref().map(|k| find(k, false)).transpose()?,
            tready: m.tready.as_deref().map(|k| find(k, true)).transpose()?,
        }]);
    }
    let scope_of = |name: &str| name[..name.len() - leaf(name).len()].to_owned();
    let mut found = Vec::new();
    for (i, p) in probes.iter().enumerate() {
        let l = leaf(&p.name);
        let Some(prefix) = l.strip_suffix("tdata") else {
            continue;
        };
        let scope = scope_of(&p.name);
        let get = |suffix: &str, one_bit: bool| {
            let want = format!("{scope}{prefix}{suffix}");
            (0..probes.len()).find(|&j| probes[j].name == want && (!one_bit || width(j) == 1))
        };
        let (Some(tvalid), Some(tlast)) = (get("tvalid", true), get("tlast", true)) else {
            continue;
        };
        let stem = prefix.trim_end_matches('_');
        let name = if stem.is_empty() {
            scope.trim_end_matches(['/', '.']).to_owned()
        } else {
            format!("{scope}{stem}")
        };
        found.push(ProbeInterface {
            name: if name.is_empty() {
                p.name.clone()
            } else {
                name
            },
            tdata: i,
            tvalid,
            tlast,
            tkeep: get("tkeep", false),
            tready: get("tready", true),
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_clocks_and_ranges_read() {
        assert_eq!(parse_sample_clock("250MHz"), Ok(250_000_000));
        assert_eq!(parse_sample_clock("322.265625 MHz"), Ok(322_265_625));
        assert_eq!(parse_sample_clock("4ns"), Ok(250_000_000));
        assert_eq!(parse_sample_clock("156250000"), Ok(156_250_000));
        assert!(parse_sample_clock("fast").is_err());
        assert!(parse_sample_clock("0Hz").is_err());
        assert_eq!(clock_text(322_265_625), "322.265625 MHz");
        assert_eq!(sample_ns(3, 250_000_000), 12);
        assert_eq!(split_range("probe0[15:0]"), ("probe0".into(), Some(16)));
        assert_eq!(
            split_range("a/b/tdata [511:0]"),
            ("a/b/tdata".into(), Some(512))
        );
        assert_eq!(split_range("tvalid"), ("tvalid".into(), None));
    }

    #[test]
    fn a_csv_reads_its_probes_radixes_and_rows() {
        let text = "Sample in Buffer,Sample in Window,TRIGGER,d/rx_tdata[15:0],d/rx_tvalid,d/rx_tlast,n[3:0]\n\
                    Radix - UNSIGNED,UNSIGNED,UNSIGNED,HEX,HEX,BINARY,SIGNED\n\
                    0,0,0,ABCD,1,1,-1\n\
                    1,1,1,XXXX,0,0,7\n";
        let mut r = CsvReader::new(text.as_bytes()).expect("header");
        assert_eq!(r.probes.len(), 4);
        assert_eq!(r.probes[0].width_bits, 16);
        let mut row = Row::default();
        assert!(r.next(&mut row).expect("row"));
        assert_eq!(row.values[0], vec![0xcd, 0xab]);
        assert_eq!(row.values[3], vec![0x0f]);
        assert!(!row.gap);
        assert!(r.next(&mut row).expect("row"));
        assert!(row.gap && row.trigger);
        assert!(!r.next(&mut row).expect("end"));
        let ifs = find_interfaces(&r.probes, None).expect("found");
        assert_eq!(ifs.len(), 1);
        assert_eq!(ifs[0].name, "d/rx");
        let wide = "Sample in Buffer,Sample in Window,TRIGGER,p[3:0]\nRadix - UNSIGNED,UNSIGNED,UNSIGNED,HEX\n0,0,0,1F\n";
        let mut r = CsvReader::new(wide.as_bytes()).expect("header");
        let e = r.next(&mut row).expect_err("too wide");
        assert!(
            e.contains("line 3: probe p") && e.contains("wider than its 4 bits"),
            "{e}"
        );
    }

    #[test]
    fn a_mapping_names_probes() {
        let probes: Vec<IlaProbe> = [("probe0", 64), ("probe1", 8), ("probe2", 1), ("probe3", 1)]
            .iter()
            .map(|(n, w)| IlaProbe {
                name: (*n).into(),
                width_bits: *w,
            })
            .collect();
        let m = AxisMap::parse("tdata=probe0,tkeep=probe1,tvalid=probe2,tlast=probe3")
            .expect("a mapping")
            .expect("valid");
        let ifs = find_interfaces(&probes, Some(&m)).expect("mapped");
        assert_eq!(
            (ifs[0].tdata, ifs[0].tkeep, ifs[0].tvalid, ifs[0].tlast),
            (0, Some(1), 2, 3)
        );
        assert!(AxisMap::parse("m_axis_rx").is_none());
        let bad = AxisMap::parse("tdata=probe0,tvalid=probe1,tlast=probe3").expect("a mapping");
        let e = find_interfaces(&probes, Some(&bad.expect("parses"))).expect_err("8 bits");
        assert!(e.contains("probe1 is 8 bits wide"), "{e}");
    }
}
