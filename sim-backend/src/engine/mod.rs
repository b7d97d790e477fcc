//! The discrete-event core and the model: hosts, BALBOA and ConnectX-like
//! endpoints, one switch, links with faults, service slots, the sniffer and
//! the profiler.
//!
//! Time is kept in picoseconds. Events are ordered by time, those due at the
//! same time in the order they were scheduled, and every random
//! choice comes from one seeded generator, so the same scenario and seed give
//! the same records bit for bit. Records are handed out as they happen; the
//! simulator holds only what is in flight (bounded by the windows and queues).

use std::collections::VecDeque;

use rocescope_decoders::{Aeth, Opcode, PacketBuilder, Reth, psn};
use rocescope_replay::record::{
    Direction, DropCount, DropReason, GroundTruth, MarkerKind, ProbeDef, ProfilerSample, QpState,
    QpStateChange, Record, RetransmitCause, SlotDecision, SlotKind, TruthEvent, Verdict,
};
use serde::Serialize;

use crate::dcqcn::{Dcqcn, DcqcnConfig};
use crate::params::Params;
use crate::points::{DropPlace, DropWhy};
use crate::queue::{EventQueue, Pending};
use crate::rng::{Rng, mix64};
use crate::scenario::{AppOp, FaultAt, FaultKind, LinkDir, NodeKind, OpKind, Scenario};
use crate::slots;
use crate::sniffer::{self, Capture, CutFlags};
use crate::template::{self, OpInfo};
use crate::wire;

mod capture;
mod faults;
mod host;
mod output;
mod payloads;
mod period;
mod points;
mod probes;
mod reasons;
mod records;
mod replay;
mod requester;
mod responder;
mod run;
mod switch;
mod ticks;
mod transform;
mod transmit;

pub use output::{FrameRef, HeaderFrame, RecordSink, StoreSink};
use output::{Out, Owned, PayloadCut};
pub use period::PeriodStats;

/// Simulated time in picoseconds.
pub type Ps = u64;
const NS: Ps = 1000;
const NEVER: Ps = u64::MAX;
/// The end of a run until stopped: about 53 simulated days, far enough that
/// no sum of times overflows.
const UNBOUNDED_END: Ps = u64::MAX / 4;
/// Frame lengths whose serialisation time is memoised.
const SER_CACHE_MAX: usize = 1 << 17;
/// UDP source port BALBOA uses for every connection.
pub const BALBOA_UDP_SRC_PORT: u16 = 18488;

// ---------------------------------------------------------------- events

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// A work request reaches the card of the QP's requester.
    Post(u32),
    /// A node's transmitter may start a frame.
    TxWake(u16),
    /// A frame has fully arrived at the switch.
    SwitchArrive(u32),
    /// A frame has arrived at a node (the sniffer's tap, after the MAC).
    NodeArrive(u32),
    /// A node's response FSM may process the next response.
    FsmReady(u16),
    /// A QP's retransmission timer.
    Timer(u32),
    /// Profiler sampling.
    ProfTick,
    /// A PFC frame from the switch reaches a node: its transmitter holds
    /// for the quanta.
    PauseArrive { node: u16, quanta: u16 },
    /// A scenario's CNP (`[[cnp]]`) reaches the QP's requester.
    CnpAt(u32),
}

// ---------------------------------------------------------------- packets

const RETX_NONE: u8 = 0;
const RETX_NAK: u8 = 1;
const RETX_TIMEOUT: u8 = 2;
const RETX_RNR: u8 = 3;

#[derive(Debug, Clone)]
struct SimPacket {
    conn: u32,
    src_node: u16,
    dst_node: u16,
    opcode: u8,
    psn: u32,
    /// Absolute PSN in the connection's PSN space (payload pattern, AES counter).
    abs_psn: u64,
    dest_qp: u32,
    payload_len_bytes: u32,
    reth: Reth,
    aeth: Aeth,
    ecn: u8,
    becn: bool,
    corrupt: bool,
    retx: u8,
    bad: bool,
    frame_len_bytes: u32,
}

