//! What holding a VCD's body would take, bounded before it is held.
//!
//! wellen keeps each change of a vector at its signal's full width, and a
//! VCD writes a value without its leading zeros (`b0` for a 2,048-bit
//! zero): a change of five bytes of text becomes hundreds of bytes in
//! memory. A file of such changes asks for many times its size (3 MB of
//! changes of a 65,536-bit signal held 1.4 GB), so the body is held only
//! when an upper bound of what it takes fits the budget; past it every
//! load streams from the file, keeping its capped changes only.
//!
//! The bound: half the file (a value written whole takes at most half its
//! text: four bits a character, wellen's widest states), plus, for each
//! vector change written shorter than its signal, the bits it is extended
//! by at two bits each (four when it is extended by a nine-state
//! character). Finding those changes costs one pass over the body for the
//! `b` that starts a vector value (`memchr`), and only when a cheaper
//! bound from the header alone (every five bytes a change of the widest
//! signal) does not fit already.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Whether the held body of the VCD at `path` fits `budget_bytes`, or why
/// not.
pub(crate) fn fits(path: &Path, budget_bytes: u64) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let bound = bound_bytes(file, len, budget_bytes, CHUNK_BYTES).map_err(|e| e.to_string())?;
    if bound <= budget_bytes {
        return Ok(());
    }
    Err(format!(
        "holding it would take more than the {} it may hold: vectors written shorter than their \
         width are held at the full width",
        rocescope_decoders::units::size_text(budget_bytes),
    ))
}

/// What the scan reads at a time.
const CHUNK_BYTES: usize = 4 << 20;

/// Every change takes at least five bytes of text (`b0 !` and a line's end).
const MIN_CHANGE_BYTES: u64 = 5;

/// An upper bound of the held body of the VCD text `len` bytes long read
/// from `r`, `chunk` bytes at a time; the scan stops once it passes
/// `stop_past`.
fn bound_bytes(mut r: impl Read, len: u64, stop_past: u64, chunk: usize) -> std::io::Result<u64> {
    // A value written whole takes at most half its text.
    let whole = len / 2;
    let mut buf: Vec<u8> = Vec::with_capacity(chunk);
    let mut searched = 0;
    let header_end = loop {
        if let Some(at) = memchr::memmem::find(&buf[searched..], b"$enddefinitions") {
            break searched + at;
        }
        searched = buf.len().saturating_sub(16);
        if read_more(&mut r, &mut buf, chunk)? == 0 {
            // No body wellen would read.
            return Ok(0);
        }
    };
    let widths = vector_widths(&buf[..header_end]);
    let Some(widest) = widths.values().copied().max() else {
        return Ok(whole);
    };
    let header_only = whole + (len / MIN_CHANGE_BYTES) * extension_bytes(u64::from(widest), b'x');
    if header_only <= stop_past {
        return Ok(header_only);
    }
    let mut scan = Scan {
        widths,
        bound: whole,
    };
    buf.drain(..header_end);
    loop {
        let more = read_more(&mut r, &mut buf, chunk)?;
        // Whole lines only, but at the file's end or past a line's longest
        // (a value of the widest vector and its identifier).
        let upto = match memchr::memrchr(b'\n', &buf) {
            _ if more == 0 => buf.len(),
            Some(nl) => nl + 1,
            None if buf.len() < MAX_LINE_BYTES => continue,
            None => buf.len(),
        };
        scan.text(&buf[..upto], stop_past);
        if scan.bound > stop_past || more == 0 {
            return Ok(scan.bound);
        }
        buf.drain(..upto);
    }
}

/// Past this a line is scanned without its end.
const MAX_LINE_BYTES: usize = 1 << 20;

