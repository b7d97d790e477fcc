//! Frames made into rows on one thread and appended on another: in the
//! live simulator's pipeline the simulator's thread, when it would wait,
//! decodes (or takes the rows from the fields) and keeps the bytes, and the
//! ingest thread only appends ([`Store::append_staged`]), in the cuts
//! [`Store::ingest`] then [`Store::flush_live`] would have made. The store
//! and the analysis come out the same; the decoding and the bytes' copying
//! leave the ingest thread when it is the busier one.

use std::ops::Range;

use super::{
    BATCH_ROWS, Backing, DecodeConfig, Decoded, Ingest, IngestFrame, Inner, RoceV4Fields, Store,
    decode_onto,
};

/// Rows and their bytes, back to back, waiting to be appended in cuts.
#[derive(Debug, Default)]
pub struct Staged {
    cfg: DecodeConfig,
    decoded: Decoded,
    bytes: Vec<u8>,
    /// Each port's link type, as first seen (the store notes them).
    links: Vec<(u8, u32)>,
    /// Where the part not yet cut starts: rows, bytes.
    cut_at: (usize, usize),
}

/// Rows of a [`Staged`] and their bytes, appended in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    rows: Range<usize>,
    bytes: Range<usize>,
}

impl Staged {
    /// Frames decoded with `cfg`: the settings of the [`Ingest`] that
    /// appends them.
    pub fn new(cfg: DecodeConfig) -> Staged {
        Staged {
            cfg,
            ..Staged::default()
        }
    }

    /// Decode `f` (its `file_offset` not read), keeping its bytes.
    #[inline]
    pub fn push(&mut self, f: &IngestFrame<'_>) {
        let at = self.keep(f);
        decode_onto(
            &mut self.decoded,
            &self.cfg,
            &IngestFrame {
                file_offset: at,
                ..*f
            },
        );
    }

    /// [`Staged::push`] for a header-only RoCEv2 frame written from
    /// `fields` (a simulator's capture): its row taken from them, not
    /// decoded; debug builds check it against the decoder.
    #[inline]
    pub fn push_roce_v4(&mut self, f: &IngestFrame<'_>, fields: &RoceV4Fields) {
        let at = self.keep(f);
        let f = IngestFrame {
            file_offset: at,
            ..*f
        };
        self.decoded.rows.push(super::PacketInfo::default());
        if let Some(slot) = self.decoded.rows.last_mut() {
            super::fast::row_of_fields(&f, fields, slot);
            debug_assert_eq!(
                *slot,
                super::decode_frame(&self.cfg, &f).rows[0],
                "a frame not as its fields say: {fields:?}"
            );
        }
    }

    fn keep(&mut self, f: &IngestFrame<'_>) -> u64 {
        if !self.links.iter().any(|&(p, _)| p == f.port) {
            self.links.push((f.port, f.linktype));
        }
        let at = self.bytes.len() as u64;
        self.bytes.extend_from_slice(f.data);
        at
    }

    /// Rows not yet cut.
    pub fn uncut(&self) -> usize {
        self.decoded.rows.len() - self.cut_at.0
    }

    /// As [`Store::ingest`] publishes: the uncut rows are due once they
    /// are a live batch.
    pub fn cut_due(&self) -> bool {
        self.uncut() >= BATCH_ROWS
    }

    /// The rows since the last cut (perhaps none), to append as one.
    pub fn cut(&mut self) -> Cut {
        let end = (self.decoded.rows.len(), self.bytes.len());
        let cut = Cut {
            rows: self.cut_at.0..end.0,
            bytes: self.cut_at.1..end.1,
        };
        self.cut_at = end;
        cut
    }

    /// Empty, for reuse (its room kept).
    pub fn clear(&mut self) {
        self.decoded.clear();
        self.bytes.clear();
        self.cut_at = (0, 0);
    }
}

impl Store {
    /// Appends a cut of `staged` as [`Store::flush_live`] appends what
    /// [`Store::ingest`] fed it: the bytes kept, the rows analysed and
    /// published. `ingest` has nothing pending (it only appends cuts).
    pub fn append_staged(&self, ingest: &mut Ingest, staged: &mut Staged, cut: Cut) {
        debug_assert!(ingest.pending() == 0 && ingest.kept_bytes().is_empty());
        debug_assert!(ingest.config() == &staged.cfg);
        for &(port, linktype) in &staged.links {
            if ingest.noted.first_time(port) {
                self.note_link(port, linktype);
            }
        }
        let rows = staged.decoded.rows.get_mut(cut.rows).unwrap_or_default();
        let bytes = staged.bytes.get(cut.bytes.clone()).unwrap_or_default();
        if let Backing::Memory(mem) = &self.backing
            && !bytes.is_empty()
        {
            let base = mem.write().unwrap_or_else(|e| e.into_inner()).append(bytes);
            // The cut's offsets were from the staged bytes' start.
            let from = cut.bytes.start as u64;
            for info in rows.iter_mut() {
                info.row.file_offset = info.row.file_offset - from + base;
            }
        }
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if inner.decode != staged.cfg {
            inner.decode = staged.cfg.clone();
        }
        let Inner {
            cols, convs, stats, ..
        } = &mut *inner;
        ingest.append_in_place(rows, &staged.decoded.wide, cols, convs, stats);
        drop(inner);
        self.bound();
    }
}
