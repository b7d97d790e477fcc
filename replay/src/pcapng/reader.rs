//! pcapng: a sequence of blocks `type | length | body | length`, grouped in
//! sections (each with its own byte order) that declare interfaces (each with
//! its own link type, snap length and timestamp resolution).

use std::io::Read;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{PcapBlockOwned, PcapNGReader};

use super::writer::{
    CUSTOM_BLOCK_NOCOPY_TYPE, CUSTOM_BLOCK_TYPE, CUSTOM_OPT_DROP_REASON, CUSTOM_OPT_INTERFACE,
    EPB_FLAG_INBOUND, EPB_FLAG_OUTBOUND, EPB_FLAGS, ISB_IFDROP, ISB_OSDROP, ISB_TYPE,
    OPT_CUSTOM_BINARY, direction_from,
};
use crate::capture::input::{Input, Source, Start, describe, rd_u16, rd_u32};
use crate::capture::{
    CaptureError, CaptureFrame, CaptureItem, LinkType, MAX_PCAPNG_BLOCK_BYTES, Shared,
};
use crate::record::{
    Direction, DropCount, DropReason, ROCESCOPE_PEN, Record, RecordError, drop_reason_from,
};

/// Section Header Block type; a palindrome, so readable in either order.
pub(crate) const SHB_TYPE: u32 = 0x0a0d_0d0a;
const IDB_TYPE: u32 = 1;
/// The obsolete Packet Block, still found in old files.
const PB_TYPE: u32 = 2;
const SPB_TYPE: u32 = 3;
const EPB_TYPE: u32 = 6;
/// Byte-order magic of a section, as read in the section's own order.
const BOM: u32 = 0x1a2b_3c4d;
/// Type, length and trailing length.
const BLOCK_FRAMING_BYTES: usize = 12;
/// Offset of the packet data in an EPB or PB.
const EPB_DATA_OFFSET: usize = 28;
/// Offset of the packet data in an SPB.
const SPB_DATA_OFFSET: usize = 12;
/// `if_tsresol` when the option is absent: microseconds.
const DEFAULT_TSRESOL: u8 = 6;

/// What an Interface Description Block declares, as needed per packet.
#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: LinkType,
    /// 0 means unlimited.
    snaplen: u32,
    tsresol: u8,
    tsoffset_s: i64,
    /// From rocescope's custom option: the card port and direction.
    port: Option<u8>,
    direction: Option<Direction>,
}

/// Reading state of a pcapng file.
pub(crate) struct NgState<R: Read> {
    input: Input<PcapNGReader<Source<R>>>,
    big_endian: bool,
    interfaces: Vec<Interface>,
    /// Timestamp of the previous frame, used for SPBs which carry none.
    last_ts_ns: u64,
}

impl<R: Read> NgState<R> {
    /// Checks and loads the first Section Header Block; `start.prefix` holds
    /// the bytes read so far (at least the 4-byte block type). The SHB itself
    /// is then read as the first block by [`next`](Self::next).
    pub(crate) fn open(mut start: Start<R>) -> Result<Self, CaptureError> {
        let have = start.prefix.len();
        if have < BLOCK_FRAMING_BYTES {
            return Err(CaptureError::Truncated {
                what: "pcapng section header block",
                offset: 0,
                need: 28,
                have: have as u64,
            });
        }
        let big_endian = section_byte_order(&start.prefix, 0)?;
        let len = rd_u32(&start.prefix, 4, big_endian);
        check_length(0, SHB_TYPE, len)?;
        if len > MAX_PCAPNG_BLOCK_BYTES {
            return Err(CaptureError::BlockTooLarge {
                offset: 0,
                len,
                limit: MAX_PCAPNG_BLOCK_BYTES,
            });
        }
        // pcap-parser wants the whole SHB in its first read; read it into the
        // prefix. `take` + `read_to_end` grows the Vec only as data arrives.
        let want = (len as usize).saturating_sub(have) as u64;
        let io = start
            .reader
            .by_ref()
            .take(want)
            .read_to_end(&mut start.prefix);
        if let Err(source) = io {
            return Err(CaptureError::Io {
                name: start.name,
                offset: start.prefix.len() as u64,
                source,
            });
        }
        if start.prefix.len() < len as usize {
            return Err(CaptureError::Truncated {
                what: "pcapng section header block",
                offset: 0,
                need: u64::from(len),
                have: start.prefix.len() as u64,
            });
        }
        start.buffer_bytes = start.buffer_bytes.max(len as usize);
        let (source, name, slot, buffer_bytes) = start.into_source();
        let rd = PcapNGReader::new(buffer_bytes, source).map_err(|e| CaptureError::Malformed {
            what: "pcapng SHB",
            offset: 0,
            detail: describe(&e),
        })?;
        Ok(Self {
            input: Input::new(rd, buffer_bytes, name, slot),
            big_endian,
            interfaces: Vec::new(),
            last_ts_ns: 0,
        })
    }

