//! Classic pcap: a 24-byte file header, then 16-byte record headers each
//! followed by `caplen` bytes.

use std::io::Read;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError};

use super::input::{Input, Source, Start, describe};
use super::{CaptureError, CaptureFrame, LinkType, MAX_PCAP_RECORD_BYTES, Shared};

/// Microsecond magic as read little-endian (file bytes `d4 c3 b2 a1`).
pub(crate) const MAGIC_US: u32 = 0xa1b2_c3d4;
/// Nanosecond magic as read little-endian (file bytes `4d 3c b2 a1`).
pub(crate) const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// The "modified" pcap of old Red Hat tcpdump; records have extra fields.
pub(crate) const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
/// Size of the file header.
pub(crate) const HEADER_BYTES: usize = 24;

/// A classic pcap file's magic `m` (read little-endian): whether its
/// times are in ns (else µs) and whether the file is big-endian; `None`
/// for any other magic.
pub(crate) fn magic_kind(m: u32) -> Option<(bool, bool)> {
    match m {
        MAGIC_US => Some((false, false)),
        MAGIC_NS => Some((true, false)),
        m if m == MAGIC_US.swap_bytes() => Some((false, true)),
        m if m == MAGIC_NS.swap_bytes() => Some((true, true)),
        _ => None,
    }
}
/// Size of a record header.
const RECORD_HEADER_BYTES: usize = 16;
/// Snap length written by the BALBOA host converter.
const BALBOA_SNAPLEN: u32 = 65535;

/// One record header, already in host byte order.
#[derive(Debug, Clone, Copy)]
struct RecordHeader {
    ts_sec: u32,
    ts_frac: u32,
    caplen: u32,
    origlen: u32,
}

/// Tracks whether the file looks like the BALBOA converter's output:
/// Ethernet, snaplen 65535, `ts_usec == 0` and `ts_sec == index + base`
/// with `base` 0 or 1 fixed by the first record.
#[derive(Debug, Clone, Copy)]
struct Ordinal {
    /// Every record checked so far fits the pattern.
    eligible: bool,
    /// `ts_sec` of record 0.
    base: u64,
    /// Records checked so far (by look-ahead or by reading).
    checked: u64,
}

impl Ordinal {
    fn check(&mut self, index: u64, h: RecordHeader) {
        if !self.eligible || index < self.checked {
            return;
        }
        if index == 0 && h.ts_sec <= 1 {
            self.base = u64::from(h.ts_sec);
        }
        if h.ts_frac != 0 || u64::from(h.ts_sec) != self.base + index || index != self.checked {
            self.eligible = false;
            return;
        }
        self.checked = index + 1;
    }

    /// Record `index`'s time: its index while the file keeps the BALBOA
    /// pattern (warning once when a record breaks it), else its timestamp.
    #[inline(always)]
    fn ts_ns(
        &mut self,
        index: u64,
        off: u64,
        h: RecordHeader,
        nanos: bool,
        shared: &mut Shared,
    ) -> u64 {
        let was_ordinal = self.is_ordinal();
        self.check(index, h);
        if self.is_ordinal() {
            return index;
        }
        if was_ordinal {
            broke_pattern(index, off, h, shared);
        }
        let frac_ns = if nanos {
            u64::from(h.ts_frac)
        } else {
            u64::from(h.ts_frac) * 1_000
        };
        // At most 4.3e18 + 4.3e12, below u64::MAX: no overflow.
        u64::from(h.ts_sec) * 1_000_000_000 + frac_ns
    }

    /// At least two records are needed: one record with `ts_sec` 0 is just
    /// a capture from 1970 as far as anyone can tell.
    fn is_ordinal(&self) -> bool {
        self.eligible && self.checked >= 2
    }
}

/// Reading state of a classic pcap file.
pub(crate) struct PcapState<R: Read> {
    input: Input<LegacyPcapReader<Source<R>>>,
    big_endian: bool,
    nanos: bool,
    linktype: LinkType,
    ordinal: Ordinal,
}

