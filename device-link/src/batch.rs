//! [`Batch`]: records moved between threads in groups, frame bytes in one
//! arena, so a live link allocates per batch and not per frame.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{Decoded, IngestFrame, decode_onto};
use rocescope_replay::{CaptureFrame, Direction, Record};

/// Where a frame's bytes sit in [`Batch::bytes`] and what else it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    pub ts_ns: u64,
    pub orig_len: u32,
    pub port: u8,
    pub direction: Option<Direction>,
    start: u32,
    len: u32,
}

impl FrameMeta {
    /// Where the frame's bytes start in [`Batch::bytes`].
    pub fn start(&self) -> usize {
        self.start as usize
    }
}

/// One entry of a batch, in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A frame; its bytes are in [`Batch::bytes`].
    Frame(FrameMeta),
    /// Any non-frame record (boxed: frames are most items, and a frame's
    /// entry is then 32 bytes, not the 80 of a `Record`).
    Record(Box<Record>),
}

/// Records in source order; frame bytes live in one arena.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    items: Vec<Item>,
    bytes: Vec<u8>,
    frames: u64,
    /// Every frame decoded, in order, when [`Batch::decode`] ran; else
    /// empty.
    infos: Decoded,
}

/// A frame lent out of a batch.
#[derive(Debug, Clone, Copy)]
pub struct FrameRef<'a> {
    pub meta: &'a FrameMeta,
    pub data: &'a [u8],
}

impl Batch {
    pub fn with_capacity(items: usize, bytes: usize) -> Batch {
        Batch {
            items: Vec::with_capacity(items),
            bytes: Vec::with_capacity(bytes),
            frames: 0,
            infos: Decoded::default(),
        }
    }

    /// Appends a frame (its bytes are copied once, into the arena).
    pub fn push_frame(
        &mut self,
        ts_ns: u64,
        port: u8,
        direction: Option<Direction>,
        orig_len: u32,
        data: &[u8],
    ) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(data);
        self.items.push(Item::Frame(FrameMeta {
            ts_ns,
            orig_len: orig_len.max(data.len() as u32),
            port,
            direction,
            start,
            len: data.len() as u32,
        }));
        self.frames += 1;
    }

    /// Appends a frame read by a `CaptureReader` (frames of files that name
    /// no port get their interface id as port).
    pub fn push_capture_frame(&mut self, f: &CaptureFrame<'_>) {
        let port = f
            .port
            .unwrap_or_else(|| u8::try_from(f.interface).unwrap_or(u8::MAX));
        self.push_frame(f.ts_ns, port, f.direction, f.origlen, f.data);
    }

    /// Appends a record; `Record::Frame` goes into the arena like a frame.
    pub fn push_record(&mut self, record: Record) {
        match record.as_frame() {
            Some(f) => self.push_frame(f.ts_ns, f.port, f.direction, f.orig_len, f.data),
            None => self.items.push(Item::Record(Box::new(record))),
        }
    }

    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The bytes of a frame of this batch.
    pub fn frame_data(&self, meta: &FrameMeta) -> &[u8] {
        let s = meta.start as usize;
        self.bytes.get(s..s + meta.len as usize).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds its frames to `frames` and its other records to `records`.
    pub fn count_into(&self, frames: &AtomicU64, records: &AtomicU64) {
        frames.fetch_add(self.frames(), Ordering::Relaxed);
        records.fetch_add(self.records(), Ordering::Relaxed);
    }

    /// Frames in the batch.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Non-frame records in the batch.
    pub fn records(&self) -> u64 {
        self.items.len() as u64 - self.frames
    }

    /// Frame bytes held.
    pub fn data_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Approximate heap bytes held, for queue limits.
    pub fn cost_bytes(&self) -> usize {
        self.bytes.len() + self.items.len() * std::mem::size_of::<Item>() + self.infos.bytes()
    }

    /// Empties the batch, keeping its allocations.
    pub fn clear(&mut self) {
        self.items.clear();
        self.bytes.clear();
        self.frames = 0;
        self.infos.clear();
    }

    /// Decodes every frame (Ethernet) for the store, on this thread: the
    /// live link's socket thread does this when ingest is behind, so that
    /// the two threads share the decoding. Frames pushed afterwards are
    /// not decoded.
    pub fn decode(&mut self, cfg: &DecodeConfig) {
        self.infos.clear();
        self.infos.rows.reserve(self.frames as usize);
        for it in &self.items {
            if let Item::Frame(meta) = it {
                let s = meta.start as usize;
                let data = self.bytes.get(s..s + meta.len as usize).unwrap_or_default();
                let frame = IngestFrame {
                    ts_ns: meta.ts_ns,
                    data,
                    origlen: meta.orig_len,
                    linktype: 1,
                    port: meta.port,
                    dir: meta.direction,
                    // Where the bytes are in this batch.
                    file_offset: u64::from(meta.start),
                };
                // Decoded in place (see `decode_onto`).
                decode_onto(&mut self.infos, cfg, &frame);
            }
        }
    }

    /// The decoded frames, in order, if [`Batch::decode`] ran on all of
    /// them.
    pub fn decoded(&self) -> Option<&Decoded> {
        (self.frames > 0 && self.infos.len() as u64 == self.frames).then_some(&self.infos)
    }

    /// The frames' bytes (back to back) and, if [`Batch::decode`] ran on
    /// all of them, their decoded rows, each `row.file_offset` being where
    /// the frame starts in the bytes: for ingest to append in place.
    pub fn decoded_mut(&mut self) -> Option<(&[u8], &mut Decoded)> {
        (self.frames > 0 && self.infos.len() as u64 == self.frames)
            .then_some((&self.bytes, &mut self.infos))
    }

    /// The bytes of all frames, back to back in push order (a frame's are
    /// at [`FrameMeta::start`]).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Takes the contents, leaving an empty batch with the same capacity
    /// hint.
    pub fn take(&mut self) -> Batch {
        let items = self.items.capacity().clamp(64, 4096);
        let bytes = self.bytes.capacity().clamp(4096, 1 << 20);
        std::mem::replace(self, Batch::with_capacity(items, bytes))
    }

    /// Every entry, frames lent with their bytes.
    pub fn iter(&self) -> impl Iterator<Item = Entry<'_>> {
        self.items.iter().map(move |it| match it {
            Item::Frame(meta) => Entry::Frame(FrameRef {
                meta,
                data: self.frame_data(meta),
            }),
            Item::Record(r) => Entry::Record(r),
        })
    }
}