    pub(crate) fn bytes_read(&self) -> u64 {
        self.input.bytes_read()
    }

    /// Reads blocks until a packet block, which it returns as a frame.
    #[inline]
    pub(crate) fn next(
        &mut self,
        shared: &mut Shared,
    ) -> Result<Option<CaptureFrame<'_>>, CaptureError> {
        match self.next_item(shared, false)? {
            Some(CaptureItem::Frame(frame)) => Ok(Some(frame)),
            // Without `records`, `next_item` returns frames only.
            Some(CaptureItem::Record(_)) | None => Ok(None),
        }
    }

    /// Reads blocks until a packet block, or, with `records`, a rocescope
    /// custom block or an ISB with a drop count.
    pub(crate) fn next_item(
        &mut self,
        shared: &mut Shared,
        records: bool,
    ) -> Result<Option<CaptureItem<'_>>, CaptureError> {
        loop {
            self.input.settle();
            let off = self.input.pos;
            shared.at = off;
            // Fast path: the whole block is already buffered (one `data()`).
            let buffered = framing(self.input.data(), self.big_endian, off)?;
            let block = match buffered {
                Some(block) => block,
                None => match self.load_block(off, shared)? {
                    Some(block) => block,
                    None => return Ok(None),
                },
            };
            match block.block_type {
                SHB_TYPE => self.section(off, &block)?,
                IDB_TYPE => self.interface(off, &block, shared)?,
                EPB_TYPE | PB_TYPE => {
                    return self
                        .packet(off, &block, shared)
                        .map(|f| Some(CaptureItem::Frame(f)));
                }
                SPB_TYPE => {
                    return self
                        .simple_packet(off, &block, shared)
                        .map(|f| Some(CaptureItem::Frame(f)));
                }
                CUSTOM_BLOCK_TYPE | CUSTOM_BLOCK_NOCOPY_TYPE | ISB_TYPE if records => {
                    let record = if block.block_type == ISB_TYPE {
                        self.statistics(off, &block, shared)
                    } else {
                        self.custom(off, &block, shared)
                    };
                    self.input.pending = block.len as usize;
                    if let Some(record) = record {
                        return Ok(Some(CaptureItem::Record(record)));
                    }
                    continue;
                }
                // Comments, name resolution, foreign custom blocks...:
                // nothing a frame needs.
                _ => {}
            }
            self.input.pending = block.len as usize;
        }
    }

    /// Slow path of [`next`](Self::next): refills until the block at `off`
    /// is buffered. `None` when the input ends first (a cut is warned about).
    fn load_block(
        &mut self,
        off: u64,
        shared: &mut Shared,
    ) -> Result<Option<Framed>, CaptureError> {
        if !self.input.fill_to(BLOCK_FRAMING_BYTES)? {
            self.cut_in_header(off, shared)?;
            return Ok(None);
        }
        let d = self.input.data();
        let be = if rd_u32(d, 0, false) == SHB_TYPE {
            section_byte_order(d, off)?
        } else {
            self.big_endian
        };
        let block_type = rd_u32(d, 0, be);
        let len = rd_u32(d, 4, be);
        check_length(off, block_type, len)?;
        if len > MAX_PCAPNG_BLOCK_BYTES {
            self.oversized(off, len, shared)?;
            return Ok(None);
        }
        if !self.input.fill_to(len as usize)? {
            let have = self.input.data().len();
            shared.warn(
                off,
                format!(
                    "file cut mid-block: the pcapng {} at byte {off} needs {len} bytes but the \
                     file ends after {have}",
                    block_name(block_type)
                ),
            );
            return Ok(None);
        }
        framing(self.input.data(), self.big_endian, off)
    }

    /// The input ends inside a block's 12 framing bytes: a cut, unless the
    /// length that is there is already impossible.
    fn cut_in_header(&mut self, off: u64, shared: &mut Shared) -> Result<(), CaptureError> {
        let d = self.input.data();
        let have = d.len();
        if have == 0 {
            return Ok(());
        }
        if have >= 8 && rd_u32(d, 0, false) != SHB_TYPE {
            let be = self.big_endian;
            check_length(off, rd_u32(d, 0, be), rd_u32(d, 4, be))?;
        }
        shared.warn(
            off,
            format!(
                "file cut mid-block: the pcapng block at byte {off} has only {have} of its \
                 {BLOCK_FRAMING_BYTES} framing bytes"
            ),
        );
        Ok(())
    }

    /// Same policy as for pcap records: over the limit is an error, unless
    /// the file ends within the limit anyway (a corrupt tail): then a warning.
    fn oversized(&mut self, off: u64, len: u32, shared: &mut Shared) -> Result<(), CaptureError> {
        if self.input.fill_to(MAX_PCAPNG_BLOCK_BYTES as usize)? {
            return Err(CaptureError::BlockTooLarge {
                offset: off,
                len,
                limit: MAX_PCAPNG_BLOCK_BYTES,
            });
        }
        let rest = self.input.data().len();
        shared.warn(
            off,
            format!(
                "pcapng block at byte {off}: block length {len} exceeds the \
                 {MAX_PCAPNG_BLOCK_BYTES}-byte limit and the file ends {rest} bytes later; \
                 treating it as a cut or corrupt tail"
            ),
        );
        Ok(())
    }

    /// A new section: new byte order, and its interfaces start again at 0.
    fn section(&mut self, off: u64, block: &Framed) -> Result<(), CaptureError> {
        let (be, len) = (block.big_endian, block.len as usize);
        let major = rd_u16(&block.head, 12, be);
        let minor = rd_u16(&block.head, 14, be);
        if major != 1 {
            return Err(CaptureError::Unsupported {
                offset: off,
                what: format!("pcapng section version {major}.{minor} (only 1.x exists)"),
            });
        }
        match self.input.rd.next() {
            Ok((n, PcapBlockOwned::NG(Block::SectionHeader(shb))))
                if n == len && shb.big_endian() == be => {}
            Ok(_) => {
                return Err(malformed(
                    "pcapng SHB",
                    off,
                    "pcap-parser read it differently",
                ));
            }
            Err(e) => return Err(malformed("pcapng SHB", off, &describe(&e))),
        }
        self.big_endian = be;
        self.interfaces.clear();
        Ok(())
    }

    /// An interface: link type, snap length, and the `if_tsresol` /
    /// `if_tsoffset` options that every packet's timestamp depends on.
    fn interface(
        &mut self,
        off: u64,
        block: &Framed,
        shared: &mut Shared,
    ) -> Result<(), CaptureError> {
        let (be, len) = (block.big_endian, block.len as usize);
        let mut bad_option = None;
        let iface = match self.input.rd.next() {
            Ok((n, PcapBlockOwned::NG(Block::InterfaceDescription(idb)))) if n == len => {
                let mut tsresol = None;
                let mut tsoffset_s = None;
                let mut ours = None;
                for opt in &idb.options {
                    let value = opt.value();
                    match opt.code.0 {
                        0 => break,
                        9 if tsresol.is_none() => match value.first() {
                            Some(&v) if opt.len == 1 => tsresol = Some(v),
                            _ => bad_option = Some("if_tsresol"),
                        },
                        14 if tsoffset_s.is_none() => match value.first_chunk::<8>() {
                            Some(&b) if opt.len == 8 => {
                                tsoffset_s = Some(if be {
                                    i64::from_be_bytes(b)
                                } else {
                                    i64::from_le_bytes(b)
                                });
                            }
                            _ => bad_option = Some("if_tsoffset"),
                        },
                        OPT_CUSTOM_BINARY => match opt.as_bytes() {
                            Ok(&[p0, p1, p2, p3, CUSTOM_OPT_INTERFACE, port, dir, ..])
                                if rd_u32(&[p0, p1, p2, p3], 0, be) == ROCESCOPE_PEN =>
                            {
                                ours = Some((port, direction_from(dir)));
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
                Interface {
                    // pcap-parser widened the 16-bit field to i32.
                    linktype: LinkType((idb.linktype.0 & 0xffff) as u32),
                    snaplen: idb.snaplen,
                    tsresol: tsresol.unwrap_or(DEFAULT_TSRESOL),
                    tsoffset_s: tsoffset_s.unwrap_or(0),
                    port: ours.map(|(port, _)| port),
                    direction: ours.and_then(|(_, dir)| dir),
                }
            }
            Ok(_) => {
                return Err(malformed(
                    "pcapng IDB",
                    off,
                    "pcap-parser read it differently",
                ));
            }
            Err(e) => return Err(malformed("pcapng IDB", off, &describe(&e))),
        };
        if let Some(name) = bad_option {
            shared.warn(
                off,
                format!("pcapng IDB at byte {off}: option {name} has a wrong length; ignored"),
            );
        }
        self.interfaces.push(iface);
        Ok(())
    }

    /// An Enhanced Packet Block (or the obsolete Packet Block, same layout
    /// but a 16-bit interface id followed by a drop count).
    fn packet(
        &mut self,
        off: u64,
        block: &Framed,
        shared: &mut Shared,
    ) -> Result<CaptureFrame<'_>, CaptureError> {
        let (be, len, h) = (block.big_endian, block.len, &block.head);
        let is_pb = block.block_type == PB_TYPE;
        let (name, interface) = if is_pb {
            ("PB", u32::from(rd_u16(h, 8, be)))
        } else {
            ("EPB", rd_u32(h, 8, be))
        };
        let units = (u64::from(rd_u32(h, 12, be)) << 32) | u64::from(rd_u32(h, 16, be));
        let caplen = rd_u32(h, 20, be);
        let origlen = rd_u32(h, 24, be);
        if caplen > len - 32 {
            return Err(CaptureError::Malformed {
                what: if is_pb { "pcapng PB" } else { "pcapng EPB" },
                offset: off,
                detail: format!("caplen {caplen} does not fit in its block of {len} bytes"),
            });
        }
        let Some(&iface) = self.interfaces.get(interface as usize) else {
            return Err(CaptureError::UnknownInterface {
                block: name,
                offset: off,
                interface,
                declared: self.interfaces.len(),
            });
        };
        let ts_ns = match timestamp_ns(units, iface.tsresol, iface.tsoffset_s) {
            Ok(ts) => ts,
            Err(clamped) => {
                shared.warn(
                    off,
                    format!(
                        "pcapng {name} at byte {off}: timestamp does not fit in u64 nanoseconds \
                         since 1970; clamped"
                    ),
                );
                clamped
            }
        };
        let mut direction = iface.direction;
        let opts_at = EPB_DATA_OFFSET + (caplen as usize).div_ceil(4) * 4;
        if !is_pb && opts_at < len as usize - 4 {
            let opts = self.input.data().get(opts_at..len as usize - 4);
            let walked = for_each_option(opts.unwrap_or_default(), be, |code, value| {
                if code == EPB_FLAGS && value.len() == 4 {
                    match rd_u32(value, 0, be) & 3 {
                        EPB_FLAG_INBOUND => direction = Some(Direction::Rx),
                        EPB_FLAG_OUTBOUND => direction = Some(Direction::Tx),
                        _ => {}
                    }
                }
            });
            if let Err(at) = walked {
                let at = off + (opts_at + at) as u64;
                shared.warn(
                    off,
                    format!(
                        "pcapng EPB at byte {off}: the option at byte {at} overruns the block; \
                         options from there on ignored"
                    ),
                );
            }
        }
        let frame = FrameMeta {
            data_offset: EPB_DATA_OFFSET,
            caplen,
            origlen,
            interface,
            ts_ns,
            direction,
        };
        self.lend(off, &frame, iface, len, shared)
    }

    /// A Simple Packet Block: interface 0, no timestamp (the previous frame's
    /// is reused), and a caplen that must be derived from the block length,
    /// the original length and the snap length.
    fn simple_packet(
        &mut self,
        off: u64,
        block: &Framed,
        shared: &mut Shared,
    ) -> Result<CaptureFrame<'_>, CaptureError> {
        let len = block.len;
        let Some(&iface) = self.interfaces.first() else {
            return Err(CaptureError::UnknownInterface {
                block: "SPB",
                offset: off,
                interface: 0,
                declared: 0,
            });
        };
        let origlen = rd_u32(&block.head, 8, block.big_endian);
        let mut caplen = origlen.min(len - 16);
        if iface.snaplen != 0 {
            caplen = caplen.min(iface.snaplen);
        }
        let frame = FrameMeta {
            data_offset: SPB_DATA_OFFSET,
            caplen,
            origlen,
            interface: 0,
            ts_ns: self.last_ts_ns,
            direction: iface.direction,
        };
        self.lend(off, &frame, iface, len, shared)
    }

    /// Hands out the frame; its block is consumed on the next call.
    fn lend(
        &mut self,
        off: u64,
        frame: &FrameMeta,
        iface: Interface,
        len: u32,
        shared: &mut Shared,
    ) -> Result<CaptureFrame<'_>, CaptureError> {
        let index = shared.next_index;
        shared.next_index += 1;
        self.last_ts_ns = frame.ts_ns;
        self.input.pending = len as usize;
        let end = frame.data_offset + frame.caplen as usize;
        // The caller checked caplen against the block length; `get` keeps a
        // slip there from ever becoming a panic.
        let Some(data) = self.input.data().get(frame.data_offset..end) else {
            return Err(malformed(
                "pcapng packet block",
                off,
                "data beyond its block",
            ));
        };
        Ok(CaptureFrame {
            index,
            ts_ns: frame.ts_ns,
            caplen: frame.caplen,
            origlen: frame.origlen,
            linktype: iface.linktype,
            interface: frame.interface,
            file_offset: off + frame.data_offset as u64,
            port: iface.port,
            direction: frame.direction,
            data,
        })
    }

    /// A custom block: a [`Record`] if it carries rocescope's enterprise
    /// number and a payload this build reads; otherwise skipped (rocescope
    /// payloads that cannot be read are counted, damaged ones warned about).
    fn custom(&self, off: u64, block: &Framed, shared: &mut Shared) -> Option<Record> {
        let (be, len) = (block.big_endian, block.len as usize);
        // Shorter blocks carry no enterprise number: nobody's we know.
        if len < CUSTOM_PAYLOAD_OFFSET + 4 || rd_u32(&block.head, 8, be) != ROCESCOPE_PEN {
            return None;
        }
        let payload = self
            .input
            .data()
            .get(CUSTOM_PAYLOAD_OFFSET..len - 4)
            .unwrap_or_default();
        match Record::decode_payload(payload) {
            Ok(record) => Some(record),
            Err(RecordError::UnknownType { .. }) => {
                shared.skipped.unknown_type += 1;
                None
            }
            Err(RecordError::NewerVersion { .. }) => {
                shared.skipped.newer_version += 1;
                None
            }
            Err(e) => {
                shared.skipped.malformed += 1;
                let at = off + CUSTOM_PAYLOAD_OFFSET as u64;
                shared.warn(
                    off,
                    format!(
                        "rocescope custom block at byte {off} (payload at byte {at}): {e}; \
                         skipped"
                    ),
                );
                None
            }
        }
    }

    /// An Interface Statistics Block: a [`Record::Drops`] with its
    /// `isb_ifdrop` count (else `isb_osdrop`), `None` if it has neither.
    /// The reason comes from rocescope's custom option, else from which
    /// count it is (interface drops: capture loss; OS drops: queue full).
    fn statistics(&self, off: u64, block: &Framed, shared: &mut Shared) -> Option<Record> {
        let (be, len, h) = (block.big_endian, block.len as usize, &block.head);
        if len < ISB_OPTIONS_OFFSET + 4 {
            shared.skipped.malformed += 1;
            shared.warn(
                off,
                format!(
                    "pcapng ISB at byte {off}: block length {len} is shorter than the \
                     {} bytes an ISB needs; skipped",
                    ISB_OPTIONS_OFFSET + 4
                ),
            );
            return None;
        }
        let interface = rd_u32(h, 8, be);
        let Some(iface) = self.interfaces.get(interface as usize) else {
            shared.skipped.malformed += 1;
            shared.warn(
                off,
                format!(
                    "pcapng ISB at byte {off} refers to interface {interface} but only {} \
                     declared; skipped",
                    self.interfaces.len()
                ),
            );
            return None;
        };
        let units = (u64::from(rd_u32(h, 12, be)) << 32) | u64::from(rd_u32(h, 16, be));
        let (mut ifdrop, mut osdrop, mut reason) = (None, None, None);
        let opts = self
            .input
            .data()
            .get(ISB_OPTIONS_OFFSET..len - 4)
            .unwrap_or_default();
        let walked = for_each_option(opts, be, |code, value| match (code, value) {
            (ISB_IFDROP, &[..]) if value.len() == 8 => ifdrop = Some(rd_u64(value, be)),
            (ISB_OSDROP, &[..]) if value.len() == 8 => osdrop = Some(rd_u64(value, be)),
            (OPT_CUSTOM_BINARY, &[p0, p1, p2, p3, CUSTOM_OPT_DROP_REASON, code, ..])
                if rd_u32(&[p0, p1, p2, p3], 0, be) == ROCESCOPE_PEN =>
            {
                reason = Some(drop_reason_from(code).unwrap_or(DropReason::Other));
            }
            _ => {}
        });
        if let Err(at) = walked {
            let at = off + (ISB_OPTIONS_OFFSET + at) as u64;
            shared.warn(
                off,
                format!(
                    "pcapng ISB at byte {off}: the option at byte {at} overruns the block; \
                     options from there on ignored"
                ),
            );
        }
        let (dropped, default_reason) = match (ifdrop, osdrop) {
            (Some(n), _) => (n, DropReason::CaptureLoss),
            (None, Some(n)) => (n, DropReason::QueueFull),
            (None, None) => return None,
        };
        let ts_ns = timestamp_ns(units, iface.tsresol, iface.tsoffset_s).unwrap_or_else(|c| c);
        Some(Record::Drops(DropCount {
            ts_ns,
            interface,
            dropped,
            reason: reason.unwrap_or(default_reason),
        }))
    }
}

