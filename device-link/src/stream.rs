//! [`StreamParser`]: the client's reader of an agent's stream.
//!
//! The agent writes one known shape of pcapng (little-endian, what
//! `PcapngWriter` writes, plus the in-band message blocks). The generic
//! `CaptureReader` reads every pcap and pcapng variant through
//! pcap-parser's circular buffer and cost about 1,000 instructions a frame
//! on the client's socket thread; this parser slices each block straight
//! out of the socket's read buffer instead: frames are copied once, into
//! the batch that goes to ingest.

use rocescope_replay::Record;
use rocescope_replay::record::{Direction, DropCount, DropReason, ROCESCOPE_PEN};

use crate::protocol::{LINK_BLOCK_TYPE, decode_link_block};

const SHB_TYPE: u32 = 0x0a0d_0d0a;
const IDB_TYPE: u32 = 1;
const ISB_TYPE: u32 = 5;
const EPB_TYPE: u32 = 6;
const CUSTOM_BLOCK_TYPE: u32 = 0x0000_0bad;
/// Byte-order magic as a little-endian section has it.
const BOM_LE: u32 = 0x1a2b_3c4d;
/// Largest block accepted: the replay reader's limit.
pub const MAX_BLOCK_BYTES: usize = rocescope_replay::capture::MAX_PCAPNG_BLOCK_BYTES as usize;

/// Option codes (see replay/FORMAT.md).
const IF_TSRESOL: u16 = 9;
const IF_TSOFFSET: u16 = 14;
const EPB_FLAGS: u16 = 2;
const ISB_IFDROP: u16 = 5;
const ISB_OSDROP: u16 = 7;
const OPT_CUSTOM_BINARY: u16 = 2989;
const CUSTOM_OPT_INTERFACE: u8 = 1;
const CUSTOM_OPT_DROP_REASON: u8 = 2;

/// Why the stream cannot be read on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("agent stream at byte {offset}: {what}")]
    Malformed { offset: u64, what: String },
}

/// One thing found in the stream.
#[derive(Debug)]
pub enum Parsed<'a> {
    Frame {
        ts_ns: u64,
        port: u8,
        direction: Option<Direction>,
        orig_len: u32,
        data: &'a [u8],
    },
    Record(Record),
    /// An in-band message's text.
    Message(&'a [u8]),
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    tsresol: u8,
    tsoffset_s: i64,
    port: u8,
    direction: Option<Direction>,
}

