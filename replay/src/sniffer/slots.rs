//! Turning a dump into 64-byte slots: the raw binary dump read as it is, the
//! text dump parsed line by line; plus the window of slots the boundary
//! search looks ahead in.
//!
//! Both sources read through a fixed-size `BufReader`, hold at most one
//! text line (bounded) and one slot of their own, and report every byte
//! they cannot place in a slot as a warning: nothing is dropped silently.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};

use super::filter::{SnifferFilter, hex_digit, parse_hex_word};
use crate::capture::{CaptureError, CaptureWarning};

/// Bytes per slot: one 512-bit beat of the card's datapath.
pub(crate) const SLOT_BYTES: usize = 64;
/// Data bytes per text line.
const LINE_BYTES: usize = 8;
/// Longest text line kept; longer lines are damage (a real line is 33
/// characters).
const MAX_LINE_BYTES: usize = 256;
/// Read buffer of both sources.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Where warnings go: the sniffer reader's own list or the capture reader's.
pub(crate) type Sink<'s> = &'s mut dyn FnMut(CaptureWarning);

pub(crate) fn warn(sink: Sink<'_>, offset: u64, message: String) {
    sink(CaptureWarning { offset, message });
}

/// One slot of the dump.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) bytes: [u8; SLOT_BYTES],
    /// Valid bytes: 64, or fewer for a dump that ends mid-slot.
    pub(crate) len: usize,
    /// Offset of `bytes[0]` in the dump (the text dump's own offsets).
    pub(crate) offset: u64,
    /// Data is missing between the previous slot and this one, so no frame
    /// may span them.
    pub(crate) gap_before: bool,
}

/// Position and validity of a slot held in the [`Window`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotMeta {
    pub(crate) offset: u64,
    pub(crate) len: usize,
    pub(crate) gap_before: bool,
}

/// The slots read but not yet consumed, stored back to back (64 bytes
/// each, a short last slot zero-filled) so that a frame spanning slots is
/// one slice.
#[derive(Debug, Default)]
pub(crate) struct Window {
    data: Vec<u8>,
    start: usize,
    meta: VecDeque<SlotMeta>,
}

impl Window {
    pub(crate) fn len(&self) -> usize {
        self.meta.len()
    }

    pub(crate) fn meta(&self, i: usize) -> Option<SlotMeta> {
        self.meta.get(i).copied()
    }

    pub(crate) fn push(&mut self, slot: Slot) {
        if self.start >= READ_BUFFER_BYTES && self.start * 2 >= self.data.len() {
            self.data.drain(..self.start);
            self.start = 0;
        }
        self.data.extend_from_slice(&slot.bytes);
        self.meta.push_back(SlotMeta {
            offset: slot.offset,
            len: slot.len.min(SLOT_BYTES),
            gap_before: slot.gap_before,
        });
    }

    /// Drops the first `n` slots.
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.meta.len());
        self.meta.drain(..n);
        self.start += n * SLOT_BYTES;
        if self.meta.is_empty() {
            self.data.clear();
            self.start = 0;
        }
    }

    /// The valid bytes of slot `i`.
    pub(crate) fn slot(&self, i: usize) -> &[u8] {
        let len = self.meta.get(i).map_or(0, |m| m.len);
        let at = self.start + i * SLOT_BYTES;
        self.data.get(at..at + len).unwrap_or(&[])
    }

    /// How many bytes from the start of slot `i` are contiguous dump data
    /// (no gap, no short slot before the end), looking at most `max_slots`
    /// slots ahead.
    pub(crate) fn contiguous_len(&self, i: usize, max_slots: usize) -> usize {
        let mut total = 0;
        for (k, m) in self.meta.iter().skip(i).take(max_slots).enumerate() {
            if k > 0 && m.gap_before {
                break;
            }
            total += m.len;
            if m.len < SLOT_BYTES {
                break;
            }
        }
        total
    }

    /// Up to `max` contiguous bytes from the start of slot `i`.
    pub(crate) fn bytes(&self, i: usize, max: usize) -> &[u8] {
        let n = self
            .contiguous_len(i, max.div_ceil(SLOT_BYTES).max(1))
            .min(max);
        let at = self.start + i * SLOT_BYTES;
        self.data.get(at..at + n).unwrap_or(&[])
    }
}

