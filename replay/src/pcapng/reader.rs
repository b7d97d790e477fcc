//! pcapng: a sequence of blocks `type | length | body | length`, grouped in
//! sections (each with its own byte order) that declare interfaces (each with
//! its own link type, snap length and timestamp resolution).

use std::io::Read;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{PcapBlockOwned, PcapError, PcapNGReader};

use super::block::{Framed, block_name, check_length, framing, section_byte_order};
use super::consts::*;
use super::options::for_each_option;
use super::timestamp::{ns_per_unit, timestamp_ns};
use super::writer::direction_from;
use crate::capture::input::{Input, Source, Start, describe};
use crate::capture::{
    CaptureError, CaptureFrame, CaptureItem, LinkType, MAX_PCAPNG_BLOCK_BYTES, Shared,
};
use crate::endian::{i64_at, u16_at, u32_at, u64_at};
use crate::record::{
    Direction, DropCount, DropReason, ROCESCOPE_PEN, Record, RecordError, drop_reason_from,
};

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
    /// `timestamp_ns`'s fast-path factor, once per interface: the buffered
    /// run's timestamp is then one multiply.
    ns_per_unit: Option<u64>,
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
        let len = u32_at(&start.prefix, 4, big_endian);
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

    /// Hands `f` up to `max` frames of Enhanced Packet Blocks that are
    /// already whole in the buffer, in one loop; returns how many. The run
    /// stops before any other block, and before any EPB that would fail or
    /// warn: [`next_item`](Self::next_item) then takes it, so the frames,
    /// records, errors and warnings are those of one-at-a-time reading.
    #[inline]
    pub(crate) fn for_each_buffered<F: crate::capture::FrameSink>(
        &mut self,
        shared: &mut Shared,
        max: usize,
        f: &mut F,
    ) -> usize {
        // The section's byte order as a constant: each field read is then
        // one load (and a swap), not a branch.
        if self.big_endian {
            self.buffered_run::<true, F>(shared, max, f)
        } else {
            self.buffered_run::<false, F>(shared, max, f)
        }
    }

    #[inline(always)]
    fn buffered_run<const BE: bool, F: crate::capture::FrameSink>(
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
        // The run's position, index and last time in locals, written back
        // once after the loop (nothing in it reads them back).
        let first_index = shared.next_index;
        let mut last = None;
        while n < max {
            let Some(rest) = d.get(at..) else { break };
            let Some((frame, iface, len)) = buffered_epb::<BE>(rest, &self.interfaces) else {
                break;
            };
            let Some(data) = rest.get(EPB_DATA_OFFSET..EPB_DATA_OFFSET + frame.caplen as usize)
            else {
                break;
            };
            let off = base + at as u64;
            let index = first_index + n as u64;
            last = Some((off, frame.ts_ns));
            f.frame(&CaptureFrame {
                index,
                ts_ns: frame.ts_ns,
                caplen: frame.caplen,
                origlen: frame.origlen,
                linktype: iface.linktype,
                interface: frame.interface,
                file_offset: off + EPB_DATA_OFFSET as u64,
                port: iface.port,
                direction: frame.direction,
                data,
            });
            at += len;
            n += 1;
        }
        shared.next_index = first_index + n as u64;
        if let Some((off, ts_ns)) = last {
            shared.at = off;
            self.last_ts_ns = ts_ns;
        }
        // Consumed at the next call, as `lend` leaves its block.
        self.input.pending = at;
        n
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
        let be = if u32_at(d, 0, false) == SHB_TYPE {
            section_byte_order(d, off)?
        } else {
            self.big_endian
        };
        let block_type = u32_at(d, 0, be);
        let len = u32_at(d, 4, be);
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
        if have >= 8 && u32_at(d, 0, false) != SHB_TYPE {
            let be = self.big_endian;
            check_length(off, u32_at(d, 0, be), u32_at(d, 4, be))?;
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
        let major = u16_at(&block.head, 12, be);
        let minor = u16_at(&block.head, 14, be);
        if major != 1 {
            return Err(CaptureError::Unsupported {
                offset: off,
                what: format!("pcapng section version {major}.{minor} (only 1.x exists)"),
            });
        }
        match self.input.rd.next() {
            Ok((n, PcapBlockOwned::NG(Block::SectionHeader(shb))))
                if n == len && shb.big_endian() == be => {}
            other => return Err(misread("pcapng SHB", off, other.err())),
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
                        OPT_ENDOFOPT => break,
                        IF_TSRESOL if tsresol.is_none() => match value.first() {
                            Some(&v) if opt.len == 1 => tsresol = Some(v),
                            _ => bad_option = Some("if_tsresol"),
                        },
                        IF_TSOFFSET if tsoffset_s.is_none() => match value {
                            b if b.len() >= 8 && opt.len == 8 => {
                                tsoffset_s = Some(i64_at(b, 0, be));
                            }
                            _ => bad_option = Some("if_tsoffset"),
                        },
                        OPT_CUSTOM_BINARY => match opt.as_bytes() {
                            Ok(&[p0, p1, p2, p3, CUSTOM_OPT_INTERFACE, port, dir, ..])
                                if u32_at(&[p0, p1, p2, p3], 0, be) == ROCESCOPE_PEN =>
                            {
                                ours = Some((port, direction_from(dir)));
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
                let (tsresol, tsoffset_s) =
                    (tsresol.unwrap_or(DEFAULT_TSRESOL), tsoffset_s.unwrap_or(0));
                Interface {
                    // pcap-parser widened the 16-bit field to i32.
                    linktype: LinkType((idb.linktype.0 & 0xffff) as u32),
                    snaplen: idb.snaplen,
                    tsresol,
                    tsoffset_s,
                    port: ours.map(|(port, _)| port),
                    direction: ours.and_then(|(_, dir)| dir),
                    ns_per_unit: ns_per_unit(tsresol, tsoffset_s),
                }
            }
            other => return Err(misread("pcapng IDB", off, other.err())),
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
            ("PB", u32::from(u16_at(h, 8, be)))
        } else {
            ("EPB", u32_at(h, 8, be))
        };
        let units = (u64::from(u32_at(h, 12, be)) << 32) | u64::from(u32_at(h, 16, be));
        let caplen = u32_at(h, 20, be);
        let origlen = u32_at(h, 24, be);
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
                    direction = flags_direction(u32_at(value, 0, be), direction);
                }
            });
            if let Err(at) = walked {
                warn_overrun(shared, "EPB", off, off + (opts_at + at) as u64);
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
        let origlen = u32_at(&block.head, 8, block.big_endian);
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
        if len < CUSTOM_PAYLOAD_OFFSET + 4 || u32_at(&block.head, 8, be) != ROCESCOPE_PEN {
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
        let interface = u32_at(h, 8, be);
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
        let units = (u64::from(u32_at(h, 12, be)) << 32) | u64::from(u32_at(h, 16, be));
        let (mut ifdrop, mut osdrop, mut reason) = (None, None, None);
        let opts = self
            .input
            .data()
            .get(ISB_OPTIONS_OFFSET..len - 4)
            .unwrap_or_default();
        let walked = for_each_option(opts, be, |code, value| match (code, value) {
            (ISB_IFDROP, &[..]) if value.len() == 8 => ifdrop = Some(u64_at(value, 0, be)),
            (ISB_OSDROP, &[..]) if value.len() == 8 => osdrop = Some(u64_at(value, 0, be)),
            (OPT_CUSTOM_BINARY, &[p0, p1, p2, p3, CUSTOM_OPT_DROP_REASON, code, ..])
                if u32_at(&[p0, p1, p2, p3], 0, be) == ROCESCOPE_PEN =>
            {
                reason = Some(drop_reason_from(code).unwrap_or(DropReason::Other));
            }
            _ => {}
        });
        if let Err(at) = walked {
            warn_overrun(shared, "ISB", off, off + (ISB_OPTIONS_OFFSET + at) as u64);
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

/// The EPB at the start of `d`, read in the section's byte order `BE`:
/// its frame, interface and block length when the block is whole in `d`
/// and [`framing`] and [`NgState::packet`] would take it without an error
/// or a warning; `None` otherwise (then `next_item` reads it and says why).
/// The buffered run's per-frame work: the same checks, in one pass over
/// the block's first 28 bytes.
#[inline(always)]
fn buffered_epb<'i, const BE: bool>(
    d: &[u8],
    interfaces: &'i [Interface],
) -> Option<(FrameMeta, &'i Interface, usize)> {
    let h: &[u8] = d.first_chunk::<EPB_DATA_OFFSET>()?;
    let word = |at: usize| u32_at(h, at, BE);
    // `framing`: the type, a length at least an EPB's, a multiple of 4,
    // within the limit, the block whole in `d`, its trailer equal.
    let len = word(4);
    let len_usize = len as usize;
    if word(0) != EPB_TYPE
        || len < 32
        || !len.is_multiple_of(4)
        || len > MAX_PCAPNG_BLOCK_BYTES
        || d.len() < len_usize
        || u32_at(d, len_usize - 4, BE) != len
    {
        return None;
    }
    // `packet`: the captured bytes fit, the interface is declared, the
    // timestamp fits, the options are whole.
    let interface = word(8);
    let units = (u64::from(word(12)) << 32) | u64::from(word(16));
    let caplen = word(20);
    let origlen = word(24);
    if caplen > len - 32 {
        return None;
    }
    // By reference: copying the 40-byte interface cost 10 instructions a
    // frame.
    let iface = interfaces.get(interface as usize)?;
    let ts_ns = match iface.ns_per_unit.and_then(|m| units.checked_mul(m)) {
        Some(ts) => ts,
        None => timestamp_ns(units, iface.tsresol, iface.tsoffset_s).ok()?,
    };
    let mut direction = iface.direction;
    let opts_at = EPB_DATA_OFFSET + (caplen as usize).div_ceil(4) * 4;
    if opts_at < len_usize - 4 {
        let opts = d.get(opts_at..len_usize - 4).unwrap_or_default();
        let flags_only = opts.len() >= 8
            && u16_at(opts, 0, BE) == EPB_FLAGS
            && u16_at(opts, 2, BE) == 4
            && (opts.len() < 12 || u16_at(opts, 8, BE) == OPT_ENDOFOPT);
        if flags_only {
            // The usual options: the direction flags alone.
            direction = flags_direction(u32_at(opts, 4, BE), direction);
        } else {
            for_each_option(opts, BE, |code, value| {
                if code == EPB_FLAGS && value.len() == 4 {
                    direction = flags_direction(u32_at(value, 0, BE), direction);
                }
            })
            .ok()?;
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
    Some((frame, iface, len_usize))
}

/// The direction an EPB's flags word gives, else `otherwise`.
#[inline(always)]
fn flags_direction(flags: u32, otherwise: Option<Direction>) -> Option<Direction> {
    match flags & 3 {
        EPB_FLAG_INBOUND => Some(Direction::Rx),
        EPB_FLAG_OUTBOUND => Some(Direction::Tx),
        _ => otherwise,
    }
}

/// A block's option at byte `at` runs past the block's end: the options
/// before it were taken, the rest are not.
fn warn_overrun(shared: &mut Shared, block: &str, off: u64, at: u64) {
    shared.warn(
        off,
        format!(
            "pcapng {block} at byte {off}: the option at byte {at} overruns the block; \
             options from there on ignored"
        ),
    );
}

/// A block pcap-parser did not read as the framing said: its error, or
/// (`None`) another block than the one framed.
fn misread<I>(what: &'static str, offset: u64, err: Option<PcapError<I>>) -> CaptureError {
    match err {
        Some(e) => malformed(what, offset, &describe(&e)),
        None => malformed(what, offset, "pcap-parser read it differently"),
    }
}

fn malformed(what: &'static str, offset: u64, detail: &str) -> CaptureError {
    CaptureError::Malformed {
        what,
        offset,
        detail: detail.to_owned(),
    }
}
