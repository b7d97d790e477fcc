//! [`Record`]: the one unit every source produces.
//!
//! A capture file, the live link to a card and the bundled simulator all
//! yield the same records, so one code path ingests them: captured frames,
//! profiler samples and their probe names, service-slot decisions, QP state
//! changes, the simulator's ground truth, drop counts, annotations and
//! markers.
//!
//! Frames are stored in pcapng Enhanced Packet Blocks. Every other record is
//! stored as a compact little-endian *payload* inside a pcapng Custom Block
//! with rocescope's Private Enterprise Number ([`ROCESCOPE_PEN`]). This module
//! owns that payload codec ([`Record::encode_payload`],
//! [`Record::decode_payload`]); `replay/FORMAT.md` documents the layouts.
//!
//! Payload layout: a 12-byte header — record type code (`u16`), version
//! (`u8`), flags (`u8`, written 0, ignored), `ts_ns` (`u64`) — then the
//! fields of that type. Bytes after the last known field are ignored (block
//! padding, or fields a later writer appended). Records of an unknown type or
//! a newer version are reported as [`RecordError::UnknownType`] /
//! [`RecordError::NewerVersion`], which readers count and skip
//! ([`RecordError::is_skippable`]); anything else is a malformed payload whose
//! error names the field and its byte offset in the payload.

use std::fmt;

mod codec;

use codec::{Dec, Enc};
pub(crate) use codec::{drop_reason_code, drop_reason_from};
use codec::{
    marker_code, marker_from, qp_state_code, qp_state_from, slot_code, slot_from, verdict_code,
    verdict_from,
};

/// rocescope's Private Enterprise Number, written in every custom block and
/// custom option so that readers recognise rocescope data.
///
/// A placeholder, **not registered with IANA yet**: `0x524F4345`, "ROCE" in
/// ASCII (1380926277). IANA assigns numbers in sequence and is near 65000,
/// so no owner will hold this one for decades; the number suggested at
/// first, 58230, is already assigned (to Sectorinstituut Transport en
/// Logistiek). Replace it with rocescope's number once registered, and keep
/// reading this one. Blocks of another owner that happen to carry it would
/// fail to decode and be counted as skipped, never misread silently.
pub const ROCESCOPE_PEN: u32 = 0x524F_4345;

/// Bytes of the header that starts every payload: type code, version, flags
/// and `ts_ns`.
pub const PAYLOAD_HEADER_BYTES: usize = 12;

/// Which way a frame travelled, seen from the card or host that captured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Received (pcapng "inbound").
    Rx,
    /// Transmitted (pcapng "outbound").
    Tx,
}

impl Direction {
    /// `"rx"` or `"tx"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rx => "rx",
            Self::Tx => "tx",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One value of a per-cycle profiler probe. BALBOA runs at 250 MHz, so one
/// cycle is 4 ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProfilerSample {
    /// Clock cycle of the card (or simulated card) when sampled.
    pub cycle: u64,
    /// The same instant in ns on the recording's time base.
    pub ts_ns: u64,
    /// Probe id, named by a [`ProbeDef`].
    pub probe: u16,
    /// The sampled value, in the probe's unit.
    pub value: i64,
}

/// The name of a profiler probe. Definitions are timeless: their
/// [`Record::ts_ns`] is 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProbeDef {
    /// The id that [`ProfilerSample::probe`] refers to.
    pub probe: u16,
    /// Short name, e.g. `"tx_fifo_fill"`.
    pub name: String,
    /// Unit of the values, e.g. `"beats"`, `"ns"`, `""` for counts.
    pub unit: String,
    /// Hardware (or simulator) module the probe sits in.
    pub module: String,
}

/// A BALBOA service slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotKind {
    /// On-datapath AES-CTR.
    Aes,
    /// Parallel-path deep packet inspection.
    Dpi,
    /// Application slot (e.g. DLRM preprocessing).
    App,
}

/// What a service slot did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Passed unchanged.
    Pass,
    /// Dropped (for DPI: the WRITE is dropped and NAKed).
    Drop,
    /// Passed with its payload transformed (encrypted, preprocessed).
    Transformed,
}