/// Offset of the payload (after the enterprise number) in a custom block.
const CUSTOM_PAYLOAD_OFFSET: usize = 12;
/// Offset of the options in an ISB.
const ISB_OPTIONS_OFFSET: usize = 20;

/// Calls `f(code, value)` for each option in `opts` (in the section's byte
/// order) up to `opt_endofopt` or the end. `Err` holds the offset in `opts`
/// of an option whose value overruns it.
fn for_each_option(opts: &[u8], be: bool, mut f: impl FnMut(u16, &[u8])) -> Result<(), usize> {
    let mut at = 0;
    while at + 4 <= opts.len() {
        let code = rd_u16(opts, at, be);
        if code == 0 {
            return Ok(());
        }
        let len = usize::from(rd_u16(opts, at + 2, be));
        let Some(value) = opts.get(at + 4..at + 4 + len) else {
            return Err(at);
        };
        f(code, value);
        at += 4 + len.div_ceil(4) * 4;
    }
    Ok(())
}

/// Reads a `u64` in the section's byte order; 0 if `b` is not 8 bytes.
fn rd_u64(b: &[u8], big_endian: bool) -> u64 {
    let w = b.first_chunk::<8>().copied().unwrap_or_default();
    if big_endian {
        u64::from_be_bytes(w)
    } else {
        u64::from_le_bytes(w)
    }
}

