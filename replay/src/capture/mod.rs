//! Reading classic pcap and pcapng capture files, one frame at a time.
//!
//! [`CaptureReader`] detects the format from the file's magic number (never
//! from its name), lends out each frame's bytes straight from a large reused
//! buffer (no per-frame allocation), converts every timestamp to integer
//! nanoseconds, and treats damage the way a user needs it treated:
//!
//! - a file cut at any byte yields every complete frame before the cut, then
//!   a [`CaptureWarning`] naming the offset of the cut record;
//! - a header that cannot be right (absurd lengths, unknown interfaces) is a
//!   [`CaptureError`] naming the offset, never a panic, a hang, or a huge
//!   allocation;
//! - unknown link types and pcapng blocks are passed through or skipped: the
//!   decoder decides what it can read.
//!
//! Buffering and the pcap / pcapng header parsing come from pcap-parser's
//! streaming readers. Packet blocks (EPB, SPB) are sliced here directly,
//! after the framing has been checked, because pcap-parser allocates a `Vec`
//! for each packet's options and reports an EPB whose caplen overruns its own
//! block as "incomplete" instead of as an error. Classic pcap records are
//! sliced here too, once their header is checked, so that no record header
//! is parsed twice.
//!
//! The BALBOA card's host tool converts its sniffer dump to a pcap whose
//! `ts_sec` is the packet index and `ts_usec` 0; such files are recognised
//! and reported as [`TimeBase::Ordinal`] so nobody plots indices as seconds.

mod error;
pub(crate) mod input;
mod pcap;

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

pub use error::{CaptureError, NotAFile};

use crate::record::{Direction, Record, SkippedRecords};

use crate::pcapng::reader as pcapng;
use input::Start;

/// What takes the frames of [`CaptureReader::sink_buffered_frames`]: a
/// closure, or a type whose [`FrameSink::frame`] the run inlines into its
/// loop (the file indexer's: a closure that large is called, not inlined,
/// and each frame then crosses a call through memory).
pub trait FrameSink {
    fn frame(&mut self, f: &CaptureFrame<'_>);
}

impl<F: FnMut(&CaptureFrame<'_>)> FrameSink for F {
    #[inline(always)]
    fn frame(&mut self, f: &CaptureFrame<'_>) {
        self(f)
    }
}

/// Default read buffer: large enough that refills are rare and every legal
/// pcap record fits; growth beyond it happens only for big pcapng blocks.
pub const DEFAULT_BUFFER_BYTES: usize = 1 << 20;

/// Largest classic pcap record accepted (caplen), 256 KiB. Larger claims are
/// corruption: libpcap itself never writes more than 262144 bytes.
pub const MAX_PCAP_RECORD_BYTES: u32 = 256 * 1024;

/// Largest pcapng block accepted (block total length), 16 MiB; Wireshark
/// uses the same bound to reject corrupt lengths.
pub const MAX_PCAPNG_BLOCK_BYTES: u32 = 16 * 1024 * 1024;

/// How many warnings are kept; later ones are only counted, so a file full
/// of oddities cannot make the warning list grow without bound.
pub const MAX_WARNINGS: usize = 100;

/// A link-layer header type (the pcap `LINKTYPE_*` numbers), telling the
/// decoder what the first byte of each frame is.
///
/// Unknown values are kept as they are: deciding whether a link type can be
/// decoded is the decoder's job, not the reader's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// IEEE 802.3 Ethernet: what NICs, rxe and the BALBOA converter write.
    pub const ETHERNET: Self = Self(1);
    /// Raw IP, version in the first nibble.
    pub const RAW: Self = Self(101);
    /// Linux "cooked" capture (`tcpdump -i any`), version 1.
    pub const LINUX_SLL: Self = Self(113);
    /// Raw IPv4.
    pub const IPV4: Self = Self(228);
    /// Raw IPv6.
    pub const IPV6: Self = Self(229);
    /// Linux "cooked" capture, version 2 (newer `tcpdump -i any`).
    pub const LINUX_SLL2: Self = Self(276);

