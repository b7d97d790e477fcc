//! Ingest: decode each frame once, classify it, run the analysis, and hand
//! rows to the store in batches.
//!
//! Two stages, so that a file is indexed on two cores: [`decode_frame`]
//! turns a frame into a [`PacketInfo`] (everything the store and the RC
//! analysis need, so the bytes need not travel), and [`Appender`] interns
//! conversations, runs the [`Analyzer`] and appends rows under the store's
//! lock. [`Ingest`] runs both on one thread for live sources.

use rocescope_decoders::{DecodeConfig, IcrcStatus, LinkLayer, Packet, decode};

use super::StoreStats;
use super::columns::Columns;
use super::conv::{ConvKey, ConvTable};
use super::row::{Flags, Row};
use crate::record::Direction;

/// What ingest keeps of a decoded frame: its row plus the header values the
/// RC analysis needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketInfo {
    pub row: Row,
    /// The one-direction flow (RoCE frames only).
    pub key: Option<ConvKey>,
    /// AETH syndrome byte, when the packet has an AETH.
    pub syndrome: Option<u8>,
    /// AETH MSN (0 without AETH).
    pub msn: u32,
    /// RETH DMA length, when the packet has a RETH.
    pub dma_len: Option<u32>,
    /// Payload bytes the packet carries (from its length fields, so right
    /// for header-only captures too).
    pub payload_len: u32,
}

/// Stateful analysis that runs on every packet at ingest (the RC analysis).
/// It may set the packet's flags (retransmission, duplicate, ...).
pub trait Analyzer: Send {
    /// `index` is the packet's row number, `conversation` its interned flow
    /// (or [`super::NO_CONVERSATION`]).
    fn packet(&mut self, index: u64, conversation: u32, info: &PacketInfo, flags: &mut Flags);
    /// The source ended.
    fn finish(&mut self) {}
}

/// The analyzer that does nothing (decode-only indexing).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAnalysis;

impl Analyzer for NoAnalysis {
    fn packet(&mut self, _: u64, _: u32, _: &PacketInfo, _: &mut Flags) {}
}

/// One frame offered to ingest.
#[derive(Debug, Clone, Copy)]
pub struct IngestFrame<'a> {
    pub ts_ns: u64,
    pub data: &'a [u8],
    pub origlen: u32,
    /// pcap LINKTYPE_ value.
    pub linktype: u32,
    pub port: u8,
    pub dir: Option<Direction>,
    /// Where `data` lives in the store's backing.
    pub file_offset: u64,
}

/// Stage one: decode and classify a frame.
#[inline]
pub fn decode_frame(cfg: &DecodeConfig, f: &IngestFrame<'_>) -> PacketInfo {
    let mut info = PacketInfo {
        row: Row {
            ts_ns: f.ts_ns,
            file_offset: f.file_offset,
            caplen: f.data.len() as u32,
            origlen: f.origlen.max(f.data.len() as u32),
            port: f.port,
            dir: f.dir,
            ..Row::default()
        },
        ..PacketInfo::default()
    };
    match LinkLayer::from_linktype(f.linktype) {
        Some(link) => classify(&decode(f.data, link, cfg), &mut info),
        None => info.row.flags = Flags::UNDECODED,
    }
    info
}