/// Where the slots come from.
pub(crate) enum Source<R: Read> {
    Raw(RawSource<R>),
    Text(Box<TextSource<R>>),
}

impl<R: Read> Source<R> {
    pub(crate) fn next_slot(&mut self, sink: Sink<'_>) -> Result<Option<Slot>, CaptureError> {
        match self {
            Self::Raw(s) => s.next_slot(sink),
            Self::Text(s) => s.next_slot(sink),
        }
    }

    /// Input bytes read so far (the text file's bytes for a text dump).
    pub(crate) fn bytes_read(&self) -> u64 {
        match self {
            Self::Raw(s) => s.pos,
            Self::Text(s) => s.file_pos,
        }
    }

    /// Dump bytes the source could not place in a slot (text damage).
    pub(crate) fn skipped_bytes(&self) -> u64 {
        match self {
            Self::Raw(_) => 0,
            Self::Text(s) => s.skipped_bytes,
        }
    }
}

fn io_error(name: &str, offset: u64, source: io::Error) -> CaptureError {
    CaptureError::Io {
        name: name.to_owned(),
        offset,
        source,
    }
}

/// The raw binary dump: slots back to back, nothing else.
pub(crate) struct RawSource<R> {
    rd: BufReader<R>,
    pos: u64,
    done: bool,
    name: String,
}

impl<R: Read> RawSource<R> {
    pub(crate) fn new(reader: R, name: String) -> Self {
        Self {
            rd: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            pos: 0,
            done: false,
            name,
        }
    }

    fn next_slot(&mut self, sink: Sink<'_>) -> Result<Option<Slot>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let mut bytes = [0u8; SLOT_BYTES];
        let mut len = 0;
        while len < SLOT_BYTES {
            match self.rd.read(&mut bytes[len..]) {
                Ok(0) => break,
                Ok(k) => len += k.min(SLOT_BYTES - len),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&self.name, self.pos + len as u64, e)),
            }
        }
        let offset = self.pos;
        self.pos += len as u64;
        if len < SLOT_BYTES {
            self.done = true;
            if len == 0 {
                return Ok(None);
            }
            warn(
                sink,
                offset,
                format!(
                    "dump cut mid-slot: the last slot, at byte {offset}, has {len} of its \
                     {SLOT_BYTES} bytes"
                ),
            );
        }
        Ok(Some(Slot {
            bytes,
            len,
            offset,
            gap_before: false,
        }))
    }
}

/// One parsed data line `%08x: b0 b1 b2 b3 b4 b5 b6 b7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DataLine {
    /// The line's dump offset; `None` when the dump is cut inside it.
    offset: Option<u64>,
    bytes: [u8; LINE_BYTES],
    count: usize,
    /// The line is the unterminated last line and was cut (inside the
    /// offset or a byte).
    cut: bool,
}

/// Parses a data line; `last` says it is the unterminated last line, where
/// a cut inside the offset or the last byte is expected rather than damage.
fn parse_data_line(line: &[u8], last: bool) -> Result<DataLine, String> {
    let t = line.trim_ascii();
    let mut out = DataLine {
        offset: None,
        bytes: [0; LINE_BYTES],
        count: 0,
        cut: false,
    };
    let Some(colon) = t.iter().position(|&c| c == b':') else {
        if last && t.len() <= 16 && t.iter().all(|&c| hex_digit(c).is_some()) {
            out.cut = true;
            return Ok(out);
        }
        return Err(format!(
            "{} is not a data line (`%08x: ` and 8 hex bytes)",
            quote(t)
        ));
    };
    let off = &t[..colon];
    if off.is_empty() || off.len() > 16 || !off.iter().all(|&c| hex_digit(c).is_some()) {
        return Err(format!("offset {} is not hex", quote(off)));
    }
    out.offset = parse_hex_word(off);
    let mut tokens = t[colon + 1..]
        .split(|c| c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .peekable();
    while let Some(tok) = tokens.next() {
        if out.count == LINE_BYTES {
            return Err(format!("more than {LINE_BYTES} bytes on the line"));
        }
        let is_last = tokens.peek().is_none();
        let value = match tok {
            [a, b] => hex_digit(*a).zip(hex_digit(*b)).map(|(a, b)| (a << 4) | b),
            [a] if last && is_last && hex_digit(*a).is_some() => {
                out.cut = true;
                break;
            }
            _ => None,
        };
        let Some(value) = value else {
            return Err(format!("{} is not a hex byte", quote(tok)));
        };
        out.bytes[out.count] = value;
        out.count += 1;
    }
    Ok(out)
}

/// A short quoted excerpt of line text for messages.
fn quote(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b.get(..40).unwrap_or(b));
    let more = if b.len() > 40 { "..." } else { "" };
    format!("{:?}{more}", s)
}