/// One decision of a service slot about one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotDecision {
    /// When the decision was taken.
    pub ts_ns: u64,
    /// Which slot.
    pub slot: SlotKind,
    /// Queue pair of the packet.
    pub qpn: u32,
    /// PSN of the packet.
    pub psn: u32,
    /// The decision.
    pub verdict: Verdict,
    /// Time the slot added to the packet's path.
    pub latency_ns: u32,
    /// Slot-specific detail (e.g. the DPI class or AES counter).
    pub detail: u32,
}

/// Queue-pair states (numbered like `ibv_qp_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpState {
    /// RESET.
    Reset,
    /// INIT.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained.
    Sqd,
    /// Send queue error.
    Sqe,
    /// Error.
    Err,
}

/// A QP's state and sequence numbers after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QpStateChange {
    /// When the change happened.
    pub ts_ns: u64,
    /// Local queue pair number.
    pub qpn: u32,
    /// The state after the change.
    pub state: QpState,
    /// Requester: next PSN to send.
    pub next_psn: u32,
    /// Requester: oldest PSN not yet acknowledged.
    pub oldest_unacked_psn: u32,
    /// Responder: expected PSN.
    pub epsn: u32,
    /// Responder: message sequence number.
    pub msn: u32,
    /// Packets sent and not yet acknowledged.
    pub outstanding: u16,
    /// Retries used so far (BALBOA keeps a 3-bit counter).
    pub retry_count: u8,
}

/// Why a packet was retransmitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetransmitCause {
    /// A NAK (PSN sequence error): Go-Back-N from the NAKed PSN.
    Nak,
    /// The retransmission timer: from the oldest unacknowledged PSN.
    Timeout,
    /// An RNR NAK's timer ran out: from the PSN it named.
    Rnr,
}

/// Something the simulator knows and a card cannot see.
///
/// Open for growth: codes this build does not know are read as
/// [`TruthEvent::Unknown`] and written back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TruthEvent {
    /// The network dropped the packet.
    WireDrop,
    /// The network corrupted the packet (its ICRC fails).
    WireCorrupt,
    /// The packet was on the wire but the sniffer missed it.
    CaptureDrop,
    /// The packet is a retransmission.
    Retransmit {
        /// Why.
        cause: RetransmitCause,
    },
    /// A NAK was sent for the packet.
    NakSent {
        /// NAK code (0 PSN sequence error, 1 invalid request, ...).
        code: u8,
    },
    /// A CNP was sent for the packet.
    CnpSent,
    /// A switch marked the packet ECN CE.
    EcnMarked,
    /// A PFC pause held the packet's queue.
    PfcPause {
        /// Pause duration.
        ns: u64,
    },
    /// The DPI slot dropped the packet.
    DpiDrop,
    /// Why the QP's next packet is not (yet) on the wire, from the
    /// simulator's own model (`qpn`: its DestQP on the wire, `psn`: the
    /// requester's QPN): from `since_ns` on, until the QP's next reason,
    /// state `state` (a `rocescope_decoders::analysis::TimeState` code).
    /// `since_ns` may lie before the record's time: a timer resend shows
    /// the wait before it was for the timer.
    QpReason {
        /// The state's code.
        state: u8,
        /// From when (ns, below 2^56).
        since_ns: u64,
    },
    /// The link rate every link of the source runs at.
    LinkRate {
        /// Mb/s.
        mbps: u64,
    },
    /// The QP's window of outstanding packets (`qpn`: its DestQP on the
    /// wire, `psn`: the requester's QPN).
    QpWindow {
        /// Packets.
        packets: u32,
    },
    /// How the QP's requester card takes responses (ACKs, NAKs, READ
    /// responses): `latency_ns` after they arrive, one at a time, each
    /// taking `each_ns` (BALBOA's response FSM). `qpn` and `psn` as for
    /// [`TruthEvent::QpWindow`].
    QpResponseTime {
        /// From the MAC to the requester's logic.
        latency_ns: u32,
        /// One response's processing.
        each_ns: u32,
    },
    /// Whether the QP's requester paces itself on CNPs (a DCQCN reaction
    /// point; BALBOA has none). `qpn` and `psn` as for
    /// [`TruthEvent::QpWindow`].
    QpCongestionControl {
        /// It slows down on CNPs.
        reacts: bool,
    },
    /// An event code this build does not know, with its argument.
    Unknown {
        /// The event code.
        code: u16,
        /// Its argument, kept so the event is written back unchanged.
        arg: u64,
    },
}