impl<R: Read> PcapState<R> {
    /// Reads the file header; `start.prefix` holds the bytes read so far.
    pub(crate) fn open(
        start: Start<R>,
        nanos: bool,
        big_endian: bool,
        shared: &mut Shared,
    ) -> Result<Self, CaptureError> {
        let have = start.prefix.len();
        if have < HEADER_BYTES {
            return Err(CaptureError::Truncated {
                what: "pcap file header",
                offset: 0,
                need: HEADER_BYTES as u64,
                have: have as u64,
            });
        }
        let (source, name, slot, buffer_bytes) = start.into_source();
        let rd = LegacyPcapReader::new(buffer_bytes, source)
            .map_err(|e| malformed("pcap file header", 0, &e))?;
        let mut input = Input::new(rd, buffer_bytes, name, slot);
        let (raw_linktype, snaplen) = match input.rd.next() {
            Ok((HEADER_BYTES, PcapBlockOwned::LegacyHeader(h))) => (h.network.0 as u32, h.snaplen),
            Ok(_) => {
                return Err(malformed_msg(
                    "pcap file header",
                    0,
                    "pcap-parser did not return the file header",
                ));
            }
            Err(e) => return Err(malformed("pcap file header", 0, &e)),
        };
        input.pending = HEADER_BYTES;
        input.settle();
        if raw_linktype >> 16 != 0 {
            shared.warn(
                20,
                format!(
                    "pcap header: the link-type field at byte 20 is 0x{raw_linktype:08x}, with \
                     flags in its upper bits (FCS length): frames may end with a frame check \
                     sequence"
                ),
            );
        }
        let linktype = LinkType(raw_linktype & 0xffff);
        let mut state = Self {
            input,
            big_endian,
            nanos,
            linktype,
            ordinal: Ordinal {
                eligible: linktype == LinkType::ETHERNET && snaplen == BALBOA_SNAPLEN,
                base: 0,
                checked: 0,
            },
        };
        state.look_ahead()?;
        Ok(state)
    }

    /// Checks the BALBOA pattern over the first records before any frame is
    /// returned, so frame 0 already has the right [`TimeBase`](super::TimeBase).
    /// Loads at least two records (if the file has them), then checks what
    /// else is buffered without reading more.
    fn look_ahead(&mut self) -> Result<(), CaptureError> {
        let mut off = 0usize;
        let mut index = 0u64;
        while self.ordinal.eligible {
            let need = off + RECORD_HEADER_BYTES;
            if !self.available(index, need)? {
                break;
            }
            let Some(h) = self.header_at(off) else {
                break;
            };
            if h.caplen > MAX_PCAP_RECORD_BYTES {
                break;
            }
            let end = need + h.caplen as usize;
            if !self.available(index, end)? {
                break;
            }
            self.ordinal.check(index, h);
            off = end;
            index += 1;
        }
        Ok(())
    }

    fn available(&mut self, index: u64, n: usize) -> Result<bool, CaptureError> {
        if index < 2 {
            self.input.fill_to(n)
        } else {
            Ok(self.input.data().len() >= n)
        }
    }

    pub(crate) fn is_ordinal(&self) -> bool {
        self.ordinal.is_ordinal()
    }

    pub(crate) fn bytes_read(&self) -> u64 {
        self.input.bytes_read()
    }

    /// The record header at `off` in the buffer, if buffered.
    fn header_at(&self, off: usize) -> Option<RecordHeader> {
        header(self.input.data().get(off..)?, self.big_endian)
    }

