//! Reading frames back in bulk: exports and re-decoding walk many rows, and
//! one positioned read per row would cost a system call per packet.

use std::ops::{ControlFlow, Range};

use rocescope_decoders::LinkLayer;

use super::{Backing, Row, Store, StoreError, read_exact_at};

/// Rows fetched from the columns per step.
const ROWS_PER_STEP: usize = 4096;
/// At most this many file bytes are read at once.
const READ_SPAN_BYTES: u64 = 4 << 20;

/// The ports an ingest path has told the store about, so that the store's
/// link table is locked once per port, not once per frame.
#[derive(Debug, Clone, Default)]
pub(crate) struct NotedPorts([u64; 4]);

impl NotedPorts {
    /// True the first time `port` is seen.
    #[inline]
    pub(crate) fn first_time(&mut self, port: u8) -> bool {
        let (word, bit) = (usize::from(port >> 6), 1u64 << (port & 63));
        let first = self.0[word] & bit == 0;
        self.0[word] |= bit;
        first
    }
}

impl Store {
    /// Remember that frames of `port` carry `linktype` (first one wins).
    pub(super) fn note_link(&self, port: u8, linktype: u32) {
        let mut links = self.links.write().unwrap_or_else(|e| e.into_inner());
        if !links.iter().any(|&(p, _)| p == port) {
            links.push((port, linktype));
        }
    }

    /// How the frames of a capture port are framed, `None` when the port's
    /// link type is one rocescope does not decode. Ports never seen are
    /// taken as Ethernet (live sources and sniffer dumps).
    pub fn link_layer(&self, port: u8) -> Option<LinkLayer> {
        let links = self.links.read().unwrap_or_else(|e| e.into_inner());
        match links.iter().find(|&&(p, _)| p == port) {
            Some(&(_, linktype)) => LinkLayer::from_linktype(linktype),
            None => Some(LinkLayer::Ethernet),
        }
    }

    /// Visit the rows in `range` with their captured bytes, in row order,
    /// reading the backing in spans of up to 4 MiB. Stops early when `visit`
    /// breaks.
    pub fn for_each_frame(
        &self,
        range: Range<u64>,
        mut visit: impl FnMut(u64, &Row, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let end = range.end.min(self.len());
        let mut rows = Vec::with_capacity(ROWS_PER_STEP);
        let mut buf: Vec<u8> = Vec::new();
        let mut at = range.start;
        while at < end {
            let step_end = end.min(at + ROWS_PER_STEP as u64);
            rows.clear();
            self.rows(at..step_end, &mut rows);
            let mut i = 0;
            while i < rows.len() {
                // The longest run of rows whose bytes fit one read span.
                let lo = rows[i].file_offset;
                let mut hi = lo + u64::from(rows[i].caplen);
                let mut j = i + 1;
                while j < rows.len() {
                    let r = &rows[j];
                    let r_end = r.file_offset + u64::from(r.caplen);
                    if r.file_offset < lo || r_end - lo > READ_SPAN_BYTES {
                        break;
                    }
                    hi = hi.max(r_end);
                    j += 1;
                }
                let index0 = at + i as u64;
                let flow = self.read_span(index0, lo, hi, &mut buf, |buf| {
                    for (k, row) in rows[i..j].iter().enumerate() {
                        let s = (row.file_offset - lo) as usize;
                        let bytes = buf.get(s..s + row.caplen as usize).unwrap_or(&[]);
                        visit(index0 + k as u64, row, bytes)?;
                    }
                    ControlFlow::Continue(())
                })?;
                if flow.is_break() {
                    return Ok(());
                }
                i = j;
            }
            at = step_end;
        }
        Ok(())
    }

    /// Bytes `lo..hi` of the backing, handed to `f`.
    fn read_span(
        &self,
        row: u64,
        lo: u64,
        hi: u64,
        buf: &mut Vec<u8>,
        f: impl FnOnce(&[u8]) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, StoreError> {
        match &self.backing {
            Backing::File { file, path } => {
                buf.resize((hi - lo) as usize, 0);
                read_exact_at(file, buf, lo).map_err(|source| StoreError::Read {
                    row,
                    offset: lo,
                    path: path.display().to_string(),
                    source,
                })?;
                Ok(f(buf))
            }
            Backing::Memory(mem) => {
                // Copied out, the lock let go before `f` runs: `f` may wait
                // (an export's workers hand batches over a channel), and a
                // writer waiting on the lock (the ingest appending) would
                // then hold off every other reader: the export deadlocked.
                buf.resize((hi - lo) as usize, 0);
                {
                    let mem = mem.read().unwrap_or_else(|e| e.into_inner());
                    match mem.slice(lo, hi) {
                        Some(bytes) => buf.copy_from_slice(bytes),
                        None => mem
                            .read(lo, buf)
                            .map_err(|e| self.bytes_error(row, lo, e))?,
                    }
                }
                Ok(f(buf))
            }
        }
    }
}