/// A block whose framing has been checked and which is wholly buffered.
#[derive(Debug, Clone, Copy)]
struct Framed {
    block_type: u32,
    len: u32,
    big_endian: bool,
    /// The first bytes of the block (zero-padded past its end), enough for
    /// every fixed header this reader decodes.
    head: [u8; HEAD_BYTES],
}

/// Bytes of [`Framed::head`]: the EPB header is the longest at 28.
const HEAD_BYTES: usize = 28;

/// A packet's fields, ready to be lent out with its bytes.
#[derive(Debug, Clone, Copy)]
struct FrameMeta {
    data_offset: usize,
    caplen: u32,
    origlen: u32,
    interface: u32,
    ts_ns: u64,
    direction: Option<Direction>,
}

/// Checks the framing of the block at the start of `d`: `Some` if it is
/// valid and wholly in `d`, `None` if more data is needed (or the length
/// is over the limit, which the slow path handles), an error if it cannot
/// be right.
#[inline]
fn framing(d: &[u8], section_be: bool, off: u64) -> Result<Option<Framed>, CaptureError> {
    let Some(first) = d.first_chunk::<BLOCK_FRAMING_BYTES>() else {
        return Ok(None);
    };
    let be = if rd_u32(first, 0, false) == SHB_TYPE {
        section_byte_order(first, off)?
    } else {
        section_be
    };
    let block_type = rd_u32(first, 0, be);
    let len = rd_u32(first, 4, be);
    check_length(off, block_type, len)?;
    let len_usize = len as usize;
    if len > MAX_PCAPNG_BLOCK_BYTES || d.len() < len_usize {
        return Ok(None);
    }
    let trailer = rd_u32(d, len_usize - 4, be);
    if trailer != len {
        return Err(CaptureError::BlockLengthMismatch {
            offset: off,
            len,
            trailer,
        });
    }
    let mut head = [0u8; HEAD_BYTES];
    let n = len_usize.min(HEAD_BYTES);
    head[..n].copy_from_slice(&d[..n]);
    Ok(Some(Framed {
        block_type,
        len,
        big_endian: be,
        head,
    }))
}