impl TruthEvent {
    /// The event's code and argument in the payload.
    fn to_wire(self) -> (u16, u64) {
        match self {
            Self::WireDrop => (1, 0),
            Self::WireCorrupt => (2, 0),
            Self::CaptureDrop => (3, 0),
            Self::Retransmit { cause } => (4, cause as u64),
            Self::NakSent { code } => (5, u64::from(code)),
            Self::CnpSent => (6, 0),
            Self::EcnMarked => (7, 0),
            Self::PfcPause { ns } => (8, ns),
            Self::DpiDrop => (9, 0),
            Self::QpReason { state, since_ns } => (10, since_ns << 8 | u64::from(state)),
            Self::LinkRate { mbps } => (11, mbps),
            Self::QpWindow { packets } => (12, u64::from(packets)),
            Self::QpResponseTime {
                latency_ns,
                each_ns,
            } => (13, u64::from(latency_ns) << 32 | u64::from(each_ns)),
            Self::QpCongestionControl { reacts } => (14, u64::from(reacts)),
            Self::Unknown { code, arg } => (code, arg),
        }
    }

    /// `None` when a known code has an argument out of range (the field name
    /// is then `"arg"`).
    fn from_wire(code: u16, arg: u64) -> Option<Self> {
        Some(match code {
            1 => Self::WireDrop,
            2 => Self::WireCorrupt,
            3 => Self::CaptureDrop,
            4 => Self::Retransmit {
                cause: match arg {
                    0 => RetransmitCause::Nak,
                    1 => RetransmitCause::Timeout,
                    2 => RetransmitCause::Rnr,
                    _ => return None,
                },
            },
            5 => Self::NakSent {
                code: u8::try_from(arg).ok()?,
            },
            6 => Self::CnpSent,
            7 => Self::EcnMarked,
            8 => Self::PfcPause { ns: arg },
            9 => Self::DpiDrop,
            10 => Self::QpReason {
                state: (arg & 0xFF) as u8,
                since_ns: arg >> 8,
            },
            11 => Self::LinkRate { mbps: arg },
            12 => Self::QpWindow {
                packets: u32::try_from(arg).ok()?,
            },
            13 => Self::QpResponseTime {
                latency_ns: (arg >> 32) as u32,
                each_ns: arg as u32,
            },
            14 => Self::QpCongestionControl {
                reacts: match arg {
                    0 => false,
                    1 => true,
                    _ => return None,
                },
            },
            _ => Self::Unknown { code, arg },
        })
    }
}

/// A ground-truth event about one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroundTruth {
    /// When it happened.
    pub ts_ns: u64,
    /// Queue pair of the packet.
    pub qpn: u32,
    /// PSN of the packet.
    pub psn: u32,
    /// What happened.
    pub event: TruthEvent,
}

/// Why records or frames were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// A bounded queue (e.g. between a live source and ingest) was full.
    QueueFull,
    /// The capture (sniffer, NIC) missed frames that were on the wire.
    CaptureLoss,
    /// Anything else.
    Other,
}

/// A running drop counter: `dropped` is the total since the source started,
/// like pcapng's `isb_ifdrop`; the loss between two records is the
/// difference of their counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DropCount {
    /// When the counter was read.
    pub ts_ns: u64,
    /// The pcapng interface id of the recording the count belongs to, or an
    /// id no interface has (e.g. `u32::MAX`) for drops not tied to one.
    pub interface: u32,
    /// Total dropped so far.
    pub dropped: u64,
    /// Why.
    pub reason: DropReason,
}

/// What a [`Record::Marker`] marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerKind {
    /// A live link reconnected: there may be a gap before it.
    Reconnect,
    /// Recording or capture started.
    Start,
    /// Recording or capture stopped.
    Stop,
}

