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

use rocescope_replay::endian::{i64_at, u16_at, u32_at, u64_at};
use rocescope_replay::pcapng::{
    BOM, CUSTOM_BLOCK_TYPE, CUSTOM_OPT_DROP_REASON, CUSTOM_OPT_INTERFACE, DEFAULT_TSRESOL,
    EPB_FLAG_INBOUND, EPB_FLAG_OUTBOUND, EPB_FLAGS, EPB_TYPE, IDB_TYPE, IF_TSOFFSET, IF_TSRESOL,
    ISB_IFDROP, ISB_OSDROP, ISB_TYPE, OPT_CUSTOM_BINARY, SHB_TYPE, for_each_option, timestamp_ns,
};

use crate::protocol::{LINK_BLOCK_TYPE, decode_link_block};

/// Largest block accepted: the replay reader's limit.
pub const MAX_BLOCK_BYTES: usize = rocescope_replay::capture::MAX_PCAPNG_BLOCK_BYTES as usize;

/// The agent writes little-endian sections only.
const BIG_ENDIAN: bool = false;

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
            let ty = u32_at(buf, at, BIG_ENDIAN);
            let len = u32_at(buf, at + 4, BIG_ENDIAN) as usize;
            if !self.started {
                if ty != SHB_TYPE || u32_at(buf, at + 8, BIG_ENDIAN) != BOM {
                    return Err(self.bad("not a little-endian pcapng stream"));
                }
                self.started = true;
            }
            if len < 12 || !len.is_multiple_of(4) || len > MAX_BLOCK_BYTES {
                return Err(self.bad(&format!("block length {len}")));
            }
            if buf.len() - at < len {
                self.need = len;
                break;
            }
            let block = &buf[at..at + len];
            if u32_at(block, len - 4, BIG_ENDIAN) as usize != len {
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
                let interface = u32_at(b, 8, BIG_ENDIAN);
                let units = (u64::from(u32_at(b, 12, BIG_ENDIAN)) << 32)
                    | u64::from(u32_at(b, 16, BIG_ENDIAN));
                let caplen = u32_at(b, 20, BIG_ENDIAN) as usize;
                let orig_len = u32_at(b, 24, BIG_ENDIAN);
                let Some(data) = b.get(28..28 + caplen).filter(|_| caplen <= len - 32) else {
                    return Err(self.bad(&format!("EPB caplen {caplen} in a {len}-byte block")));
                };
                let Some(iface) = self.interfaces.get(interface as usize).copied() else {
                    return Err(self.bad(&format!("EPB on undeclared interface {interface}")));
                };
                let mut direction = iface.direction;
                let opts_at = 28 + caplen.div_ceil(4) * 4;
                if opts_at < len - 4 {
                    // An option that overruns ends the walk, as in the replay reader.
                    let _ = for_each_option(&b[opts_at..len - 4], BIG_ENDIAN, |code, v| {
                        if code == EPB_FLAGS && v.len() == 4 {
                            match u32_at(v, 0, BIG_ENDIAN) & 3 {
                                EPB_FLAG_INBOUND => direction = Some(Direction::Rx),
                                EPB_FLAG_OUTBOUND => direction = Some(Direction::Tx),
                                _ => {}
                            }
                        }
                    });
                }
                out(Parsed::Frame {
                    ts_ns: timestamp_ns(units, iface.tsresol, iface.tsoffset_s)
                        .unwrap_or_else(|clamped| clamped),
                    port: iface.port,
                    direction,
                    orig_len,
                    data,
                });
            }
            SHB_TYPE => {
                if u32_at(b, 8, BIG_ENDIAN) != BOM || u16_at(b, 12, BIG_ENDIAN) != 1 {
                    return Err(self.bad("section header is not little-endian pcapng 1.x"));
                }
                self.interfaces.clear();
            }
            IDB_TYPE => {
                if len < 20 {
                    return Err(self.bad("IDB shorter than 20 bytes"));
                }
                let mut iface = Interface {
                    tsresol: DEFAULT_TSRESOL,
                    tsoffset_s: 0,
                    // As the replay reader: without rocescope's option, the
                    // interface id is the port.
                    port: u8::try_from(self.interfaces.len()).unwrap_or(u8::MAX),
                    direction: None,
                };
                let (mut resol, mut offset) = (None, None);
                // An option that overruns ends the walk, as in the replay reader.
                let _ = for_each_option(&b[16..len - 4], BIG_ENDIAN, |code, v| match (code, v) {
                    (IF_TSRESOL, &[r]) if resol.is_none() => resol = Some(r),
                    (IF_TSOFFSET, _) if v.len() == 8 && offset.is_none() => {
                        offset = Some(i64_at(v, 0, BIG_ENDIAN));
                    }
                    (OPT_CUSTOM_BINARY, &[_, _, _, _, CUSTOM_OPT_INTERFACE, port, dir, ..])
                        if u32_at(v, 0, BIG_ENDIAN) == ROCESCOPE_PEN =>
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
                iface.tsresol = resol.unwrap_or(DEFAULT_TSRESOL);
                iface.tsoffset_s = offset.unwrap_or(0);
                self.interfaces.push(iface);
            }
            LINK_BLOCK_TYPE | CUSTOM_BLOCK_TYPE => {
                if let Some(text) = decode_link_block(b) {
                    out(Parsed::Message(text));
                } else if len >= 16 && u32_at(b, 8, BIG_ENDIAN) == ROCESCOPE_PEN {
                    // Records this build cannot read are skipped, as the
                    // replay reader skips them.
                    if let Ok(r) = Record::decode_payload(&b[12..len - 4]) {
                        out(Parsed::Record(r));
                    }
                }
            }
            ISB_TYPE if len >= 24 => {
                let interface = u32_at(b, 8, BIG_ENDIAN);
                let Some(iface) = self.interfaces.get(interface as usize).copied() else {
                    return Ok(());
                };
                let units = (u64::from(u32_at(b, 12, BIG_ENDIAN)) << 32)
                    | u64::from(u32_at(b, 16, BIG_ENDIAN));
                let (mut ifdrop, mut osdrop, mut reason) = (None, None, None);
                // An option that overruns ends the walk, as in the replay reader.
                let _ = for_each_option(&b[20..len - 4], BIG_ENDIAN, |code, v| match (code, v) {
                    (ISB_IFDROP, _) if v.len() == 8 => ifdrop = Some(u64_at(v, 0, BIG_ENDIAN)),
                    (ISB_OSDROP, _) if v.len() == 8 => osdrop = Some(u64_at(v, 0, BIG_ENDIAN)),
                    (OPT_CUSTOM_BINARY, &[_, _, _, _, CUSTOM_OPT_DROP_REASON, c, ..])
                        if u32_at(v, 0, BIG_ENDIAN) == ROCESCOPE_PEN =>
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
                    ts_ns: timestamp_ns(units, iface.tsresol, iface.tsoffset_s)
                        .unwrap_or_else(|clamped| clamped),
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