/// Byte order of the section whose header starts at `b[0]` (12 bytes).
fn section_byte_order(b: &[u8], offset: u64) -> Result<bool, CaptureError> {
    match rd_u32(b, 8, false) {
        BOM => Ok(false),
        m if m == BOM.swap_bytes() => Ok(true),
        _ => Err(CaptureError::ByteOrder {
            offset,
            bom: rd_u32(b, 8, true),
        }),
    }
}

/// Rejects lengths no block can have. The upper limit is checked by the
/// caller, which decides between error and cut-tail warning.
#[inline]
fn check_length(offset: u64, block_type: u32, len: u32) -> Result<(), CaptureError> {
    let min = match block_type {
        SHB_TYPE => 28,
        IDB_TYPE => 20,
        EPB_TYPE | PB_TYPE => 32,
        SPB_TYPE => 16,
        _ => 12,
    };
    let reason = if len < min {
        format!(
            "a pcapng {} needs at least {min} bytes",
            block_name(block_type)
        )
    } else if len % 4 != 0 && len <= MAX_PCAPNG_BLOCK_BYTES {
        "not a multiple of 4".to_owned()
    } else {
        return Ok(());
    };
    Err(CaptureError::BlockLength {
        offset,
        len,
        reason,
    })
}

fn block_name(block_type: u32) -> &'static str {
    match block_type {
        SHB_TYPE => "SHB",
        IDB_TYPE => "IDB",
        PB_TYPE => "PB",
        SPB_TYPE => "SPB",
        EPB_TYPE => "EPB",
        4 => "NRB",
        5 => "ISB",
        0x0000_0bad | 0x4000_0bad => "custom block",
        _ => "block",
    }
}

