//! [`PcapngWriter`]: rocescope's recording format, pcapng that Wireshark and
//! tshark open as it is.
//!
//! - one Section Header Block (`shb_userappl` = `rocescope <version>`);
//! - one Interface Description Block per (port, direction), declared on first
//!   use: link type Ethernet, snap length 262144, `if_tsresol` 9 (ns),
//!   `if_name` like `port0-rx`, an `if_description` when the port was
//!   described (a waveform's interface: `AXI4-Stream tb.dut.m_axis_rx`),
//!   and a rocescope custom option holding the port and direction so
//!   readers need not parse names;
//! - an Enhanced Packet Block per frame: ns timestamp, caplen, origlen and,
//!   when the direction is known, `epb_flags` inbound/outbound;
//! - a Custom Block (type `0x00000BAD`, copyable, PEN [`ROCESCOPE_PEN`]) per
//!   non-frame record, holding its [`Record::encode_payload`] bytes;
//! - an Interface Statistics Block per [`Record::Drops`] on a declared
//!   interface: `isb_ifdrop`, `isb_starttime` / `isb_endtime` and a custom
//!   option with the drop reason. Drops on an undeclared interface id are
//!   stored as a custom block instead, so nothing is lost.
//!
//! Everything is little-endian. The writer buffers (1 MiB by default) and
//! allocates nothing per frame: block headers are built on the stack and the
//! frame bytes are copied once, into the buffer. Every block is checked
//! before its first byte is written, so an `InvalidInput` error leaves the
//! file valid; after an I/O error the writer refuses further writes, because
//! the file may end inside a block.
//!
//! `replay/FORMAT.md` describes the format in full.

use std::io::{self, BufWriter, Write};

use super::consts::*;
use crate::record::{
    Direction, DropCount, PAYLOAD_HEADER_BYTES, ROCESCOPE_PEN, Record, drop_reason_code,
};

/// Default write buffer.
pub const DEFAULT_WRITE_BUFFER_BYTES: usize = 1 << 20;

/// Largest frame the writer accepts (and the snap length it declares): what
/// libpcap and Wireshark accept for Ethernet.
pub const MAX_FRAME_BYTES: u32 = 262_144;

/// Largest block the writer produces; the reader's limit too
/// ([`MAX_PCAPNG_BLOCK_BYTES`](crate::capture::MAX_PCAPNG_BLOCK_BYTES)).
const MAX_BLOCK_BYTES: usize = crate::capture::MAX_PCAPNG_BLOCK_BYTES as usize;

const SHB_USERAPPL_VALUE: &str = concat!("rocescope ", env!("CARGO_PKG_VERSION"));

/// Slots in the (port, direction) -> interface table: 256 ports × {none,
/// rx, tx}.
const IFACE_SLOTS: usize = 256 * 3;
const NO_IFACE: u32 = u32::MAX;

/// Writes rocescope recordings as pcapng. See the [module docs](self).
///
/// ```
/// # use rocescope_replay::{PcapngWriter, Direction, Record};
/// let mut w = PcapngWriter::new(Vec::new())?;
/// w.write_frame(1_000, 0, Some(Direction::Rx), 60, &[0u8; 60])?;
/// w.write_record(&Record::Annotation { ts_ns: 1_500, text: "here".into() })?;
/// let bytes = w.finish()?;
/// # assert!(bytes.len() > 100);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: BufWriter<W>,
    /// Interface id per `port * 3 + direction slot`, [`NO_IFACE`] if none.
    iface_of: Box<[u32]>,
    /// Per declared interface: the first frame's timestamp, for
    /// `isb_starttime`.
    first_ts_ns: Vec<Option<u64>>,
    /// Reused payload buffer for custom blocks.
    scratch: Vec<u8>,
    position: u64,
    frames: u64,
    records: u64,
    failed: bool,
    /// `if_description` per port, for ports described before their first frame.
    descriptions: Vec<(u8, String)>,
}