    pub(crate) fn next(
        &mut self,
        shared: &mut Shared,
    ) -> Result<Option<CaptureFrame<'_>>, CaptureError> {
        self.input.settle();
        let off = self.input.pos;
        shared.at = off;
        // Fast path: the whole record is already buffered (one `data()`).
        let buffered = {
            let d = self.input.data();
            let h = header(d, self.big_endian);
            h.filter(|h| {
                h.caplen <= MAX_PCAP_RECORD_BYTES
                    && d.len() >= RECORD_HEADER_BYTES + h.caplen as usize
            })
        };
        let h = match buffered {
            Some(h) => h,
            None => match self.load_record(off, shared)? {
                Some(h) => h,
                None => return Ok(None),
            },
        };
        let need = RECORD_HEADER_BYTES + h.caplen as usize;
        let index = shared.next_index;
        let ts_ns = self.ordinal.ts_ns(index, off, h, self.nanos, shared);
        shared.next_index += 1;
        self.input.pending = need;
        // The record is buffered and its header checked above: slice it here
        // rather than have pcap-parser parse the header a second time.
        let linktype = self.linktype;
        let Some(data) = self.input.data().get(RECORD_HEADER_BYTES..need) else {
            return Err(malformed_msg(
                "pcap record",
                off,
                "the buffered record is shorter than its header says",
            ));
        };
        Ok(Some(CaptureFrame {
            index,
            ts_ns,
            caplen: h.caplen,
            origlen: h.origlen,
            linktype,
            interface: 0,
            file_offset: off + RECORD_HEADER_BYTES as u64,
            port: None,
            direction: None,
            data,
        }))
    }

    /// Hands `f` up to `max` records that are already whole in the buffer,
    /// in one loop (no refill, no per-record state checks and hand-offs);
    /// returns how many. The same frames, offsets, timestamps and warnings
    /// as that many calls of [`next`](Self::next); 0 when the next record is
    /// not whole in the buffer (then `next` refills, or ends, or fails).
    #[inline]
    pub(crate) fn for_each_buffered<F: super::FrameSink>(
        &mut self,
        shared: &mut Shared,
        max: usize,
        f: &mut F,
    ) -> usize {
        // The file's byte order and time unit as constants: each field read
        // is then one load (and a swap), not a branch.
        match (self.big_endian, self.nanos) {
            (false, false) => self.buffered_run::<false, false, F>(shared, max, f),
            (false, true) => self.buffered_run::<false, true, F>(shared, max, f),
            (true, false) => self.buffered_run::<true, false, F>(shared, max, f),
            (true, true) => self.buffered_run::<true, true, F>(shared, max, f),
        }
    }

    #[inline(always)]
    fn buffered_run<const BE: bool, const NANOS: bool, F: super::FrameSink>(
        &mut self,
        shared: &mut Shared,
        max: usize,
        f: &mut F,
    ) -> usize {
        self.input.settle();
        let base = self.input.pos;
        let d = self.input.rd.data();
        let mut at = 0usize;
        let mut n = 0usize;
        // The run's index and position in locals, written back once after
        // the loop (in it only a warning, which names its own offset, takes
        // `shared`).
        let first_index = shared.next_index;
        let mut last_off = None;
        while n < max {
            let Some(h) = d.get(at..).and_then(|r| header(r, BE)) else {
                break;
            };
            let need = RECORD_HEADER_BYTES + h.caplen as usize;
            if h.caplen > MAX_PCAP_RECORD_BYTES || d.len() - at < need {
                break;
            }
            let off = base + at as u64;
            let index = first_index + n as u64;
            let ts_ns = self.ordinal.ts_ns(index, off, h, NANOS, shared);
            last_off = Some(off);
            let Some(data) = d.get(at + RECORD_HEADER_BYTES..at + need) else {
                break;
            };
            f.frame(&CaptureFrame {
                index,
                ts_ns,
                caplen: h.caplen,
                origlen: h.origlen,
                linktype: self.linktype,
                interface: 0,
                file_offset: off + RECORD_HEADER_BYTES as u64,
                port: None,
                direction: None,
                data,
            });
            at += need;
            n += 1;
        }
        shared.next_index = first_index + n as u64;
        if let Some(off) = last_off {
            shared.at = off;
        }
        // Consumed at the next call, as `next` leaves its record.
        self.input.pending = at;
        n
    }

    /// Slow path of [`next`](Self::next): refills until the record at `off`
    /// is buffered. `None` when the input ends first (a cut is warned about).
    fn load_record(
        &mut self,
        off: u64,
        shared: &mut Shared,
    ) -> Result<Option<RecordHeader>, CaptureError> {
        if !self.input.fill_to(RECORD_HEADER_BYTES)? {
            let have = self.input.data().len();
            if have > 0 {
                shared.warn(
                    off,
                    format!(
                        "file cut mid-record: the record at byte {off} has only {have} of its \
                         {RECORD_HEADER_BYTES} header bytes"
                    ),
                );
            }
            return Ok(None);
        }
        let Some(h) = self.header_at(0) else {
            return Ok(None);
        };
        if h.caplen > MAX_PCAP_RECORD_BYTES {
            self.oversized(off, h.caplen, shared)?;
            return Ok(None);
        }
        let need = RECORD_HEADER_BYTES + h.caplen as usize;
        if !self.input.fill_to(need)? {
            let have = self.input.data().len();
            shared.warn(
                off,
                format!(
                    "file cut mid-record: the record at byte {off} needs {need} bytes but the \
                     file ends after {have}"
                ),
            );
            return Ok(None);
        }
        Ok(Some(h))
    }

    /// A caplen over the limit is corruption. If the file ends within the
    /// limit anyway, it is most likely the garbage tail of a capture that was
    /// killed mid-write: keep what came before and warn. Otherwise stop with
    /// an error rather than guess where the next record starts.
    fn oversized(
        &mut self,
        off: u64,
        caplen: u32,
        shared: &mut Shared,
    ) -> Result<(), CaptureError> {
        let window = RECORD_HEADER_BYTES + MAX_PCAP_RECORD_BYTES as usize;
        if self.input.fill_to(window)? {
            return Err(CaptureError::RecordTooLarge {
                offset: off,
                caplen,
                limit: MAX_PCAP_RECORD_BYTES,
            });
        }
        let rest = self.input.data().len();
        shared.warn(
            off,
            format!(
                "record at byte {off}: caplen {caplen} exceeds the {MAX_PCAP_RECORD_BYTES}-byte \
                 limit and the file ends {rest} bytes later; treating it as a cut or corrupt tail"
            ),
        );
        Ok(())
    }
}