fn malformed(what: &'static str, offset: u64, detail: &str) -> CaptureError {
    CaptureError::Malformed {
        what,
        offset,
        detail: detail.to_owned(),
    }
}

/// Converts a pcapng timestamp to ns since 1970 with integer math only.
///
/// `units` counts `10^-n` s (`tsresol` high bit clear) or `2^-n` s (high bit
/// set); resolutions finer than 1 ns are truncated. `tsoffset_s` seconds are
/// added. `Err` carries the value clamped to `0..=u64::MAX` when the result
/// does not fit.
#[inline]
pub(crate) fn timestamp_ns(units: u64, tsresol: u8, tsoffset_s: i64) -> Result<u64, u64> {
    // Fast path for the usual µs / ns interfaces without offset.
    if tsresol <= 9 && tsoffset_s == 0 {
        if let Some(ns) = units.checked_mul(10u64.pow(9 - u32::from(tsresol))) {
            return Ok(ns);
        }
    }
    let n = u32::from(tsresol & 0x7f);
    let ns: u128 = if tsresol & 0x80 != 0 {
        // units < 2^64, 1e9 < 2^30: the product fits in u128; n <= 127.
        (u128::from(units) * 1_000_000_000) >> n
    } else if n <= 9 {
        u128::from(units) * 10u128.pow(9 - n)
    } else if n - 9 <= 38 {
        u128::from(units) / 10u128.pow(n - 9)
    } else {
        0
    };
    // |tsoffset_s| * 1e9 < 9.3e27 and ns < 2^94: fits in i128.
    let total = ns as i128 + i128::from(tsoffset_s) * 1_000_000_000;
    u64::try_from(total).map_err(|_| if total < 0 { 0 } else { u64::MAX })
}

