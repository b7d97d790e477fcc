//! Stateful RC analysis: what Wireshark does not do for RoCE.
//!
//! Runs at ingest on every source, packet by packet, on the frames alone.
//! A *flow* is one direction (source IP, destination IP, DestQP); a *QP
//! conversation* pairs a flow of requests with the flow that carries their
//! responses back (RC packets do not carry the source QP, so the pairing
//! goes by addresses and by which outstanding PSNs an ACK or READ response
//! answers). Each packet is classified (new, retransmission, duplicate,
//! out-of-sequence, ACK/NAK kind, CNP, ECN-CE); Go-Back-N episodes are
//! collected with their cause and cost; PSN gaps that ACKs later cover with
//! no NAK and no resend are capture loss, told apart from wire loss.

mod diagnose;
mod series;
mod state;

use std::collections::{HashMap, VecDeque};

pub use diagnose::{CARD_QP, Finding, FindingCause, FindingItem, MAX_EVIDENCE_ROWS};
use series::BinCursor;
pub use series::{Bin, MAX_BINS, Series};
pub use state::QpState;

use crate::headers::{NakCode, Syndrome};
use crate::opcode::{Opcode, Operation};
use crate::packet::Packet;
use crate::psn::{psn_add, psn_diff};

/// What the analysis needs of one RoCE packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    pub ts_ns: u64,
    /// Source and destination (IPv4 mapped into IPv6, or RoCEv1 GIDs).
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub dest_qp: u32,
    pub opcode: Opcode,
    pub psn: u32,
    pub syndrome: Option<u8>,
    pub msn: u32,
    /// RETH DMA length (READ requests: the bytes asked for).
    pub dma_len: Option<u32>,
    pub payload_len: u32,
    /// Frame length on the wire.
    pub wire_len: u32,
    pub ecn_ce: bool,
    /// An RDMA CM message (REQ/REP over UD QP 1), which names the QPNs of a
    /// connection: the analysis pairs flows by it.
    pub cm: Option<CmMessage>,
}

/// The part of a CM REQ or REP that pairs the two flows of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmMessage {
    pub rep: bool,
    pub local_comm_id: u32,
    /// REP: the REQ's communication id it answers.
    pub remote_comm_id: u32,
    /// The sender's QPN.
    pub local_qpn: u32,
}

/// MAD management class of the communication manager.
const MAD_CLASS_CM: u8 = 0x07;
const CM_ATTR_REQ: u16 = 0x0010;
const CM_ATTR_REP: u16 = 0x0013;

fn cm_message(p: &Packet<'_>, dest_qp: u32, opcode: Opcode) -> Option<CmMessage> {
    if dest_qp != 1 || !matches!(opcode.kind(), crate::OpcodeKind::Ud(_)) {
        return None;
    }
    let mad = p.payload();
    let be32 = |o: usize| {
        mad.get(o..o + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if *mad.get(1)? != MAD_CLASS_CM {
        return None;
    }
    let attr = u16::from_be_bytes([*mad.get(16)?, *mad.get(17)?]);
    match attr {
        CM_ATTR_REQ => Some(CmMessage {
            rep: false,
            local_comm_id: be32(24)?,
            remote_comm_id: 0,
            local_qpn: be32(56)? >> 8,
        }),
        CM_ATTR_REP => Some(CmMessage {
            rep: true,
            local_comm_id: be32(24)?,
            remote_comm_id: be32(28)?,
            local_qpn: be32(36)? >> 8,
        }),
        _ => None,
    }
}

impl Observation {
    /// The observation of a decoded RoCE packet (`None` if it is not RoCE).
    pub fn from_packet(p: &Packet<'_>, ts_ns: u64, wire_len: u32) -> Option<Observation> {
        let bth = p.bth()?;
        // Each header is looked up once: this runs for every packet indexed.
        let ip = p.ip();
        let (src, dst) = match ip {
            Some(ip) => (ip.src_v6(), ip.dst_v6()),
            None => p.grh().map_or(([0; 16], [0; 16]), |g| (g.src(), g.dst())),
        };
        let aeth = p.ext().aeth();
        let dest_qp = bth.dest_qp();
        let opcode = bth.opcode();
        Some(Observation {
            ts_ns,
            src,
            dst,
            dest_qp,
            opcode,
            psn: bth.psn(),
            syndrome: aeth.map(|a| a.syndrome_raw()),
            msn: aeth.map_or(0, |a| a.msn()),
            dma_len: p.ext().reth().map(|r| r.dma_len()),
            payload_len: p.payload_len() as u32,
            wire_len,
            ecn_ce: ip.is_some_and(|ip| ip.ecn() == 3),
            cm: cm_message(p, dest_qp, opcode),
        })
    }
}

/// The analysis verdicts of a packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Class(pub u8);

impl Class {
    pub const RETRANSMISSION: Class = Class(1);
    pub const DUPLICATE: Class = Class(2);
    pub const OUT_OF_SEQUENCE: Class = Class(4);
    /// Packets before this one were missed by the capture (not the wire).
    pub const CAPTURE_LOSS: Class = Class(8);

    pub fn contains(self, c: Class) -> bool {
        self.0 & c.0 == c.0
    }
    fn add(&mut self, c: Class) {
        self.0 |= c.0;
    }
}

/// A verdict changed after the fact (a gap resolved as capture loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LateClass {
    pub index: u64,
    pub set: Class,
    pub clear: Class,
}

/// Why a Go-Back-N episode started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EpisodeCause {
    /// NAK (PSN sequence error) from the responder.
    NakSeqErr,
    /// RNR NAK: the responder had no receive buffer.
    Rnr,
    /// A resend with no NAK after a silence: the requester's timer fired.
    Timeout,
    /// A READ response went missing: the requester re-issued the READ.
    ImpliedNak,
}

impl EpisodeCause {
    pub const ALL: [EpisodeCause; 4] = [
        EpisodeCause::NakSeqErr,
        EpisodeCause::Rnr,
        EpisodeCause::Timeout,
        EpisodeCause::ImpliedNak,
    ];

    fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            EpisodeCause::NakSeqErr => "nak_seq_err",
            EpisodeCause::Rnr => "rnr",
            EpisodeCause::Timeout => "timeout",
            EpisodeCause::ImpliedNak => "implied_nak",
        }
    }
}

/// One retransmission episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Episode {
    /// The QP conversation (index into [`Report::qps`]).
    pub qp: u32,
    pub cause: EpisodeCause,
    /// Row of the first evidence (the NAK, or the first resend on a timeout).
    pub first_index: u64,
    pub last_index: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// PSN the resend started from.
    pub from_psn: u32,
    pub packets_resent: u64,
    pub bytes_resent: u64,
    /// From the first loss evidence to the first new packet after the resend
    /// (or the ACK that covered it).
    pub recovery_ns: u64,
    /// Silence before a timeout resend.
    pub silence_ns: u64,
    /// The NAK was not in the capture (its AETH was cut or the frame
    /// missed): the cause is inferred from a resend after a short silence.
    pub nak_inferred: bool,
    /// Go-Back-N passes after the first (each rewinds to an older PSN).
    pub retries: u32,
    /// Passes the requester's timer started (each one is an expiry
    /// `local_ack_timeout_err` counts).
    pub timer_expiries: u32,
    /// Loss evidence the requester saw and did not act on: its timer
    /// fired much later (a READ-response gap on a NIC without an
    /// implied-NAK path, such as BALBOA).
    pub unacted: Option<Unacted>,
    /// New data or an ACK of everything sent before it ended the episode;
    /// `false`: it was still open when the source ended.
    pub recovered: bool,
}

