//! Byte supply for pcap-parser's streaming readers.
//!
//! pcap-parser owns the `Read` it is given, turns every I/O error into a bare
//! `ReadError`, and its `refill` calls `read` only once. [`Source`] parks the
//! real `io::Error` where [`Input`] can report it with the path and offset;
//! [`Input::fill_to`] refills until a whole record is buffered, so short reads
//! from pipes are fine. [`Input`] also keeps the file offset, defers
//! consumption while a frame is lent out, and grows the buffer only when a
//! record really needs it.

use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use pcap_parser::PcapError;
use pcap_parser::traits::PcapReaderIterator;

use super::CaptureError;

/// Where [`Source`] parks the last I/O error for [`Input`] to report.
pub(crate) type ErrorSlot = Arc<Mutex<Option<io::Error>>>;

/// A `Read` that first replays the bytes used to detect the format, then
/// reads from the inner reader.
///
/// One inner `read` per call (no looping until the buffer is full): a live
/// pipe then delivers frames as soon as they arrive, and [`Input::fill_to`]
/// loops until a record is complete.
pub(crate) struct Source<R> {
    prefix: Vec<u8>,
    prefix_pos: usize,
    inner: R,
    slot: ErrorSlot,
}

impl<R: Read> Source<R> {
    pub(crate) fn new(prefix: Vec<u8>, inner: R, slot: ErrorSlot) -> Self {
        Self {
            prefix,
            prefix_pos: 0,
            inner,
            slot,
        }
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.prefix_pos < self.prefix.len() {
            let k = (self.prefix.len() - self.prefix_pos).min(buf.len());
            buf[..k].copy_from_slice(&self.prefix[self.prefix_pos..self.prefix_pos + k]);
            self.prefix_pos += k;
            if self.prefix_pos == self.prefix.len() {
                self.prefix = Vec::new();
                self.prefix_pos = 0;
            }
            return Ok(k);
        }
        loop {
            match self.inner.read(buf) {
                // A misbehaving reader may claim more than it was offered.
                Ok(k) => return Ok(k.min(buf.len())),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let summary = io::Error::new(e.kind(), e.to_string());
                    if let Ok(mut slot) = self.slot.lock() {
                        *slot = Some(e);
                    }
                    return Err(summary);
                }
            }
        }
    }
}

/// What both formats need to start reading: the bytes already read to
/// detect the format, the rest of the input, and how to name it in errors.
pub(crate) struct Start<R> {
    pub(crate) prefix: Vec<u8>,
    pub(crate) reader: R,
    pub(crate) name: String,
    pub(crate) slot: ErrorSlot,
    pub(crate) buffer_bytes: usize,
}

impl<R: Read> Start<R> {
    pub(crate) fn new(prefix: Vec<u8>, reader: R, name: String, buffer_bytes: usize) -> Self {
        Self {
            prefix,
            reader,
            name,
            slot: ErrorSlot::default(),
            buffer_bytes,
        }
    }

    /// The pieces, with the prefix replayed ahead of the reader.
    pub(crate) fn into_source(self) -> (Source<R>, String, ErrorSlot, usize) {
        let source = Source::new(self.prefix, self.reader, self.slot.clone());
        (source, self.name, self.slot, self.buffer_bytes)
    }
}

/// A pcap-parser streaming reader plus the file position it stands at.
///
/// `data()[0]` is the byte at file offset `pos`. The bytes of the frame last
/// lent out stay in the buffer (`pending`) until the next call, because the
/// frame borrows them.
pub(crate) struct Input<P> {
    pub(crate) rd: P,
    cap: usize,
    pub(crate) pending: usize,
    pub(crate) pos: u64,
    name: String,
    slot: ErrorSlot,
}

impl<P: PcapReaderIterator> Input<P> {
    pub(crate) fn new(rd: P, cap: usize, name: String, slot: ErrorSlot) -> Self {
        Self {
            rd,
            cap,
            pending: 0,
            pos: 0,
            name,
            slot,
        }
    }

    /// Releases the bytes of the last lent frame or skipped block.
    ///
    /// Uses `consume_noshift`: the buffer is compacted only by `refill`, when
    /// more data is needed, instead of on every half-buffer crossing.
    pub(crate) fn settle(&mut self) {
        if self.pending > 0 {
            self.rd.consume_noshift(self.pending);
            self.pos += self.pending as u64;
            self.pending = 0;
        }
    }

    /// The buffered bytes, starting at file offset `pos`.
    pub(crate) fn data(&self) -> &[u8] {
        self.rd.data()
    }

    /// File offset just past the last frame or block handed out.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.pos + self.pending as u64
    }

    /// Makes at least `n` bytes available from `pos`; `Ok(false)` if the
    /// input ends first (then `data()` holds everything up to the end).
    ///
    /// The buffer grows only while it is full of real data and still too
    /// small, at most doubling each time, so a header that lies about its
    /// length cannot make us allocate much more than the input holds.
    #[inline]
    pub(crate) fn fill_to(&mut self, n: usize) -> Result<bool, CaptureError> {
        loop {
            let have = self.rd.data().len();
            if have >= n {
                return Ok(true);
            }
            if self.rd.reader_exhausted() {
                return Ok(false);
            }
            if n > self.cap && have >= self.cap {
                let new_cap = n.min(self.cap.saturating_mul(2));
                self.rd.grow(new_cap);
                self.cap = new_cap;
            }
            if self.rd.refill().is_err() {
                return Err(self.io_error(have));
            }
        }
    }

    /// The parked I/O error, reported at the offset of the failed read.
    pub(crate) fn io_error(&self, buffered: usize) -> CaptureError {
        let source = self
            .slot
            .lock()
            .ok()
            .and_then(|mut slot| slot.take())
            .unwrap_or_else(|| io::Error::other("read failed"));
        CaptureError::Io {
            name: self.name.clone(),
            offset: self.pos + buffered as u64,
            source,
        }
    }
}

/// A one-line description of a pcap-parser error, without the input bytes
/// that its `Display` would dump.
pub(crate) fn describe<I>(e: &PcapError<I>) -> String {
    match e {
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
            format!("pcap-parser could not parse it ({kind:?})")
        }
        PcapError::Eof => "pcap-parser hit the end of the input".to_owned(),
        PcapError::UnexpectedEof | PcapError::Incomplete(_) => {
            "pcap-parser found it incomplete".to_owned()
        }
        PcapError::BufferTooSmall => "pcap-parser's buffer is too small for it".to_owned(),
        PcapError::ReadError => "read error".to_owned(),
        PcapError::HeaderNotRecognized => "pcap-parser did not recognise the header".to_owned(),
    }
}