    /// A short human name for display, `"unknown"` for other values.
    pub fn name(self) -> &'static str {
        match self {
            Self::ETHERNET => "Ethernet",
            Self::RAW => "raw IP",
            Self::LINUX_SLL => "Linux cooked (SLL)",
            Self::IPV4 => "raw IPv4",
            Self::IPV6 => "raw IPv6",
            Self::LINUX_SLL2 => "Linux cooked v2 (SLL2)",
            _ => "unknown",
        }
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// The container format, as recognised from the magic number (or, for
/// the BALBOA sniffer dumps, from the content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureFormat {
    /// Classic libpcap format.
    Pcap {
        /// Nanosecond timestamps (magic `a1b23c4d`) instead of microseconds.
        nanos: bool,
        /// The file was written big-endian.
        big_endian: bool,
    },
    /// pcapng; byte order and time resolution vary per section / interface.
    Pcapng,
    /// The BALBOA card's sniffer text dump (`capture.txt`), read by
    /// [`crate::sniffer`]; ordinal time.
    SnifferText,
    /// The BALBOA card's sniffer slots as raw bytes; ordinal time.
    SnifferRaw,
    /// A waveform (VCD, FST): the frames on its AXI4-Stream interfaces,
    /// read by [`crate::wave`], one port per interface.
    Wave(crate::wave::WaveFormat),
}

impl fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pcap { nanos, big_endian } => write!(
                f,
                "pcap ({}, {})",
                if *nanos { "ns" } else { "µs" },
                if *big_endian {
                    "big-endian"
                } else {
                    "little-endian"
                }
            ),
            Self::Pcapng => f.write_str("pcapng"),
            Self::SnifferText => f.write_str("BALBOA sniffer text dump"),
            Self::SnifferRaw => f.write_str("BALBOA sniffer raw slot dump"),
            Self::Wave(w) => write!(f, "{w} waveform (AXI4-Stream)"),
        }
    }
}

/// What [`CaptureFrame::ts_ns`] means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeBase {
    /// Real time: nanoseconds since the Unix epoch.
    Nanoseconds,
    /// No time at all: the BALBOA card's converted pcap, where `ts_sec` is
    /// the packet index and `ts_usec` 0. `ts_ns` then holds the 0-based frame
    /// index, so order is kept but no rate or latency may be derived from it.
    Ordinal,
}

/// One captured frame, borrowed from the reader's buffer until the next call
/// to [`CaptureReader::next_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureFrame<'a> {
    /// 0-based frame number in file order (non-packet blocks not counted).
    pub index: u64,
    /// Timestamp in ns since the epoch, or the frame index when
    /// [`CaptureReader::time_base`] is [`TimeBase::Ordinal`].
    pub ts_ns: u64,
    /// Bytes captured (the length of `data`).
    pub caplen: u32,
    /// Length of the frame on the wire; larger than `caplen` if the capture
    /// cut it (snaplen, header-only sniffer modes).
    pub origlen: u32,
    /// What `data` starts with.
    pub linktype: LinkType,
    /// pcapng interface id within its section; 0 for pcap.
    pub interface: u32,
    /// Byte offset of `data[0]` in the file, for indexing and hex views.
    pub file_offset: u64,
    /// The card port, when the interface is a rocescope recording's
    /// (port, direction) interface; `None` otherwise.
    pub port: Option<u8>,
    /// Rx or Tx when known: from the pcapng `epb_flags`, else from the
    /// rocescope interface's direction.
    pub direction: Option<Direction>,
    /// The captured bytes.
    pub data: &'a [u8],
}

impl CaptureFrame<'_> {
    /// The frame as an owned [`Record::Frame`] (copies the bytes). Frames
    /// of files that do not name a port get their interface id as port
    /// (255 for ids above).
    pub fn to_record(&self) -> Record {
        Record::Frame {
            ts_ns: self.ts_ns,
            port: self
                .port
                .unwrap_or_else(|| u8::try_from(self.interface).unwrap_or(u8::MAX)),
            direction: self.direction,
            orig_len: self.origlen,
            data: self.data.to_vec(),
        }
    }
}

