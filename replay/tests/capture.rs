//! Tests of the capture reader against files written here in code (every
//! format variant, every cut offset, broken headers) and the real captures in
//! `shared/captures/` when that folder is present.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rocescope_replay::capture::{
    CaptureError, CaptureFormat, CaptureFrame, CaptureReader, DEFAULT_BUFFER_BYTES, LinkType,
    MAX_PCAP_RECORD_BYTES, MAX_WARNINGS, TimeBase,
};

// ---------------------------------------------------------------- writers

fn put16(buf: &mut Vec<u8>, be: bool, v: u16) {
    buf.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn put32(buf: &mut Vec<u8>, be: bool, v: u32) {
    buf.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

/// `words` in a row, each as [`put32`] writes it.
fn put32s(buf: &mut Vec<u8>, be: bool, words: &[u32]) {
    for &w in words {
        put32(buf, be, w);
    }
}

fn put64(buf: &mut Vec<u8>, be: bool, v: u64) {
    buf.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn pad4(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

/// A frame as the reader should return it, plus where its record ends.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    index: u64,
    ts_ns: u64,
    caplen: u32,
    origlen: u32,
    linktype: LinkType,
    interface: u32,
    file_offset: u64,
    data: Vec<u8>,
}

fn own(f: &CaptureFrame<'_>) -> Owned {
    assert_eq!(f.caplen as usize, f.data.len(), "caplen is the data length");
    Owned {
        index: f.index,
        ts_ns: f.ts_ns,
        caplen: f.caplen,
        origlen: f.origlen,
        linktype: f.linktype,
        interface: f.interface,
        file_offset: f.file_offset,
        data: f.data.to_vec(),
    }
}

#[derive(Debug, Clone)]
struct Expect {
    frame: Owned,
    /// Offset just past the record or block holding the frame.
    end: usize,
}

/// A file written in code, with what a reader must make of it.
struct Written {
    bytes: Vec<u8>,
    frames: Vec<Expect>,
    /// Offsets where a record or block starts or the file ends cleanly.
    bounds: Vec<usize>,
    /// Bytes before which the file has no complete header.
    header_end: usize,
}

struct PcapWriter {
    be: bool,
    nanos: bool,
    linktype: u32,
    w: Written,
}

impl PcapWriter {
    fn new(be: bool, nanos: bool, snaplen: u32, linktype: u32) -> Self {
        let mut b = Vec::new();
        put32(&mut b, be, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        put16(&mut b, be, 2);
        put16(&mut b, be, 4);
        put32s(&mut b, be, &[0, 0, snaplen, linktype]);
        Self {
            be,
            nanos,
            linktype,
            w: Written {
                bytes: b,
                frames: Vec::new(),
                bounds: vec![24],
                header_end: 24,
            },
        }
    }

    fn rec(mut self, ts_sec: u32, frac: u32, data: &[u8], origlen: u32) -> Self {
        let b = &mut self.w.bytes;
        let start = b.len();
        put32s(b, self.be, &[ts_sec, frac, data.len() as u32, origlen]);
        b.extend_from_slice(data);
        let mul = if self.nanos { 1 } else { 1_000 };
        let frame = Owned {
            index: self.w.frames.len() as u64,
            ts_ns: u64::from(ts_sec) * 1_000_000_000 + u64::from(frac) * mul,
            caplen: data.len() as u32,
            origlen,
            linktype: LinkType(self.linktype & 0xffff),
            interface: 0,
            file_offset: start as u64 + 16,
            data: data.to_vec(),
        };
        let end = b.len();
        self.w.frames.push(Expect { frame, end });
        self.w.bounds.push(end);
        self
    }

    fn done(self) -> Written {
        self.w
    }
}

fn options(be: bool, opts: &[(u16, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (code, value) in opts {
        put16(&mut b, be, *code);
        put16(&mut b, be, value.len() as u16);
        b.extend_from_slice(value);
        pad4(&mut b);
    }
    if !opts.is_empty() {
        put32(&mut b, be, 0);
    }
    b
}

struct NgWriter {
    be: bool,
    /// (linktype, snaplen) per interface of the current section.
    ifaces: Vec<(u16, u32)>,
    last_ts: u64,
    w: Written,
}

impl NgWriter {
    fn new() -> Self {
        Self {
            be: false,
            ifaces: Vec::new(),
            last_ts: 0,
            w: Written {
                bytes: Vec::new(),
                frames: Vec::new(),
                bounds: vec![],
                header_end: 0,
            },
        }
    }

    fn block(&mut self, block_type: u32, body: &[u8]) -> usize {
        let b = &mut self.w.bytes;
        let start = b.len();
        let len = 12 + body.len().div_ceil(4) * 4;
        put32(b, self.be, block_type);
        put32(b, self.be, len as u32);
        b.extend_from_slice(body);
        pad4(b);
        put32(b, self.be, len as u32);
        self.w.bounds.push(b.len());
        start
    }

    fn shb(mut self, be: bool, opts: &[(u16, &[u8])]) -> Self {
        self.be = be;
        self.ifaces.clear();
        let mut body = Vec::new();
        put32(&mut body, be, 0x1a2b_3c4d);
        put16(&mut body, be, 1);
        put16(&mut body, be, 0);
        put64(&mut body, be, u64::MAX);
        body.extend(options(be, opts));
        self.block(0x0a0d_0d0a, &body);
        if self.w.header_end == 0 {
            self.w.header_end = self.w.bytes.len();
        }
        self
    }

    fn idb(mut self, linktype: u16, snaplen: u32, opts: &[(u16, &[u8])]) -> Self {
        let mut body = Vec::new();
        put16(&mut body, self.be, linktype);
        put16(&mut body, self.be, 0);
        put32(&mut body, self.be, snaplen);
        body.extend(options(self.be, opts));
        self.block(1, &body);
        self.ifaces.push((linktype, snaplen));
        self
    }

    fn push_frame(&mut self, start: usize, data_at: usize, caplen: u32, origlen: u32, iface: u32) {
        let data = self.w.bytes[start + data_at..start + data_at + caplen as usize].to_vec();
        let frame = Owned {
            index: self.w.frames.len() as u64,
            ts_ns: self.last_ts,
            caplen,
            origlen,
            linktype: LinkType(u32::from(self.ifaces[iface as usize].0)),
            interface: iface,
            file_offset: (start + data_at) as u64,
            data,
        };
        let end = self.w.bytes.len();
        self.w.frames.push(Expect { frame, end });
    }

    /// An EPB whose timestamp is `units`, which must mean `ts_ns`.
    fn epb(
        mut self,
        iface: u32,
        units: u64,
        ts_ns: u64,
        data: &[u8],
        opts: &[(u16, &[u8])],
    ) -> Self {
        let mut body = Vec::new();
        put32s(
            &mut body,
            self.be,
            &[
                iface,
                (units >> 32) as u32,
                units as u32,
                data.len() as u32,
                data.len() as u32 + 4,
            ],
        );
        body.extend_from_slice(data);
        pad4(&mut body);
        body.extend(options(self.be, opts));
        let start = self.block(6, &body);
        self.last_ts = ts_ns;
        self.push_frame(start, 28, data.len() as u32, data.len() as u32 + 4, iface);
        self
    }

    /// An obsolete Packet Block.
    fn pb(mut self, iface: u16, units: u64, ts_ns: u64, data: &[u8]) -> Self {
        let mut body = Vec::new();
        put16(&mut body, self.be, iface);
        put16(&mut body, self.be, 0);
        put32s(
            &mut body,
            self.be,
            &[
                (units >> 32) as u32,
                units as u32,
                data.len() as u32,
                data.len() as u32,
            ],
        );
        body.extend_from_slice(data);
        let start = self.block(2, &body);
        self.last_ts = ts_ns;
        self.push_frame(
            start,
            28,
            data.len() as u32,
            data.len() as u32,
            u32::from(iface),
        );
        self
    }

    /// An SPB holding `stored` bytes of a packet of `origlen` bytes.
    fn spb(mut self, origlen: u32, stored: &[u8]) -> Self {
        let mut body = Vec::new();
        put32(&mut body, self.be, origlen);
        body.extend_from_slice(stored);
        let start = self.block(3, &body);
        let room = stored.len().div_ceil(4) as u32 * 4;
        let snaplen = self.ifaces[0].1;
        let mut caplen = origlen.min(room);
        if snaplen != 0 {
            caplen = caplen.min(snaplen);
        }
        self.push_frame(start, 12, caplen, origlen, 0);
        self
    }

    fn other(mut self, block_type: u32, body: &[u8]) -> Self {
        self.block(block_type, body);
        self
    }

    fn done(self) -> Written {
        self.w
    }
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

// ---------------------------------------------------------------- helpers

/// Reads every frame; panics on an error.
fn read_all(reader: &mut CaptureReader<impl Read>) -> Vec<Owned> {
    let mut out = Vec::new();
    while let Some(f) = reader.next_frame().unwrap() {
        out.push(own(&f));
    }
    out
}

fn expected(w: &Written) -> Vec<Owned> {
    w.frames.iter().map(|e| e.frame.clone()).collect()
}

/// A classic pcap in the given variant with assorted records.
fn sample_pcap(be: bool, nanos: bool) -> Written {
    let frac = if nanos { 123_456_789 } else { 123_456 };
    PcapWriter::new(be, nanos, 262_144, 1)
        .rec(1_700_000_000, frac, &payload(60, 1), 60)
        .rec(1_700_000_001, 0, &payload(1, 2), 1)
        .rec(1_700_000_001, 999, &[], 0)
        .rec(4_000_000_000, frac, &payload(54, 3), 1514)
        .done()
}

/// pcapng: two interfaces with different resolutions, comments, a custom
/// block, an unknown block, an SPB, then a big-endian second section with
/// its own interface and an obsolete Packet Block.
fn sample_pcapng() -> Written {
    let ts_ns_if0 = 1_700_000_000_123_456_789u64;
    // if1: 2^-20 s units with an offset of 100 s.
    let units_if1 = (5u64 << 20) | (1 << 19);
    let tsoffset = 100i64.to_le_bytes();
    NgWriter::new()
        .shb(
            false,
            &[(1, b"written by the test"), (4, b"rocescope tests")],
        )
        .idb(1, 0, &[(2, b"eth0"), (9, &[9])])
        .idb(101, 64, &[(9, &[0x80 | 20]), (14, &tsoffset)])
        .epb(
            0,
            ts_ns_if0,
            ts_ns_if0,
            &payload(61, 4),
            &[(1, b"a comment")],
        )
        // A custom block (PEN 32473) and an unknown block type.
        .other(0x0000_0bad, &[0, 0, 0x7e, 0xd9, 1, 2, 3, 4])
        .other(0x1234_5678, &payload(10, 5))
        .epb(1, units_if1, 105_500_000_000, &payload(40, 6), &[])
        // SPB: origlen 70 but the snaplen of interface 0 is 0 (no limit),
        // 62 stored bytes -> room 64 -> caplen 64.
        .spb(70, &payload(62, 7))
        // SPB whose padding must not count: origlen 5.
        .spb(5, &payload(5, 8))
        .shb(true, &[])
        .idb(1, 96, &[])
        .epb(0, 42_000_001, 42_000_001_000, &payload(33, 9), &[])
        .pb(0, 7, 7_000, &payload(20, 10))
        .other(5, &payload(16, 11))
        .done()
}

// ---------------------------------------------------------------- formats

#[test]
fn pcap_all_four_variants_round_trip() {
    for (be, nanos, name) in [
        (false, false, "pcap (µs, little-endian)"),
        (true, false, "pcap (µs, big-endian)"),
        (false, true, "pcap (ns, little-endian)"),
        (true, true, "pcap (ns, big-endian)"),
    ] {
        let w = sample_pcap(be, nanos);
        let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
        assert_eq!(
            r.format(),
            CaptureFormat::Pcap {
                nanos,
                big_endian: be
            }
        );
        assert_eq!(r.format().to_string(), name);
        let got = read_all(&mut r);
        assert_eq!(got, expected(&w), "{name}");
        assert_eq!(r.time_base(), TimeBase::Nanoseconds);
        assert!(r.warnings().is_empty(), "{:?}", r.warnings());
        assert_eq!(r.bytes_read(), w.bytes.len() as u64);
        assert!(r.next_frame().unwrap().is_none(), "stays at the end");
    }
}

#[test]
fn pcap_fields_explicitly() {
    let w = sample_pcap(false, false);
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    let f = r.next_frame().unwrap().unwrap();
    assert_eq!(f.index, 0);
    assert_eq!(f.ts_ns, 1_700_000_000_123_456_000);
    assert_eq!((f.caplen, f.origlen), (60, 60));
    assert_eq!(f.linktype, LinkType::ETHERNET);
    assert_eq!(f.interface, 0);
    assert_eq!(f.file_offset, 40);
    assert_eq!(f.data, &payload(60, 1)[..]);
    assert_eq!(r.bytes_read(), 100);
    let _ = r.next_frame().unwrap().unwrap();
    let _ = r.next_frame().unwrap().unwrap();
    let f = r.next_frame().unwrap().unwrap();
    assert_eq!(f.index, 3);
    assert_eq!(f.ts_ns, 4_000_000_000_123_456_000);
    assert_eq!((f.caplen, f.origlen), (54, 1514));
}

#[test]
fn pcapng_sections_interfaces_resolutions_spb() {
    let w = sample_pcapng();
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(r.format(), CaptureFormat::Pcapng);
    assert_eq!(r.format().to_string(), "pcapng");
    let got = read_all(&mut r);
    assert_eq!(got, expected(&w));
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    assert_eq!(r.time_base(), TimeBase::Nanoseconds);
    assert_eq!(r.bytes_read(), w.bytes.len() as u64);

    // The same, spelled out.
    assert_eq!(got.len(), 6);
    assert_eq!(got[0].ts_ns, 1_700_000_000_123_456_789);
    assert_eq!((got[0].interface, got[0].linktype), (0, LinkType::ETHERNET));
    assert_eq!(got[0].file_offset, w.frames[0].frame.file_offset);
    assert_eq!((got[0].caplen, got[0].origlen), (61, 65));
    assert_eq!(
        got[1].ts_ns, 105_500_000_000,
        "2^-20 s units plus 100 s offset"
    );
    assert_eq!((got[1].interface, got[1].linktype), (1, LinkType::RAW));
    assert_eq!(
        got[2].ts_ns, got[1].ts_ns,
        "SPB reuses the previous timestamp"
    );
    assert_eq!(
        (got[2].caplen, got[2].origlen, got[2].interface),
        (64, 70, 0)
    );
    assert_eq!((got[3].caplen, got[3].origlen), (5, 5));
    assert_eq!(got[3].data, payload(5, 8));
    assert_eq!(
        got[4].ts_ns, 42_000_001_000,
        "big-endian section, default µs"
    );
    assert_eq!(got[4].linktype, LinkType::ETHERNET);
    assert_eq!(got[5].ts_ns, 7_000);
    assert_eq!(got[5].index, 5);
}

#[test]
fn spb_caplen_is_limited_by_snaplen() {
    let w = NgWriter::new()
        .shb(false, &[])
        .idb(1, 16, &[])
        .spb(100, &payload(40, 1))
        .done();
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    let f = r.next_frame().unwrap().unwrap();
    assert_eq!((f.caplen, f.origlen, f.ts_ns), (16, 100, 0));
    assert_eq!(f.data, &payload(40, 1)[..16]);
    assert_eq!(read_all(&mut r), vec![]);
}

#[test]
fn big_records_grow_the_buffer() {
    let big = payload(MAX_PCAP_RECORD_BYTES as usize, 3);
    let w = PcapWriter::new(false, false, 262_144, 1)
        .rec(1, 0, &payload(10, 1), 10)
        .rec(2, 0, &big, big.len() as u32)
        .rec(3, 0, &payload(10, 2), 10)
        .done();
    for size in [64, 1000, DEFAULT_BUFFER_BYTES] {
        let mut r = CaptureReader::with_buffer_size(&w.bytes[..], size).unwrap();
        assert_eq!(read_all(&mut r), expected(&w), "buffer {size}");
    }
    let huge = payload(3 << 20, 4);
    let w = NgWriter::new()
        .shb(false, &[])
        .idb(1, 0, &[])
        .epb(0, 1, 1_000, &payload(10, 1), &[])
        .epb(0, 2, 2_000, &huge, &[])
        .epb(0, 3, 3_000, &payload(10, 1), &[])
        .done();
    for size in [64, DEFAULT_BUFFER_BYTES] {
        let mut r = CaptureReader::with_buffer_size(&w.bytes[..], size).unwrap();
        assert_eq!(read_all(&mut r), expected(&w), "buffer {size}");
    }
}

/// Delivers one byte per `read`, like a slow pipe.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn short_reads_are_refilled() {
    for w in [sample_pcap(true, true), sample_pcapng()] {
        let mut r = CaptureReader::new(Trickle(&w.bytes)).unwrap();
        assert_eq!(read_all(&mut r), expected(&w));
        assert!(r.warnings().is_empty());
    }
}

/// Delivers `good` bytes, then fails.
struct Failing<'a> {
    good: &'a [u8],
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.good.is_empty() {
            return Err(io::Error::other("disk on fire"));
        }
        let n = self.good.len().min(buf.len()).min(7);
        buf[..n].copy_from_slice(&self.good[..n]);
        self.good = &self.good[n..];
        Ok(n)
    }
}

#[test]
fn io_errors_name_the_offset() {
    let w = sample_pcap(false, false);
    let cut = 130;
    let mut r = CaptureReader::with_buffer_size(
        Failing {
            good: &w.bytes[..cut],
        },
        64,
    )
    .unwrap();
    let mut frames = 0;
    let err = loop {
        match r.next_frame() {
            Ok(Some(_)) => frames += 1,
            Ok(None) => panic!("the error must not look like the end"),
            Err(e) => break e,
        }
    };
    assert_eq!(frames, 2, "frames before the failure are returned");
    assert!(
        matches!(err, CaptureError::Io { offset: 130, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "cannot read input at byte 130");
    let source = std::error::Error::source(&err).map(|s| s.to_string());
    assert_eq!(source.as_deref(), Some("disk on fire"));
    assert!(r.next_frame().unwrap().is_none());

    let err = CaptureReader::new(Failing { good: &[] }).unwrap_err();
    assert_eq!(err.to_string(), "cannot read input at byte 0");
}

#[test]
fn open_names_the_path() {
    let path = Path::new("/nonexistent/rocescope/trace.pcap");
    let err = CaptureReader::open(path).unwrap_err();
    let text = err.to_string();
    assert_eq!(text, "cannot open /nonexistent/rocescope/trace.pcap");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn reader_is_send() {
    fn is_send<T: Send>() {}
    is_send::<CaptureReader<std::fs::File>>();
    is_send::<CaptureError>();
}

#[test]
fn link_type_names() {
    assert_eq!(LinkType::ETHERNET.to_string(), "Ethernet (1)");
    assert_eq!(LinkType::LINUX_SLL2.name(), "Linux cooked v2 (SLL2)");
    assert_eq!(LinkType(147).to_string(), "unknown (147)");
    for lt in [
        LinkType::RAW,
        LinkType::LINUX_SLL,
        LinkType::IPV4,
        LinkType::IPV6,
    ] {
        assert_ne!(lt.name(), "unknown");
    }
}

#[test]
fn unknown_link_types_pass_through() {
    let w = PcapWriter::new(false, false, 65535, 147)
        .rec(1, 0, &payload(8, 1), 8)
        .done();
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(read_all(&mut r)[0].linktype, LinkType(147));

    // FCS flags in the upper bits: link type kept, warning given.
    let w = PcapWriter::new(false, false, 65535, 0x1400_0001)
        .rec(1, 0, &payload(8, 1), 8)
        .done();
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(read_all(&mut r)[0].linktype, LinkType::ETHERNET);
    assert_eq!(r.warnings().len(), 1);
    assert!(r.warnings()[0].message.contains("0x14000001"));
}

#[test]
fn warnings_are_capped() {
    // Timestamps in whole seconds near 2^64 s cannot be held in u64 ns: each
    // EPB is clamped with a warning, and only the first 100 are kept.
    let mut w = NgWriter::new().shb(false, &[]).idb(1, 0, &[(9, &[0])]);
    for _ in 0..150 {
        w = w.epb(0, u64::MAX - 1, u64::MAX, &payload(4, 1), &[]);
    }
    let w = w.done();
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(read_all(&mut r), expected(&w));
    let warnings = r.warnings();
    assert_eq!(warnings.len(), MAX_WARNINGS + 1);
    assert!(warnings[0].message.contains("clamped"), "{}", warnings[0]);
    assert_eq!(
        warnings[MAX_WARNINGS].message,
        "50 more warnings were not kept"
    );
}

// ---------------------------------------------------------------- bad input

fn open_err(bytes: &[u8]) -> String {
    CaptureReader::new(bytes).unwrap_err().to_string()
}

#[test]
fn bad_magic_and_short_files() {
    assert_eq!(
        open_err(&[0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0]),
        "not a capture file: unknown magic 0x12345678 at byte 0"
    );
    assert!(open_err(&[0x1f, 0x8b, 8, 0, 0, 0]).contains("gzip"));
    // (A BALBOA sniffer text dump now opens as `SnifferText`: tests/sniffer.rs.)
    assert!(open_err(b"00000000\nnot a dump line\n").contains("looks like text"));
    assert_eq!(
        open_err(&[]),
        "not a capture file: it ends at byte 0, before a 4-byte magic number"
    );
    assert!(open_err(&[0xd4, 0xc3, 0xb2]).contains("ends at byte 3"));
    assert!(open_err(&[0x34, 0xcd, 0xb2, 0xa1, 0, 0]).contains("modified"));
    // A file name says nothing: a pcapng named .pcap is still pcapng, and
    // detection never looks at names (readers from bytes have none).
    let w = sample_pcapng();
    assert_eq!(
        CaptureReader::new(&w.bytes[..]).unwrap().format(),
        CaptureFormat::Pcapng
    );
}

#[test]
fn absurd_caplen_with_more_data_is_an_error() {
    // Record 1 at byte 24 (16 + 48 bytes), then a 4 GB caplen at byte 88
    // followed by more than the limit of data.
    let mut w = PcapWriter::new(false, false, 65535, 1)
        .rec(1, 0, &payload(48, 1), 48)
        .done();
    put32s(&mut w.bytes, false, &[2, 0, u32::MAX, u32::MAX]);
    w.bytes.extend(payload(300_000, 2));
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(own(&r.next_frame().unwrap().unwrap()), w.frames[0].frame);
    let err = r.next_frame().unwrap_err();
    assert_eq!(
        err.to_string(),
        "record at byte 88: caplen 4294967295 exceeds the 262144-byte limit"
    );
    assert!(r.next_frame().unwrap().is_none());
}

#[test]
fn absurd_caplen_in_the_last_bytes_is_a_warning() {
    let mut w = PcapWriter::new(true, false, 65535, 1)
        .rec(1, 0, &payload(48, 1), 48)
        .done();
    put32s(&mut w.bytes, true, &[2, 0, u32::MAX, 60]);
    w.bytes.extend(payload(30, 2));
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(read_all(&mut r), expected(&w));
    assert_eq!(r.warnings().len(), 1);
    let warn = &r.warnings()[0];
    assert_eq!(warn.offset, 88);
    assert!(
        warn.message
            .starts_with("record at byte 88: caplen 4294967295 exceeds the 262144-byte limit"),
        "{warn}"
    );
}

/// A valid pcapng prefix: SHB, one IDB, one EPB; returns it and its length.
fn ng_prefix() -> Written {
    NgWriter::new()
        .shb(false, &[])
        .idb(1, 0, &[])
        .epb(0, 5, 5_000, &payload(20, 1), &[])
        .done()
}

fn ng_error_after_prefix(tail: &[u8]) -> (Written, String) {
    let mut w = ng_prefix();
    w.bytes.extend_from_slice(tail);
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(own(&r.next_frame().unwrap().unwrap()), w.frames[0].frame);
    let err = r.next_frame().unwrap_err().to_string();
    assert!(r.next_frame().unwrap().is_none());
    (w, err)
}

#[test]
fn pcapng_zero_and_short_block_lengths_are_errors() {
    let at = ng_prefix().bytes.len();
    let mut tail = Vec::new();
    put32(&mut tail, false, 6);
    put32(&mut tail, false, 0);
    tail.extend([0; 24]);
    let (_, err) = ng_error_after_prefix(&tail);
    rocescope_testkit::assert_starts_with(
        &err,
        &format!("pcapng block at byte {at}: block length 0 is invalid"),
    );

    // A block's first words, then `zeros` bytes of 0.
    let block = |words: &[u32], zeros: usize| {
        let mut b = Vec::new();
        put32s(&mut b, false, words);
        b.resize(b.len() + zeros, 0);
        b
    };
    for (tail, says) in [
        // Zero length even when the file ends right after it.
        (block(&[6, 0], 0), "block length 0 is invalid"),
        // An EPB too short to hold its header.
        (
            block(&[6, 16, 0, 16], 0),
            "block length 16 is invalid (a pcapng EPB needs at least 32",
        ),
        // Not a multiple of 4.
        (
            block(&[0x99, 13], 8),
            "block length 13 is invalid (not a multiple of 4)",
        ),
    ] {
        let (_, err) = ng_error_after_prefix(&tail);
        assert!(err.contains(says), "{says}: {err}");
    }
}

#[test]
fn pcapng_structural_errors_name_offsets() {
    let at = ng_prefix().bytes.len();

    // Trailer differs from the leading length.
    let mut tail = Vec::new();
    put32s(&mut tail, false, &[0x99, 16, 0, 20]);
    let (_, err) = ng_error_after_prefix(&tail);
    assert_eq!(
        err,
        format!("pcapng block at byte {at}: block length 16 at its start but 20 at its end")
    );

    // An EPB naming interface 3 when only one was declared.
    let w = NgWriter::new()
        .shb(false, &[])
        .idb(1, 0, &[])
        .epb(0, 1, 1_000, &[1, 2], &[]);
    let mut bytes = w.w.bytes.clone();
    let epb_at = w.w.frames[0].frame.file_offset as usize - 28;
    bytes[epb_at + 8] = 3;
    let mut r = CaptureReader::new(&bytes[..]).unwrap();
    assert_eq!(
        r.next_frame().unwrap_err().to_string(),
        format!("pcapng EPB at byte {epb_at} refers to interface 3 but only 1 declared")
    );

    // An EPB whose caplen overruns its block.
    let mut bytes = w.w.bytes.clone();
    bytes[epb_at + 20] = 200;
    let mut r = CaptureReader::new(&bytes[..]).unwrap();
    let err = r.next_frame().unwrap_err().to_string();
    assert_eq!(
        err,
        format!("pcapng EPB at byte {epb_at}: caplen 200 does not fit in its block of 36 bytes")
    );

    // An SPB before any interface.
    let mut w = NgWriter::new().shb(false, &[]);
    w.ifaces.push((1, 0)); // the writer needs one; the file does not have it
    let w = w.spb(4, &[1, 2, 3, 4]).done();
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    let err = r.next_frame().unwrap_err().to_string();
    assert_eq!(
        err,
        "pcapng SPB at byte 28 refers to interface 0 but only 0 declared"
    );

    // A section header with a broken byte-order magic, mid-file.
    let mut w = ng_prefix();
    let shb2 = w.bytes.len();
    let w2 = NgWriter::new().shb(false, &[]).done();
    w.bytes.extend_from_slice(&w2.bytes);
    w.bytes[shb2 + 8] = 0xee;
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    r.next_frame().unwrap().unwrap();
    let err = r.next_frame().unwrap_err().to_string();
    rocescope_testkit::assert_starts_with(
        &err,
        &format!("pcapng section header at byte {shb2}: unknown byte-order"),
    );

    // Version 2 sections do not exist.
    let mut w = NgWriter::new().shb(false, &[]).done();
    w.bytes[12] = 2;
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert!(
        r.next_frame()
            .unwrap_err()
            .to_string()
            .contains("version 2.0")
    );

    // A first SHB too short to be one, and one claiming 100 MB.
    let mut b = Vec::new();
    put32s(&mut b, false, &[0x0a0d_0d0a, 0, 0x1a2b_3c4d]);
    assert!(open_err(&b).starts_with("pcapng block at byte 0: block length 0 is invalid"));
    b[4..8].copy_from_slice(&100_000_000u32.to_le_bytes());
    assert!(open_err(&b).contains("exceeds the 16777216-byte limit"));
}

#[test]
fn pcapng_huge_block_in_the_last_bytes_is_a_warning() {
    let mut w = ng_prefix();
    let at = w.bytes.len();
    put32(&mut w.bytes, false, 6);
    put32(&mut w.bytes, false, 0x7fff_fff0);
    w.bytes.extend(payload(64, 1));
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    assert_eq!(read_all(&mut r), expected(&w));
    assert_eq!(r.warnings().len(), 1);
    assert_eq!(r.warnings()[0].offset, at as u64);
    assert!(
        r.warnings()[0]
            .message
            .contains("exceeds the 16777216-byte limit")
    );
}

// ---------------------------------------------------------------- cuts

/// Cuts `w` at every byte offset and checks that each cut yields exactly
/// the frames before it and a warning naming where the cut record starts.
/// Small buffers exercise refill and growth at every cut; the default buffer
/// (slow to allocate in debug builds) is tried at every 13th cut.
fn check_every_cut(w: &Written) {
    let all = expected(w);
    for cut in 0..=w.bytes.len() {
        let default = if cut % 13 == 0 {
            DEFAULT_BUFFER_BYTES
        } else {
            4096
        };
        for size in [64, default] {
            let input = &w.bytes[..cut];
            let mut r = match CaptureReader::with_buffer_size(input, size) {
                Ok(r) => r,
                Err(e) => {
                    assert!(cut < w.header_end, "cut {cut}: unexpected error {e}");
                    assert!(e.to_string().contains("byte"), "cut {cut}: {e}");
                    continue;
                }
            };
            assert!(
                cut >= w.header_end,
                "cut {cut} inside the header was accepted"
            );
            let mut got = Vec::new();
            loop {
                match r.next_frame() {
                    Ok(Some(f)) => got.push(own(&f)),
                    Ok(None) => break,
                    Err(e) => panic!("cut {cut}, buffer {size}: {e}"),
                }
            }
            assert!(r.next_frame().unwrap().is_none());
            let want: Vec<Owned> = w
                .frames
                .iter()
                .filter(|e| e.end <= cut)
                .map(|e| e.frame.clone())
                .collect();
            assert_eq!(got, want, "cut {cut}, buffer {size}");
            assert!(got.len() <= all.len());
            let start = w
                .bounds
                .iter()
                .copied()
                .filter(|&b| b <= cut)
                .max()
                .unwrap();
            if start == cut {
                assert!(r.warnings().is_empty(), "cut {cut}: {:?}", r.warnings());
            } else {
                assert_eq!(r.warnings().len(), 1, "cut {cut}: {:?}", r.warnings());
                let warning = &r.warnings()[0];
                assert_eq!(warning.offset, start as u64, "cut {cut}");
                assert!(
                    warning.message.contains(&format!("at byte {start}")),
                    "cut {cut}: {warning}"
                );
                assert!(warning.message.contains("cut"), "cut {cut}: {warning}");
            }
            assert_eq!(r.bytes_read(), start as u64, "cut {cut}");
        }
    }
}

#[test]
fn pcap_cut_at_every_byte() {
    check_every_cut(&sample_pcap(false, false));
    check_every_cut(&sample_pcap(true, true));
}

#[test]
fn pcapng_cut_at_every_byte() {
    check_every_cut(&sample_pcapng());
}

// ---------------------------------------------------------------- fuzz

use rocescope_testkit::Rng;

/// Random byte mutations and cuts of valid files. Set
/// `ROCESCOPE_FUZZ_ROUNDS` for a longer run (e.g. 1000000 with `--release`).
#[test]
fn mutated_files_never_panic_or_hang() {
    let seeds = [
        sample_pcap(false, false),
        sample_pcap(true, true),
        sample_pcapng(),
    ];
    let rounds = std::env::var("ROCESCOPE_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut opened, mut frames_seen, mut errors) = (0, 0, 0);
    for round in 0..rounds {
        let mut bytes = seeds[round % seeds.len()].bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            bytes[at] = match rng.below(4) {
                0 => 0,
                1 => 0xff,
                _ => rng.next_u64() as u8,
            };
        }
        if rng.below(4) == 0 {
            bytes.truncate(rng.below(bytes.len() + 1));
        }
        let size = if rng.below(2) == 0 { 64 } else { 4096 };
        let Ok(mut r) = CaptureReader::with_buffer_size(&bytes[..], size) else {
            continue;
        };
        opened += 1;
        let mut frames = 0;
        loop {
            match r.next_frame() {
                Ok(Some(f)) => {
                    assert!(f.data.len() <= bytes.len());
                    frames += 1;
                    assert!(
                        frames <= bytes.len(),
                        "round {round}: more frames than bytes"
                    );
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(e.to_string().contains("byte"), "round {round}: {e}");
                    errors += 1;
                    break;
                }
            }
        }
        frames_seen += frames;
        assert!(r.next_frame().unwrap().is_none());
        assert!(r.bytes_read() <= bytes.len() as u64);
    }
    eprintln!("{rounds} rounds: {opened} opened, {frames_seen} frames, {errors} errors");
    assert!(opened > rounds / 2 && errors > 0 && frames_seen > rounds);
}

// ---------------------------------------------------------------- ordinal

fn ordinal_file(snaplen: u32, linktype: u32, stamps: &[(u32, u32)]) -> Written {
    let mut w = PcapWriter::new(false, false, snaplen, linktype);
    for (i, &(sec, usec)) in stamps.iter().enumerate() {
        w = w.rec(sec, usec, &payload(64, i as u8), 64);
    }
    w.done()
}

fn time_base_of(w: &Written) -> (TimeBase, Vec<u64>) {
    let mut r = CaptureReader::new(&w.bytes[..]).unwrap();
    let base = r.time_base();
    let ts = read_all(&mut r).iter().map(|f| f.ts_ns).collect();
    assert_eq!(r.time_base(), base, "decided before the first frame");
    (base, ts)
}

#[test]
fn ordinal_detection_positive() {
    for base in [0, 1] {
        let stamps: Vec<(u32, u32)> = (0..5).map(|i| (i + base, 0)).collect();
        let w = ordinal_file(65535, 1, &stamps);
        assert_eq!(
            time_base_of(&w),
            (TimeBase::Ordinal, vec![0, 1, 2, 3, 4]),
            "base {base}"
        );
    }
    // Two records are enough.
    let w = ordinal_file(65535, 1, &[(1, 0), (2, 0)]);
    assert_eq!(time_base_of(&w), (TimeBase::Ordinal, vec![0, 1]));
}

#[test]
fn ordinal_detection_negative() {
    let s = 1_000_000_000;
    let cases = [
        ("usec set", 65535, 1, vec![(0, 0), (1, 5), (2, 0)]),
        ("snaplen", 262_144, 1, vec![(0, 0), (1, 0), (2, 0)]),
        ("linktype", 65535, 101, vec![(0, 0), (1, 0), (2, 0)]),
        ("one record", 65535, 1, vec![(1, 0)]),
        ("gap", 65535, 1, vec![(0, 0), (1, 0), (3, 0)]),
        ("base 2", 65535, 1, vec![(2, 0), (3, 0), (4, 0)]),
        ("mixed bases", 65535, 1, vec![(0, 0), (2, 0), (3, 0)]),
    ];
    for (name, snaplen, linktype, stamps) in cases {
        let w = ordinal_file(snaplen, linktype, &stamps);
        let want: Vec<u64> = stamps
            .iter()
            .map(|&(sec, usec)| u64::from(sec) * s + u64::from(usec) * 1_000)
            .collect();
        assert_eq!(time_base_of(&w), (TimeBase::Nanoseconds, want), "{name}");
    }
    let w = sample_pcapng();
    assert_eq!(time_base_of(&w).0, TimeBase::Nanoseconds);
}

#[test]
fn ordinal_broken_later_switches_with_a_warning() {
    // With a tiny buffer the look-ahead sees only the first two records.
    let w = ordinal_file(65535, 1, &[(0, 0), (1, 0), (1_700_000_000, 42), (3, 0)]);
    let mut r = CaptureReader::with_buffer_size(&w.bytes[..], 64).unwrap();
    assert_eq!(r.time_base(), TimeBase::Ordinal);
    assert_eq!(r.next_frame().unwrap().unwrap().ts_ns, 0);
    assert_eq!(r.next_frame().unwrap().unwrap().ts_ns, 1);
    let f = r.next_frame().unwrap().unwrap();
    assert_eq!(f.ts_ns, 1_700_000_000_000_042_000);
    assert_eq!(r.time_base(), TimeBase::Nanoseconds);
    assert_eq!(r.next_frame().unwrap().unwrap().ts_ns, 3_000_000_000);
    assert_eq!(r.warnings().len(), 1);
    let warning = &r.warnings()[0];
    assert_eq!(warning.offset, w.frames[2].frame.file_offset - 16);
    assert!(
        warning.message.contains("breaks the BALBOA pattern"),
        "{warning}"
    );

    // With the default buffer the break is seen before the first frame.
    let (base, _) = time_base_of(&w);
    assert_eq!(base, TimeBase::Nanoseconds);
}

// ---------------------------------------------------------------- real files

fn captures_dir() -> Option<PathBuf> {
    rocescope_testkit::shared_captures()
}

#[test]
fn real_rxe_capture() {
    let Some(dir) = captures_dir() else { return };
    let mut r = CaptureReader::open(&dir.join("rxe-write-read.pcap")).unwrap();
    assert!(matches!(r.format(), CaptureFormat::Pcap { .. }));
    let frames = read_all(&mut r);
    assert_eq!(frames.len(), 12);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    assert_eq!(r.time_base(), TimeBase::Nanoseconds);
    assert_eq!(frames[0].caplen, 322);
    assert_eq!(frames[0].data.len(), 322);
    assert_eq!(frames[0].file_offset, 40);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.index, i as u64);
        assert_eq!(f.linktype, LinkType::ETHERNET);
        assert_eq!(&f.data[12..14], &[0x08, 0x00], "IPv4 EtherType");
        if i > 0 {
            assert!(
                f.ts_ns >= frames[i - 1].ts_ns,
                "file order is time order here"
            );
        }
    }
    let size = std::fs::metadata(dir.join("rxe-write-read.pcap"))
        .unwrap()
        .len();
    assert_eq!(r.bytes_read(), size);
}

#[test]
fn real_cnp_capture() {
    let Some(dir) = captures_dir() else { return };
    let mut r = CaptureReader::open(&dir.join("cx4lx-cnp.pcap")).unwrap();
    let frames = read_all(&mut r);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].caplen, 74);
    assert_eq!(frames[0].linktype, LinkType::ETHERNET);
    assert!(r.warnings().is_empty());
}

// ------------------------------------------------ buffered runs of records

/// Reads `bytes` with runs of `for_each_buffered_frame` (at most `max` a
/// run) and `next_frame` between them; returns the frames, warnings,
/// bytes read and time base, or the error.
fn read_in_runs(bytes: &[u8], size: usize, max: usize) -> Result<ReadOut, String> {
    let mut r = CaptureReader::with_buffer_size(bytes, size).map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut bases = Vec::new();
    loop {
        let n = r.for_each_buffered_frame(max, |f| got.push(own_all(f)));
        if n > 0 {
            assert!(n <= max);
            bases.push((got.len(), r.time_base(), r.bytes_read()));
            continue;
        }
        match r.next_frame() {
            Ok(Some(f)) => got.push(own_all(&f)),
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        }
        bases.push((got.len(), r.time_base(), r.bytes_read()));
    }
    assert!(r.next_frame().unwrap().is_none());
    assert_eq!(
        r.for_each_buffered_frame(max, |_| panic!("after the end")),
        0
    );
    Ok(read_out(&r, got, bases))
}

/// A frame read, with its port and direction.
type OwnedAll = (
    Owned,
    Option<u8>,
    Option<rocescope_replay::record::Direction>,
);

/// A frame with its port and direction too.
fn own_all(f: &CaptureFrame<'_>) -> OwnedAll {
    (own(f), f.port, f.direction)
}

type ReadOut = (
    Vec<OwnedAll>,
    Vec<rocescope_replay::capture::CaptureWarning>,
    u64,
    TimeBase,
    Vec<(usize, TimeBase, u64)>,
);

/// The same, one `next_frame` at a time, noting the time base and bytes
/// read after each frame.
fn read_one_by_one(bytes: &[u8], size: usize) -> Result<ReadOut, String> {
    let mut r = CaptureReader::with_buffer_size(bytes, size).map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut bases = Vec::new();
    loop {
        match r.next_frame() {
            Ok(Some(f)) => got.push(own_all(&f)),
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        }
        bases.push((got.len(), r.time_base(), r.bytes_read()));
    }
    Ok(read_out(&r, got, bases))
}

/// What a reader read (`got`, the time bases as it went), with its
/// warnings, bytes read and final time base.
fn read_out<R: std::io::Read>(
    r: &CaptureReader<R>,
    got: Vec<OwnedAll>,
    bases: Vec<(usize, TimeBase, u64)>,
) -> ReadOut {
    (
        got,
        r.warnings().to_vec(),
        r.bytes_read(),
        r.time_base(),
        bases,
    )
}

#[test]
fn buffered_runs_give_what_next_frame_gives() {
    let broken = ordinal_file(
        65535,
        1,
        &[(0, 0), (1, 0), (2, 0), (1_700_000_000, 42), (4, 0)],
    );
    let balboa = ordinal_file(65535, 1, &[(1, 0), (2, 0), (3, 0), (4, 0)]);
    // EPBs with direction flags, and one whose option overruns its block
    // (a warning: the run leaves it to `next_frame`).
    let mut bad_opts = Vec::new();
    for v in [0u32, 0, 0, 4, 4] {
        bad_opts.extend_from_slice(&v.to_le_bytes());
    }
    bad_opts.extend_from_slice(&[1, 2, 3, 4]);
    bad_opts.extend_from_slice(&2u16.to_le_bytes());
    bad_opts.extend_from_slice(&40u16.to_le_bytes());
    bad_opts.extend_from_slice(&[0; 4]);
    let flagged = NgWriter::new()
        .shb(false, &[])
        .idb(1, 0, &[])
        .idb(1, 0, &[])
        .epb(0, 1, 1_000, &payload(20, 1), &[(2, &1u32.to_le_bytes())])
        .epb(0, 2, 2_000, &payload(21, 2), &[(2, &2u32.to_le_bytes())])
        .other(6, &bad_opts)
        .epb(0, 3, 3_000, &payload(22, 3), &[(2, &3u32.to_le_bytes())])
        .epb(1, 4, 4_000, &payload(23, 4), &[])
        .done();
    // A big-endian section (ns, binary and offset resolutions; the flags
    // alone, beside a comment, after one, neither way; a timestamp that
    // does not fit, which warns), then a little-endian one; and a block
    // whose trailer disagrees (an error).
    let be_flags = 1u32.to_be_bytes();
    let be_out = 2u32.to_be_bytes();
    let be_both = 3u32.to_be_bytes();
    let offset = 7i64.to_be_bytes();
    let sections = NgWriter::new()
        .shb(true, &[])
        .idb(1, 0, &[(9, &[9])])
        .idb(1, 0, &[(9, &[0x80 | 20])])
        .idb(1, 0, &[(14, &offset)])
        .epb(0, 5, 5, &payload(30, 1), &[(2, &be_flags)])
        .epb(0, 6, 6, &payload(31, 2), &[(2, &be_out), (1, b"note")])
        .epb(
            1,
            1 << 20,
            1_000_000_000,
            &payload(32, 3),
            &[(1, b"x"), (2, &be_flags)],
        )
        .epb(2, 8, 7_000_008_000, &payload(33, 4), &[(2, &be_both)])
        .epb(0, 9, 9, &payload(34, 5), &[])
        .epb(2, u64::MAX, 0, &payload(35, 6), &[(2, &be_out)])
        .epb(0, 10, 10, &payload(36, 7), &[(2, &be_out)])
        .shb(false, &[])
        .idb(1, 0, &[(9, &[9])])
        .epb(0, 11, 11, &payload(37, 8), &[(2, &2u32.to_le_bytes())])
        .epb(0, 12, 12, &payload(38, 9), &[(2, &1u32.to_le_bytes())])
        .done();
    let mut bad_trailer = NgWriter::new()
        .shb(false, &[])
        .idb(1, 0, &[])
        .epb(0, 1, 1_000, &payload(20, 1), &[(2, &1u32.to_le_bytes())])
        .epb(0, 2, 2_000, &payload(21, 2), &[])
        .epb(0, 3, 3_000, &payload(22, 3), &[])
        .done();
    let second_end = bad_trailer.bounds[bad_trailer.bounds.len() - 2];
    bad_trailer.bytes[second_end - 4] ^= 4;
    let (frames, warnings, ..) = read_one_by_one(&sections.bytes, 4096).unwrap();
    assert_eq!(frames.len(), 9);
    assert!(frames[1].2 == Some(rocescope_replay::record::Direction::Tx));
    assert!(frames[2].2 == Some(rocescope_replay::record::Direction::Rx));
    assert!(frames[3].2.is_none() && frames[4].2.is_none());
    assert!(frames[8].2 == Some(rocescope_replay::record::Direction::Rx));
    assert!(
        warnings.iter().any(|w| w.message.contains("clamped")),
        "{warnings:?}"
    );
    assert!(read_one_by_one(&bad_trailer.bytes, 4096).is_err());
    let files = [
        flagged,
        sections,
        bad_trailer,
        sample_pcap(false, false),
        sample_pcap(true, true),
        sample_pcap(false, true),
        broken,
        balboa,
        sample_pcapng(),
    ];
    let (frames, warnings, ..) = read_one_by_one(&files[0].bytes, 4096).unwrap();
    assert_eq!(frames.len(), 5);
    assert!(frames[0].2 == Some(rocescope_replay::record::Direction::Rx));
    assert!(frames[1].2 == Some(rocescope_replay::record::Direction::Tx));
    assert!(warnings.iter().any(|w| w.message.contains("overruns")));
    for w in &files {
        for cut in 0..=w.bytes.len() {
            let input = &w.bytes[..cut];
            for size in [64, 100, 4096] {
                let plain = read_one_by_one(input, size);
                for max in [1, 2, 3, usize::MAX] {
                    let runs = read_in_runs(input, size, max);
                    match (&plain, &runs) {
                        (Ok(p), Ok(r)) => {
                            assert_eq!(p.0, r.0, "cut {cut}, buffer {size}, runs of {max}");
                            assert_eq!(p.1, r.1, "cut {cut}, buffer {size}, runs of {max}");
                            assert_eq!(p.2, r.2, "cut {cut}, buffer {size}, runs of {max}");
                            assert_eq!(p.3, r.3, "cut {cut}, buffer {size}, runs of {max}");
                            // After each run, what one-by-one reading says
                            // after the same frame.
                            for &(n, base, read) in &r.4 {
                                let at = p.4.iter().find(|b| b.0 == n);
                                assert_eq!(at, Some(&(n, base, read)), "cut {cut}, frame {n}");
                            }
                        }
                        (Err(p), Err(r)) => assert_eq!(p, r, "cut {cut}"),
                        _ => panic!("cut {cut}, buffer {size}: {plain:?} vs {runs:?}"),
                    }
                }
            }
        }
    }
}

/// A pipe is told for what it is without being opened (opening one that
/// nobody writes to waits forever), as are a folder and `-`.
#[cfg(unix)]
#[test]
fn a_pipe_is_told_without_opening_it() {
    use rocescope_replay::NotAFile;
    let dir = rocescope_testkit::temp_dir("capture-pipe");
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // On a thread: a regression hangs there, and the test fails by the
    // channel's timeout rather than hanging the suite.
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let opened = CaptureReader::open(&path).err().map(|e| e.to_string());
        let wave = rocescope_replay::wave::detect(&path);
        let _ = tx.send((opened, wave));
    });
    let (opened, wave) = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("opening a pipe returns");
    let opened = opened.expect("a pipe is an error");
    assert!(opened.starts_with("a pipe, not a file: "), "{opened}");
    assert!(opened.contains("rocescope attach -"), "{opened}");
    assert_eq!(wave, None);
    assert_eq!(NotAFile::of(&fifo), Some(NotAFile::Pipe));
    assert_eq!(NotAFile::of(dir.path()), Some(NotAFile::Folder));
    assert_eq!(
        NotAFile::of(std::path::Path::new("-")),
        Some(NotAFile::StandardInput)
    );
    assert_eq!(NotAFile::of(Path::new("/dev/null")), Some(NotAFile::Device));
    // A missing file is the open's to tell (it names the path).
    assert_eq!(NotAFile::of(&dir.path().join("nosuch.pcap")), None);
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/captures/sample-write-read.pcap"
    );
    assert_eq!(NotAFile::of(Path::new(sample)), None);
}