/// A captured frame with its bytes lent: what [`Record::Frame`] holds,
/// without owning the bytes (a source lends them for a call, a consumer
/// reads a record's through [`Record::as_frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef<'a> {
    pub ts_ns: u64,
    pub port: u8,
    pub direction: Option<Direction>,
    /// Length on the wire; at least `data.len()`.
    pub orig_len: u32,
    pub data: &'a [u8],
}

impl<'a> FrameRef<'a> {
    /// The frame as a record of its own (its bytes copied).
    pub fn to_record(&self) -> Record {
        Record::Frame {
            ts_ns: self.ts_ns,
            port: self.port,
            direction: self.direction,
            orig_len: self.orig_len,
            data: self.data.to_vec(),
        }
    }

    /// The frame as a store ingests it (Ethernet, no file behind it).
    pub fn ingest_frame(&self) -> crate::store::IngestFrame<'a> {
        crate::store::IngestFrame {
            ts_ns: self.ts_ns,
            data: self.data,
            origlen: self.orig_len,
            linktype: 1,
            port: self.port,
            dir: self.direction,
            file_offset: 0,
        }
    }
}

/// The one unit every source produces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Record {
    /// A captured frame. Writers take the bytes as `&[u8]`
    /// ([`PcapngWriter::write_frame`](crate::PcapngWriter::write_frame)), so
    /// a source need not build this owned form to record a frame.
    Frame {
        /// Capture time.
        ts_ns: u64,
        /// Card or NIC port.
        port: u8,
        /// Rx or Tx, when the capture knows.
        direction: Option<Direction>,
        /// Length on the wire; at least `data.len()`.
        orig_len: u32,
        /// The captured bytes (possibly cut: header-only modes, snaplen).
        data: Vec<u8>,
    },
    /// A profiler sample.
    Profiler(ProfilerSample),
    /// The name of a profiler probe.
    ProbeDef(ProbeDef),
    /// A service-slot decision.
    Slot(SlotDecision),
    /// A QP state change.
    QpState(QpStateChange),
    /// Simulator ground truth.
    Truth(GroundTruth),
    /// A drop counter.
    Drops(DropCount),
    /// A user annotation.
    Annotation {
        /// The instant annotated.
        ts_ns: u64,
        /// The note.
        text: String,
    },
    /// A marker in the stream (start, stop, reconnect).
    Marker {
        /// When.
        ts_ns: u64,
        /// What.
        kind: MarkerKind,
        /// Free text, e.g. the agent's address.
        text: String,
    },
}

/// The type of a non-frame record, as coded in its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    /// [`Record::Profiler`].
    Profiler,
    /// [`Record::ProbeDef`].
    ProbeDef,
    /// [`Record::Slot`].
    Slot,
    /// [`Record::QpState`].
    QpState,
    /// [`Record::Truth`].
    Truth,
    /// [`Record::Drops`].
    Drops,
    /// [`Record::Annotation`].
    Annotation,
    /// [`Record::Marker`].
    Marker,
}

impl RecordType {
    /// Every type, in code order.
    pub const ALL: [Self; 8] = [
        Self::Profiler,
        Self::ProbeDef,
        Self::Slot,
        Self::QpState,
        Self::Truth,
        Self::Drops,
        Self::Annotation,
        Self::Marker,
    ];

    /// The code in the payload header.
    pub const fn code(self) -> u16 {
        match self {
            Self::Profiler => 1,
            Self::ProbeDef => 2,
            Self::Slot => 3,
            Self::QpState => 4,
            Self::Truth => 5,
            Self::Drops => 6,
            Self::Annotation => 7,
            Self::Marker => 8,
        }
    }

    /// The type with this code, if this build knows it.
    pub const fn from_code(code: u16) -> Option<Self> {
        Some(match code {
            1 => Self::Profiler,
            2 => Self::ProbeDef,
            3 => Self::Slot,
            4 => Self::QpState,
            5 => Self::Truth,
            6 => Self::Drops,
            7 => Self::Annotation,
            8 => Self::Marker,
            _ => return None,
        })
    }