#[cfg(test)]
mod tests {
    use super::timestamp_ns;

    #[test]
    fn decimal_resolutions() {
        assert_eq!(timestamp_ns(1_500_000, 6, 0), Ok(1_500_000_000));
        assert_eq!(timestamp_ns(1_500, 3, 0), Ok(1_500_000_000));
        assert_eq!(timestamp_ns(7, 0, 0), Ok(7_000_000_000));
        assert_eq!(timestamp_ns(123_456_789, 9, 0), Ok(123_456_789));
        // Picoseconds: truncated to ns.
        assert_eq!(timestamp_ns(1_234_567, 12, 0), Ok(1_234));
        assert_eq!(timestamp_ns(u64::MAX, 19, 0), Ok(1_844_674_407));
        assert_eq!(timestamp_ns(u64::MAX, 60, 0), Ok(0));
    }

    #[test]
    fn binary_resolutions() {
        // 2^-20 s units: 5.5 s.
        assert_eq!(
            timestamp_ns(5 << 20 | 1 << 19, 0x80 | 20, 0),
            Ok(5_500_000_000)
        );
        // 2^-30: 1 unit is 0.93 ns, truncated.
        assert_eq!(timestamp_ns(1, 0x80 | 30, 0), Ok(0));
        assert_eq!(timestamp_ns(1 << 30, 0x80 | 30, 0), Ok(1_000_000_000));
        assert_eq!(timestamp_ns(u64::MAX, 0x80 | 127, 0), Ok(0));
        assert_eq!(timestamp_ns(3, 0x80, 0), Ok(3_000_000_000));
    }

    #[test]
    fn offsets_and_clamping() {
        assert_eq!(timestamp_ns(1_000, 6, 100), Ok(100_001_000_000));
        assert_eq!(timestamp_ns(1_000_000, 6, -1), Ok(0));
        assert_eq!(timestamp_ns(0, 6, -1), Err(0));
        assert_eq!(timestamp_ns(u64::MAX, 0, 0), Err(u64::MAX));
        assert_eq!(timestamp_ns(0, 6, i64::MAX), Err(u64::MAX));
    }
}
