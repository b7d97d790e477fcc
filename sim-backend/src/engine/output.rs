//! What the simulator hands out: frames lent to a [`RecordSink`] and the
//! records of the event being processed.

use super::*;

/// A captured frame as the simulator hands it out: the bytes are lent for
/// the call.
#[derive(Debug, Clone, Copy)]
pub struct FrameRef<'a> {
    pub ts_ns: u64,
    pub port: u8,
    pub direction: Option<Direction>,
    /// Length on the wire; at least `data.len()`.
    pub orig_len: u32,
    pub data: &'a [u8],
}

/// Where a run's records go, in order. Frames are lent, so a consumer that
/// copies them into its own buffer costs no allocation per frame.
pub trait RecordSink {
    /// A captured frame.
    fn frame(&mut self, f: FrameRef<'_>);
    /// Any other record.
    fn record(&mut self, r: Record);
    /// A frame one of the scenario's capture points saw
    /// (`crate::points`), in its clock; ignored unless wanted.
    fn point_frame(&mut self, _point: u8, _f: FrameRef<'_>) {}
}

/// Every record by value; each frame becomes a `Record::Frame`.
pub(super) struct Owned<'a, F>(pub(super) &'a mut F);

impl<F: FnMut(Record)> RecordSink for Owned<'_, F> {
    #[inline]
    fn frame(&mut self, f: FrameRef<'_>) {
        (self.0)(Record::Frame {
            ts_ns: f.ts_ns,
            port: f.port,
            direction: f.direction,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
        });
    }
    #[inline]
    fn record(&mut self, r: Record) {
        (self.0)(r);
    }
}

/// One output of an event: a record, or a frame whose bytes are in
/// `Simulator::out_bytes`.
#[derive(Debug)]
pub(super) enum Out {
    Record(Record),
    Frame {
        ts_ns: u64,
        direction: Option<Direction>,
        orig_len: u32,
        start: u32,
        len: u32,
    },
    /// A capture point's frame, bytes as for `Frame`.
    PointFrame {
        point: u8,
        ts_ns: u64,
        orig_len: u32,
        start: u32,
        len: u32,
    },
}
