//! What the simulator hands out: frames lent to a [`RecordSink`] and the
//! records of the event being processed.

use super::*;

pub use rocescope_replay::FrameRef;

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
    /// A header-only capture (the usual one), its bytes not yet written:
    /// a sink that hands frames to another thread can write them there
    /// ([`HeaderFrame::write`]) and spare the simulator's thread. By
    /// default written now and handed to [`frame`](Self::frame).
    #[inline]
    fn header_frame(&mut self, h: &HeaderFrame) {
        h.lend(|f| self.frame(f));
    }
}

/// A captured frame that is only headers, as the fields they are written
/// from: [`write`](Self::write) gives the same bytes the simulator would
/// have lent as a [`FrameRef`].
#[derive(Debug, Clone, Copy)]
pub struct HeaderFrame {
    pub ts_ns: u64,
    pub direction: Option<Direction>,
    /// Length on the wire.
    pub orig_len: u32,
    /// Bytes captured: at most [`HeaderFrame::MAX_BYTES`].
    len: u8,
    info: OpInfo,
    /// Its header fields (the period check shifts their counters).
    pub(super) fields: template::HdrFields,
}

impl HeaderFrame {
    /// The longest such frame.
    pub const MAX_BYTES: usize = template::MAX_HDR;

    pub(super) fn new(
        ts_ns: u64,
        direction: Option<Direction>,
        orig_len: u32,
        len: usize,
        info: OpInfo,
        fields: template::HdrFields,
    ) -> HeaderFrame {
        HeaderFrame {
            ts_ns,
            direction,
            orig_len,
            len: len.min(Self::MAX_BYTES) as u8,
            info,
            fields,
        }
    }

    /// Bytes captured.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Never true: a capture keeps at least the Ethernet header.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes the frame's bytes into `buf`; returns them.
    #[inline]
    pub fn write<'b>(&self, buf: &'b mut [u8; Self::MAX_BYTES]) -> &'b [u8] {
        template::write_headers(&self.fields, &self.info, buf);
        &buf[..self.len()]
    }

    /// The fields a store takes the frame's row from instead of decoding
    /// its bytes ([`rocescope_replay::store::Staged::push_roce_v4`]), when
    /// the frame has the shape they describe: its whole headers captured,
    /// a RETH, an AETH or no extended header (not a CNP's), lengths within
    /// their 16 bits. None otherwise: the bytes are decoded.
    #[inline]
    pub fn roce_v4(&self) -> Option<rocescope_replay::store::RoceV4Fields> {
        let (f, info) = (&self.fields, &self.info);
        let headers = 54 + usize::from(info.ext);
        let pad = (4 - f.payload_len % 4) % 4;
        // IPv4 + UDP + BTH + extended header + payload + pad + ICRC.
        let ip_len = 20 + 8 + 12 + usize::from(info.ext) + f.payload_len + pad + 4;
        if self.len() != headers || info.cnp || (info.reth && info.aeth) || ip_len > 0xFFFF {
            return None;
        }
        Some(rocescope_replay::store::RoceV4Fields {
            src: f.src_ip,
            dst: f.dst_ip,
            ecn_ce: f.ecn & 3 == 3,
            opcode: f.opcode,
            becn: f.becn,
            ack_req: info.ack_req,
            dest_qp: f.dest_qp,
            psn: f.psn,
            reth_dma_len: info.reth.then_some(f.reth.dma_len),
            aeth: info.aeth.then_some((f.aeth.syndrome, f.aeth.msn)),
            payload_len: f.payload_len as u32,
        })
    }

    /// Writes the frame's bytes on the stack and lends them to `f` as a
    /// [`FrameRef`] (port 0), as a sink that writes them now wants.
    #[inline]
    pub fn lend<R>(&self, f: impl FnOnce(FrameRef<'_>) -> R) -> R {
        let mut bytes = [0u8; Self::MAX_BYTES];
        let data = self.write(&mut bytes);
        f(FrameRef {
            ts_ns: self.ts_ns,
            port: 0,
            direction: self.direction,
            orig_len: self.orig_len,
            data,
        })
    }
}

/// Every record by value; each frame becomes a `Record::Frame`.
pub(super) struct Owned<'a, F>(pub(super) &'a mut F);