/// Parses whole blocks from a buffer; keeps the section's interfaces.
#[derive(Debug, Default)]
pub struct StreamParser {
    interfaces: Vec<Interface>,
    started: bool,
    /// Stream offset of the next block (for error messages).
    offset: u64,
    /// Bytes the next block needs (when `parse` stopped short of it).
    need: usize,
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    b.get(i..i + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    b.get(i..i + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from(u32_at(b, i)) | (u64::from(u32_at(b, i + 4)) << 32)
}

/// Calls `f(code, value)` for each option up to `opt_endofopt`; stops at an
/// option that overruns (the replay reader warns and ignores the rest too).
fn for_each_option(opts: &[u8], mut f: impl FnMut(u16, &[u8])) {
    let mut at = 0;
    while at + 4 <= opts.len() {
        let code = u16_at(opts, at);
        if code == 0 {
            return;
        }
        let len = usize::from(u16_at(opts, at + 2));
        let Some(value) = opts.get(at + 4..at + 4 + len) else {
            return;
        };
        f(code, value);
        at += 4 + len.div_ceil(4) * 4;
    }
}

/// ns since 1970, as the replay reader computes it (clamped, not an error).
fn timestamp_ns(units: u64, tsresol: u8, tsoffset_s: i64) -> u64 {
    if tsresol <= 9
        && tsoffset_s == 0
        && let Some(ns) = units.checked_mul(10u64.pow(9 - u32::from(tsresol)))
    {
        return ns;
    }
    let n = u32::from(tsresol & 0x7f);
    let ns: u128 = if tsresol & 0x80 != 0 {
        (u128::from(units) * 1_000_000_000) >> n.min(127)
    } else if n <= 9 {
        u128::from(units) * 10u128.pow(9 - n)
    } else if n - 9 <= 38 {
        u128::from(units) / 10u128.pow(n - 9)
    } else {
        0
    };
    let total = ns as i128 + i128::from(tsoffset_s) * 1_000_000_000;
    total.clamp(0, i128::from(u64::MAX)) as u64
}

impl StreamParser {
    pub fn new() -> StreamParser {
        StreamParser::default()
    }

    /// Bytes the block `parse` stopped at needs in all (0 if unknown):
    /// the caller's buffer must hold at least this much.
    pub fn need(&self) -> usize {
        self.need
    }

    /// Parses the whole blocks at the start of `buf`, handing each frame,
    /// record and message to `out`; returns the bytes consumed. A block cut
    /// by the end of `buf` is left for the next call (see [`need`]).
    ///
    /// [`need`]: StreamParser::need
    pub fn parse(
        &mut self,
        buf: &[u8],
        out: &mut impl FnMut(Parsed<'_>),
    ) -> Result<usize, StreamError> {
        let mut at = 0;
        self.need = 0;
        while buf.len() - at >= 12 {
            let ty = u32_at(buf, at);
            let len = u32_at(buf, at + 4) as usize;
            if !self.started {
                if ty != SHB_TYPE || u32_at(buf, at + 8) != BOM_LE {
                    return Err(self.bad("not a little-endian pcapng stream"));
                }
                self.started = true;
            }
            if len < 12 || len % 4 != 0 || len > MAX_BLOCK_BYTES {
                return Err(self.bad(&format!("block length {len}")));
            }
            if buf.len() - at < len {
                self.need = len;
                break;
            }
            let block = &buf[at..at + len];
            if u32_at(block, len - 4) as usize != len {
                return Err(self.bad("trailing block length differs"));
            }
            self.block(ty, block, out)?;
            at += len;
            self.offset += len as u64;
        }
        Ok(at)
    }

    fn bad(&self, what: &str) -> StreamError {
        StreamError::Malformed {
            offset: self.offset,
            what: what.to_owned(),
        }
    }

    fn block(
        &mut self,
        ty: u32,
        b: &[u8],
        out: &mut impl FnMut(Parsed<'_>),
    ) -> Result<(), StreamError> {
        let len = b.len();
        match ty {
            EPB_TYPE => {
                if len < 32 {
                    return Err(self.bad("EPB shorter than 32 bytes"));
                }
                let interface = u32_at(b, 8);
                let units = (u64::from(u32_at(b, 12)) << 32) | u64::from(u32_at(b, 16));
                let caplen = u32_at(b, 20) as usize;
                let orig_len = u32_at(b, 24);
                let Some(data) = b.get(28..28 + caplen).filter(|_| caplen <= len - 32) else {
                    return Err(self.bad(&format!("EPB caplen {caplen} in a {len}-byte block")));
                };
                let Some(iface) = self.interfaces.get(interface as usize).copied() else {
                    return Err(self.bad(&format!("EPB on undeclared interface {interface}")));
                };
                let mut direction = iface.direction;
                let opts_at = 28 + caplen.div_ceil(4) * 4;
                if opts_at < len - 4 {
                    for_each_option(&b[opts_at..len - 4], |code, v| {
                        if code == EPB_FLAGS && v.len() == 4 {
                            match u32_at(v, 0) & 3 {
                                1 => direction = Some(Direction::Rx),
                                2 => direction = Some(Direction::Tx),
                                _ => {}
                            }
                        }
                    });
                }
                out(Parsed::Frame {
                    ts_ns: timestamp_ns(units, iface.tsresol, iface.tsoffset_s),
                    port: iface.port,
                    direction,
                    orig_len,
                    data,
                });
            }
            SHB_TYPE => {
                if u32_at(b, 8) != BOM_LE || u16_at(b, 12) != 1 {
                    return Err(self.bad("section header is not little-endian pcapng 1.x"));
                }
                self.interfaces.clear();
            }
            IDB_TYPE => {
                if len < 20 {
                    return Err(self.bad("IDB shorter than 20 bytes"));
                }
                let mut iface = Interface {
                    tsresol: 6,
                    tsoffset_s: 0,
                    // As the replay reader: without rocescope's option, the
                    // interface id is the port.
                    port: u8::try_from(self.interfaces.len()).unwrap_or(u8::MAX),
                    direction: None,
                };
                let (mut resol, mut offset) = (None, None);
                for_each_option(&b[16..len - 4], |code, v| match (code, v) {
                    (IF_TSRESOL, &[r]) if resol.is_none() => resol = Some(r),
                    (IF_TSOFFSET, _) if v.len() == 8 && offset.is_none() => {
                        offset = Some(u64_at(v, 0) as i64);
                    }
                    (OPT_CUSTOM_BINARY, &[p0, p1, p2, p3, CUSTOM_OPT_INTERFACE, port, dir, ..])
                        if u32::from_le_bytes([p0, p1, p2, p3]) == ROCESCOPE_PEN =>
                    {
                        iface.port = port;
                        iface.direction = match dir {
                            1 => Some(Direction::Rx),
                            2 => Some(Direction::Tx),
                            _ => None,
                        };
                    }
                    _ => {}
                });
                iface.tsresol = resol.unwrap_or(6);
                iface.tsoffset_s = offset.unwrap_or(0);
                self.interfaces.push(iface);
            }
            LINK_BLOCK_TYPE | CUSTOM_BLOCK_TYPE => {
                if let Some(text) = decode_link_block(b) {
                    out(Parsed::Message(text));
                } else if len >= 16 && u32_at(b, 8) == ROCESCOPE_PEN {
                    // Records this build cannot read are skipped, as the
                    // replay reader skips them.
                    if let Ok(r) = Record::decode_payload(&b[12..len - 4]) {
                        out(Parsed::Record(r));
                    }
                }
            }
            ISB_TYPE if len >= 24 => {
                let interface = u32_at(b, 8);
                let Some(iface) = self.interfaces.get(interface as usize).copied() else {
                    return Ok(());
                };
                let units = (u64::from(u32_at(b, 12)) << 32) | u64::from(u32_at(b, 16));
                let (mut ifdrop, mut osdrop, mut reason) = (None, None, None);
                for_each_option(&b[20..len - 4], |code, v| match (code, v) {
                    (ISB_IFDROP, _) if v.len() == 8 => ifdrop = Some(u64_at(v, 0)),
                    (ISB_OSDROP, _) if v.len() == 8 => osdrop = Some(u64_at(v, 0)),
                    (OPT_CUSTOM_BINARY, &[p0, p1, p2, p3, CUSTOM_OPT_DROP_REASON, c, ..])
                        if u32::from_le_bytes([p0, p1, p2, p3]) == ROCESCOPE_PEN =>
                    {
                        reason = Some(match c {
                            0 => DropReason::QueueFull,
                            1 => DropReason::CaptureLoss,
                            _ => DropReason::Other,
                        });
                    }
                    _ => {}
                });
                let (dropped, default_reason) = match (ifdrop, osdrop) {
                    (Some(n), _) => (n, DropReason::CaptureLoss),
                    (None, Some(n)) => (n, DropReason::QueueFull),
                    (None, None) => return Ok(()),
                };
                out(Parsed::Record(Record::Drops(DropCount {
                    ts_ns: timestamp_ns(units, iface.tsresol, iface.tsoffset_s),
                    interface,
                    dropped,
                    reason: reason.unwrap_or(default_reason),
                })));
            }
            // Comments, name resolution, foreign custom blocks: nothing the
            // client keeps.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_replay::record::MarkerKind;
    use rocescope_replay::{CaptureItem, CaptureReader, PcapngWriter};

    /// What the generic reader makes of a stream, as text.
    fn via_capture_reader(bytes: &[u8]) -> Vec<String> {
        let mut cr = CaptureReader::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
        let mut got = Vec::new();
        while let Some(item) = cr.next_item().unwrap() {
            got.push(match item {
                CaptureItem::Frame(f) => format!(
                    "F {} {:?} {:?} {} {:?}",
                    f.ts_ns,
                    f.port.unwrap_or(f.interface as u8),
                    f.direction,
                    f.origlen,
                    f.data
                ),
                CaptureItem::Record(r) => format!("R {r:?}"),
            });
        }
        got
    }

    /// The same through [`StreamParser`], fed in pieces of `step` bytes.
    fn via_parser(bytes: &[u8], step: usize) -> (Vec<String>, Vec<String>) {
        let mut p = StreamParser::new();
        let (mut got, mut msgs) = (Vec::new(), Vec::new());
        let mut buf = Vec::new();
        for piece in bytes.chunks(step) {
            buf.extend_from_slice(piece);
            let n = p
                .parse(&buf, &mut |x| match x {
                    Parsed::Frame {
                        ts_ns,
                        port,
                        direction,
                        orig_len,
                        data,
                    } => got.push(format!(
                        "F {ts_ns} {port:?} {direction:?} {orig_len} {data:?}"
                    )),
                    Parsed::Record(r) => got.push(format!("R {r:?}")),
                    Parsed::Message(t) => msgs.push(String::from_utf8_lossy(t).into_owned()),
                })
                .unwrap();
            buf.drain(..n);
        }
        assert!(buf.is_empty());
        (got, msgs)
    }

    #[test]
    fn reads_what_the_writer_writes_as_the_replay_reader_does() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        w.write_frame(5, 0, Some(Direction::Rx), 100, &[1, 2, 3])
            .unwrap();
        w.write_frame(6, 3, None, 60, &[4; 60]).unwrap();
        w.write_record(&Record::Marker {
            ts_ns: 7,
            kind: MarkerKind::Start,
            text: "go".into(),
        })
        .unwrap();
        w.write_record(&Record::Drops(DropCount {
            ts_ns: 8_000,
            interface: 0,
            dropped: 9,
            reason: DropReason::QueueFull,
        }))
        .unwrap();
        w.write_record(&Record::Drops(DropCount {
            ts_ns: 9,
            interface: 0xffff_fffe,
            dropped: 2,
            reason: DropReason::QueueFull,
        }))
        .unwrap();
        w.write_frame(u64::MAX / 3, 1, Some(Direction::Tx), 70, &[7; 70])
            .unwrap();
        let mut bytes = w.finish().unwrap();
        let want = via_capture_reader(&bytes);
        assert_eq!(want.len(), 6);
        crate::protocol::Reply::Pong("x".into()).encode_block(1, &mut bytes);
        for step in [1, 7, 64, bytes.len()] {
            let (got, msgs) = via_parser(&bytes, step);
            assert_eq!(got, want, "step {step}");
            assert_eq!(msgs, ["PONG x"]);
        }
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        w.write_frame(5, 0, None, 10, &[1; 10]).unwrap();
        let good = w.finish().unwrap();
        let mut p = StreamParser::new();
        assert!(p.parse(b"not pcapng at all", &mut |_| {}).is_err());
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            let mut p = StreamParser::new();
            let _ = p.parse(&bad, &mut |_| {});
        }
    }
}