/// What [`CaptureReader::next_item`] returns: a frame, lent from the
/// reader's buffer, or another record of a rocescope recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureItem<'a> {
    /// A captured frame.
    Frame(CaptureFrame<'a>),
    /// A non-frame record: a rocescope custom block, or an Interface
    /// Statistics Block's drop count as [`Record::Drops`].
    Record(Record),
}

/// Something odd that did not stop reading, e.g. a file cut mid-record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaptureWarning {
    /// Byte offset in the file of the record or block concerned.
    pub offset: u64,
    /// What was seen, in words for the user.
    pub message: String,
}

impl fmt::Display for CaptureWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

/// A reader's warnings: the first [`MAX_WARNINGS`] kept, the rest
/// counted, and at the end one more saying how many were not kept.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    kept: Vec<CaptureWarning>,
    suppressed: u64,
}

impl Warnings {
    pub(crate) fn push(&mut self, w: CaptureWarning) {
        if self.kept.len() < MAX_WARNINGS {
            self.kept.push(w);
        } else {
            self.suppressed += 1;
        }
    }

    /// At the end (byte `offset`): the warning that says how many more
    /// were not kept, if any were not.
    pub(crate) fn close(&mut self, offset: u64) {
        if self.suppressed > 0 {
            let message = format!("{} more warnings were not kept", self.suppressed);
            self.kept.push(CaptureWarning { offset, message });
            self.suppressed = 0;
        }
    }

    pub(crate) fn as_slice(&self) -> &[CaptureWarning] {
        &self.kept
    }

    /// The kept ones, taken out (a count of those not kept stays).
    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, CaptureWarning> {
        self.kept.drain(..)
    }
}

/// State shared by both formats: warnings, frame numbering, end flag.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) warnings: Warnings,
    pub(crate) skipped: SkippedRecords,
    pub(crate) next_index: u64,
    /// Offset of the record or block being read, for the closing warning.
    pub(crate) at: u64,
    pub(crate) done: bool,
    /// Warnings of a waveform's reader already taken into `warnings`.
    pub(crate) wave_warnings: usize,
}

impl Shared {
    pub(crate) fn warn(&mut self, offset: u64, message: String) {
        self.warnings.push(CaptureWarning { offset, message });
    }

    /// A read's outcome, noted: the end finishes the capture, an error
    /// ends it.
    fn settle<T>(
        &mut self,
        result: Result<Option<T>, CaptureError>,
    ) -> Result<Option<T>, CaptureError> {
        match result {
            Ok(None) => self.finish(),
            Err(_) => self.done = true,
            Ok(Some(_)) => {}
        }
        result
    }

    pub(crate) fn finish(&mut self) {
        if !self.done {
            self.warnings.close(self.at);
        }
        self.done = true;
    }
}

enum Inner<R: Read> {
    Pcap(pcap::PcapState<R>),
    Pcapng(pcapng::NgState<R>),
    Sniffer(Box<SnifferState<R>>),
    Wave(Box<crate::wave::WaveStream>),
}

/// A sniffer dump behind the bytes read to detect it.
type SnifferState<R> = crate::sniffer::SnifferReader<crate::sniffer::Prefixed<R>>;

/// Opens a detected sniffer dump.
fn sniffer_inner<R: Read>(
    kind: crate::sniffer::DumpKind,
    prefix: Vec<u8>,
    reader: R,
    name: String,
) -> Result<(CaptureFormat, Inner<R>), CaptureError> {
    let format = match kind {
        crate::sniffer::DumpKind::Text => CaptureFormat::SnifferText,
        crate::sniffer::DumpKind::Raw => CaptureFormat::SnifferRaw,
    };
    let state = crate::sniffer::open_detected(kind, prefix, reader, name)?;
    Ok((format, Inner::Sniffer(Box::new(state))))
}

/// Streaming reader for pcap and pcapng files.
///
/// ```no_run
/// # use rocescope_replay::capture::CaptureReader;
/// let mut reader = CaptureReader::open(std::path::Path::new("trace.pcapng"))?;
/// while let Some(frame) = reader.next_frame()? {
///     println!("{} {} bytes", frame.ts_ns, frame.data.len());
/// }
/// for w in reader.warnings() {
///     eprintln!("warning: {w}");
/// }
/// # Ok::<(), rocescope_replay::capture::CaptureError>(())
/// ```
pub struct CaptureReader<R: Read> {
    format: CaptureFormat,
    inner: Inner<R>,
    shared: Shared,
}