    /// The payload version this build writes, and the newest it reads.
    pub const fn version(self) -> u8 {
        1
    }

    /// A short name for messages, e.g. `"profiler"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Profiler => "profiler",
            Self::ProbeDef => "probe-def",
            Self::Slot => "slot",
            Self::QpState => "qp-state",
            Self::Truth => "truth",
            Self::Drops => "drops",
            Self::Annotation => "annotation",
            Self::Marker => "marker",
        }
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a record payload could not be decoded. Offsets count bytes from the
/// start of the payload (the type code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A type code this build does not know: skip it.
    #[error("unknown rocescope record type {code} (version {version})")]
    UnknownType {
        /// The type code.
        code: u16,
        /// Its version byte.
        version: u8,
    },
    /// A known type in a newer version than this build reads: skip it.
    #[error(
        "{kind} record version {version} is newer than version {known}, the newest this build reads"
    )]
    NewerVersion {
        /// The record type.
        kind: RecordType,
        /// The version found.
        version: u8,
        /// The newest version this build reads.
        known: u8,
    },
    /// The payload ends inside a field.
    #[error(
        "{what} record: field {field} at payload byte {offset} is cut: it needs {need} bytes, {have} are left"
    )]
    Truncated {
        /// Record type name, or `"rocescope"` for the header.
        what: &'static str,
        /// The field.
        field: &'static str,
        /// Where the field starts.
        offset: usize,
        /// Bytes the field needs.
        need: usize,
        /// Bytes left in the payload.
        have: usize,
    },
    /// A field holds a value no writer produces.
    #[error("{what} record: field {field} at payload byte {offset} has invalid value {value}")]
    BadValue {
        /// Record type name, or `"rocescope"` for the header.
        what: &'static str,
        /// The field.
        field: &'static str,
        /// Where the field starts.
        offset: usize,
        /// The value found.
        value: u64,
    },
    /// A text field is not UTF-8.
    #[error("{what} record: text field {field} at payload byte {offset} is not valid UTF-8")]
    BadUtf8 {
        /// Record type name.
        what: &'static str,
        /// The field.
        field: &'static str,
        /// Where the text's bytes start.
        offset: usize,
    },
}

impl RecordError {
    /// True for records a reader should skip and count rather than warn
    /// about: unknown types and newer versions, written by a newer rocescope.
    pub fn is_skippable(&self) -> bool {
        matches!(self, Self::UnknownType { .. } | Self::NewerVersion { .. })
    }
}

/// How many rocescope records a reader skipped, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SkippedRecords {
    /// Record types this build does not know (written by a newer rocescope).
    pub unknown_type: u64,
    /// Known types in a newer version than this build reads.
    pub newer_version: u64,
    /// Payloads or blocks that could not be decoded; each is also warned
    /// about (up to the reader's warning cap).
    pub malformed: u64,
}

impl SkippedRecords {
    /// All skipped records.
    pub fn total(&self) -> u64 {
        self.unknown_type + self.newer_version + self.malformed
    }
}