/// Fill the row's RoCE fields and flags from the decoded packet.
#[inline]
fn classify(p: &Packet<'_>, info: &mut PacketInfo) {
    let mut flags = Flags::default();
    match p.icrc() {
        IcrcStatus::Bad { .. } => flags.set(Flags::ICRC_BAD, true),
        IcrcStatus::Truncated => flags.set(Flags::CUT, true),
        IcrcStatus::Ok | IcrcStatus::None => {}
    }
    if let Some(stop) = p.stop() {
        let f = if stop.is_truncation() {
            Flags::CUT
        } else {
            Flags::MALFORMED
        };
        flags.set(f, true);
    }
    let ip = p.ip();
    if ip.is_some_and(|ip| ip.ecn() == 3) {
        flags.set(Flags::ECN_CE, true);
    }
    if let Some(bth) = p.bth() {
        flags.set(Flags::ROCE, true);
        let opcode = bth.opcode();
        info.row.opcode = opcode.0;
        info.row.psn = bth.psn();
        flags.set(Flags::ACK_REQ, bth.ack_req());
        flags.set(Flags::BECN, bth.becn());
        flags.set(Flags::FECN, bth.fecn());
        flags.set(Flags::CNP, opcode.is_cnp());
        flags.set(
            Flags::RESPONSE,
            opcode.operation().is_some_and(|op| op.is_response()),
        );
        let ext = p.ext();
        if let Some(aeth) = ext.aeth() {
            flags.set(Flags::NAK, aeth.syndrome().is_nak());
            info.syndrome = Some(aeth.syndrome_raw());
            info.msn = aeth.msn();
        }
        info.dma_len = ext.reth().map(|r| r.dma_len());
        info.payload_len = p.payload_len() as u32;
        let (src, dst) = match (ip, p.grh()) {
            (Some(ip), _) => (ip.src_v6(), ip.dst_v6()),
            (None, Some(grh)) => (grh.src(), grh.dst()),
            (None, None) => ([0; 16], [0; 16]),
        };
        info.key = Some(ConvKey {
            src,
            dst,
            dest_qp: bth.dest_qp(),
        });
    }
    info.row.flags = flags;
}

/// Stage two: conversations, analysis, counters, columns.
pub struct Appender {
    analyzer: Box<dyn Analyzer>,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender").finish_non_exhaustive()
    }
}

impl Appender {
    pub fn new(analyzer: Box<dyn Analyzer>) -> Appender {
        Appender { analyzer }
    }

    pub(crate) fn append(
        &mut self,
        infos: &mut [PacketInfo],
        cols: &mut Columns,
        convs: &mut ConvTable,
        stats: &mut StoreStats,
    ) {
        for info in infos {
            let index = cols.len();
            if let Some(key) = info.key {
                info.row.conversation = convs.observe(key, index, info.row.origlen);
            }
            let conv = info.row.conversation;
            let mut flags = info.row.flags;
            self.analyzer.packet(index, conv, info, &mut flags);
            info.row.flags = flags;
            count(stats, &info.row);
            cols.push(&info.row);
        }
    }

    pub(crate) fn finish(&mut self) {
        self.analyzer.finish();
    }
}

/// Both stages on one thread, for live sources.
pub struct Ingest {
    cfg: DecodeConfig,
    pending: Vec<PacketInfo>,
    appender: Appender,
}

impl std::fmt::Debug for Ingest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingest")
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl Ingest {
    pub fn new(cfg: DecodeConfig, analyzer: Box<dyn Analyzer>) -> Ingest {
        Ingest {
            cfg,
            pending: Vec::with_capacity(super::BATCH_ROWS),
            appender: Appender::new(analyzer),
        }
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Decode and classify one frame; it is appended at the next flush.
    #[inline]
    pub fn push(&mut self, f: &IngestFrame<'_>) {
        self.pending.push(decode_frame(&self.cfg, f));
    }

    pub(crate) fn drain_into(
        &mut self,
        cols: &mut Columns,
        convs: &mut ConvTable,
        stats: &mut StoreStats,
    ) {
        self.appender.append(&mut self.pending, cols, convs, stats);
        self.pending.clear();
    }

    pub(crate) fn finish(&mut self) {
        self.appender.finish();
    }
}

pub(crate) fn count(stats: &mut StoreStats, row: &Row) {
    stats.packets += 1;
    let f = row.flags;
    stats.roce_packets += u64::from(f.contains(Flags::ROCE));
    stats.icrc_errors += u64::from(f.contains(Flags::ICRC_BAD));
    stats.truncated += u64::from(f.contains(Flags::CUT));
    stats.malformed += u64::from(f.contains(Flags::MALFORMED));
    stats.undecoded += u64::from(f.contains(Flags::UNDECODED));
    stats.captured_bytes += u64::from(row.caplen);
    stats.wire_bytes += u64::from(row.origlen);
    stats.first_ts_ns = Some(stats.first_ts_ns.map_or(row.ts_ns, |t| t.min(row.ts_ns)));
    stats.last_ts_ns = Some(stats.last_ts_ns.map_or(row.ts_ns, |t| t.max(row.ts_ns)));
}