/// Loss evidence before a timer-driven resend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unacted {
    /// What it would have been read as (implied NAK, NAK).
    pub cause: EpisodeCause,
    pub ts_ns: u64,
    pub index: u64,
    /// The PSN it showed missing.
    pub psn: u32,
}

/// One expiry of a requester's retransmission timer: a Go-Back-N pass
/// after a silence with no NAK acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerExpiry {
    /// Time and row of the resend it caused.
    pub ts_ns: u64,
    pub index: u64,
    pub psn: u32,
    /// Silence before it: the timer's interval as the capture shows it.
    pub silence_ns: u64,
}

/// Why a QP went to the error state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpErrorReason {
    /// A fatal NAK from the responder (invalid request, remote access or
    /// remote operational error).
    Nak(NakCode),
    /// The retry count ran out with the oldest PSN still unacknowledged.
    RetriesExceeded,
    /// The RNR retry count ran out: the requester stopped resending after
    /// `naks` RNR NAKs on one PSN (mlx5's `rnr_nak_retry_err`).
    RnrRetriesExceeded { naks: u32 },
}

impl QpErrorReason {
    /// Its name in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            QpErrorReason::Nak(NakCode::InvalidRequest) => "nak_invalid_request",
            QpErrorReason::Nak(NakCode::RemoteAccessError) => "nak_remote_access",
            QpErrorReason::Nak(_) => "nak_remote_operational",
            QpErrorReason::RetriesExceeded => "retries_exceeded",
            QpErrorReason::RnrRetriesExceeded { .. } => "rnr_retries_exceeded",
        }
    }
}

/// The QP's move to the error state, with its evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpError {
    /// When it happened (retries exceeded: the last retry plus the timer's
    /// last interval, the expiry no packet shows).
    pub ts_ns: u64,
    /// The NAK's row, or the last retry's.
    pub index: u64,
    pub psn: u32,
    pub reason: QpErrorReason,
}

/// Counters, named as mlx5 / rxe name them where the meaning matches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests that arrived beyond the expected PSN.
    pub out_of_sequence: u64,
    /// NAKs (PSN sequence error).
    pub packet_seq_err: u64,
    /// Requests re-sent over PSNs the responder already had.
    pub duplicate_request: u64,
    /// Expiries of the requester's retransmission timer (every
    /// timer-driven Go-Back-N pass, several per episode on a stuck PSN).
    pub local_ack_timeout_err: u64,
    /// READ responses missing: the requester re-issued a READ.
    pub implied_nak_seq_err: u64,
    /// RNR NAKs.
    pub rnr_nak: u64,
    /// QPs whose RNR retry count ran out: RNR NAKs on one PSN, then no
    /// resend for longer than the wait they asked for, to the capture's end.
    pub rnr_nak_retry_err: u64,
    pub nak_invalid_request: u64,
    pub nak_remote_access: u64,
    pub nak_remote_operational: u64,
    /// CNPs seen (sent by notification points).
    pub np_cnp_sent: u64,
    /// CNPs that reached a known requester (reaction points).
    pub rp_cnp_handled: u64,
    /// RoCE packets with ECN CE.
    pub np_ecn_marked_roce_packets: u64,
    /// QPs whose retry count ran out ([`AnalysisConfig::retry_limit`]
    /// timer-driven passes on one PSN, then silence for another interval).
    pub req_transport_retries_exceeded: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    pub duplicate_acks: u64,
    pub duplicate_read_responses: u64,
    /// PSNs the capture missed (ACKed, never NAKed or resent).
    pub capture_loss_packets: u64,
    pub acks: u64,
    /// Requests no longer tracked for their ACK: more than
    /// [`MAX_TRACKED_SENDS`] were outstanding (a capture of one direction
    /// only, or ACKs the capture missed). Their ACKs count no RTT.
    pub untracked_sends: u64,
}

/// Requests tracked per flow while their ACK is awaited. RC allows at most
/// 2^23 PSNs in flight, NICs far fewer; the cap keeps memory bounded when a
/// capture never shows the ACKs.
pub const MAX_TRACKED_SENDS: usize = 1 << 16;

impl Counters {
    /// `(name, value)` pairs for tables and JSON.
    pub fn named(&self) -> [(&'static str, u64); 21] {
        [
            ("out_of_sequence", self.out_of_sequence),
            ("packet_seq_err", self.packet_seq_err),
            ("duplicate_request", self.duplicate_request),
            ("local_ack_timeout_err", self.local_ack_timeout_err),
            ("implied_nak_seq_err", self.implied_nak_seq_err),
            ("rnr_nak", self.rnr_nak),
            ("rnr_nak_retry_err", self.rnr_nak_retry_err),
            ("nak_invalid_request", self.nak_invalid_request),
            ("nak_remote_access", self.nak_remote_access),
            ("nak_remote_operational", self.nak_remote_operational),
            ("np_cnp_sent", self.np_cnp_sent),
            ("rp_cnp_handled", self.rp_cnp_handled),
            (
                "np_ecn_marked_roce_packets",
                self.np_ecn_marked_roce_packets,
            ),
            (
                "req_transport_retries_exceeded",
                self.req_transport_retries_exceeded,
            ),
            ("retransmitted_packets", self.retransmitted_packets),
            ("retransmitted_bytes", self.retransmitted_bytes),
            ("duplicate_acks", self.duplicate_acks),
            ("duplicate_read_responses", self.duplicate_read_responses),
            ("capture_loss_packets", self.capture_loss_packets),
            ("acks", self.acks),
            ("untracked_sends", self.untracked_sends),
        ]
    }

    fn add(&mut self, o: &Counters) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            out_of_sequence,
            packet_seq_err,
            duplicate_request,
            local_ack_timeout_err,
            implied_nak_seq_err,
            rnr_nak,
            rnr_nak_retry_err,
            nak_invalid_request,
            nak_remote_access,
            nak_remote_operational,
            np_cnp_sent,
            rp_cnp_handled,
            np_ecn_marked_roce_packets,
            req_transport_retries_exceeded,
            retransmitted_packets,
            retransmitted_bytes,
            duplicate_acks,
            duplicate_read_responses,
            capture_loss_packets,
            acks,
            untracked_sends
        );
    }
}

/// Tunables of the analysis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnalysisConfig {
    /// A resend with no NAK counts as a timeout when the requester was
    /// silent at least this long before it.
    pub timeout_silence_ns: u64,
    /// Window cap in packets, 0 to take each QP's from the capture (the
    /// most it had outstanding). A scenario that knows its window sets it.
    pub window_packets: u32,
    /// Retries of one PSN before the requester gives up (IBTA retry_cnt,
    /// 3 bits: 7; BALBOA's RTL: 12) for `req_transport_retries_exceeded`.
    pub retry_limit: u32,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            timeout_silence_ns: 100_000,
            window_packets: 0,
            retry_limit: 7,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    src: [u8; 16],
    dst: [u8; 16],
    dest_qp: u32,
}

/// A request sent and not yet acknowledged.
#[derive(Debug, Clone, Copy)]
struct Sent {
    psn: u32,
    /// PSNs it consumes (READ: one per response packet).
    span: u32,
    ts_ns: u64,
    resent: bool,
    read: bool,
}

#[derive(Debug, Clone, Copy)]
struct Gap {
    /// First missing PSN and how many.
    psn: u32,
    n: u32,
    /// Row of the packet after the gap.
    index: u64,
}

#[derive(Debug, Clone, Copy)]
struct OpenEpisode {
    ep: Episode,
    /// The highest PSN sent before the episode: new data resumes after it.
    resume_psn: u32,
    /// The PSN resent last: a resend at or before it starts a new pass.
    last_psn: u32,
}

/// Loss evidence waiting for the resend it should cause.
#[derive(Debug, Clone, Copy)]
struct PendingNak {
    psn: u32,
    ts_ns: u64,
    index: u64,
    cause: EpisodeCause,
}