impl Record {
    /// A frame's fields with its bytes lent; `None` for any other record.
    pub fn as_frame(&self) -> Option<FrameRef<'_>> {
        match self {
            Self::Frame {
                ts_ns,
                port,
                direction,
                orig_len,
                data,
            } => Some(FrameRef {
                ts_ns: *ts_ns,
                port: *port,
                direction: *direction,
                orig_len: *orig_len,
                data,
            }),
            _ => None,
        }
    }

    /// The record's time in ns on the recording's time base; 0 for a
    /// [`ProbeDef`], which is timeless.
    pub fn ts_ns(&self) -> u64 {
        match self {
            Self::Frame { ts_ns, .. }
            | Self::Annotation { ts_ns, .. }
            | Self::Marker { ts_ns, .. } => *ts_ns,
            Self::Profiler(s) => s.ts_ns,
            Self::ProbeDef(_) => 0,
            Self::Slot(s) => s.ts_ns,
            Self::QpState(s) => s.ts_ns,
            Self::Truth(t) => t.ts_ns,
            Self::Drops(d) => d.ts_ns,
        }
    }

    /// The payload type, `None` for a frame (stored as a packet block).
    pub fn record_type(&self) -> Option<RecordType> {
        Some(match self {
            Self::Frame { .. } => return None,
            Self::Profiler(_) => RecordType::Profiler,
            Self::ProbeDef(_) => RecordType::ProbeDef,
            Self::Slot(_) => RecordType::Slot,
            Self::QpState(_) => RecordType::QpState,
            Self::Truth(_) => RecordType::Truth,
            Self::Drops(_) => RecordType::Drops,
            Self::Annotation { .. } => RecordType::Annotation,
            Self::Marker { .. } => RecordType::Marker,
        })
    }

    /// Appends the record's payload to `out` and returns true; returns false
    /// (and appends nothing) for a [`Record::Frame`], which is not a payload.
    ///
    /// Text fields longer than `u32::MAX` bytes cannot occur in practice;
    /// writers bound the whole block anyway.
    pub fn encode_payload(&self, out: &mut Vec<u8>) -> bool {
        let Some(kind) = self.record_type() else {
            return false;
        };
        let mut e = Enc(out);
        e.u16(kind.code());
        e.u8(kind.version());
        e.u8(0);
        e.u64(self.ts_ns());
        match self {
            Self::Frame { .. } => {}
            Self::Profiler(s) => {
                e.u64(s.cycle);
                e.u16(s.probe);
                e.u64(s.value as u64);
            }
            Self::ProbeDef(p) => {
                e.u16(p.probe);
                e.str(&p.name);
                e.str(&p.unit);
                e.str(&p.module);
            }
            Self::Slot(s) => {
                e.u8(slot_code(s.slot));
                e.u8(verdict_code(s.verdict));
                e.u32(s.qpn);
                e.u32(s.psn);
                e.u32(s.latency_ns);
                e.u32(s.detail);
            }
            Self::QpState(q) => {
                e.u32(q.qpn);
                e.u8(qp_state_code(q.state));
                e.u8(q.retry_count);
                e.u16(q.outstanding);
                e.u32(q.next_psn);
                e.u32(q.oldest_unacked_psn);
                e.u32(q.epsn);
                e.u32(q.msn);
            }
            Self::Truth(t) => {
                let (code, arg) = t.event.to_wire();
                e.u32(t.qpn);
                e.u32(t.psn);
                e.u16(code);
                e.u64(arg);
            }
            Self::Drops(d) => {
                e.u32(d.interface);
                e.u8(drop_reason_code(d.reason));
                e.u64(d.dropped);
            }
            Self::Annotation { text, .. } => e.str(text),
            Self::Marker { kind, text, .. } => {
                e.u8(marker_code(*kind));
                e.str(text);
            }
        }
        true
    }

    /// Decodes one payload (as written by [`encode_payload`](Self::encode_payload)).
    ///
    /// Trailing bytes after the fields are ignored. Unknown types and newer
    /// versions are errors for which [`RecordError::is_skippable`] is true.
    pub fn decode_payload(payload: &[u8]) -> Result<Self, RecordError> {
        let mut d = Dec {
            b: payload,
            at: 0,
            what: "rocescope",
        };
        let code = d.u16("type")?;
        let version = d.u8("version")?;
        let Some(kind) = RecordType::from_code(code) else {
            return Err(RecordError::UnknownType { code, version });
        };
        d.what = kind.name();
        if version == 0 {
            return Err(RecordError::BadValue {
                what: d.what,
                field: "version",
                offset: 2,
                value: 0,
            });
        }
        if version > kind.version() {
            return Err(RecordError::NewerVersion {
                kind,
                version,
                known: kind.version(),
            });
        }
        let _flags = d.u8("flags")?;
        let ts_ns = d.u64("ts_ns")?;
        Ok(match kind {
            RecordType::Profiler => Self::Profiler(ProfilerSample {
                ts_ns,
                cycle: d.u64("cycle")?,
                probe: d.u16("probe")?,
                value: d.u64("value")? as i64,
            }),
            RecordType::ProbeDef => Self::ProbeDef(ProbeDef {
                probe: d.u16("probe")?,
                name: d.str("name")?,
                unit: d.str("unit")?,
                module: d.str("module")?,
            }),
            RecordType::Slot => Self::Slot(SlotDecision {
                ts_ns,
                slot: d.code("slot", slot_from)?,
                verdict: d.code("verdict", verdict_from)?,
                qpn: d.u32("qpn")?,
                psn: d.u32("psn")?,
                latency_ns: d.u32("latency_ns")?,
                detail: d.u32("detail")?,
            }),
            RecordType::QpState => Self::QpState(QpStateChange {
                ts_ns,
                qpn: d.u32("qpn")?,
                state: d.code("state", qp_state_from)?,
                retry_count: d.u8("retry_count")?,
                outstanding: d.u16("outstanding")?,
                next_psn: d.u32("next_psn")?,
                oldest_unacked_psn: d.u32("oldest_unacked_psn")?,
                epsn: d.u32("epsn")?,
                msn: d.u32("msn")?,
            }),
            RecordType::Truth => {
                let qpn = d.u32("qpn")?;
                let psn = d.u32("psn")?;
                let code = d.u16("event")?;
                let arg_at = d.at;
                let arg = d.u64("arg")?;
                let Some(event) = TruthEvent::from_wire(code, arg) else {
                    return Err(RecordError::BadValue {
                        what: d.what,
                        field: "arg",
                        offset: arg_at,
                        value: arg,
                    });
                };
                Self::Truth(GroundTruth {
                    ts_ns,
                    qpn,
                    psn,
                    event,
                })
            }
            RecordType::Drops => Self::Drops(DropCount {
                ts_ns,
                interface: d.u32("interface")?,
                reason: d.code("reason", drop_reason_from)?,
                dropped: d.u64("dropped")?,
            }),
            RecordType::Annotation => Self::Annotation {
                ts_ns,
                text: d.str("text")?,
            },
            RecordType::Marker => Self::Marker {
                ts_ns,
                kind: d.code("kind", marker_from)?,
                text: d.str("text")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        for (i, t) in RecordType::ALL.iter().enumerate() {
            assert_eq!(usize::from(t.code()), i + 1);
            assert_eq!(RecordType::from_code(t.code()), Some(*t));
        }
        assert_eq!(RecordType::from_code(0), None);
        for e in [
            TruthEvent::WireDrop,
            TruthEvent::Retransmit {
                cause: RetransmitCause::Timeout,
            },
            TruthEvent::NakSent { code: 3 },
            TruthEvent::PfcPause { ns: 1 << 40 },
            TruthEvent::QpReason {
                state: 5,
                since_ns: (1 << 50) + 3,
            },
            TruthEvent::LinkRate { mbps: 100_000 },
            TruthEvent::QpWindow { packets: 16 },
            TruthEvent::QpResponseTime {
                latency_ns: 80,
                each_ns: 356,
            },
            TruthEvent::QpCongestionControl { reacts: true },
            TruthEvent::Unknown { code: 999, arg: 7 },
        ] {
            let (c, a) = e.to_wire();
            assert_eq!(TruthEvent::from_wire(c, a), Some(e));
        }
        assert_eq!(TruthEvent::from_wire(4, 3), None);
        assert_eq!(TruthEvent::from_wire(5, 256), None);
    }

    #[test]
    fn frames_are_not_payloads() {
        let mut out = Vec::new();
        let f = Record::Frame {
            ts_ns: 1,
            port: 0,
            direction: None,
            orig_len: 0,
            data: Vec::new(),
        };
        assert!(!f.encode_payload(&mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn text_offsets_in_errors() {
        let r = Record::Annotation {
            ts_ns: 5,
            text: "héllo".to_owned(),
        };
        let mut p = Vec::new();
        assert!(r.encode_payload(&mut p));
        assert_eq!(Record::decode_payload(&p), Ok(r));
        // Break the UTF-8: the text starts after the header and its length.
        p[PAYLOAD_HEADER_BYTES + 4 + 1] = 0xff;
        assert_eq!(
            Record::decode_payload(&p),
            Err(RecordError::BadUtf8 {
                what: "annotation",
                field: "text",
                offset: PAYLOAD_HEADER_BYTES + 4,
            })
        );
    }
}