/// Maps a 32-bit `%08x` offset that wrapped at 4 GiB back next to the
/// expected 64-bit offset.
fn unwrap32(parsed: u64, expected: u64) -> u64 {
    let low = u64::from(u32::MAX);
    if parsed > low || expected <= low {
        parsed
    } else {
        (expected & !low) | parsed
    }
}

/// A line read from the text file.
struct RawLine {
    /// It ended with `\n` (not the unterminated end of the file).
    terminated: bool,
    /// It was longer than [`MAX_LINE_BYTES`]; only the start is kept.
    overlong: bool,
}

/// Lines skipped while looking for a slot boundary, reported as one warning.
#[derive(Debug, Clone, Copy)]
struct UnalignedRun {
    first_line: u64,
    offset: u64,
    bytes: u64,
}

/// The host tool's text dump: a filter line, then `%08x: ` + 8 hex bytes.
pub(crate) struct TextSource<R> {
    rd: BufReader<R>,
    name: String,
    line: Vec<u8>,
    /// Number of the line in `line` (1-based).
    line_no: u64,
    /// Text-file offset of the line in `line`.
    line_start: u64,
    /// Text-file offset of the next unread byte.
    file_pos: u64,
    /// Line 1 was a data line (no filter word): process it first.
    replay_first: bool,
    done: bool,
    /// The slot being assembled.
    cur: [u8; SLOT_BYTES],
    cur_len: usize,
    cur_offset: u64,
    cur_gap: bool,
    /// Dump offset expected on the next line.
    next_line_offset: u64,
    /// Dump offset just past the last slot handed out.
    next_slot_offset: u64,
    /// Data was dropped since the last slot handed out.
    gap: bool,
    /// The slot being assembled ends with a short line (line number, its
    /// dump offset, bytes): fine if it is the last line, damage otherwise.
    short: Option<(u64, u64, usize)>,
    unaligned: Option<UnalignedRun>,
    skipped_bytes: u64,
}

impl<R: Read> TextSource<R> {
    /// Reads the filter line. `Ok((source, None))` when line 1 is already a
    /// data line (a warning says so); an error when it is neither.
    pub(crate) fn open(
        reader: R,
        name: String,
        sink: Sink<'_>,
    ) -> Result<(Self, Option<SnifferFilter>), CaptureError> {
        let mut s = Self {
            rd: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            name,
            line: Vec::with_capacity(MAX_LINE_BYTES),
            line_no: 0,
            line_start: 0,
            file_pos: 0,
            replay_first: false,
            done: false,
            cur: [0; SLOT_BYTES],
            cur_len: 0,
            cur_offset: 0,
            cur_gap: false,
            next_line_offset: 0,
            next_slot_offset: 0,
            gap: false,
            short: None,
            unaligned: None,
            skipped_bytes: 0,
        };
        loop {
            let Some(raw) = s.read_line()? else {
                return Err(CaptureError::Truncated {
                    what: "sniffer text dump filter line",
                    offset: 0,
                    need: 1,
                    have: s.file_pos,
                });
            };
            if s.line.trim_ascii().is_empty() {
                continue;
            }
            if !raw.overlong
                && let Some(word) = parse_hex_word(&s.line)
            {
                return Ok((s, Some(SnifferFilter(word))));
            }
            if !raw.overlong && parse_data_line(&s.line, !raw.terminated).is_ok() {
                warn(
                    sink,
                    0,
                    format!(
                        "line {}: the dump has no filter word (it starts with a data line); \
                         reading it without one",
                        s.line_no
                    ),
                );
                s.replay_first = true;
                return Ok((s, None));
            }
            return Err(CaptureError::Malformed {
                what: "sniffer text dump",
                offset: s.line_start,
                detail: format!(
                    "line {} is not a 64-bit hex filter word: {}",
                    s.line_no,
                    quote(&s.line)
                ),
            });
        }
    }

