//! Bounded text lines: [`LineReader`].

use super::*;

/// One line read by [`LineReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A complete line, `\n` removed.
    Text(Vec<u8>),
    /// A line over the limit (its bytes were discarded up to the `\n`).
    TooLong(usize),
    /// The stream ended (a last line without `\n` is returned first as
    /// `Cut`).
    Eof,
    /// The stream ended inside a line of this many bytes.
    Cut(usize),
}

/// Reads `\n`-terminated lines of at most [`MAX_LINE_BYTES`], holding
/// never more than that (plus its read buffer) in memory.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    max: usize,
}

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    pub fn with_limit(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: vec![0; 4096].into_boxed_slice(),
            start: 0,
            end: 0,
            max,
        }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The next line. Read timeouts of the inner reader surface as errors
    /// (the caller decides whether to retry; the partial line is kept).
    pub fn next_line(&mut self) -> io::Result<Line> {
        let mut line: Vec<u8> = Vec::new();
        let mut over = 0usize;
        loop {
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
                let k = loop {
                    match self.inner.read(&mut self.buf) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        r => break r?,
                    }
                };
                if k == 0 {
                    return Ok(if line.is_empty() && over == 0 {
                        Line::Eof
                    } else {
                        Line::Cut(line.len() + over)
                    });
                }
                self.end = k.min(self.buf.len());
            }
            let chunk = &self.buf[self.start..self.end];
            let (part, found) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], Some(i)),
                None => (chunk, None),
            };
            if over == 0 && line.len() + part.len() <= self.max + 1 {
                line.extend_from_slice(part);
            } else {
                over += part.len() + line.len();
                line.clear();
            }
            self.start += part.len() + usize::from(found.is_some());
            if found.is_some() {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if over > 0 || line.len() > self.max {
                    return Ok(Line::TooLong(over + line.len()));
                }
                return Ok(Line::Text(line));
            }
        }
    }
}