fn is_request(op: u8) -> bool {
    matches!(op, 0x00..=0x0C)
}

fn is_read_response(op: u8) -> bool {
    matches!(op, 0x0D..=0x10)
}

// ---------------------------------------------------------------- state

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Req(u32),
    Resp(u32),
}

#[derive(Debug)]
struct Node {
    kind: NodeKind,
    ip: [u8; 4],
    tx_free_ps: Ps,
    tx_wake_at_ps: Ps,
    paused_until_ps: Ps,
    /// The latest end of a pause the switch has asked this node for (its
    /// PFC frame may still be on the way).
    pfc_asked_until_ps: Ps,
    ctrl_queue: VecDeque<(Ps, u32)>,
    streams: Vec<Stream>,
    next_stream: usize,
    busy_ps: u64,
    busy_ps_sampled: u64,
    fsm_queue: VecDeque<(Ps, u32)>,
    fsm_free_ps: Ps,
    fsm_event_at_ps: Ps,
    /// PCIe read tags in use: (issue, done) of the last reads, at most
    /// `pcie_read_tags`; a ring whose oldest entry is at `dma_tag_head` once
    /// full (until then the entries are in order from 0).
    dma_tags: Vec<(Ps, Ps)>,
    dma_tag_head: usize,
    dma_last_ps: Ps,
    dma_write_free_ps: Ps,
    hbm_free_ps: Ps,
    hbm_fetches: VecDeque<Ps>,
    last_grant: u32,
}

#[derive(Debug, Clone)]
struct WorkRequest {
    id: u64,
    read: bool,
    size_bytes: u64,
    admitted_bytes: u64,
    app_ps: Ps,
    bad: bool,
    va: u64,
    error: bool,
}

#[derive(Debug, Clone)]
struct InFlight {
    abs_psn: u64,
    psn_count: u32,
    wr_id: u64,
    read: bool,
    opcode: u8,
    len_bytes: u32,
    va: u64,
    dma_len: u32,
    last: bool,
    ready_ps: Ps,
    sent: bool,
    retx: u8,
    bad: bool,
}

#[derive(Debug, Clone)]
struct ResponsePacket {
    abs_psn: u64,
    opcode: u8,
    len_bytes: u32,
    ready_ps: Ps,
    msn: u32,
}

/// Counters of one QP.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QpStats {
    /// Requester QPN.
    pub qpn: u32,
    /// Messages completed.
    pub messages: u64,
    /// Payload bytes completed.
    pub bytes: u64,
    /// Payload bytes acknowledged so far (WRITE packets ACKed, READ
    /// responses accepted): finer-grained than `bytes`.
    pub acked_bytes: u64,
    /// Messages completed with an error.
    pub errors: u64,
    /// Sum of post-to-completion latencies.
    pub latency_sum_ns: u64,
    /// Packets retransmitted.
    pub retransmissions: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Completion times and sizes (only when `record_completions` is set).
    #[serde(skip)]
    pub completions: Vec<(u64, u64)>,
    /// CNPs the requester's DCQCN reaction point acted on (0 without one).
    pub dcqcn_cnps: u64,
    /// The requester's DCQCN rate after each change, (ns, Gb/s): each cut,
    /// then the recovered rate when it next sends (first 4096 changes;
    /// empty without a reaction point).
    #[serde(skip)]
    pub dcqcn_rates: Vec<(u64, f64)>,
}

/// Changes of the DCQCN rate kept per QP.
const DCQCN_RATES_MAX: usize = 4096;