/// Emptied batches kept for reuse, so that a live link does not allocate
/// (and the kernel does not fault in and zero fresh pages) per batch: at
/// millions of frames a second that churn cost as much as the parsing.
#[derive(Debug, Clone, Default)]
pub struct BatchPool(Arc<Mutex<Vec<Batch>>>);

/// Batches a pool keeps at most; more are freed.
const POOL_BATCHES: usize = 16;

impl BatchPool {
    /// An empty batch: a reused one, else a new one with these capacities.
    pub fn get(&self, items: usize, bytes: usize) -> Batch {
        let reused = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        reused.unwrap_or_else(|| Batch::with_capacity(items, bytes))
    }

    /// Takes `batch`'s contents out, leaving a (reused) empty batch.
    pub fn take(&self, batch: &mut Batch) -> Batch {
        let items = batch.items.capacity().clamp(64, 4096);
        let bytes = batch.bytes.capacity().clamp(4096, 1 << 20);
        std::mem::replace(batch, self.get(items, bytes))
    }

    /// Keeps the batch for reuse if nobody else holds it.
    pub fn recycle(&self, batch: Arc<Batch>) {
        if let Some(mut b) = Arc::into_inner(batch) {
            b.clear();
            let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < POOL_BATCHES {
                pool.push(b);
            }
        }
    }
}

/// What [`Batch::iter`] yields.
#[derive(Debug, Clone, Copy)]
pub enum Entry<'a> {
    Frame(FrameRef<'a>),
    Record(&'a Record),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_records_keep_their_order_and_bytes() {
        let mut b = Batch::default();
        b.push_frame(1, 0, Some(Direction::Rx), 100, &[1, 2, 3]);
        b.push_record(Record::Annotation {
            ts_ns: 2,
            text: "x".into(),
        });
        b.push_frame(3, 1, None, 2, &[4, 5]);
        assert_eq!((b.frames(), b.records(), b.len()), (2, 1, 3));
        let got: Vec<String> = b
            .iter()
            .map(|e| match e {
                Entry::Frame(f) => format!("{}:{:?}:{}", f.meta.ts_ns, f.data, f.meta.orig_len),
                Entry::Record(r) => format!("r{}", r.ts_ns()),
            })
            .collect();
        assert_eq!(got, ["1:[1, 2, 3]:100", "r2", "3:[4, 5]:2"]);
        let t = b.take();
        assert!(b.is_empty());
        assert_eq!(t.len(), 3);
    }
}