impl<W: Write> PcapngWriter<W> {
    /// Gives `port`'s interfaces an `if_description` (what Wireshark shows
    /// in the capture file's properties), e.g. the waveform interface it
    /// came from. Applies to interfaces declared after the call; at most
    /// 1,000 bytes are kept.
    pub fn describe_port(&mut self, port: u8, text: &str) {
        let mut end = text.len().min(1000);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.descriptions.retain(|(p, _)| *p != port);
        self.descriptions.push((port, text[..end].to_owned()));
    }

    /// Starts a recording with the default buffer; the section header is
    /// written (buffered) at once.
    pub fn new(inner: W) -> io::Result<Self> {
        Self::with_capacity(DEFAULT_WRITE_BUFFER_BYTES, inner)
    }

    /// Like [`new`](Self::new) with a chosen buffer size.
    pub fn with_capacity(buffer_bytes: usize, inner: W) -> io::Result<Self> {
        let mut w = Self {
            out: BufWriter::with_capacity(buffer_bytes, inner),
            iface_of: vec![NO_IFACE; IFACE_SLOTS].into_boxed_slice(),
            first_ts_ns: Vec::new(),
            scratch: Vec::with_capacity(256),
            position: 0,
            frames: 0,
            records: 0,
            failed: false,
            descriptions: Vec::new(),
        };
        w.write_shb()?;
        Ok(w)
    }

    /// Writes one frame, declaring its interface first if it is new.
    ///
    /// `data` is copied straight into the write buffer. Errors with
    /// `InvalidInput` (writing nothing) if `data` is longer than
    /// [`MAX_FRAME_BYTES`] or `orig_len` is shorter than `data`.
    pub fn write_frame(
        &mut self,
        ts_ns: u64,
        port: u8,
        direction: Option<Direction>,
        orig_len: u32,
        data: &[u8],
    ) -> io::Result<()> {
        self.write_frame_with_comment(ts_ns, port, direction, orig_len, data, None)
    }

    /// Like [`write_frame`](Self::write_frame), with an `opt_comment`: the
    /// text Wireshark shows as the packet's comment (`frame.comment`).
    /// Errors with `InvalidInput` if the comment is longer than 60,000
    /// bytes.
    pub fn write_frame_with_comment(
        &mut self,
        ts_ns: u64,
        port: u8,
        direction: Option<Direction>,
        orig_len: u32,
        data: &[u8],
        comment: Option<&str>,
    ) -> io::Result<()> {
        self.check()?;
        let comment = comment.filter(|c| !c.is_empty());
        if comment.is_some_and(|c| c.len() > 60_000) {
            return Err(invalid("packet comment longer than 60,000 bytes".into()));
        }
        let caplen = match u32::try_from(data.len()) {
            Ok(n) if n <= MAX_FRAME_BYTES => n,
            _ => {
                return Err(invalid(format!(
                    "frame of {} bytes is longer than the {MAX_FRAME_BYTES}-byte limit",
                    data.len()
                )));
            }
        };
        if orig_len < caplen {
            return Err(invalid(format!(
                "frame has {caplen} captured bytes but an original length of only {orig_len}"
            )));
        }
        let iface = self.declare(port, direction, Some(ts_ns))?;
        let pad = pad_len(data.len());
        let flags = match direction {
            None => 0,
            Some(Direction::Rx) => EPB_FLAG_INBOUND,
            Some(Direction::Tx) => EPB_FLAG_OUTBOUND,
        };
        let comment_opt = comment.map_or(0, |c| 4 + c.len() + pad_len(c.len()));
        let opts_len = match (flags != 0, comment_opt) {
            (false, 0) => 0,
            (has_flags, n) => 8 * usize::from(has_flags) + n + 4,
        };
        let total = (32 + data.len() + pad + opts_len) as u32;
        let mut head = [0u8; 28];
        put32(&mut head, 0, EPB_TYPE);
        put32(&mut head, 4, total);
        put32(&mut head, 8, iface);
        put32(&mut head, 12, (ts_ns >> 32) as u32);
        put32(&mut head, 16, ts_ns as u32);
        put32(&mut head, 20, caplen);
        put32(&mut head, 24, orig_len);
        if let Some(c) = comment {
            // The rare annotated frame: its options built in a vector.
            let mut tail = vec![0u8; pad];
            if flags != 0 {
                tail.extend_from_slice(&EPB_FLAGS.to_le_bytes());
                tail.extend_from_slice(&4u16.to_le_bytes());
                tail.extend_from_slice(&flags.to_le_bytes());
            }
            tail.extend_from_slice(&OPT_COMMENT.to_le_bytes());
            tail.extend_from_slice(&(c.len() as u16).to_le_bytes());
            tail.extend_from_slice(c.as_bytes());
            tail.resize(tail.len() + pad_len(c.len()) + 4, 0);
            tail.extend_from_slice(&total.to_le_bytes());
            self.io(|out| {
                out.write_all(&head)?;
                out.write_all(data)?;
                out.write_all(&tail)
            })?;
            self.position += u64::from(total);
            self.frames += 1;
            return Ok(());
        }
        let mut tail = [0u8; 3 + 12 + 4];
        let mut t = pad;
        if flags != 0 {
            put16(&mut tail, t, EPB_FLAGS);
            put16(&mut tail, t + 2, 4);
            put32(&mut tail, t + 4, flags);
            // opt_endofopt: 4 zero bytes, already there.
            t += 12;
        }
        put32(&mut tail, t, total);
        t += 4;
        self.io(|out| {
            out.write_all(&head)?;
            out.write_all(data)?;
            out.write_all(&tail[..t])
        })?;
        self.position += u64::from(total);
        self.frames += 1;
        Ok(())
    }