    /// Reads the next line into `self.line` (at most [`MAX_LINE_BYTES`]),
    /// `None` at the end of the file.
    fn read_line(&mut self) -> Result<Option<RawLine>, CaptureError> {
        self.line.clear();
        self.line_start = self.file_pos;
        let mut got = 0u64;
        let mut overlong = false;
        loop {
            let buf = match self.rd.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(&self.name, self.file_pos, e)),
            };
            if buf.is_empty() {
                if got == 0 {
                    return Ok(None);
                }
                self.line_no += 1;
                return Ok(Some(RawLine {
                    terminated: false,
                    overlong,
                }));
            }
            let (take, found) = match buf.iter().position(|&c| c == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            let room = MAX_LINE_BYTES - self.line.len();
            if take > room {
                overlong = true;
            }
            self.line.extend_from_slice(&buf[..take.min(room)]);
            let used = take + usize::from(found);
            self.rd.consume(used);
            self.file_pos += used as u64;
            got += used as u64;
            if found {
                self.line_no += 1;
                return Ok(Some(RawLine {
                    terminated: true,
                    overlong,
                }));
            }
        }
    }

    fn next_slot(&mut self, sink: Sink<'_>) -> Result<Option<Slot>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        loop {
            let raw = if self.replay_first {
                self.replay_first = false;
                RawLine {
                    terminated: true,
                    overlong: false,
                }
            } else {
                match self.read_line()? {
                    Some(raw) => raw,
                    None => return Ok(self.finish(sink)),
                }
            };
            if self.line.trim_ascii().is_empty() {
                continue;
            }
            let parsed = if raw.overlong {
                Err(format!("longer than {MAX_LINE_BYTES} bytes"))
            } else {
                parse_data_line(&self.line, !raw.terminated)
            };
            match parsed {
                Ok(line) => {
                    if let Some(slot) = self.accept(line, sink) {
                        return Ok(Some(slot));
                    }
                }
                Err(why) => self.damaged(&why, sink),
            }
        }
    }

    /// Drops the slot being assembled (damage inside it).
    fn drop_slot(&mut self) {
        self.skipped_bytes += self.cur_len as u64;
        self.cur_len = 0;
        self.short = None;
        self.gap = true;
    }

    fn damaged(&mut self, why: &str, sink: Sink<'_>) {
        let off = self.next_line_offset;
        let dropped = if self.cur_len > 0 {
            format!(
                "; the slot at dump offset 0x{:08x} holding it is dropped ({} bytes)",
                self.cur_offset, self.cur_len
            )
        } else {
            String::new()
        };
        warn(
            sink,
            off,
            format!(
                "line {} (text byte {}, dump offset 0x{off:08x}): {why}{dropped}",
                self.line_no, self.line_start
            ),
        );
        self.drop_slot();
        self.skipped_bytes += LINE_BYTES as u64;
        self.next_line_offset = off + LINE_BYTES as u64;
    }

    fn flush_unaligned(&mut self, sink: Sink<'_>) {
        if let Some(run) = self.unaligned.take() {
            warn(
                sink,
                run.offset,
                format!(
                    "line {} (dump offset 0x{:08x}): not at a 64-byte slot boundary; {} bytes \
                     skipped until the next boundary",
                    run.first_line, run.offset, run.bytes
                ),
            );
        }
    }

    /// Adds a good line to the slot being assembled; the slot when full.
    fn accept(&mut self, line: DataLine, sink: Sink<'_>) -> Option<Slot> {
        if line.count == 0 && line.cut {
            // The unterminated last line ends before its first byte.
            warn(
                sink,
                self.next_line_offset,
                format!(
                    "dump cut mid-line: the last line, {}, has no complete byte",
                    self.line_no
                ),
            );
            return None;
        }
        let off = line.offset.map_or(self.next_line_offset, |o| {
            unwrap32(o, self.next_line_offset)
        });
        if let Some((no, at, n)) = self.short.take() {
            warn(
                sink,
                at,
                format!(
                    "line {no} (dump offset 0x{at:08x}): only {n} of {LINE_BYTES} bytes; the \
                     slot at dump offset 0x{:08x} holding it is dropped ({} bytes)",
                    self.cur_offset, self.cur_len
                ),
            );
            self.drop_slot();
        }
        let expected = self.cur_offset + self.cur_len as u64;
        if self.cur_len > 0 && off != expected {
            warn(
                sink,
                off,
                format!(
                    "line {} (text byte {}): dump offset 0x{off:08x} where 0x{expected:08x} was \
                     expected (lines missing or repeated); the incomplete slot at 0x{:08x} is \
                     dropped ({} bytes)",
                    self.line_no, self.line_start, self.cur_offset, self.cur_len
                ),
            );
            self.drop_slot();
        }
        self.next_line_offset = off + LINE_BYTES as u64;
        if self.cur_len == 0 {
            if !off.is_multiple_of(SLOT_BYTES as u64) {
                self.skipped_bytes += line.count as u64;
                self.gap = true;
                let run = self.unaligned.get_or_insert(UnalignedRun {
                    first_line: self.line_no,
                    offset: off,
                    bytes: 0,
                });
                run.bytes += line.count as u64;
                return None;
            }
            self.flush_unaligned(sink);
            self.cur_offset = off;
            self.cur_gap = self.gap || off != self.next_slot_offset;
        }
        let n = line.count.min(SLOT_BYTES - self.cur_len);
        self.cur[self.cur_len..self.cur_len + n].copy_from_slice(&line.bytes[..n]);
        self.cur_len += n;
        if line.count < LINE_BYTES || line.cut {
            self.short = Some((self.line_no, off, line.count));
            return None;
        }
        if self.cur_len == SLOT_BYTES {
            return Some(self.emit());
        }
        None
    }

    fn emit(&mut self) -> Slot {
        let slot = Slot {
            bytes: self.cur,
            len: self.cur_len,
            offset: self.cur_offset,
            gap_before: self.cur_gap,
        };
        self.next_slot_offset = self.cur_offset + self.cur_len as u64;
        self.cur = [0; SLOT_BYTES];
        self.cur_len = 0;
        self.gap = false;
        slot
    }

    /// End of the text: a slot in progress is handed out short.
    fn finish(&mut self, sink: Sink<'_>) -> Option<Slot> {
        self.done = true;
        self.flush_unaligned(sink);
        if let Some((no, at, n)) = self.short.take() {
            warn(
                sink,
                at,
                format!("dump cut mid-line: the last line, {no}, has {n} of {LINE_BYTES} bytes"),
            );
        }
        if self.cur_len == 0 {
            return None;
        }
        warn(
            sink,
            self.cur_offset,
            format!(
                "dump cut mid-slot: the last slot, at dump offset 0x{:08x}, has {} of its \
                 {SLOT_BYTES} bytes",
                self.cur_offset, self.cur_len
            ),
        );
        Some(self.emit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_lines() {
        let l = parse_data_line(b"00000040: 01 02 03 04 05 06 07 ff\r", false).unwrap();
        assert_eq!(l.offset, Some(0x40));
        assert_eq!(l.count, 8);
        assert_eq!(l.bytes, [1, 2, 3, 4, 5, 6, 7, 0xff]);
        assert!(!l.cut);
        let l = parse_data_line(b"00000040: 01 0", true).unwrap();
        assert_eq!((l.count, l.cut), (1, true));
        assert!(parse_data_line(b"00000040: 01 0", false).is_err());
        assert!(parse_data_line(b"00000040: 01 zz", false).is_err());
        assert!(parse_data_line(b"00000040: 01 02 03 04 05 06 07 08 09", false).is_err());
        assert!(parse_data_line(b"00000040: 01 02 03 04 05 06 07 08 0", true).is_err());
        assert!(parse_data_line(b"0000004g: 01", false).is_err());
        assert!(parse_data_line(b"hello", false).is_err());
        let l = parse_data_line(b"0000", true).unwrap();
        assert_eq!((l.offset, l.count, l.cut), (None, 0, true));
    }

    #[test]
    fn wrap() {
        assert_eq!(unwrap32(8, 8), 8);
        assert_eq!(unwrap32(0, 1 << 32), 1 << 32);
        assert_eq!(unwrap32(0x40, 0x40), 0x40);
    }
}