/// Counters of a whole run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SimStats {
    /// Frames put on any link.
    pub packets_sent: u64,
    /// Frames the sniffer captured.
    pub frames_captured: u64,
    /// Frames the sniffer lost.
    pub capture_drops: u64,
    /// Frames lost on links or in the switch.
    pub wire_drops: u64,
    /// Frames corrupted on links.
    pub wire_corrupt: u64,
    /// NAKs sent.
    pub naks: u64,
    /// CNPs sent.
    pub cnps: u64,
    /// Frames marked ECN CE.
    pub ecn_marked: u64,
    /// DPI drops.
    pub dpi_drops: u64,
    /// Out-of-order request packets dropped by responders (card counter "PSN drop").
    pub psn_drops: u64,
    /// Durations of HBM fetches of full-PMTU payloads, ns (last 256).
    pub hbm_fetch_ns: Vec<u64>,
    /// Retransmission indication (NAK or timeout) to the first resent
    /// packet's start on the wire, ns (last 256).
    pub indication_to_packet_ns: Vec<u64>,
    /// Per QP.
    pub qps: Vec<QpStats>,
    /// Events processed.
    pub events: u64,
    /// Events processed by kind: post, tx wake, switch, node, fsm, timer, profiler.
    pub events_by_kind: [u64; 7],
    /// Largest number of pending events.
    pub queue_peak: u64,
}

fn push_bounded(v: &mut Vec<u64>, x: u64) {
    if v.len() >= 256 {
        v.remove(0);
    }
    v.push(x);
}

#[derive(Debug)]
struct Conn {
    op: OpKind,
    size_bytes: u64,
    messages: u64,
    queue_depth: u32,
    rate_gbps: f64,
    aes: bool,
    dpi: bool,
    app: AppOp,
    dpi_bad_every: u64,
    req_node: u16,
    resp_node: u16,
    req_qpn: u32,
    resp_qpn: u32,
    state: QpState,
    window: u64,
    // requester
    next_psn: u64,
    oldest_unacked_psn: u64,
    send_idx: usize,
    work_requests: VecDeque<WorkRequest>,
    admit_idx: usize,
    wr_seq: u64,
    inflight: VecDeque<InFlight>,
    retry_count: u32,
    timer_deadline_ps: Ps,
    timer_event_at_ps: Ps,
    timer_backoff: bool,
    read_gap: bool,
    indication: Option<Ps>,
    retx_state: u8,
    // responder
    expected_psn: u64,
    msn: u32,
    nak_sent: bool,
    unacked_packets: u64,
    last_cnp: Option<Ps>,
    /// The requester's DCQCN reaction point (a ConnectX with `dcqcn_enabled`).
    dcqcn: Option<Dcqcn>,
    /// Earliest start of the requester's next packet at the DCQCN rate.
    dcqcn_next_tx_ps: Ps,
    response_queue: VecDeque<ResponsePacket>,
    aes_key: [u8; 16],
    seed: u64,
    // The requester's reason its next packet is not on the wire
    // (`reasons.rs`).
    /// The last new packet sent was not the last of its message.
    mid_message: bool,
    /// The last new packet sent or ACK that moved the window.
    last_progress_ps: Ps,
    /// Recovering from loss until a packet at or past this PSN is sent
    /// new, or everything before it is acknowledged.
    recover_psn: Option<u64>,
    /// Waiting out an RNR NAK's timer until then.
    rnr_until_ps: Ps,
    /// Its own frame is on the wire until then.
    sending_until_ps: Ps,
    // responder of SENDs: its receive queue
    /// Receive WQEs posted and not yet used, and when its host last
    /// posted one.
    recv_credits: u32,
    recv_posted_ps: Ps,
    /// An RNR NAK was sent: later packets are dropped until the one it
    /// named comes again.
    rnr_pending: bool,
    /// The reason last told (`reasons::code`).
    reason: u8,
}

#[derive(Debug, Default)]
struct SwitchPort {
    free_ps: Ps,
    queue: VecDeque<(Ps, u64)>,
    occupancy_bytes: u64,
}

#[derive(Debug)]
struct SnifferState {
    node: u16,
    filter: u64,
    fixed_card: bool,
    rx_cut_quirk: bool,
    tag_direction: bool,
    last_tx_flags: CutFlags,
    /// The card's decision by cut flags (`aeth | reth << 1`), once seen.
    decisions: [Option<Capture>; 4],
    backlog: f64,
    last_ps: Ps,
    dropped: u64,
}

