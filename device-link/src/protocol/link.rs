//! The in-band block codec, the token comparison, and [`LinkReader`], which
//! splits the control blocks off the pcapng bytes.

use super::*;

/// A do-not-copy custom block carrying `text` (at most
/// [`MAX_MESSAGE_BYTES`], longer is cut).
pub fn encode_link_block(ts_ns: u64, text: &[u8], out: &mut Vec<u8>) {
    let text = &text[..text.len().min(MAX_MESSAGE_BYTES)];
    let pad = (4 - text.len() % 4) % 4;
    let total = (LINK_HEAD_BYTES + text.len() + pad + 4) as u32;
    out.extend_from_slice(&LINK_BLOCK_TYPE.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&ROCESCOPE_PEN.to_le_bytes());
    out.extend_from_slice(&LINK_MESSAGE_CODE.to_le_bytes());
    out.push(LINK_MESSAGE_VERSION);
    out.push(0);
    out.extend_from_slice(&ts_ns.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text);
    out.extend_from_slice(&[0; 3][..pad]);
    out.extend_from_slice(&total.to_le_bytes());
}

/// The text of an in-band block, if `block` (a whole block) is one.
pub(crate) fn decode_link_block(block: &[u8]) -> Option<&[u8]> {
    if block.len() < LINK_HEAD_BYTES {
        return None;
    }
    if u32_at(block, 0, false) != LINK_BLOCK_TYPE || u32_at(block, 8, false) != ROCESCOPE_PEN {
        return None;
    }
    let code = u16_at(block, 12, false);
    if code != LINK_MESSAGE_CODE || *block.get(14)? != LINK_MESSAGE_VERSION {
        return None;
    }
    let n = u32_at(block, 24, false) as usize;
    let end = LINK_HEAD_BYTES.checked_add(n)?;
    if n > MAX_MESSAGE_BYTES || end + 4 > block.len() {
        return None;
    }
    block.get(LINK_HEAD_BYTES..end)
}

/// Compares a presented token with the expected one in time that depends
/// on neither's content (only on the fixed [`MAX_TOKEN_BYTES`]).
pub fn token_matches(presented: &[u8], expected: &[u8]) -> bool {
    let mut diff: u32 = u32::from(presented.len() != expected.len())
        | u32::from(presented.len() > MAX_TOKEN_BYTES)
        | u32::from(expected.is_empty());
    for i in 0..MAX_TOKEN_BYTES {
        let a = presented.get(i).copied().unwrap_or(0);
        let b = expected.get(i).copied().unwrap_or(0);
        diff |= u32::from(std::hint::black_box(a ^ b));
    }
    std::hint::black_box(diff) == 0
}

/// What a [`LinkReader`] tells its owner.
pub trait LinkEvents {
    /// Just before a read from the underlying stream that may block: hand
    /// on what was read so far.
    fn before_read(&mut self) {}
    /// An in-band message (text, not yet parsed).
    fn message(&mut self, _text: &str) {}
    /// The underlying read timed out (no bytes for a while). Return an
    /// error to stop reading (it surfaces from `read`).
    fn idle(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Bytes arrived.
    fn received(&mut self, _bytes: usize) {}
}

/// Nothing to report to.
#[derive(Debug, Default)]
pub struct NoEvents;
impl LinkEvents for NoEvents {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Split {
    /// At the start of the stream: look at the first block.
    Start,
    /// At a block boundary.
    Boundary,
    /// Inside a block: this many bytes to pass on.
    Pass(usize),
    /// Not our pcapng (classic pcap, big-endian, damaged): pass everything.
    Raw,
}

/// Reads a stream, passes its pcapng bytes on and takes the in-band
/// control blocks out (handing them to [`LinkEvents::message`]). With
/// `demux` false (stdin, files) it only passes through and reports.
///
/// Read timeouts (`WouldBlock`/`TimedOut`) of the underlying stream call
/// [`LinkEvents::idle`] and are retried, so a socket with a read timeout
/// or a followed file can sit under a `CaptureReader`.
#[derive(Debug)]
pub struct LinkReader<R, E> {
    inner: R,
    pub events: E,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    split: Split,
}

pub(super) const LINK_BUFFER_BYTES: usize = 256 * 1024;

impl<R: Read, E: LinkEvents> LinkReader<R, E> {
    pub fn new(inner: R, events: E, demux: bool) -> Self {
        LinkReader {
            inner,
            events,
            buf: vec![0; LINK_BUFFER_BYTES],
            start: 0,
            end: 0,
            eof: false,
            split: if demux { Split::Start } else { Split::Raw },
        }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    fn avail(&self) -> usize {
        self.end - self.start
    }

    /// One read from the underlying stream into the buffer; false at EOF.
    fn fill_once(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        self.events.before_read();
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(k) => {
                    let k = k.min(self.buf.len() - self.end);
                    self.end += k;
                    self.events.received(k);
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.events.idle()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Makes `n` bytes available (n <= buffer); false if the stream ends.
    fn ensure(&mut self, n: usize) -> io::Result<bool> {
        if self.start + n > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.avail() < n {
            if !self.fill_once()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn u32_at(&self, i: usize) -> u32 {
        u32_at(&self.buf, self.start + i, false)
    }

    fn pass(&mut self, out: &mut [u8], limit: usize) -> io::Result<usize> {
        if self.avail() == 0 && !self.fill_once()? {
            return Ok(0);
        }
        let k = self.avail().min(out.len()).min(limit);
        out[..k].copy_from_slice(&self.buf[self.start..self.start + k]);
        self.start += k;
        Ok(k)
    }
}

impl<R: Read, E: LinkEvents> Read for LinkReader<R, E> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            match self.split {
                Split::Raw => return self.pass(out, usize::MAX),
                Split::Pass(n) if n > 0 => {
                    let k = self.pass(out, n)?;
                    self.split = Split::Pass(n - k);
                    return Ok(k);
                }
                Split::Start => {
                    if !self.ensure(12)? {
                        self.split = Split::Raw;
                        continue;
                    }
                    // Our stream: little-endian pcapng.
                    let ours = self.u32_at(0) == SHB_TYPE && self.u32_at(8) == BOM;
                    self.split = if ours { Split::Boundary } else { Split::Raw };
                }
                Split::Boundary | Split::Pass(_) => {
                    if !self.ensure(8)? {
                        self.split = Split::Raw;
                        continue;
                    }
                    let ty = self.u32_at(0);
                    let len = self.u32_at(4) as usize;
                    if len < 12 || !len.is_multiple_of(4) {
                        // Damaged: let the capture reader report it.
                        self.split = Split::Raw;
                        continue;
                    }
                    if ty == LINK_BLOCK_TYPE && len <= MAX_LINK_BLOCK_BYTES {
                        if !self.ensure(len)? {
                            self.split = Split::Raw;
                            continue;
                        }
                        let block = &self.buf[self.start..self.start + len];
                        if let Some(text) = decode_link_block(block) {
                            let text = String::from_utf8_lossy(text).into_owned();
                            self.start += len;
                            self.events.message(&text);
                            continue;
                        }
                    }
                    self.split = Split::Pass(len);
                }
            }
        }
    }
}