/// A resend comes from the timer when the evidence before it is older than
/// this many smoothed round trips (and the configured timeout silence).
const TIMER_RTTS: u64 = 8;

/// Timer expiries kept per flow for the retry schedule and the QP state.
const MAX_EXPIRIES: usize = 4096;

/// RNR NAKs in a row on one PSN: the RNR retry count being spent.
#[derive(Debug, Clone, Copy)]
struct RnrRun {
    psn: u32,
    naks: u32,
    /// The last NAK: its time, row and the wait it asked for.
    ts_ns: u64,
    index: u64,
    wait_ns: u64,
}

/// State of one flow (one direction of one QP connection).
#[derive(Debug, Clone)]
struct Flow {
    key: FlowKey,
    /// The reverse flow, once paired.
    peer: Option<u32>,
    /// QP conversation id this flow belongs to.
    qp: u32,
    // Requester side: the requests this flow carries.
    started: bool,
    next_psn: u32,
    outstanding: VecDeque<Sent>,
    last_req_ts: u64,
    last_req_read: bool,
    pmtu: u32,
    gaps: Vec<Gap>,
    pending_nak: Option<PendingNak>,
    episode: Option<OpenEpisode>,
    expiries: Vec<TimerExpiry>,
    error: Option<QpError>,
    /// RNR NAKs in a row on one PSN, until an ACK passes it.
    rnr_run: Option<RnrRun>,
    /// Smoothed ACK round trip (1/8 gain), 0 before the first sample.
    rtt_avg_ns: u64,
    peak_outstanding: u32,
    first_ts_ns: u64,
    last_ts_ns: u64,
    // Responder side (responses this flow carries for the peer's requests).
    last_ack_psn: Option<u32>,
    read_resp_next: Option<u32>,
    /// The first READ response PSN found missing, until it arrives: the
    /// READ it belongs to is not done, whatever later AETHs acknowledge.
    read_gap: Option<u32>,
    series: Series,
    /// The series bin last used (see `Series::bin_at`).
    cursor: BinCursor,
    counters: Counters,
    packets: u64,
    wire_bytes: u64,
    rtt_ns: RttSamples,
    requests: u64,
    responses: u64,
}

impl Flow {
    fn new(key: FlowKey, qp: u32, ts_ns: u64) -> Flow {
        Flow {
            key,
            peer: None,
            qp,
            started: false,
            next_psn: 0,
            outstanding: VecDeque::new(),
            last_req_ts: ts_ns,
            last_req_read: false,
            pmtu: 0,
            gaps: Vec::new(),
            pending_nak: None,
            episode: None,
            expiries: Vec::new(),
            error: None,
            rnr_run: None,
            rtt_avg_ns: 0,
            peak_outstanding: 0,
            first_ts_ns: ts_ns,
            last_ts_ns: ts_ns,
            last_ack_psn: None,
            read_resp_next: None,
            read_gap: None,
            series: Series::new(ts_ns),
            cursor: BinCursor::default(),
            counters: Counters::default(),
            packets: 0,
            wire_bytes: 0,
            rtt_ns: RttSamples::default(),
            requests: 0,
            responses: 0,
        }
    }

    fn track_sent(&mut self, sent: Sent) {
        if self.outstanding.len() >= MAX_TRACKED_SENDS {
            self.outstanding.pop_front();
            self.counters.untracked_sends += 1;
        }
        self.outstanding.push_back(sent);
    }

    fn outstanding_psns(&self) -> u32 {
        match self.outstanding.front() {
            Some(first) if self.started => psn_diff(self.next_psn, first.psn).max(0) as u32,
            _ => 0,
        }
    }

    /// PSNs a READ of `dma_len` bytes consumes, with the PMTU seen so far.
    fn read_span(&self, dma_len: Option<u32>) -> u32 {
        let pmtu = if self.pmtu == 0 { 4096 } else { self.pmtu };
        dma_len.map_or(1, |len| len.div_ceil(pmtu).max(1))
    }
}

/// Per-QP results.
#[derive(Debug, Clone, PartialEq)]
pub struct QpReport {
    /// Requester and responder addresses and the responder's QPN.
    pub requester: [u8; 16],
    pub responder: [u8; 16],
    pub dest_qp: u32,
    /// QPN of the requester, when its responses were seen.
    pub requester_qp: Option<u32>,
    pub packets: u64,
    pub wire_bytes: u64,
    pub requests: u64,
    pub responses: u64,
    pub next_psn: u32,
    pub oldest_unacked_psn: Option<u32>,
    pub outstanding: u32,
    pub counters: Counters,
    pub episodes_by_cause: Vec<(EpisodeCause, u64)>,
    /// Median and 99th percentile ACK round trip, ns.
    pub rtt_p50_ns: Option<u64>,
    pub rtt_p99_ns: Option<u64>,
    /// ACK round trips as (bucket lower bound ns, samples), non-empty
    /// buckets only, ascending; see [`rtt_bucket_ns`] for the bounds.
    pub rtt_histogram: Vec<(u64, u64)>,
    /// Request direction and response direction series.
    pub series: Series,
    pub reverse_series: Option<Series>,
    /// The window in packets: the configured one, else the most this QP
    /// had outstanding in the capture.
    pub window_packets: u32,
    /// Every expiry of the requester's timer seen (at most 4096).
    pub timer_expiries: Vec<TimerExpiry>,
    /// The QP went to the error state (a fatal NAK, retries exceeded).
    pub error: Option<QpError>,
    /// First and last packet of the QP, both directions.
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
}

/// The log-scale bucket holding `ns`: `[lower, upper)`, four buckets per
/// power of two (at most ~256 buckets whatever the samples).
pub fn rtt_bucket_ns(ns: u64) -> (u64, u64) {
    if ns < 8 {
        return (ns, ns + 1);
    }
    let shift = 63 - ns.leading_zeros() - 2;
    let lower = (ns >> shift) << shift;
    (lower, lower.saturating_add(1 << shift))
}

/// Histogram of sorted samples: one pass, equal buckets are adjacent.
fn rtt_histogram(sorted_ns: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &ns in sorted_ns {
        let (lower, _) = rtt_bucket_ns(ns);
        match out.last_mut() {
            Some((l, n)) if *l == lower => *n += 1,
            _ => out.push((lower, 1)),
        }
    }
    out
}

/// Everything the analysis found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub qps: Vec<QpReport>,
    pub counters: Counters,
    /// The newest [`MAX_EPISODES`] episodes (the counts per QP and cause in
    /// `QpReport::episodes_by_cause` cover all of them).
    pub episodes: Vec<Episode>,
    pub findings: Vec<Finding>,
    /// Episodes let go past [`MAX_EPISODES`], the oldest first.
    pub episodes_let_go: u64,
    /// Evidence notes (PFC pauses, DPI drops) let go past [`MAX_NOTES`].
    pub notes_let_go: u64,
}

/// Episodes kept for the report: a live session on a lossy link closes
/// thousands a second for hours, so the oldest go (about 100 B each).
pub const MAX_EPISODES: usize = 1 << 17;

/// Evidence notes kept for the diagnosis, the newest.
pub const MAX_NOTES: usize = 1 << 16;

/// Closed episodes: the newest kept, every one counted per QP and cause.
#[derive(Debug, Clone, Default)]
struct EpisodeLog {
    kept: VecDeque<Episode>,
    let_go: u64,
    /// Closed episodes per QP conversation id, by `EpisodeCause` index.
    by_qp: Vec<[u64; EpisodeCause::ALL.len()]>,
}