#[derive(Debug, Clone, Copy)]
enum ProbeKind {
    TxCtrlQueue(u16),
    TxBusy(u16),
    LinkUtil(u16),
    FsmBacklog(u16),
    HbmInflight(u16),
    PcieTags(u16),
    Grant(u16),
    WindowFill(u32),
    RetxState(u32),
    SwitchQueue(u16),
}

#[derive(Debug)]
struct Probe {
    kind: ProbeKind,
    last: Option<i64>,
}

/// The simulator: build it from a scenario, then pull records with
/// [`run_until`](Self::run_until) or [`step`](Self::step).
#[derive(Debug)]
pub struct Simulator {
    scenario: Scenario,
    params: Params,
    now_ps: Ps,
    end_ps: Ps,
    /// Runs until stopped: no event left is idleness, not the end.
    until_stopped: bool,
    events: EventQueue<Event>,
    rng: Rng,
    nodes: Vec<Node>,
    conns: Vec<Conn>,
    packets: Vec<SimPacket>,
    free_packets: Vec<u32>,
    ports: Vec<SwitchPort>,
    fault_hits: Vec<u64>,
    /// The period each repeating rule's hits count in.
    fault_period: Vec<u64>,
    /// Indices of the fault rules of each place, at `FAULT_SLOTS * node +
    /// slot` (`SLOT_*`), in scenario order.
    faults_on: Vec<Vec<usize>>,
    /// The capture points and their truth, when the scenario has any.
    points: Option<Box<points::PointsState>>,
    sniffer: Option<SnifferState>,
    probes: Vec<Probe>,
    profiler_period_ps: Ps,
    started: bool,
    finished: bool,
    /// Records of the event being processed, in order; frame bytes in
    /// `out_bytes`.
    out: Vec<Out>,
    out_bytes: Vec<u8>,
    /// The fields of this event's frames cut past their headers, while the
    /// period detector logs outputs (`Out::Frame::cut`); cleared once
    /// logged.
    payload_cuts: Vec<PayloadCut>,
    stats: SimStats,
    record_completions: bool,
    buf: Vec<u8>,
    payload_buf: Vec<u8>,
    // cached times
    cycle_ps: Ps,
    /// Per-opcode facts.
    ops: Box<[OpInfo; 256]>,
    /// Serialisation time by frame length (NEVER = not computed yet).
    ser_ps_cache: Vec<Ps>,
    /// Constants of the DCQCN reaction points.
    dcqcn_cfg: DcqcnConfig,
    /// PCIe transfer time per byte, and of a whole MRRS chunk (the
    /// parameters never change during a run).
    pcie_ps_per_byte: f64,
    pcie_mrrs_ps: Ps,
    /// The sniffer's drain rate and buffer, as its backlog counts them.
    sniffer_bytes_per_ps: f64,
    sniffer_cap_bytes: f64,
    /// Tell each QP's reason as truth records (`record_states`).
    record_states: bool,
    /// The scenario has host-stall rules (`faults::host_stall`).
    has_host_stalls: bool,
    /// Up to when the reasons were looked at.
    reasons_at_ps: Ps,
    /// The period detector, when asked for (`period.rs`).
    period: Option<Box<period::Detector>>,
    /// The detector looks after each event from this time on (`NEVER`:
    /// no detector; later than now: its detection pauses).
    period_look_ps: Ps,
}

/// Places a fault rule acts at, per node: the link from the switch, the
/// link to it, the switch's queue toward the node, the node's stack.
const FAULT_SLOTS: usize = 4;
const SLOT_FROM_SWITCH: usize = 0;
const SLOT_TO_SWITCH: usize = 1;
const SLOT_SWITCH_QUEUE: usize = 2;
const SLOT_STACK: usize = 3;

fn ps_of_ns(ns: u64) -> Ps {
    ns.saturating_mul(NS)
}