impl CaptureReader<File> {
    /// Opens a capture file; I/O errors carry its path. A waveform (VCD,
    /// FST) opens with every AXI4-Stream interface found.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        Self::open_with(path, &crate::wave::WaveOptions::default())
    }

    /// Like [`open`](Self::open), with the interfaces and clock to use when
    /// the file is a waveform.
    pub fn open_with(path: &Path, wave: &crate::wave::WaveOptions) -> Result<Self, CaptureError> {
        NotAFile::check(path)?;
        let mut file = File::open(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        // A capture's magic is checked first: waveforms are detected only
        // when the file is none of the binary capture formats.
        let mut magic = Vec::with_capacity(4);
        read_up_to(&mut file, &mut magic, 4).map_err(|source| CaptureError::Io {
            name: path.display().to_string(),
            offset: 0,
            source,
        })?;
        let capture_magic = magic.first_chunk::<4>().is_some_and(|m| {
            let m = u32::from_le_bytes(*m);
            [pcap::MAGIC_US, pcap::MAGIC_NS, pcap::MAGIC_MODIFIED]
                .iter()
                .any(|&k| m == k || m == k.swap_bytes())
                || m == crate::pcapng::SHB_TYPE
        });
        if !capture_magic && let Some(format) = crate::wave::detect(path) {
            let stream = crate::wave::WaveStream::open(path, format, wave)?;
            return Ok(Self {
                // A VCD may turn out to be an ILA capture's.
                format: CaptureFormat::Wave(stream.format()),
                inner: Inner::Wave(Box::new(stream)),
                shared: Shared::default(),
            });
        }
        let file = File::open(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Self::build(file, path.display().to_string(), DEFAULT_BUFFER_BYTES)
    }
}

impl<R: Read> CaptureReader<R> {
    /// Starts reading a capture from any byte stream (a file, stdin, a
    /// `&[u8]`). The format is detected by content, so misnamed files work.
    ///
    /// Reads the file header (and, for pcap, looks ahead at the records
    /// already buffered to decide the [`TimeBase`]).
    pub fn new(reader: R) -> Result<Self, CaptureError> {
        Self::with_buffer_size(reader, DEFAULT_BUFFER_BYTES)
    }

    /// Like [`new`](Self::new) with a chosen initial buffer size. The buffer
    /// still grows when a block needs it; small sizes are mostly for tests of
    /// the refill paths.
    pub fn with_buffer_size(reader: R, buffer_bytes: usize) -> Result<Self, CaptureError> {
        Self::build(reader, "input".to_owned(), buffer_bytes)
    }

    fn build(mut reader: R, name: String, buffer_bytes: usize) -> Result<Self, CaptureError> {
        let buffer_bytes = buffer_bytes.max(64);
        let mut prefix = Vec::with_capacity(pcap::HEADER_BYTES);
        read_up_to(&mut reader, &mut prefix, pcap::HEADER_BYTES).map_err(|source| {
            CaptureError::Io {
                name: name.clone(),
                offset: prefix.len() as u64,
                source,
            }
        })?;
        let Some(magic) = prefix.first_chunk::<4>().copied() else {
            if let Some(kind) = crate::sniffer::detect(&prefix, true) {
                let (format, inner) = sniffer_inner(kind, prefix, reader, name)?;
                let shared = Shared::default();
                return Ok(Self {
                    format,
                    inner,
                    shared,
                });
            }
            return Err(CaptureError::TooShort {
                len: prefix.len() as u64,
            });
        };
        let mut shared = Shared::default();
        let m = u32::from_le_bytes(magic);
        let (format, inner) = match pcap::magic_kind(m) {
            Some((nanos, big_endian)) => {
                let start = Start::new(prefix, reader, name, buffer_bytes);
                let state = pcap::PcapState::open(start, nanos, big_endian, &mut shared)?;
                let format = CaptureFormat::Pcap { nanos, big_endian };
                (format, Inner::Pcap(state))
            }
            None if m == pcap::MAGIC_MODIFIED || m == pcap::MAGIC_MODIFIED.swap_bytes() => {
                return Err(CaptureError::Unsupported {
                    offset: 0,
                    what: "the \"modified\" (Kuznetzov) pcap format; convert it with editcap"
                        .to_owned(),
                });
            }
            None if m == crate::pcapng::SHB_TYPE => {
                let start = Start::new(prefix, reader, name, buffer_bytes);
                let state = pcapng::NgState::open(start)?;
                (CaptureFormat::Pcapng, Inner::Pcapng(state))
            }
            None => {
                let want = crate::sniffer::DETECT_BYTES;
                read_up_to(&mut reader, &mut prefix, want).map_err(|source| CaptureError::Io {
                    name: name.clone(),
                    offset: prefix.len() as u64,
                    source,
                })?;
                let at_end = prefix.len() < want;
                let Some(kind) = crate::sniffer::detect(&prefix, at_end) else {
                    return Err(CaptureError::UnknownMagic {
                        magic: u32::from_be_bytes(magic),
                        offset: 0,
                    });
                };
                sniffer_inner(kind, prefix, reader, name)?
            }
        };
        Ok(Self {
            format,
            inner,
            shared,
        })
    }

    /// The detected container format.
    pub fn format(&self) -> CaptureFormat {
        self.format
    }

    /// A waveform's reader (its interfaces, timescale, end), `None` for
    /// captures.
    pub fn wave(&self) -> Option<&crate::wave::WaveStream> {
        match &self.inner {
            Inner::Wave(w) => Some(w),
            _ => None,
        }
    }

    /// The next frame in file order, `Ok(None)` at the end of the input.
    ///
    /// A file cut mid-record ends with `Ok(None)` and a warning; corruption
    /// ends with an error. Either way every frame before it was returned, and
    /// later calls return `Ok(None)`. The frame borrows the reader's buffer,
    /// so copy what you need before the next call.
    pub fn next_frame(&mut self) -> Result<Option<CaptureFrame<'_>>, CaptureError> {
        if self.shared.done {
            return Ok(None);
        }
        let result = match &mut self.inner {
            Inner::Pcap(state) => state.next(&mut self.shared),
            Inner::Pcapng(state) => state.next(&mut self.shared),
            Inner::Sniffer(state) => {
                let shared = &mut self.shared;
                let frame = state.next_into(&mut |w| shared.warn(w.offset, w.message));
                frame.map(|f| f.map(|f| f.frame))
            }
            Inner::Wave(state) => {
                let index = self.shared.next_index;
                let next = state.advance();
                for (_, message) in &state.warnings()[self.shared.wave_warnings..] {
                    self.shared.warn(0, message.clone());
                }
                self.shared.wave_warnings = state.warnings().len();
                match next.map(|t| t.zip(state.current())) {
                    Ok(Some((ts_ns, f))) => {
                        self.shared.next_index += 1;
                        let len = u32::try_from(f.data.len()).unwrap_or(u32::MAX);
                        Ok(Some(CaptureFrame {
                            index,
                            ts_ns,
                            caplen: len,
                            origlen: len,
                            linktype: LinkType::ETHERNET,
                            interface: u32::from(f.port),
                            file_offset: 0,
                            port: Some(f.port),
                            direction: None,
                            data: &f.data,
                        }))
                    }
                    Ok(None) => Ok(None),
                    Err(e) => Err(e.into()),
                }
            }
        };
        self.shared.settle(result)
    }

    /// Hands `f`, in one loop, up to `max` frames whose records (pcap) or
    /// Enhanced Packet Blocks (pcapng) are already whole in the read buffer;
    /// returns how many. The
    /// same frames, in the same order and with the same warnings, as that
    /// many calls of [`next_frame`](Self::next_frame) (each frame borrows
    /// the buffer only during its call). 0 means: call `next_frame` or
    /// [`next_item`](Self::next_item), which refill, end, fail or read a
    /// block that is not an EPB (and always 0 for other formats).
    #[inline]
    pub fn for_each_buffered_frame<F: FnMut(&CaptureFrame<'_>)>(
        &mut self,
        max: usize,
        mut f: F,
    ) -> usize {
        self.sink_buffered_frames(max, &mut f)
    }

    /// [`for_each_buffered_frame`](Self::for_each_buffered_frame) into a
    /// [`FrameSink`].
    #[inline]
    pub fn sink_buffered_frames<S: FrameSink>(&mut self, max: usize, f: &mut S) -> usize {
        if self.shared.done {
            return 0;
        }
        match &mut self.inner {
            Inner::Pcap(state) => state.for_each_buffered(&mut self.shared, max, f),
            Inner::Pcapng(state) => state.for_each_buffered(&mut self.shared, max, f),
            _ => 0,
        }
    }

    /// The next frame or record in file order, `Ok(None)` at the end.
    ///
    /// Like [`next_frame`](Self::next_frame), plus the records of a rocescope
    /// recording: custom blocks with rocescope's enterprise number
    /// ([`ROCESCOPE_PEN`](crate::record::ROCESCOPE_PEN)) and the drop counts
    /// of Interface Statistics Blocks (of any pcapng file). Custom blocks of
    /// other owners are skipped; rocescope records this build cannot read
    /// (unknown type, newer version) or that are damaged are skipped and
    /// counted in [`skipped_records`](Self::skipped_records), the damaged ones
    /// with a warning. Classic pcap yields frames only.
    pub fn next_item(&mut self) -> Result<Option<CaptureItem<'_>>, CaptureError> {
        if !matches!(self.inner, Inner::Pcapng(_)) {
            return Ok(self.next_frame()?.map(CaptureItem::Frame));
        }
        if self.shared.done {
            return Ok(None);
        }
        let result = match &mut self.inner {
            Inner::Pcapng(state) => state.next_item(&mut self.shared, true),
            _ => Ok(None),
        };
        self.shared.settle(result)
    }

    /// rocescope records skipped so far by [`next_item`](Self::next_item).
    pub fn skipped_records(&self) -> SkippedRecords {
        self.shared.skipped
    }

    /// Warnings so far (at most [`MAX_WARNINGS`], plus one saying how many
    /// more were dropped), e.g. "file cut mid-record" with its byte offset.
    pub fn warnings(&self) -> &[CaptureWarning] {
        self.shared.warnings.as_slice()
    }

    /// What `ts_ns` means, decided from what has been read so far. For pcap
    /// the reader looks ahead over the records already buffered when it is
    /// created, so the answer is normally fixed before the first frame; if a
    /// later record breaks the BALBOA pattern it switches to
    /// [`TimeBase::Nanoseconds`] and leaves a warning.
    pub fn time_base(&self) -> TimeBase {
        match &self.inner {
            Inner::Pcap(state) if state.is_ordinal() => TimeBase::Ordinal,
            Inner::Sniffer(_) => TimeBase::Ordinal,
            _ => TimeBase::Nanoseconds,
        }
    }

    /// Bytes of the input consumed so far: the file offset just past the
    /// last frame or block handed out. Divide by the file size for a
    /// progress bar (read-ahead into the buffer is not counted).
    pub fn bytes_read(&self) -> u64 {
        match &self.inner {
            Inner::Pcap(state) => state.bytes_read(),
            Inner::Pcapng(state) => state.bytes_read(),
            Inner::Sniffer(state) => state.bytes_read(),
            Inner::Wave(state) => state.bytes_read(),
        }
    }
}

impl<R: Read> fmt::Debug for CaptureReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("format", &self.format)
            .field("time_base", &self.time_base())
            .field("frames", &self.shared.next_index)
            .field("bytes_read", &self.bytes_read())
            .field("warnings", &self.shared.warnings.as_slice().len())
            .finish_non_exhaustive()
    }
}

/// Reads until `buf` holds `n` bytes or the input ends.
fn read_up_to(reader: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> io::Result<()> {
    let want = n.saturating_sub(buf.len()) as u64;
    reader.by_ref().take(want).read_to_end(buf)?;
    Ok(())
}