    /// Writes any record: frames as EPBs, drops on a declared interface as
    /// an ISB, everything else as a custom block.
    pub fn write_record(&mut self, record: &Record) -> io::Result<()> {
        if let Some(f) = record.as_frame() {
            return self.write_frame(f.ts_ns, f.port, f.direction, f.orig_len, f.data);
        }
        match record {
            Record::Drops(d) if (d.interface as usize) < self.first_ts_ns.len() => {
                self.write_isb(d)
            }
            _ => self.write_custom(record),
        }
    }

    /// The interface id of (port, direction), declaring it now if it is new.
    /// Use it to fill [`DropCount::interface`] so drops go into an ISB.
    pub fn interface_id(&mut self, port: u8, direction: Option<Direction>) -> io::Result<u32> {
        self.check()?;
        self.declare(port, direction, None)
    }

    /// Writes the buffer out and flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.io(|out| out.flush())
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        self.out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
    }

    /// The underlying writer (without what is still buffered).
    pub fn get_ref(&self) -> &W {
        self.out.get_ref()
    }

    /// Bytes of the recording so far, buffered ones included: the file
    /// offset at which the next block will start.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// Non-frame records written so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// Interfaces declared so far.
    pub fn interfaces(&self) -> u32 {
        self.first_ts_ns.len() as u32
    }

    // ------------------------------------------------------------ blocks

    fn write_shb(&mut self) -> io::Result<()> {
        let mut body = [0u8; 16];
        put32(&mut body, 0, BOM);
        put16(&mut body, 4, 1);
        put16(&mut body, 6, 0);
        // Section length: unknown.
        body[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        self.write_block(
            SHB_TYPE,
            &body,
            &[(SHB_USERAPPL, SHB_USERAPPL_VALUE.as_bytes())],
        )
    }

    /// A block with options: its type and length, the `body` of fixed
    /// fields, each option, the end of options, and the length again.
    fn write_block(&mut self, kind: u32, body: &[u8], options: &[(u16, &[u8])]) -> io::Result<()> {
        let opts: usize = options.iter().map(|(_, v)| option_len(v.len())).sum();
        let total = (8 + body.len() + opts + 4 + 4) as u32;
        self.io(|out| {
            out.write_all(&kind.to_le_bytes())?;
            out.write_all(&total.to_le_bytes())?;
            out.write_all(body)?;
            for (code, value) in options {
                write_option(out, *code, value)?;
            }
            out.write_all(&[0; 4])?;
            out.write_all(&total.to_le_bytes())
        })?;
        self.position += u64::from(total);
        Ok(())
    }

    /// The interface of (port, direction), writing its IDB if it is new.
    #[inline]
    fn declare(
        &mut self,
        port: u8,
        direction: Option<Direction>,
        ts_ns: Option<u64>,
    ) -> io::Result<u32> {
        let dir_code = direction_code(direction);
        let slot = usize::from(port) * 3 + usize::from(dir_code);
        match self.iface_of.get(slot) {
            Some(&id) if id != NO_IFACE => {
                if let Some(first @ None) = self.first_ts_ns.get_mut(id as usize) {
                    *first = ts_ns;
                }
                Ok(id)
            }
            _ => self.write_idb(slot, port, direction, ts_ns),
        }
    }

    #[cold]
    fn write_idb(
        &mut self,
        slot: usize,
        port: u8,
        direction: Option<Direction>,
        ts_ns: Option<u64>,
    ) -> io::Result<u32> {
        // "port255-rx" is at most 10 bytes.
        let mut name = [0u8; 12];
        let name_len = {
            let mut cur = io::Cursor::new(&mut name[..]);
            match direction {
                Some(d) => write!(cur, "port{port}-{d}")?,
                None => write!(cur, "port{port}")?,
            }
            cur.position() as usize
        };
        let custom = custom_option([CUSTOM_OPT_INTERFACE, port, direction_code(direction)]);
        let description = self
            .descriptions
            .iter()
            .find(|(p, _)| *p == port)
            .map(|(_, d)| d.clone());
        let mut body = [0u8; 8];
        put16(&mut body, 0, 1); // LINKTYPE_ETHERNET
        put16(&mut body, 2, 0);
        put32(&mut body, 4, MAX_FRAME_BYTES);
        let mut options = vec![(IF_NAME, &name[..name_len])];
        if let Some(d) = &description {
            options.push((IF_DESCRIPTION, d.as_bytes()));
        }
        options.push((IF_TSRESOL, &[9]));
        options.push((OPT_CUSTOM_BINARY, &custom));
        self.write_block(IDB_TYPE, &body, &options)?;
        let id = self.first_ts_ns.len() as u32;
        self.first_ts_ns.push(ts_ns);
        if let Some(s) = self.iface_of.get_mut(slot) {
            *s = id;
        }
        Ok(id)
    }

    /// A drop count on a declared interface.
    fn write_isb(&mut self, d: &DropCount) -> io::Result<()> {
        self.check()?;
        let start = self
            .first_ts_ns
            .get(d.interface as usize)
            .copied()
            .flatten();
        let custom = custom_option([CUSTOM_OPT_DROP_REASON, drop_reason_code(d.reason)]);
        let mut body = [0u8; 12];
        put32(&mut body, 0, d.interface);
        body[4..].copy_from_slice(&timestamp_bytes(d.ts_ns));
        let start = start.map(timestamp_bytes);
        let end = timestamp_bytes(d.ts_ns);
        let dropped = d.dropped.to_le_bytes();
        let mut options = Vec::with_capacity(4);
        if let Some(s) = &start {
            options.push((ISB_STARTTIME, &s[..]));
        }
        options.push((ISB_ENDTIME, &end[..]));
        options.push((ISB_IFDROP, &dropped[..]));
        options.push((OPT_CUSTOM_BINARY, &custom[..]));
        self.write_block(ISB_TYPE, &body, &options)?;
        self.records += 1;
        Ok(())
    }

    /// A non-frame record as a custom block.
    fn write_custom(&mut self, record: &Record) -> io::Result<()> {
        self.check()?;
        self.scratch.clear();
        if !record.encode_payload(&mut self.scratch) {
            return Err(invalid("a frame is not a custom-block record".to_owned()));
        }
        debug_assert!(self.scratch.len() >= PAYLOAD_HEADER_BYTES);
        let pad = pad_len(self.scratch.len());
        let total = 16 + self.scratch.len() + pad;
        if total > MAX_BLOCK_BYTES {
            return Err(invalid(format!(
                "{} record needs a {total}-byte block, over the {MAX_BLOCK_BYTES}-byte limit",
                record.record_type().map_or("a", |t| t.name())
            )));
        }
        let mut head = [0u8; 12];
        put32(&mut head, 0, CUSTOM_BLOCK_TYPE);
        put32(&mut head, 4, total as u32);
        put32(&mut head, 8, ROCESCOPE_PEN);
        let mut tail = [0u8; 3 + 4];
        put32(&mut tail, pad, total as u32);
        let (out, payload) = (&mut self.out, &self.scratch);
        let r = (|| {
            out.write_all(&head)?;
            out.write_all(payload)?;
            out.write_all(&tail[..pad + 4])
        })();
        if r.is_err() {
            self.failed = true;
        }
        r?;
        self.position += total as u64;
        self.records += 1;
        Ok(())
    }

    // ------------------------------------------------------------ helpers

    #[inline]
    fn check(&self) -> io::Result<()> {
        if self.failed {
            Err(io::Error::other(
                "an earlier write to this recording failed; it may end inside a block",
            ))
        } else {
            Ok(())
        }
    }

    /// Runs a write, remembering a failure.
    #[inline]
    fn io(&mut self, f: impl FnOnce(&mut BufWriter<W>) -> io::Result<()>) -> io::Result<()> {
        let r = f(&mut self.out);
        if r.is_err() {
            self.failed = true;
        }
        r
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn direction_code(d: Option<Direction>) -> u8 {
    match d {
        None => 0,
        Some(Direction::Rx) => 1,
        Some(Direction::Tx) => 2,
    }
}

/// The direction with this code, as in the IDB custom option.
pub(crate) fn direction_from(c: u8) -> Option<Direction> {
    match c {
        1 => Some(Direction::Rx),
        2 => Some(Direction::Tx),
        _ => None,
    }
}

/// Padding after `n` bytes to reach a 32-bit boundary.
#[inline]
fn pad_len(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// Bytes of an option with an `n`-byte value, padding included.
fn option_len(n: usize) -> usize {
    4 + n + pad_len(n)
}

fn write_option(out: &mut impl Write, code: u16, value: &[u8]) -> io::Result<()> {
    let mut h = [0u8; 4];
    put16(&mut h, 0, code);
    put16(&mut h, 2, value.len() as u16);
    out.write_all(&h)?;
    out.write_all(value)?;
    out.write_all(&[0u8; 3][..pad_len(value.len())])
}

/// A pcapng timestamp (high word, low word) in the section's byte order.
fn timestamp_bytes(ts: u64) -> [u8; 8] {
    let mut b = [0u8; 8];
    put32(&mut b, 0, (ts >> 32) as u32);
    put32(&mut b, 4, ts as u32);
    b
}

#[inline]
fn put16(b: &mut [u8], at: usize, v: u16) {
    if let Some(s) = b.get_mut(at..at + 2) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

#[inline]
fn put32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

/// A rocescope custom option's value: the PEN (little-endian), then `body`
/// (its kind and fields).
fn custom_option<const N: usize>(body: [u8; N]) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + N);
    v.extend_from_slice(&ROCESCOPE_PEN.to_le_bytes());
    v.extend_from_slice(&body);
    v
}