/// The warning for the record that ends the BALBOA pattern (out of line:
/// the time computation around it runs for every record).
#[cold]
#[inline(never)]
fn broke_pattern(index: u64, off: u64, h: RecordHeader, shared: &mut Shared) {
    shared.warn(
        off,
        format!(
            "record {index} at byte {off} has timestamp {}.{:06} and breaks the \
             BALBOA pattern (ts_sec = index, ts_usec = 0): timestamps from here on \
             are real times",
            h.ts_sec, h.ts_frac
        ),
    );
}

/// Decodes the record header at the start of `d`, if `d` holds one.
#[inline]
fn header(d: &[u8], big_endian: bool) -> Option<RecordHeader> {
    let b: &[u8; RECORD_HEADER_BYTES] = d.first_chunk()?;
    let word = |i: usize| crate::endian::u32_at(b, i, big_endian);
    Some(RecordHeader {
        ts_sec: word(0),
        ts_frac: word(4),
        caplen: word(8),
        origlen: word(12),
    })
}

fn malformed(what: &'static str, offset: u64, e: &PcapError<&[u8]>) -> CaptureError {
    malformed_msg(what, offset, &describe(e))
}

fn malformed_msg(what: &'static str, offset: u64, detail: &str) -> CaptureError {
    CaptureError::Malformed {
        what,
        offset,
        detail: detail.to_owned(),
    }
}