impl<F: FnMut(Record)> RecordSink for Owned<'_, F> {
    #[inline]
    fn frame(&mut self, f: FrameRef<'_>) {
        (self.0)(f.to_record());
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
        /// Its fields in `Simulator::payload_cuts`, plus one (0: none):
        /// what the period check shifts.
        cut: u32,
    },
    /// A header-only frame, written by the sink (`RecordSink::header_frame`).
    Header(HeaderFrame),
    /// A capture point's frame, bytes as for `Frame`.
    PointFrame {
        point: u8,
        ts_ns: u64,
        orig_len: u32,
        start: u32,
        len: u32,
    },
}

/// A frame captured past its headers (the card's RX cut quirk cuts by the
/// TX side's flags) whose bytes are its headers and the first bytes of its
/// plaintext payload: written again from these fields, shifted, by the
/// period check and replay (`transform.rs`), as it keeps header-only
/// frames. Kept only while the period detector logs outputs.
#[derive(Debug, Clone, Copy)]
pub(super) struct PayloadCut {
    pub(super) ts_ns: u64,
    pub(super) direction: Option<Direction>,
    pub(super) orig_len: u32,
    /// Bytes captured: more than the headers, fewer than the frame's
    /// headers and payload (no ICRC).
    pub(super) len: u32,
    pub(super) info: template::OpInfo,
    pub(super) fields: template::HdrFields,
    /// The QP's payload seed and the packet's absolute PSN
    /// ([`payloads::fill_plaintext`]).
    pub(super) seed: u64,
    pub(super) abs_psn: u64,
}

impl PayloadCut {
    /// Its bytes.
    pub(super) fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.write(&mut v);
        v
    }

    /// Its bytes, appended to `out`: the same the capture wrote.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        let mut headers = [0u8; template::MAX_HDR];
        let n = template::write_headers(&self.fields, &self.info, &mut headers);
        let start = out.len();
        out.extend_from_slice(&headers[..n]);
        out.resize(start + self.len as usize, 0);
        if let Some(payload) = out.get_mut(start + n..) {
            payloads::fill_plaintext(self.seed, self.abs_psn, payload);
        }
    }
}

/// A run straight into a store as it runs, on the caller's thread: frames
/// ingested, records noted by the analysis and kept with the capture, as a
/// recording reopened would give them (the simulator's tests and the
/// workbench's inline feed).
pub struct StoreSink<'a> {
    pub store: &'a rocescope_replay::store::Store,
    pub ingest: &'a mut rocescope_replay::store::Ingest,
    pub analysis: &'a rocescope_replay::store::RcAnalyzer,
}

impl StoreSink<'_> {
    /// Runs `sc` to its end on this thread into a new live store and RC
    /// analysis, flushed every `step_ns` (a recording of it analysed).
    pub fn run_scenario(
        sc: &crate::Scenario,
        step_ns: u64,
    ) -> (
        std::sync::Arc<rocescope_replay::store::Store>,
        rocescope_replay::store::RcAnalyzer,
    ) {
        use rocescope_replay::store::{Ingest, RcAnalyzer, Store};
        let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
        let analysis = RcAnalyzer::default();
        let mut ingest = Ingest::new(
            rocescope_decoders::DecodeConfig::default(),
            Box::new(analysis.clone()),
        );
        StoreSink {
            store: &store,
            ingest: &mut ingest,
            analysis: &analysis,
        }
        .run_to_end(&mut super::Simulator::new(sc.clone()), step_ns);
        (store, analysis)
    }

    /// Runs `sim` to its end into the store, its ingest flushed after every
    /// `step_ns` of simulated time (as a live feed hands batches over),
    /// then finished.
    pub fn run_to_end(mut self, sim: &mut super::Simulator, step_ns: u64) {
        let mut t_ns = 0;
        loop {
            t_ns += step_ns.max(1);
            let more = sim.run_until_into(t_ns, &mut self);
            self.store.flush_live(self.ingest);
            if !more {
                break;
            }
        }
        self.store.finish_live(self.ingest);
    }
}

impl RecordSink for StoreSink<'_> {
    fn frame(&mut self, f: FrameRef<'_>) {
        self.store.ingest(self.ingest, &f.ingest_frame());
    }
    fn record(&mut self, r: Record) {
        self.analysis.note_record(&r);
        self.store.push_record(r);
    }
}

impl std::fmt::Debug for StoreSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSink").finish_non_exhaustive()
    }
}