impl EpisodeLog {
    fn push(&mut self, ep: Episode) {
        let qp = ep.qp as usize;
        if self.by_qp.len() <= qp {
            self.by_qp.resize(qp + 1, [0; EpisodeCause::ALL.len()]);
        }
        self.by_qp[qp][ep.cause.index()] += 1;
        if self.kept.len() == MAX_EPISODES {
            self.kept.pop_front();
            self.let_go += 1;
        }
        self.kept.push_back(ep);
    }
}

/// The analysis state over one source.
#[derive(Debug, Clone)]
pub struct RcAnalysis {
    cfg: AnalysisConfig,
    flows: Vec<Flow>,
    ids: HashMap<FlowKey, u32>,
    /// Flow of each caller-interned key id (see `observe_keyed`).
    by_key_id: Vec<u32>,
    /// CM REQs seen: (requester, responder, comm id) -> requester QPN.
    cm_reqs: HashMap<([u8; 16], [u8; 16], u32), u32>,
    /// Connections the CM named: (requester, responder, responder QPN,
    /// requester QPN).
    cm_pairs: Vec<([u8; 16], [u8; 16], u32, u32)>,
    /// QP conversations: the flow carrying the requests (the first flow seen).
    qps: Vec<u32>,
    episodes: EpisodeLog,
    late: Vec<LateClass>,
    first_ts_ns: Option<u64>,
    last_ts_ns: u64,
    /// Evidence only other sources can give (simulator ground truth, the
    /// card's counters): PFC pauses and DPI drops with their times.
    notes: VecDeque<diagnose::Note>,
    notes_let_go: u64,
    /// Readings of the card's own counters, in time order: the first, the
    /// first with STRM down, the latest (all the diagnosis reads, so that
    /// hours of polling hold three).
    card: Vec<(u64, CardCounters)>,
    /// The card's counter probes (a live link's `counters` module) and the
    /// reading their samples are building.
    card_probes: Vec<(u16, CardCounter)>,
    card_pending: Option<(u64, CardCounters)>,
}

/// Which of [`CardCounters`] a counter probe feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CardCounter {
    PsnDrops,
    Retransmissions,
    StreamDown,
}

impl CardCounter {
    /// From a counter's name as the driver file labels it, normalised
    /// (`PSN drop count` -> `psn_drop_count`, `STRM down` -> `strm_down`).
    fn from_name(name: &str) -> Option<CardCounter> {
        let n = name.to_ascii_lowercase();
        // The counter file's later ports (`qsfp1_retrans_cnt`): the sniffer
        // sits beside the first port's MAC, so only its counters compare.
        if n.strip_prefix("qsfp")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.contains('_'))
        {
            return None;
        }
        if n.contains("psn") && n.contains("drop") {
            Some(CardCounter::PsnDrops)
        } else if n.contains("retrans") {
            Some(CardCounter::Retransmissions)
        } else if (n.contains("strm") || n.contains("stream")) && n.contains("down") {
            Some(CardCounter::StreamDown)
        } else {
            None
        }
    }
}

/// ACK round trips of one flow, for its percentiles, in bounded memory:
/// every sample up to [`RTT_SAMPLES_MAX`], then an even thinning over the
/// whole flow (every other sample dropped and the stride doubled each time
/// the store fills), so that hours of ACKs keep 64 Ki samples spread over
/// all of them.
#[derive(Debug, Clone, Default)]
struct RttSamples {
    kept: Vec<u64>,
    /// Keep one sample in `stride`.
    stride: u64,
    seen: u64,
}

const RTT_SAMPLES_MAX: usize = 1 << 16;

impl RttSamples {
    fn add(&mut self, rtt_ns: u64) {
        let stride = self.stride.max(1);
        if self.seen % stride == 0 {
            if self.kept.len() == RTT_SAMPLES_MAX {
                let mut i = 0;
                self.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride = stride * 2;
            }
            if self.seen % self.stride.max(1) == 0 {
                self.kept.push(rtt_ns);
            }
        }
        self.seen += 1;
    }
}

/// The card's own counters at one reading (the BALBOA driver's
/// `cyt_attr_nstats`: running totals since the card was programmed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CardCounters {
    /// Requests the card's responder dropped for their PSN (out of order).
    pub psn_drops: u64,
    /// Packets the card's requester retransmitted.
    pub retransmissions: u64,
    /// "STRM down": above 0, the card's network stack is down until the
    /// card is reprogrammed.
    pub stream_down: u64,
}

impl Default for RcAnalysis {
    fn default() -> Self {
        RcAnalysis::new(AnalysisConfig::default())
    }
}

fn is_read_response(op: Option<Operation>) -> bool {
    matches!(
        op,
        Some(
            Operation::ReadResponseFirst
                | Operation::ReadResponseMiddle
                | Operation::ReadResponseLast
                | Operation::ReadResponseOnly
        )
    )
}

impl RcAnalysis {
    pub fn new(cfg: AnalysisConfig) -> RcAnalysis {
        RcAnalysis {
            cfg,
            flows: Vec::new(),
            ids: HashMap::new(),
            by_key_id: Vec::new(),
            cm_reqs: HashMap::new(),
            cm_pairs: Vec::new(),
            qps: Vec::new(),
            episodes: EpisodeLog::default(),
            late: Vec::new(),
            first_ts_ns: None,
            last_ts_ns: 0,
            notes: VecDeque::new(),
            notes_let_go: 0,
            card: Vec::new(),
            card_probes: Vec::new(),
            card_pending: None,
        }
    }

    /// Record evidence the frames cannot show (a PFC pause, a DPI drop, the
    /// READ tag limit), for the diagnosis.
    pub fn note(&mut self, ts_ns: u64, what: FindingCause) {
        if self.notes.len() == MAX_NOTES {
            self.notes.pop_front();
            self.notes_let_go += 1;
        }
        self.notes.push_back(diagnose::Note { ts_ns, what });
    }

    /// Record a reading of the card's own counters: the diagnosis compares
    /// what they count between the first and the last reading with what the
    /// capture shows over the same interval.
    pub fn card_counters(&mut self, ts_ns: u64, counters: CardCounters) {
        let first_down = self.card.iter().position(|(_, c)| c.stream_down > 0);
        // Keep the first reading, the first with STRM down and the latest.
        if self.card.len() >= 2 && first_down != Some(self.card.len() - 1) {
            self.card.pop();
        }
        self.card.push((ts_ns, counters));
    }

    /// A profiler probe of the card's counter file (a live link's
    /// `counters` module): the ones the diagnosis reads are remembered by
    /// name; returns whether `name` is one of them.
    pub fn card_counter_probe(&mut self, probe: u16, name: &str) -> bool {
        let Some(kind) = CardCounter::from_name(name) else {
            return false;
        };
        if !self.card_probes.iter().any(|(p, _)| *p == probe) {
            self.card_probes.push((probe, kind));
        }
        true
    }

    /// A sample of a probe named by [`RcAnalysis::card_counter_probe`]
    /// (others are ignored). Samples of one poll share a time and make one
    /// reading.
    pub fn card_counter_sample(&mut self, ts_ns: u64, probe: u16, value: i64) {
        let Some(&(_, kind)) = self.card_probes.iter().find(|(p, _)| *p == probe) else {
            return;
        };
        let value = value.max(0) as u64;
        let mut reading = match self.card_pending.take() {
            Some((t, r)) if t == ts_ns => r,
            Some((t, r)) => {
                self.card_counters(t, r);
                r
            }
            None => CardCounters::default(),
        };
        match kind {
            CardCounter::PsnDrops => reading.psn_drops = value,
            CardCounter::Retransmissions => reading.retransmissions = value,
            CardCounter::StreamDown => reading.stream_down = value,
        }
        self.card_pending = Some((ts_ns, reading));
    }