/// Appends up to `chunk` bytes; how many came.
fn read_more(r: &mut impl Read, buf: &mut Vec<u8>, chunk: usize) -> std::io::Result<usize> {
    let at = buf.len();
    buf.resize(at + chunk, 0);
    let mut got = 0;
    while got < chunk {
        match r.read(&mut buf[at + got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(at + got);
    Ok(got)
}

/// The bound so far, and the vectors it looks for.
struct Scan {
    widths: HashMap<Vec<u8>, u32>,
    bound: u64,
}

impl Scan {
    /// Adds the extension of every vector change in `body`, whole lines,
    /// until the bound passes `stop_past`.
    fn text(&mut self, body: &[u8], stop_past: u64) {
        let mut at = 0;
        while let Some(found) = memchr::memchr2(b'b', b'B', &body[at..]) {
            let q = at + found;
            at = q + 1;
            if q > 0 && !body[q - 1].is_ascii_whitespace() {
                continue;
            }
            let value_end = token_end(body, q + 1);
            let id_start = value_end + 1;
            if id_start >= body.len() {
                break;
            }
            let id_end = token_end(body, id_start);
            let Some(&width) = self.widths.get(&body[id_start..id_end]) else {
                // Not a vector change (an identifier starting with `b`): the
                // token after it is looked at again.
                continue;
            };
            at = id_end;
            let written = (value_end - (q + 1)) as u64;
            let width = u64::from(width);
            if written < width {
                let extend_by = body.get(q + 1).copied().unwrap_or(b'0');
                self.bound += extension_bytes(width - written, extend_by);
                if self.bound > stop_past {
                    return;
                }
            }
        }
    }
}

/// What `bits` of extension by `by` (a value's first character) may take:
/// two bits each (a 0, 1, x or z), four for wellen's nine states.
fn extension_bytes(bits: u64, by: u8) -> u64 {
    let per_bit = match by.to_ascii_lowercase() {
        b'0' | b'1' | b'x' | b'z' => 2,
        _ => 4,
    };
    (bits * per_bit).div_ceil(8)
}

/// Where the token starting at `from` ends: the next whitespace, or the end.
fn token_end(text: &[u8], from: usize) -> usize {
    let rest = &text[from.min(text.len())..];
    let end = memchr::memchr3(b' ', b'\n', b'\t', rest).unwrap_or(rest.len());
    // A `\r\n` line's end: the `\r` is not the token's.
    let end = if end > 0 && rest[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    from.min(text.len()) + end
}

/// Each vector variable's identifier code and width (wider than one bit),
/// from the header's `$var TYPE WIDTH ID NAME ... $end`.
fn vector_widths(header: &[u8]) -> HashMap<Vec<u8>, u32> {
    let mut widths = HashMap::new();
    let mut tokens = header
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty());
    while let Some(t) = tokens.next() {
        if t != b"$var" {
            continue;
        }
        let (Some(_kind), Some(width), Some(id)) = (tokens.next(), tokens.next(), tokens.next())
        else {
            break;
        };
        let width = std::str::from_utf8(width)
            .ok()
            .and_then(|w| w.parse::<u32>().ok());
        if let Some(width) = width.filter(|&w| w > 1) {
            let at = widths.entry(id.to_vec()).or_insert(width);
            *at = (*at).max(width);
        }
    }
    widths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(text: &[u8], stop_past: u64) -> u64 {
        let whole = bound_bytes(text, text.len() as u64, stop_past, CHUNK_BYTES).unwrap();
        // Read a few bytes at a time, lines cut across reads: the same.
        let small = bound_bytes(text, text.len() as u64, stop_past, 7).unwrap();
        assert_eq!(whole, small);
        whole
    }

    fn vcd(width: u32, changes: &[&str]) -> Vec<u8> {
        let mut t = format!(
            "$timescale 1ns $end\n$scope module tb $end\n$var wire 1 ! clk $end\n\
             $var reg {width} b w [{}:0] $end\n$upscope $end\n$enddefinitions $end\n",
            width - 1
        );
        for (i, c) in changes.iter().enumerate() {
            t.push_str(&format!("#{i}\n{c}\n1!\n"));
        }
        t.into_bytes()
    }

    #[test]
    fn short_values_of_a_wide_vector_count_at_its_width() {
        // Identifier `b`, as VCD writers may name a signal: found as the
        // identifier, not taken for a value.
        let text = vcd(65_536, &["b0 b", "b1 b", "bx b", "b1010 b"]);
        let whole = text.len() as u64 / 2;
        // Three values of one character, one of four, at two bits a bit.
        let extended = 3 * (65_535 * 2_u64).div_ceil(8) + (65_532 * 2_u64).div_ceil(8);
        // Below the header's bound, above the scan's: the whole scan.
        assert_eq!(bound(&text, 1 << 19), whole + extended);
    }

    #[test]
    fn whole_values_and_narrow_files_add_nothing_past_half_the_file() {
        let full = "b".to_string() + &"1".repeat(64) + " b";
        let text = vcd(64, &[&full, &full]);
        assert_eq!(bound(&text, text.len() as u64), text.len() as u64 / 2);
        // The header's bound fits: no scan.
        let text = vcd(64, &["b0 b"]);
        let header_only = bound(&text, u64::MAX);
        assert!(header_only >= text.len() as u64 / 2 + 16, "{header_only}");
    }

    #[test]
    fn a_scan_stops_once_past_the_budget() {
        let changes = vec!["b0 b"; 1000];
        let text = vcd(65_536, &changes);
        let stopped = bound_bytes(&text[..], text.len() as u64, 1 << 20, 4096).unwrap();
        assert!(
            stopped > 1 << 20 && stopped <= (1 << 20) + 16_384,
            "{stopped}"
        );
    }
}