    /// Verdicts changed after the fact since the last call.
    pub fn drain_late(&mut self) -> std::vec::Drain<'_, LateClass> {
        self.late.drain(..)
    }

    /// The QP conversation slot a packet's flow belongs to now (map it
    /// with [`RcAnalysis::slot_to_report`] once the source ended: a flow
    /// seen before its pair moves into the pair's conversation).
    pub fn qp_of(&self, src: [u8; 16], dst: [u8; 16], dest_qp: u32) -> Option<u32> {
        let id = self.ids.get(&FlowKey { src, dst, dest_qp })?;
        Some(self.flows[*id as usize].qp)
    }

    /// For every conversation slot, its index in [`Report::qps`].
    pub fn slot_to_report(&self) -> Vec<u32> {
        let mut index_of_live = vec![u32::MAX; self.qps.len()];
        let mut n = 0;
        for (slot, &flow) in self.qps.iter().enumerate() {
            if self.flows[flow as usize].qp as usize == slot {
                index_of_live[slot] = n;
                n += 1;
            }
        }
        (0..self.qps.len())
            .map(|slot| {
                let final_slot = self.flows[self.qps[slot] as usize].qp as usize;
                index_of_live.get(final_slot).copied().unwrap_or(u32::MAX)
            })
            .collect()
    }

    fn flow_id(&mut self, o: &Observation) -> u32 {
        let key = FlowKey {
            src: o.src,
            dst: o.dst,
            dest_qp: o.dest_qp,
        };
        if let Some(id) = self.ids.get(&key) {
            return *id;
        }
        let id = self.flows.len() as u32;
        let qp = self.qps.len() as u32;
        self.qps.push(id);
        self.flows.push(Flow::new(key, qp, o.ts_ns));
        self.ids.insert(key, id);
        id
    }

    fn note_cm(&mut self, o: &Observation, cm: CmMessage) {
        if cm.rep {
            // A REP from B answers A's REQ: A -> B requests go to B's QPN,
            // B -> A responses to A's.
            if let Some(req_qpn) = self.cm_reqs.get(&(o.dst, o.src, cm.remote_comm_id)) {
                self.cm_pairs.push((o.dst, o.src, cm.local_qpn, *req_qpn));
            }
        } else {
            self.cm_reqs
                .insert((o.src, o.dst, cm.local_comm_id), cm.local_qpn);
        }
    }

    /// Pair response flow `resp` with the reverse flow whose outstanding
    /// requests this response answers: by the CM exchange where the capture
    /// has one, else by addresses and PSNs.
    fn pair(&mut self, resp: u32, o: &Observation) -> Option<u32> {
        if let Some(p) = self.flows[resp as usize].peer {
            return Some(p);
        }
        let key = self.flows[resp as usize].key;
        let by_cm = self
            .cm_pairs
            .iter()
            .find(|(a, b, _, qa)| *b == key.src && *a == key.dst && *qa == key.dest_qp)
            .and_then(|(a, b, qb, _)| {
                self.ids
                    .get(&FlowKey {
                        src: *a,
                        dst: *b,
                        dest_qp: *qb,
                    })
                    .copied()
            })
            .filter(|f| self.flows[*f as usize].peer.is_none());
        if let Some(chosen) = by_cm {
            return Some(self.join(resp, chosen));
        }
        let candidates: Vec<u32> = self
            .flows
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                *i as u32 != resp
                    && f.key.src == key.dst
                    && f.key.dst == key.src
                    && f.peer.is_none()
                    && f.started
            })
            .map(|(i, _)| i as u32)
            .collect();
        let answers = |f: &Flow| {
            f.outstanding
                .iter()
                .any(|s| psn_diff(o.psn, s.psn) >= 0 && psn_diff(o.psn, s.psn) < s.span as i32)
                || psn_diff(o.psn, f.next_psn) == -1
        };
        let chosen = match candidates.as_slice() {
            [one] => Some(*one),
            many => many
                .iter()
                .copied()
                .find(|c| answers(&self.flows[*c as usize])),
        }?;
        Some(self.join(resp, chosen))
    }

    /// Make `resp` and `chosen` the two directions of one QP conversation.
    fn join(&mut self, resp: u32, chosen: u32) -> u32 {
        self.flows[resp as usize].peer = Some(chosen);
        self.flows[chosen as usize].peer = Some(resp);
        // The response flow joins the requester's QP conversation.
        let qp = self.flows[chosen as usize].qp;
        let old = self.flows[resp as usize].qp;
        self.flows[resp as usize].qp = qp;
        if self.qps.get(old as usize) == Some(&resp) {
            // Leave the slot (ids stay stable) but point it at the pair.
            self.qps[old as usize] = chosen;
        }
        chosen
    }

    /// Classify one packet; `index` is its row number.
    pub fn observe(&mut self, index: u64, o: &Observation) -> Class {
        let id = self.flow_id(o);
        self.observe_flow(index, id, o)
    }

    /// Like [`RcAnalysis::observe`] for a caller that already interned the
    /// packet's (source, destination, DestQP) into a dense id `key_id` (the
    /// store does): skips hashing the key on the per-packet path.
    pub fn observe_keyed(&mut self, index: u64, key_id: u32, o: &Observation) -> Class {
        let slot = key_id as usize;
        let id = match self.by_key_id.get(slot) {
            Some(&id) if id != u32::MAX => id,
            _ => {
                let id = self.flow_id(o);
                if slot >= self.by_key_id.len() {
                    self.by_key_id.resize(slot + 1, u32::MAX);
                }
                self.by_key_id[slot] = id;
                id
            }
        };
        self.observe_flow(index, id, o)
    }

    fn observe_flow(&mut self, index: u64, id: u32, o: &Observation) -> Class {
        self.last_ts_ns = self.last_ts_ns.max(o.ts_ns);
        self.first_ts_ns = Some(self.first_ts_ns.map_or(o.ts_ns, |t| t.min(o.ts_ns)));
        let mut class = Class::default();
        let op = o.opcode.operation();
        {
            let f = &mut self.flows[id as usize];
            f.packets += 1;
            f.last_ts_ns = f.last_ts_ns.max(o.ts_ns);
            f.wire_bytes += u64::from(o.wire_len);
            let b = f.series.bin_at(&mut f.cursor, o.ts_ns);
            b.packets += 1;
            b.wire_bytes += u64::from(o.wire_len);
            if o.ecn_ce {
                f.counters.np_ecn_marked_roce_packets += 1;
                b.ecn_marked += 1;
            }
            if o.opcode.is_cnp() {
                b.cnps += 1;
            }
        }
        if o.opcode.is_cnp() {
            self.flows[id as usize].counters.np_cnp_sent += 1;
            if let Some(peer) = self.flows[id as usize].peer.or_else(|| self.pair_any(id)) {
                self.flows[peer as usize].counters.rp_cnp_handled += 1;
            }
            return class;
        }
        if let Some(cm) = o.cm {
            self.note_cm(o, cm);
            return class;
        }
        let Some(op) = op else { return class };
        if op.is_response() {
            self.flows[id as usize].responses += 1;
            if let Some(req) = self.pair(id, o) {
                self.response(index, id, req, o, op, &mut class);
            }
        } else {
            self.flows[id as usize].requests += 1;
            self.request(index, id, o, op, &mut class);
        }
        if class.contains(Class::RETRANSMISSION) {
            let f = &mut self.flows[id as usize];
            f.series
                .bin_at(&mut f.cursor, o.ts_ns)
                .retransmitted_packets += 1;
        }
        class
    }

    /// A CNP's flow pairs with any reverse flow of the same hosts.
    fn pair_any(&mut self, id: u32) -> Option<u32> {
        let key = self.flows[id as usize].key;
        let peer = self
            .flows
            .iter()
            .position(|f| f.key.src == key.dst && f.key.dst == key.src)? as u32;
        Some(peer)
    }

    fn request(&mut self, index: u64, id: u32, o: &Observation, op: Operation, class: &mut Class) {
        let silence = o.ts_ns.saturating_sub(self.flows[id as usize].last_req_ts);
        let peer_acked = self.flows[id as usize]
            .peer
            .and_then(|p| self.flows[p as usize].last_ack_psn);
        let f = &mut self.flows[id as usize];
        let read = op == Operation::ReadRequest;
        if matches!(
            op,
            Operation::WriteFirst
                | Operation::WriteMiddle
                | Operation::SendFirst
                | Operation::SendMiddle
        ) {
            f.pmtu = f.pmtu.max(o.payload_len);
        }
        let span = if read { f.read_span(o.dma_len) } else { 1 };
        if !f.started {
            f.started = true;
            f.next_psn = o.psn;
        }
        let d = psn_diff(o.psn, f.next_psn);
        if d > 0 && f.last_req_read {
            // The READ before consumed more PSNs than estimated: not a gap.
            if let Some(last) = f.outstanding.back_mut() {
                last.span += d as u32;
            }
            f.next_psn = o.psn;
        }
        let d = psn_diff(o.psn, f.next_psn);
        let mut goodput = 0u64;
        if d == 0 {
            f.next_psn = psn_add(o.psn, span);
            f.track_sent(Sent {
                psn: o.psn,
                span,
                ts_ns: o.ts_ns,
                resent: false,
                read,
            });
            goodput = u64::from(o.payload_len);
            // New data after a resend closes the episode.
            if let Some(open) = f.episode.take() {
                if psn_diff(o.psn, open.resume_psn) >= 0 {
                    let mut ep = open.ep;
                    ep.recovery_ns = o.ts_ns.saturating_sub(ep.start_ns);
                    ep.recovered = true;
                    f.pending_nak = None;
                    self.episodes.push(ep);
                } else {
                    f.episode = Some(open);
                }
            }
        } else if d > 0 {
            // Beyond the next PSN: PSNs the capture did not see (yet).
            class.add(Class::OUT_OF_SEQUENCE);
            f.counters.out_of_sequence += 1;
            f.gaps.push(Gap {
                psn: f.next_psn,
                n: d as u32,
                index,
            });
            f.next_psn = psn_add(o.psn, span);
            f.track_sent(Sent {
                psn: o.psn,
                span,
                ts_ns: o.ts_ns,
                resent: false,
                read,
            });
            goodput = u64::from(o.payload_len);
        } else {
            // A PSN already sent: a retransmission.
            class.add(Class::RETRANSMISSION);
            f.counters.retransmitted_packets += 1;
            f.counters.retransmitted_bytes += u64::from(o.payload_len);
            if peer_acked.is_some_and(|a| psn_diff(o.psn, a) <= 0) {
                // The responder had ACKed this PSN: it sees a duplicate request.
                f.counters.duplicate_request += 1;
            }
            for s in f.outstanding.iter_mut().filter(|s| s.psn == o.psn) {
                s.resent = true;
            }
            // Missing PSNs now re-sent were lost on the wire, not by the capture.
            f.gaps
                .retain(|g| !(psn_diff(o.psn, g.psn) >= 0 && psn_diff(o.psn, g.psn) < g.n as i32));
            // A resend at or before the last one resent starts a new
            // Go-Back-N pass: a retry, caused by a NAK or the timer.
            let continues = f
                .episode
                .as_ref()
                .is_some_and(|open| psn_diff(o.psn, open.last_psn) > 0);
            if continues {
                if let Some(open) = &mut f.episode {
                    open.ep.last_index = index;
                    open.ep.end_ns = o.ts_ns;
                    open.ep.packets_resent += 1;
                    open.ep.bytes_resent += u64::from(o.payload_len);
                    open.last_psn = o.psn;
                }
            } else {
                // What made the requester resend. Evidence it waited on far
                // longer than a round trip did not trigger it: its timer
                // did (RNR NAKs carry their own wait).
                let timer_ns = self
                    .cfg
                    .timeout_silence_ns
                    .max(f.rtt_avg_ns.saturating_mul(TIMER_RTTS));
                let pending = f.pending_nak.take();
                let (cause, start_ns, first_index, inferred, unacted) = match pending {
                    Some(p)
                        if p.cause != EpisodeCause::Rnr
                            && o.ts_ns.saturating_sub(p.ts_ns) >= timer_ns =>
                    {
                        let unacted = Unacted {
                            cause: p.cause,
                            ts_ns: p.ts_ns,
                            index: p.index,
                            psn: p.psn,
                        };
                        (EpisodeCause::Timeout, o.ts_ns, index, false, Some(unacted))
                    }
                    Some(p) => (p.cause, p.ts_ns, p.index, false, None),
                    // A resend with no NAK before it: the requester's timer,
                    // unless the silence was too short for any timer, which
                    // means the NAK went by unseen (a cut AETH, a missed frame).
                    None if silence < self.cfg.timeout_silence_ns => {
                        (EpisodeCause::NakSeqErr, o.ts_ns, index, true, None)
                    }
                    None => (EpisodeCause::Timeout, o.ts_ns, index, false, None),
                };
                let timer = cause == EpisodeCause::Timeout;
                match cause {
                    EpisodeCause::Timeout => {
                        f.counters.local_ack_timeout_err += 1;
                        if f.expiries.len() < MAX_EXPIRIES {
                            f.expiries.push(TimerExpiry {
                                ts_ns: o.ts_ns,
                                index,
                                psn: o.psn,
                                silence_ns: silence,
                            });
                        }
                    }
                    EpisodeCause::ImpliedNak => f.counters.implied_nak_seq_err += 1,
                    _ => {}
                }
                match &mut f.episode {
                    Some(open) => {
                        open.ep.last_index = index;
                        open.ep.end_ns = o.ts_ns;
                        open.ep.packets_resent += 1;
                        open.ep.bytes_resent += u64::from(o.payload_len);
                        open.ep.retries += 1;
                        open.ep.timer_expiries += u32::from(timer);
                        if timer {
                            open.ep.silence_ns = silence;
                        }
                        if open.ep.unacted.is_none() {
                            open.ep.unacted = unacted;
                        }
                        open.last_psn = o.psn;
                    }
                    None => {
                        f.episode = Some(OpenEpisode {
                            ep: Episode {
                                qp: f.qp,
                                cause,
                                first_index,
                                last_index: index,
                                start_ns,
                                end_ns: o.ts_ns,
                                from_psn: o.psn,
                                packets_resent: 1,
                                bytes_resent: u64::from(o.payload_len),
                                recovery_ns: 0,
                                silence_ns: if timer { silence } else { 0 },
                                nak_inferred: inferred,
                                retries: 0,
                                timer_expiries: u32::from(timer),
                                unacted,
                                recovered: false,
                            },
                            resume_psn: f.next_psn,
                            last_psn: o.psn,
                        });
                    }
                }
            }
        }
        f.last_req_ts = o.ts_ns;
        f.last_req_read = read;
        let outstanding = f.outstanding_psns();
        f.peak_outstanding = f.peak_outstanding.max(outstanding);
        let b = f.series.bin_at(&mut f.cursor, o.ts_ns);
        b.goodput_bytes += goodput;
        b.max_outstanding = b.max_outstanding.max(outstanding);
        b.end_outstanding = Some(outstanding);
    }

    fn response(
        &mut self,
        index: u64,
        id: u32,
        req: u32,
        o: &Observation,
        op: Operation,
        class: &mut Class,
    ) {
        let syndrome = o.syndrome.map(Syndrome::from_u8);
        let read_resp = is_read_response(Some(op));
        let mut goodput = 0u64;
        // The READ response PSN expected when this one showed a gap.
        let mut missing_read_psn = None;
        {
            let r = &mut self.flows[id as usize];
            match syndrome {
                Some(Syndrome::Ack { .. }) if !read_resp => {
                    r.counters.acks += 1;
                    if r.last_ack_psn
                        .is_some_and(|last| psn_diff(o.psn, last) <= 0)
                    {
                        class.add(Class::DUPLICATE);
                        r.counters.duplicate_acks += 1;
                    }
                    r.last_ack_psn = Some(
                        r.last_ack_psn
                            .map_or(o.psn, |l| if psn_diff(o.psn, l) > 0 { o.psn } else { l }),
                    );
                }
                _ => {}
            }
            if read_resp {
                let first = matches!(
                    op,
                    Operation::ReadResponseFirst | Operation::ReadResponseOnly
                );
                match r.read_resp_next {
                    Some(next) if psn_diff(o.psn, next) < 0 => {
                        class.add(Class::DUPLICATE);
                        r.counters.duplicate_read_responses += 1;
                    }
                    Some(next) if !first && psn_diff(o.psn, next) > 0 => {
                        class.add(Class::OUT_OF_SEQUENCE);
                        missing_read_psn = Some(next);
                    }
                    _ => goodput = u64::from(o.payload_len),
                }
                r.read_resp_next = Some(psn_add(o.psn, 1));
                if r.read_gap == Some(o.psn) {
                    r.read_gap = None;
                } else if r.read_gap.is_none() {
                    r.read_gap = missing_read_psn;
                }
            }
            r.series.bin_at(&mut r.cursor, o.ts_ns).goodput_bytes += goodput;
        }
        let q = &mut self.flows[req as usize];
        if read_resp {
            q.pmtu = q.pmtu.max(o.payload_len);
            // Extend the READ's span if the responses run past the estimate.
            if let Some(s) = q
                .outstanding
                .iter_mut()
                .rev()
                .find(|s| s.read && psn_diff(o.psn, s.psn) >= 0)
            {
                let need = (psn_diff(o.psn, s.psn) + 1) as u32;
                if need > s.span {
                    let grow = need - s.span;
                    s.span = need;
                    if psn_diff(psn_add(s.psn, s.span), q.next_psn) > 0 {
                        q.next_psn = psn_add(q.next_psn, grow);
                    }
                }
            }
        }
        // Cumulative: an ACK acknowledges through its PSN. An Acknowledge
        // whose AETH the capture cut may be an ACK or a NAK; both imply
        // everything before its PSN arrived, so that much is safe.
        let read_gap = self.flows[id as usize].read_gap;
        let q = &mut self.flows[req as usize];
        let acked_through = match syndrome {
            // A READ response past a missing one acknowledges only up to it.
            Some(Syndrome::Ack { .. }) if read_resp && read_gap.is_some() => {
                read_gap.map(|m| psn_add(m, 0xFF_FFFF))
            }
            Some(Syndrome::Ack { .. }) => Some(o.psn),
            None if op == Operation::Acknowledge => Some(psn_add(o.psn, 0xFF_FFFF)),
            _ => None,
        };
        if let Some(acked_through) = acked_through {
            if q.rnr_run
                .is_some_and(|r| psn_diff(acked_through, r.psn) >= 0)
            {
                q.rnr_run = None;
            }
            {
                while let Some(s) = q.outstanding.front() {
                    let last = psn_add(s.psn, s.span - 1);
                    if psn_diff(acked_through, last) >= 0 {
                        if !s.resent && !s.read {
                            let rtt = o.ts_ns.saturating_sub(s.ts_ns);
                            q.rtt_ns.add(rtt);
                            q.rtt_avg_ns = if q.rtt_avg_ns == 0 {
                                rtt
                            } else {
                                (q.rtt_avg_ns * 7 + rtt) / 8
                            };
                        }
                        q.outstanding.pop_front();
                    } else {
                        break;
                    }
                }
                // Gaps the ACK covers without NAK or resend: capture loss.
                let mut resolved = Vec::new();
                q.gaps.retain(|g| {
                    let last = psn_add(g.psn, g.n - 1);
                    if psn_diff(acked_through, last) >= 0 && q.pending_nak.is_none() {
                        resolved.push(*g);
                        false
                    } else {
                        true
                    }
                });
                for g in resolved {
                    q.counters.capture_loss_packets += u64::from(g.n);
                    q.counters.out_of_sequence = q.counters.out_of_sequence.saturating_sub(1);
                    self.late.push(LateClass {
                        index: g.index,
                        set: Class::CAPTURE_LOSS,
                        clear: Class::OUT_OF_SEQUENCE,
                    });
                }
                if let Some(open) = &q.episode {
                    if psn_diff(acked_through, psn_add(open.resume_psn, u32::MAX)) >= 0 {
                        // Everything up to the pre-episode frontier is ACKed.
                        let mut ep = open.ep;
                        ep.recovery_ns = o.ts_ns.saturating_sub(ep.start_ns);
                        ep.recovered = true;
                        q.pending_nak = None;
                        self.episodes.push(ep);
                        q.episode = None;
                    }
                }
                // Evidence of a loss an ACK shows recovered is spent (a READ
                // response's AETH says nothing of the responses before it).
                if !read_resp
                    && q.pending_nak.is_some_and(|p| {
                        p.cause != EpisodeCause::Rnr && psn_diff(acked_through, p.psn) >= 0
                    })
                {
                    q.pending_nak = None;
                }
            }
        }
        match syndrome {
            Some(Syndrome::Nak(code)) => {
                if matches!(
                    code,
                    NakCode::InvalidRequest
                        | NakCode::RemoteAccessError
                        | NakCode::RemoteOperationalError
                ) && q.error.is_none()
                {
                    // Fatal for the requester (IBTA 9.9.3): its QP goes to
                    // the error state; nothing it sends after is answered.
                    q.error = Some(QpError {
                        ts_ns: o.ts_ns,
                        index,
                        psn: o.psn,
                        reason: QpErrorReason::Nak(code),
                    });
                }
                let cause = match code {
                    NakCode::PsnSequenceError => {
                        q.counters.packet_seq_err += 1;
                        Some(EpisodeCause::NakSeqErr)
                    }
                    NakCode::InvalidRequest => {
                        q.counters.nak_invalid_request += 1;
                        None
                    }
                    NakCode::RemoteAccessError => {
                        q.counters.nak_remote_access += 1;
                        None
                    }
                    NakCode::RemoteOperationalError => {
                        q.counters.nak_remote_operational += 1;
                        None
                    }
                    _ => None,
                };
                if let Some(cause) = cause {
                    // Also during an episode: a NAK there starts the next pass.
                    if q.pending_nak.is_none() {
                        q.pending_nak = Some(PendingNak {
                            psn: o.psn,
                            ts_ns: o.ts_ns,
                            index,
                            cause,
                        });
                    }
                }
                // The NAKed PSN was lost on the wire: its gap is not capture loss.
                q.gaps.retain(|g| {
                    !(psn_diff(o.psn, g.psn) >= 0 && psn_diff(o.psn, g.psn) <= g.n as i32)
                });
            }
            Some(Syndrome::RnrNak { timer }) => {
                q.counters.rnr_nak += 1;
                let wait_ns = Syndrome::rnr_timer_ns(timer);
                let naks = q.rnr_run.filter(|r| r.psn == o.psn).map_or(0, |r| r.naks);
                q.rnr_run = Some(RnrRun {
                    psn: o.psn,
                    naks: naks + 1,
                    ts_ns: o.ts_ns,
                    index,
                    wait_ns,
                });
                if q.pending_nak.is_none() {
                    q.pending_nak = Some(PendingNak {
                        psn: o.psn,
                        ts_ns: o.ts_ns,
                        index,
                        cause: EpisodeCause::Rnr,
                    });
                }
            }
            _ => {}
        }
        if let Some(psn) = missing_read_psn {
            if q.pending_nak.is_none() {
                // A missing READ response: a requester with an implied-NAK
                // path re-issues the READ from it at once.
                q.pending_nak = Some(PendingNak {
                    psn,
                    ts_ns: o.ts_ns,
                    index,
                    cause: EpisodeCause::ImpliedNak,
                });
            }
        }
        let outstanding = q.outstanding_psns();
        let b = q.series.bin_at(&mut q.cursor, o.ts_ns);
        b.max_outstanding = b.max_outstanding.max(outstanding);
        b.end_outstanding = Some(outstanding);
    }

    /// Close open episodes (the source ended) and build the report.
    pub fn report(&self) -> Report {
        let mut episodes: Vec<Episode> = self.episodes.kept.iter().copied().collect();
        // Closed episodes by QP conversation and cause, then the open ones.
        let mut by_qp = self.episodes.by_qp.clone();
        // Requester flows whose retry count ran out: the retries seen reach
        // the limit and the timer's interval passed again with no resend.
        let mut exhausted: HashMap<u32, QpError> = HashMap::new();
        for (id, f) in self.flows.iter().enumerate() {
            // RNR NAKs, then no resend for longer than the wait they asked
            // for (and the timeout silence), to the end: the requester ran
            // out of RNR retries. The first NAK of the run counts no retry.
            if let Some(run) = f.rnr_run {
                let wait_ns = run.wait_ns.max(self.cfg.timeout_silence_ns);
                if f.last_req_ts <= run.ts_ns
                    && self.last_ts_ns.saturating_sub(run.ts_ns) > wait_ns.saturating_mul(2)
                {
                    exhausted.insert(
                        id as u32,
                        QpError {
                            ts_ns: run.ts_ns.saturating_add(run.wait_ns),
                            index: run.index,
                            psn: run.psn,
                            reason: QpErrorReason::RnrRetriesExceeded { naks: run.naks },
                        },
                    );
                }
            }
            if let Some(open) = &f.episode {
                let mut ep = open.ep;
                // Still open: not recovered, whatever the time it has run.
                ep.recovery_ns = self.last_ts_ns.saturating_sub(ep.start_ns);
                let passes = ep.retries + 1;
                let next_expiry_ns = ep.end_ns.saturating_add(ep.silence_ns);
                if ep.timer_expiries > 0
                    && passes >= self.cfg.retry_limit
                    && next_expiry_ns <= self.last_ts_ns
                {
                    exhausted.entry(id as u32).or_insert(QpError {
                        ts_ns: next_expiry_ns,
                        index: ep.last_index,
                        psn: ep.from_psn,
                        reason: QpErrorReason::RetriesExceeded,
                    });
                }
                let qp = ep.qp as usize;
                if by_qp.len() <= qp {
                    by_qp.resize(qp + 1, [0; EpisodeCause::ALL.len()]);
                }
                by_qp[qp][ep.cause.index()] += 1;
                episodes.push(ep);
            }
        }
        episodes.sort_by_key(|e| (e.start_ns, e.first_index));
        let map = self.slot_to_report();
        for e in &mut episodes {
            e.qp = map.get(e.qp as usize).copied().unwrap_or(e.qp);
        }
        let mut by_report: HashMap<u32, [u64; EpisodeCause::ALL.len()]> = HashMap::new();
        for (slot, n) in by_qp.iter().enumerate() {
            let qp = map.get(slot).copied().unwrap_or(slot as u32);
            let sum = by_report.entry(qp).or_default();
            for (s, n) in sum.iter_mut().zip(n) {
                *s += n;
            }
        }
        let mut counters = Counters::default();
        let mut qps = Vec::new();
        for (qp_id, &req) in self.qps.iter().enumerate() {
            let f = &self.flows[req as usize];
            // Slots whose flow joined another QP are skipped.
            if f.qp as usize != qp_id {
                continue;
            }
            let peer = f.peer.map(|p| &self.flows[p as usize]);
            let mut c = f.counters;
            if let Some(p) = peer {
                c.add(&p.counters);
            }
            let report_index = qps.len() as u32;
            // The first cause of error stands: a fatal NAK, else retries.
            let error = f.error.or_else(|| exhausted.get(&req).copied());
            match error.map(|e| e.reason) {
                Some(QpErrorReason::RetriesExceeded) => c.req_transport_retries_exceeded += 1,
                Some(QpErrorReason::RnrRetriesExceeded { .. }) => c.rnr_nak_retry_err += 1,
                _ => {}
            }
            counters.add(&c);
            let by_cause: Vec<(EpisodeCause, u64)> = by_report
                .get(&report_index)
                .map(|n| {
                    EpisodeCause::ALL
                        .iter()
                        .zip(n)
                        .filter(|(_, n)| **n > 0)
                        .map(|(c, n)| (*c, *n))
                        .collect()
                })
                .unwrap_or_default();
            let mut rtt = f.rtt_ns.kept.clone();
            rtt.sort_unstable();
            let pct =
                |p: f64| (!rtt.is_empty()).then(|| rtt[((rtt.len() - 1) as f64 * p) as usize]);
            qps.push(QpReport {
                requester: f.key.src,
                responder: f.key.dst,
                dest_qp: f.key.dest_qp,
                requester_qp: peer.map(|p| p.key.dest_qp),
                packets: f.packets + peer.map_or(0, |p| p.packets),
                wire_bytes: f.wire_bytes + peer.map_or(0, |p| p.wire_bytes),
                requests: f.requests + peer.map_or(0, |p| p.requests),
                responses: f.responses + peer.map_or(0, |p| p.responses),
                next_psn: f.next_psn,
                oldest_unacked_psn: f.outstanding.front().map(|s| s.psn),
                outstanding: f.outstanding_psns(),
                counters: c,
                episodes_by_cause: by_cause,
                rtt_p50_ns: pct(0.5),
                rtt_p99_ns: pct(0.99),
                rtt_histogram: rtt_histogram(&rtt),
                series: f.series.clone(),
                reverse_series: peer.map(|p| p.series.clone()),
                window_packets: if self.cfg.window_packets > 0 {
                    self.cfg.window_packets
                } else {
                    f.peak_outstanding
                },
                timer_expiries: f.expiries.clone(),
                error,
                first_ts_ns: f.first_ts_ns.min(peer.map_or(u64::MAX, |p| p.first_ts_ns)),
                last_ts_ns: f.last_ts_ns.max(peer.map_or(0, |p| p.last_ts_ns)),
            });
        }
        let t0 = self.first_ts_ns.unwrap_or(0);
        let findings = diagnose::diagnose(
            &qps,
            &diagnose::Context {
                episodes: &episodes,
                notes: &self.notes,
                cfg: &self.cfg,
                t0_ns: t0,
                end_ns: self.last_ts_ns,
            },
        );
        let mut findings = findings;
        let mut card = self.card.clone();
        card.extend(self.card_pending);
        findings.extend(diagnose::card(
            &card,
            self.flows.iter().map(|f| &f.series),
            &self
                .flows
                .iter()
                .map(|f| f.counters)
                .fold(Counters::default(), |mut a, c| {
                    a.add(&c);
                    a
                }),
            t0,
        ));
        findings.sort_by_key(|f| (f.start_ns, f.qp));
        Report {
            qps,
            counters,
            episodes,
            findings,
            episodes_let_go: self.episodes.let_go,
            notes_let_go: self.notes_let_go,
        }
    }
}

#[cfg(test)]
mod tests;
