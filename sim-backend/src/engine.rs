//! The discrete-event core and the model: hosts, BALBOA and ConnectX-like
//! endpoints, one switch, links with faults, service slots, the sniffer and
//! the profiler.
//!
//! Time is kept in picoseconds. Events are ordered by `(time_ps, sequence)`,
//! the sequence being the order they were scheduled in, and every random
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
use crate::queue::{EventQueue, Pending};
use crate::rng::{Rng, mix64};
use crate::scenario::{AppOp, FaultKind, LinkDir, NodeKind, OpKind, Scenario};
use crate::slots;
use crate::sniffer::{self, Capture, CutFlags};
use crate::template::{self, OpInfo};
use crate::wire;

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
enum Ev {
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
}

// ---------------------------------------------------------------- output

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
}

/// Every record by value; each frame becomes a `Record::Frame`.
struct Owned<'a, F>(&'a mut F);

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
enum Out {
    Record(Record),
    Frame {
        ts_ns: u64,
        direction: Option<Direction>,
        orig_len: u32,
        start: u32,
        len: u32,
    },
}

// ---------------------------------------------------------------- packets

const RETX_NONE: u8 = 0;
const RETX_NAK: u8 = 1;
const RETX_TIMEOUT: u8 = 2;

#[derive(Debug, Clone)]
struct Pkt {
    conn: u32,
    src: u16,
    dst: u16,
    opcode: u8,
    psn: u32,
    /// Absolute PSN in the connection's PSN space (payload pattern, AES counter).
    abs_psn: u64,
    dest_qp: u32,
    payload_len: u32,
    reth: Reth,
    aeth: Aeth,
    ecn: u8,
    becn: bool,
    corrupt: bool,
    retx: u8,
    bad: bool,
    frame_len: u32,
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
    tx_free: Ps,
    tx_wake_at: Ps,
    /// Sequence number of the pending wake-up at `tx_wake_at`.
    tx_wake_seq: u64,
    paused_until: Ps,
    ctrl: VecDeque<(Ps, u32)>,
    streams: Vec<Stream>,
    rr: usize,
    busy_ps: u64,
    busy_ps_sampled: u64,
    fsm_q: VecDeque<(Ps, u32)>,
    fsm_free: Ps,
    fsm_event_at: Ps,
    /// PCIe read tags in use: (issue, done) of the last reads, at most
    /// `pcie_read_tags`; a ring whose oldest entry is at `dma_tag_head` once
    /// full (until then the entries are in order from 0).
    dma_tags: Vec<(Ps, Ps)>,
    dma_tag_head: usize,
    dma_last: Ps,
    dma_wr_free: Ps,
    hbm_free: Ps,
    hbm_fetches: VecDeque<Ps>,
    last_grant: u32,
}

#[derive(Debug, Clone)]
struct Wr {
    id: u64,
    read: bool,
    size: u64,
    admitted: u64,
    app_ps: Ps,
    bad: bool,
    va: u64,
    error: bool,
}

#[derive(Debug, Clone)]
struct Infl {
    abs: u64,
    npsn: u32,
    wr_id: u64,
    read: bool,
    opcode: u8,
    len: u32,
    va: u64,
    dma_len: u32,
    last: bool,
    ready: Ps,
    sent: bool,
    retx: u8,
    bad: bool,
}

#[derive(Debug, Clone)]
struct RespPkt {
    abs: u64,
    opcode: u8,
    len: u32,
    ready: Ps,
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
    size: u64,
    messages: u64,
    queue_depth: u32,
    rate_gbps: f64,
    aes: bool,
    dpi: bool,
    app: AppOp,
    dpi_bad_every: u64,
    req: u16,
    resp: u16,
    req_qpn: u32,
    resp_qpn: u32,
    state: QpState,
    window: u64,
    // requester
    next_psn: u64,
    una: u64,
    send_idx: usize,
    wrs: VecDeque<Wr>,
    admit_idx: usize,
    wr_seq: u64,
    inflight: VecDeque<Infl>,
    retry_count: u32,
    timer_deadline: Ps,
    timer_event_at: Ps,
    timer_backoff: bool,
    read_gap: bool,
    indication: Option<Ps>,
    retx_state: u8,
    // responder
    epsn: u64,
    msn: u32,
    nak_sent: bool,
    unacked: u64,
    last_cnp: Option<Ps>,
    /// The requester's DCQCN reaction point (a ConnectX with `dcqcn_enabled`).
    dcqcn: Option<Dcqcn>,
    /// Earliest start of the requester's next packet at the DCQCN rate.
    dcqcn_next_tx: Ps,
    resp_q: VecDeque<RespPkt>,
    aes_key: [u8; 16],
    seed: u64,
}

#[derive(Debug, Default)]
struct SwitchPort {
    free: Ps,
    q: VecDeque<(Ps, u64)>,
    occ: u64,
}

#[derive(Debug)]
struct Sniff {
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
    p: Params,
    now: Ps,
    end: Ps,
    /// Runs until stopped: no event left is idleness, not the end.
    until_stopped: bool,
    seq: u64,
    heap: EventQueue<Ev>,
    rng: Rng,
    nodes: Vec<Node>,
    conns: Vec<Conn>,
    pkts: Vec<Pkt>,
    free_pkts: Vec<u32>,
    ports: Vec<SwitchPort>,
    fault_hits: Vec<u64>,
    /// The period each repeating rule's hits count in.
    fault_period: Vec<u64>,
    /// Indices of the fault rules of each link direction, at
    /// `2 * node + to_switch`, in scenario order.
    faults_on: Vec<Vec<usize>>,
    sniff: Option<Sniff>,
    probes: Vec<Probe>,
    prof_period: Ps,
    started: bool,
    finished: bool,
    /// Records of the event being processed, in order; frame bytes in
    /// `out_bytes`.
    out: Vec<Out>,
    out_bytes: Vec<u8>,
    stats: SimStats,
    record_completions: bool,
    buf: Vec<u8>,
    payload_buf: Vec<u8>,
    // cached times
    cyc: Ps,
    /// Per-opcode facts.
    ops: Box<[OpInfo; 256]>,
    /// Serialisation time by frame length (NEVER = not computed yet).
    ser_cache: Vec<Ps>,
    /// Constants of the DCQCN reaction points.
    dcqcn_cfg: DcqcnConfig,
}

fn ps_of_ns(ns: u64) -> Ps {
    ns.saturating_mul(NS)
}

impl Simulator {
    /// A simulator at time 0 for `scenario`.
    pub fn new(scenario: Scenario) -> Simulator {
        let p = scenario.params.clone();
        let mut rng = Rng::new(scenario.seed);
        let nodes: Vec<Node> = scenario
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Node {
                kind: n.kind,
                ip: [10, 0, 0, (i + 1) as u8],
                tx_free: 0,
                tx_wake_at: NEVER,
                tx_wake_seq: 0,
                paused_until: 0,
                ctrl: VecDeque::new(),
                streams: Vec::new(),
                rr: 0,
                busy_ps: 0,
                busy_ps_sampled: 0,
                fsm_q: VecDeque::new(),
                fsm_free: 0,
                fsm_event_at: NEVER,
                dma_tags: Vec::new(),
                dma_tag_head: 0,
                dma_last: 0,
                dma_wr_free: 0,
                hbm_free: 0,
                hbm_fetches: VecDeque::new(),
                last_grant: 0,
            })
            .collect();
        let dcqcn_cfg = DcqcnConfig {
            line_gbps: p.link_gbps,
            alpha_gain: p.dcqcn_alpha_gain,
            alpha_timer_ps: ps_of_ns(p.dcqcn_alpha_timer_ns),
            timer_ps: ps_of_ns(p.dcqcn_timer_ns),
            fast_recovery_steps: p.dcqcn_fast_recovery_steps,
            rate_ai_gbps: p.dcqcn_rate_ai_gbps,
            min_rate_gbps: p.dcqcn_min_rate_gbps,
        };
        let mut next_qpn = vec![0x100u32; nodes.len()];
        let mut conns = Vec::new();
        let mut nodes = nodes;
        for (i, q) in scenario.qps.iter().enumerate() {
            let req_qpn = next_qpn[q.from];
            next_qpn[q.from] += 1;
            let resp_qpn = next_qpn[q.to];
            next_qpn[q.to] += 1;
            let start_psn = rng.next_u64() & 0xFF_FFFF;
            let window = match scenario.nodes[q.from].kind {
                NodeKind::Balboa => p.window_packets,
                NodeKind::Connectx => p.cx_window_packets,
            };
            nodes[q.from].streams.push(Stream::Req(i as u32));
            nodes[q.to].streams.push(Stream::Resp(i as u32));
            conns.push(Conn {
                op: q.op,
                size: q.size_bytes,
                messages: q.messages,
                queue_depth: q.queue_depth,
                rate_gbps: q.rate_gbps,
                aes: q.aes,
                dpi: q.dpi,
                app: q.app,
                dpi_bad_every: q.dpi_bad_every,
                req: q.from as u16,
                resp: q.to as u16,
                req_qpn,
                resp_qpn,
                state: QpState::Reset,
                window,
                next_psn: start_psn,
                una: start_psn,
                send_idx: 0,
                wrs: VecDeque::new(),
                admit_idx: 0,
                wr_seq: 0,
                inflight: VecDeque::new(),
                retry_count: 0,
                timer_deadline: NEVER,
                timer_event_at: NEVER,
                timer_backoff: false,
                read_gap: false,
                indication: None,
                retx_state: 0,
                epsn: start_psn,
                msn: 0,
                nak_sent: false,
                unacked: 0,
                last_cnp: None,
                dcqcn: (p.dcqcn_enabled != 0 && scenario.nodes[q.from].kind == NodeKind::Connectx)
                    .then(|| Dcqcn::new(&dcqcn_cfg)),
                dcqcn_next_tx: 0,
                resp_q: VecDeque::new(),
                aes_key: slots::aes_key(scenario.seed, req_qpn),
                seed: mix64(scenario.seed ^ (i as u64) << 32),
            });
        }
        let sniff = scenario.sniffer.as_ref().map(|s| Sniff {
            node: s.node as u16,
            filter: s.filter,
            fixed_card: s.fixed_card,
            rx_cut_quirk: s.rx_cut_quirk,
            tag_direction: s.tag_direction,
            last_tx_flags: CutFlags::default(),
            decisions: [None; 4],
            backlog: 0.0,
            last_ps: 0,
            dropped: 0,
        });
        let stats = SimStats {
            qps: conns
                .iter()
                .map(|c| QpStats {
                    qpn: c.req_qpn,
                    ..QpStats::default()
                })
                .collect(),
            ..SimStats::default()
        };
        let ports = (0..nodes.len()).map(|_| SwitchPort::default()).collect();
        let cyc = p.cycle_ps();
        let end = ps_of_ns(scenario.duration_ns);
        let prof_period = p.cycles_ps(scenario.profiler.every_cycles.max(1));
        let faults_on = (0..2 * nodes.len())
            .map(|k| {
                let (node, to_switch) = (k / 2, k % 2 == 1);
                (0..scenario.faults.len())
                    .filter(|&i| {
                        let f = &scenario.faults[i];
                        f.node == node
                            && match f.direction {
                                LinkDir::Both => true,
                                LinkDir::ToSwitch => to_switch,
                                LinkDir::FromSwitch => !to_switch,
                            }
                    })
                    .collect()
            })
            .collect();
        Simulator {
            fault_hits: vec![0; scenario.faults.len()],
            fault_period: vec![0; scenario.faults.len()],
            faults_on,
            scenario,
            p,
            now: 0,
            end,
            until_stopped: false,
            seq: 0,
            heap: EventQueue::new(),
            rng,
            nodes,
            conns,
            pkts: Vec::new(),
            free_pkts: Vec::new(),
            ports,
            sniff,
            probes: Vec::new(),
            prof_period,
            started: false,
            finished: false,
            out: Vec::new(),
            out_bytes: Vec::with_capacity(1024),
            stats,
            record_completions: false,
            buf: Vec::with_capacity(128),
            payload_buf: Vec::new(),
            cyc,
            ops: template::op_table(),
            ser_cache: Vec::new(),
            dcqcn_cfg,
        }
    }

    /// A simulator for a live run (the agent, the workbench): a scenario
    /// that runs until stopped ([`Scenario::until_stopped`]) keeps posting
    /// messages, its fault and slot rules applying throughout, and never
    /// ends; one that gives `duration_ns` ends there, as with
    /// [`new`](Self::new). The simulator holds only what is in flight, so
    /// its memory stays bounded however long it runs.
    pub fn live(scenario: Scenario) -> Simulator {
        let until_stopped = scenario.until_stopped;
        let mut sim = Simulator::new(scenario);
        if until_stopped {
            sim.until_stopped = true;
            sim.end = UNBOUNDED_END;
        }
        sim
    }

    /// Whether this run ends by itself (`false`: a live run until stopped).
    pub fn is_bounded(&self) -> bool {
        !self.until_stopped
    }

    /// How many items the simulator holds in its queues and tables (pending
    /// events, packets, work requests, in-flight entries, ...): bounded by
    /// the windows and queue depths, not by how long it has run.
    pub fn held_items(&self) -> usize {
        let nodes: usize = self
            .nodes
            .iter()
            .map(|n| {
                n.ctrl.len()
                    + n.streams.len()
                    + n.fsm_q.len()
                    + n.dma_tags.len()
                    + n.hbm_fetches.len()
            })
            .sum();
        let conns: usize = self
            .conns
            .iter()
            .map(|c| c.wrs.len() + c.inflight.len() + c.resp_q.len())
            .sum();
        let ports: usize = self.ports.iter().map(|p| p.q.len()).sum();
        let qp_stats: usize = self.stats.qps.iter().map(|q| q.completions.len()).sum();
        self.heap.len()
            + self.pkts.len()
            + self.free_pkts.len()
            + nodes
            + conns
            + ports
            + qp_stats
            + self.stats.hbm_fetch_ns.len()
            + self.stats.indication_to_packet_ns.len()
            + self.out.len()
            + self.probes.len()
    }

    /// The scenario being run.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Current simulated time in ns.
    pub fn now_ns(&self) -> u64 {
        self.now / NS
    }

    /// The simulated time the run ends at, in ns (about 53 days for a run
    /// until stopped).
    pub fn duration_ns(&self) -> u64 {
        self.end / NS
    }

    /// True once every event up to the end has been processed.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Counters so far.
    pub fn stats(&self) -> &SimStats {
        &self.stats
    }

    /// Keep each completion's time and size in [`QpStats::completions`]
    /// (for experiments; grows with the run).
    pub fn record_completions(&mut self, on: bool) {
        self.record_completions = on;
    }

    /// Processes one event, handing its records to `sink`. Returns false
    /// when the run is over (or, in a run until stopped, when no event is
    /// pending: the card idles).
    pub fn step(&mut self, sink: &mut impl FnMut(Record)) -> bool {
        self.step_into(&mut Owned(sink))
    }

    /// [`step`](Self::step) with frames lent to a [`RecordSink`].
    pub fn step_into(&mut self, sink: &mut impl RecordSink) -> bool {
        if !self.started {
            self.start();
            self.flush(sink);
        }
        if self.finished {
            return false;
        }
        let more = self.step_inner(NEVER);
        self.flush(sink);
        more
    }

    /// Processes every event up to `t_ns` (inclusive), handing records to
    /// `sink` as they happen. Returns false when the run is over.
    pub fn run_until(&mut self, t_ns: u64, sink: &mut impl FnMut(Record)) -> bool {
        self.run_until_into(t_ns, &mut Owned(sink))
    }

    /// [`run_until`](Self::run_until) with frames lent to a [`RecordSink`]:
    /// no allocation per frame.
    pub fn run_until_into(&mut self, t_ns: u64, sink: &mut impl RecordSink) -> bool {
        if !self.started {
            self.start();
            self.flush(sink);
        }
        let limit = ps_of_ns(t_ns).min(self.end);
        while !self.finished {
            if !self.step_inner(limit) {
                break;
            }
            // Most events make no record: no call for them.
            if !self.out.is_empty() {
                self.flush(sink);
            }
        }
        self.flush(sink);
        if !self.finished && limit >= self.end {
            self.finish();
            self.flush(sink);
        }
        if !self.finished {
            self.now = self.now.max(limit);
        }
        !self.finished
    }

    /// Hands the records of the last event to `sink`, in order.
    #[inline]
    fn flush(&mut self, sink: &mut impl RecordSink) {
        if self.out.is_empty() {
            return;
        }
        for o in self.out.drain(..) {
            match o {
                Out::Record(r) => sink.record(r),
                Out::Frame {
                    ts_ns,
                    direction,
                    orig_len,
                    start,
                    len,
                } => sink.frame(FrameRef {
                    ts_ns,
                    port: 0,
                    direction,
                    orig_len,
                    data: self
                        .out_bytes
                        .get(start as usize..(start + len) as usize)
                        .unwrap_or_default(),
                }),
            }
        }
        self.out_bytes.clear();
    }

    /// Runs to the end of the scenario.
    pub fn run(&mut self, sink: &mut impl FnMut(Record)) {
        let end = self.end / NS;
        self.run_until(end, sink);
    }

    /// [`run`](Self::run) with frames lent to a [`RecordSink`].
    pub fn run_into(&mut self, sink: &mut impl RecordSink) {
        let end = self.end / NS;
        self.run_until_into(end, sink);
    }

    #[inline]
    fn step_inner(&mut self, limit: Ps) -> bool {
        let Some(top) = self.heap.peek() else {
            // Every message posted and answered: a card left running idles.
            if !self.until_stopped {
                self.finish();
            }
            return false;
        };
        if top.t > self.end {
            self.finish();
            return false;
        }
        if top.t > limit {
            return false;
        }
        let Some(e) = self.heap.pop() else {
            return false;
        };
        self.now = e.t;
        self.stats.events += 1;
        let k = match e.ev {
            Ev::Post(_) => 0,
            Ev::TxWake(_) => 1,
            Ev::SwitchArrive(_) => 2,
            Ev::NodeArrive(_) => 3,
            Ev::FsmReady(_) => 4,
            Ev::Timer(_) => 5,
            Ev::ProfTick => 6,
        };
        self.stats.events_by_kind[k] += 1;
        self.handle(e.ev);
        true
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.now = self.now.max(self.end);
        self.emit(Record::Marker {
            ts_ns: self.end / NS,
            kind: MarkerKind::Stop,
            text: format!("sim: scenario {} ended", self.scenario.name),
        });
    }

    /// Schedules `ev` at `t` (not before now); returns its sequence number.
    fn schedule(&mut self, t: Ps, ev: Ev) -> u64 {
        self.seq += 1;
        self.heap.push(Pending {
            t: t.max(self.now),
            seq: self.seq,
            ev,
        });
        self.stats.queue_peak = self.stats.queue_peak.max(self.heap.len() as u64);
        self.seq
    }

    fn start(&mut self) {
        self.started = true;
        self.emit(Record::Marker {
            ts_ns: 0,
            kind: MarkerKind::Start,
            text: format!(
                "sim: scenario {} seed {}",
                self.scenario.name, self.scenario.seed
            ),
        });
        if self.scenario.profiler.enabled {
            self.define_probes();
        }
        for c in 0..self.conns.len() {
            for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
                self.conns[c].state = state;
                self.qp_record(c, true);
                self.qp_record(c, false);
            }
            let start = ps_of_ns(self.scenario.qps[c].start_ns);
            let post = start + ps_of_ns(self.p.host_post_ns);
            if self.conns[c].rate_gbps > 0.0 {
                self.schedule(post, Ev::Post(c as u32));
            } else {
                for _ in 0..self.conns[c].queue_depth {
                    self.schedule(post, Ev::Post(c as u32));
                }
            }
        }
        if !self.probes.is_empty() {
            self.schedule(0, Ev::ProfTick);
        }
    }

    #[inline]
    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Post(c) => self.on_post(c as usize),
            Ev::TxWake(n) => self.on_tx_wake(n as usize),
            Ev::SwitchArrive(id) => self.on_switch_arrive(id),
            Ev::NodeArrive(id) => self.on_node_arrive(id),
            Ev::FsmReady(n) => self.on_fsm_ready(n as usize),
            Ev::Timer(c) => self.on_timer(c as usize),
            Ev::ProfTick => self.on_prof_tick(),
        }
    }

    // ------------------------------------------------------------ records

    #[inline]
    fn emit(&mut self, r: Record) {
        self.out.push(Out::Record(r));
    }

    fn qp_record(&mut self, c: usize, requester: bool) {
        let conn = &self.conns[c];
        let (qpn, outstanding) = if requester {
            (conn.req_qpn, conn.next_psn - conn.una)
        } else {
            (conn.resp_qpn, 0)
        };
        self.emit(Record::QpState(QpStateChange {
            ts_ns: self.now / NS,
            qpn,
            state: conn.state,
            next_psn: (conn.next_psn & 0xFF_FFFF) as u32,
            oldest_unacked_psn: (conn.una & 0xFF_FFFF) as u32,
            epsn: (conn.epsn & 0xFF_FFFF) as u32,
            msn: conn.msn & 0xFF_FFFF,
            outstanding: outstanding.min(u64::from(u16::MAX)) as u16,
            retry_count: conn.retry_count.min(255) as u8,
        }));
    }

    fn truth(&mut self, qpn: u32, psn: u32, event: TruthEvent) {
        self.emit(Record::Truth(GroundTruth {
            ts_ns: self.now / NS,
            qpn,
            psn,
            event,
        }));
    }

    fn slot(
        &mut self,
        slot: SlotKind,
        qpn: u32,
        psn: u32,
        verdict: Verdict,
        latency_ns: u64,
        detail: u32,
    ) {
        self.emit(Record::Slot(SlotDecision {
            ts_ns: self.now / NS,
            slot,
            qpn,
            psn,
            verdict,
            latency_ns: latency_ns.min(u64::from(u32::MAX)) as u32,
            detail,
        }));
    }

    // ------------------------------------------------------------ packets

    fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(id) = self.free_pkts.pop() {
            self.pkts[id as usize] = p;
            id
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        }
    }

    fn release(&mut self, id: u32) {
        self.free_pkts.push(id);
    }

    fn new_pkt(&self, c: usize, from_req: bool, opcode: u8, abs_psn: u64, payload_len: u32) -> Pkt {
        let conn = &self.conns[c];
        let (src, dst, dest_qp) = if from_req {
            (conn.req, conn.resp, conn.resp_qpn)
        } else {
            (conn.resp, conn.req, conn.req_qpn)
        };
        let ext = u64::from(self.ops[usize::from(opcode)].ext);
        let frame =
            wire::rocev2_ipv4_frame_bytes(u64::from(payload_len), ext).max(wire::MIN_FRAME_BYTES);
        Pkt {
            conn: c as u32,
            src,
            dst,
            opcode,
            psn: (abs_psn & 0xFF_FFFF) as u32,
            abs_psn,
            dest_qp,
            payload_len,
            reth: Reth::default(),
            aeth: Aeth::default(),
            ecn: 0b10,
            becn: false,
            corrupt: false,
            retx: RETX_NONE,
            bad: false,
            frame_len: frame as u32,
        }
    }

    // ------------------------------------------------------------ host

    fn on_post(&mut self, c: usize) {
        let p_post = ps_of_ns(self.p.host_post_ns);
        let conn = &mut self.conns[c];
        if conn.state != QpState::Rts {
            return;
        }
        let open_loop = conn.rate_gbps > 0.0;
        if open_loop {
            // Offered load: next post after one message time at the rate.
            let interval = (conn.size as f64 * 8.0 / conn.rate_gbps * 1000.0) as Ps;
            if conn.messages == 0 || conn.wr_seq + 1 < conn.messages {
                let t = self.now + interval.max(1);
                self.schedule(t, Ev::Post(c as u32));
            }
            let conn = &self.conns[c];
            if conn.wrs.len() >= conn.queue_depth as usize {
                return;
            }
        }
        let conn = &mut self.conns[c];
        if conn.messages != 0 && conn.wr_seq >= conn.messages {
            return;
        }
        let id = conn.wr_seq;
        conn.wr_seq += 1;
        let read = match conn.op {
            OpKind::Write => false,
            OpKind::Read => true,
            OpKind::Mixed => id % 2 == 1,
        };
        let bad = conn.dpi_bad_every != 0 && (id + 1) % conn.dpi_bad_every == 0 && !read;
        conn.wrs.push_back(Wr {
            id,
            read,
            size: conn.size,
            admitted: 0,
            app_ps: self.now.saturating_sub(p_post),
            bad,
            va: 0x1000_0000 + (id % 64) * conn.size.next_power_of_two(),
            error: false,
        });
        self.admit(c);
    }

    /// Reads `bytes` from host memory through the DMA engine, returning when
    /// the last byte is on the card.
    fn dma_read(&mut self, node: usize, at: Ps, bytes: u64) -> Ps {
        let tags = self.p.pcie_read_tags as usize;
        let mrrs = self.p.pcie_mrrs_bytes;
        let lat = ps_of_ns(self.p.pcie_read_latency_ns);
        let ps_per_byte = 1000.0 / self.p.pcie_gbytes_s;
        // The transfer time of a whole MRRS chunk, as computed per chunk below.
        let mrrs_ps = (mrrs as f64 * ps_per_byte) as Ps;
        let n = &mut self.nodes[node];
        let tags = tags.max(1);
        let bytes = bytes.max(1);
        let chunks = bytes.div_ceil(mrrs) as usize;
        // One step when the ring is full and every tag these chunks reuse
        // is free by `at` (tags free up in ring order): then each chunk is
        // issued at `at` and the engine streams them back to back, exactly
        // what the loop below computes chunk by chunk.
        if n.dma_tags.len() == tags && chunks <= tags {
            let h = n.dma_tag_head;
            let newest = if h + chunks > tags {
                h + chunks - 1 - tags
            } else {
                h + chunks - 1
            };
            if n.dma_tags[newest].1 <= at {
                let mut done = (at + lat).max(n.dma_last);
                let mut i = h;
                let rest = bytes % mrrs;
                for _ in 0..bytes / mrrs {
                    done += mrrs_ps;
                    n.dma_tags[i] = (at, done);
                    i = if i + 1 == tags { 0 } else { i + 1 };
                }
                if rest > 0 {
                    done += (rest as f64 * ps_per_byte) as Ps;
                    n.dma_tags[i] = (at, done);
                    i = if i + 1 == tags { 0 } else { i + 1 };
                }
                n.dma_tag_head = i;
                n.dma_last = done;
                return done;
            }
        }
        let mut left = bytes;
        let mut done = at;
        while left > 0 {
            let chunk = left.min(mrrs);
            left -= chunk;
            let xfer = if chunk == mrrs {
                mrrs_ps
            } else {
                (chunk as f64 * ps_per_byte) as Ps
            };
            if n.dma_tags.len() < tags {
                // A free tag.
                done = (at + lat).max(n.dma_last) + xfer;
                n.dma_tags.push((at, done));
            } else {
                // Wait for the oldest read's tag and reuse it.
                let h = n.dma_tag_head;
                let issue = at.max(n.dma_tags[h].1);
                done = (issue + lat).max(n.dma_last) + xfer;
                n.dma_tags[h] = (issue, done);
                n.dma_tag_head = if h + 1 == tags { 0 } else { h + 1 };
            }
            n.dma_last = done;
        }
        done
    }

    /// Writes `bytes` to host memory; returns when they are visible.
    fn dma_write(&mut self, node: usize, at: Ps, bytes: u64) -> Ps {
        let ps_per_byte = 1000.0 / self.p.pcie_gbytes_s;
        let n = &mut self.nodes[node];
        let done = at.max(n.dma_wr_free) + (bytes as f64 * ps_per_byte) as Ps;
        n.dma_wr_free = done;
        done + ps_of_ns(self.p.pcie_write_latency_ns)
    }

    fn tx_latency(&self, node: usize) -> Ps {
        match self.nodes[node].kind {
            NodeKind::Balboa => self.cyc * self.p.tx_pipeline_cycles,
            NodeKind::Connectx => ps_of_ns(self.p.cx_tx_latency_ns),
        }
    }

    fn rx_latency(&self, node: usize) -> Ps {
        match self.nodes[node].kind {
            NodeKind::Balboa => self.cyc * self.p.rx_pipeline_cycles,
            NodeKind::Connectx => ps_of_ns(self.p.cx_rx_latency_ns),
        }
    }

    /// Admits new packets into the window as far as it allows.
    fn admit(&mut self, c: usize) {
        let pmtu = self.p.pmtu_bytes;
        let node = self.conns[c].req as usize;
        let txl = self.tx_latency(node);
        let mut admitted_any = false;
        // Earliest ready time of the packets admitted now.
        let mut first_ready = NEVER;
        loop {
            let conn = &self.conns[c];
            if conn.state != QpState::Rts || conn.admit_idx >= conn.wrs.len() {
                break;
            }
            let outstanding = conn.next_psn - conn.una;
            if outstanding >= conn.window {
                break;
            }
            let wr = &conn.wrs[conn.admit_idx];
            let remaining = wr.size - wr.admitted;
            let first = wr.admitted == 0;
            if wr.read {
                let pkts = remaining.div_ceil(pmtu);
                let mut n = pkts.min(self.p.read_max_packets);
                let room = conn.window - outstanding;
                if n > room {
                    if room < self.p.read_min_packets.min(n) {
                        break;
                    }
                    n = room;
                }
                let len = (n * pmtu).min(remaining);
                let last = len == remaining;
                let infl = Infl {
                    abs: conn.next_psn,
                    npsn: n as u32,
                    wr_id: wr.id,
                    read: true,
                    opcode: Opcode::RC_READ_REQUEST.0,
                    len: 0,
                    va: wr.va + wr.admitted,
                    dma_len: len as u32,
                    last,
                    ready: self.now + txl,
                    sent: false,
                    retx: RETX_NONE,
                    bad: false,
                };
                first_ready = first_ready.min(infl.ready);
                let conn = &mut self.conns[c];
                conn.inflight.push_back(infl);
                conn.next_psn += n;
                conn.wrs[conn.admit_idx].admitted += len;
                if last {
                    conn.admit_idx += 1;
                }
            } else {
                let len = remaining.min(pmtu);
                let last = len == remaining;
                let opcode = match (first, last) {
                    (true, true) => Opcode::RC_WRITE_ONLY,
                    (true, false) => Opcode::RC_WRITE_FIRST,
                    (false, false) => Opcode::RC_WRITE_MIDDLE,
                    (false, true) => Opcode::RC_WRITE_LAST,
                }
                .0;
                let (va, dma_len, wr_id, bad) = (wr.va, wr.size as u32, wr.id, wr.bad);
                let abs = conn.next_psn;
                let mut extra = 0;
                if conn.aes {
                    extra += ps_of_ns(self.p.aes_ns);
                }
                if conn.app != AppOp::None {
                    extra += self.cyc * self.p.app_slot_cycles;
                }
                let data = self.dma_read(node, self.now, len);
                first_ready = first_ready.min(data + txl + extra);
                let conn = &mut self.conns[c];
                conn.inflight.push_back(Infl {
                    abs,
                    npsn: 1,
                    wr_id,
                    read: false,
                    opcode,
                    len: len as u32,
                    va,
                    dma_len,
                    last,
                    ready: data + txl + extra,
                    sent: false,
                    retx: RETX_NONE,
                    bad,
                });
                conn.next_psn += 1;
                conn.wrs[conn.admit_idx].admitted += len;
                if last {
                    conn.admit_idx += 1;
                }
            }
            admitted_any = true;
        }
        if admitted_any {
            self.arm_timer(c);
            self.kick(node, first_ready);
        }
    }

    fn arm_timer(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        if conn.una == conn.next_psn || conn.state != QpState::Rts {
            conn.timer_deadline = NEVER;
            return;
        }
        if conn.timer_deadline != NEVER {
            return;
        }
        let period = if conn.timer_backoff {
            self.p.timeout_next_ns
        } else {
            self.p.timeout_first_ns
        };
        conn.timer_deadline = self.now + ps_of_ns(period);
        if conn.timer_event_at == NEVER {
            conn.timer_event_at = conn.timer_deadline;
            let t = conn.timer_deadline;
            self.schedule(t, Ev::Timer(c as u32));
        }
    }

    fn restart_timer(&mut self, c: usize) {
        self.conns[c].timer_deadline = NEVER;
        self.arm_timer(c);
    }

    // ------------------------------------------------------------ transmit

    /// Makes sure the node's transmitter wakes up by `at` (or as soon as
    /// the link is free and not paused). A node has at most one pending
    /// wake-up: an earlier one replaces it.
    fn kick(&mut self, node: usize, at: Ps) {
        let n = &mut self.nodes[node];
        let t = at.max(n.tx_free).max(n.paused_until).max(self.now);
        if t < n.tx_wake_at {
            if n.tx_wake_at != NEVER {
                let (old_t, old_seq) = (n.tx_wake_at, n.tx_wake_seq);
                self.heap.remove(old_t, old_seq);
            }
            let seq = self.schedule(t, Ev::TxWake(node as u16));
            let n = &mut self.nodes[node];
            n.tx_wake_at = t;
            n.tx_wake_seq = seq;
        }
    }

    fn on_tx_wake(&mut self, node: usize) {
        if self.nodes[node].tx_wake_at != self.now {
            // Superseded by an earlier wake-up.
            return;
        }
        self.nodes[node].tx_wake_at = NEVER;
        let now = self.now;
        {
            let n = &self.nodes[node];
            if n.tx_free > now || n.paused_until > now {
                let t = n.tx_free.max(n.paused_until);
                self.kick(node, t);
                return;
            }
        }
        // Control frames (ACK, NAK, CNP) first.
        if let Some(&(ready, id)) = self.nodes[node].ctrl.front()
            && ready <= now
        {
            self.nodes[node].ctrl.pop_front();
            self.transmit(node, id);
            self.kick_next(node);
            return;
        }
        let mut earliest = self.nodes[node].ctrl.front().map_or(NEVER, |x| x.0);
        let ns = self.nodes[node].streams.len();
        let start = self.nodes[node].rr;
        for k in 0..ns {
            let i = if start + k >= ns {
                start + k - ns
            } else {
                start + k
            };
            let s = self.nodes[node].streams[i];
            let ready = self.stream_ready(s);
            if ready <= now {
                self.nodes[node].rr = if i + 1 == ns { 0 } else { i + 1 };
                let id = self.take_from_stream(s);
                self.transmit(node, id);
                self.kick_next(node);
                return;
            }
            earliest = earliest.min(ready);
        }
        if earliest != NEVER {
            self.kick(node, earliest);
        }
    }

    /// After a frame went out: one wake-up at the time the transmitter can
    /// next send something (the earliest ready frame, once the link is free).
    fn kick_next(&mut self, node: usize) {
        let n = &self.nodes[node];
        let floor = n.tx_free.max(n.paused_until).max(self.now);
        let mut earliest = n.ctrl.front().map_or(NEVER, |x| x.0);
        if earliest > floor {
            for &s in &n.streams {
                earliest = earliest.min(self.stream_ready(s));
                if earliest <= floor {
                    break;
                }
            }
        }
        if earliest != NEVER {
            self.kick(node, earliest);
        }
    }

    fn stream_ready(&self, s: Stream) -> Ps {
        match s {
            Stream::Req(c) => {
                let conn = &self.conns[c as usize];
                if conn.state != QpState::Rts {
                    return NEVER;
                }
                let ready = conn.inflight.get(conn.send_idx).map_or(NEVER, |e| e.ready);
                if conn.dcqcn.as_ref().is_some_and(Dcqcn::limited) {
                    ready.max(conn.dcqcn_next_tx)
                } else {
                    ready
                }
            }
            Stream::Resp(c) => self.conns[c as usize]
                .resp_q
                .front()
                .map_or(NEVER, |r| r.ready),
        }
    }

    fn take_from_stream(&mut self, s: Stream) -> u32 {
        match s {
            Stream::Req(c) => {
                let c = c as usize;
                let idx = self.conns[c].send_idx;
                let e = self.conns[c].inflight[idx].clone();
                self.conns[c].send_idx += 1;
                self.conns[c].inflight[idx].sent = true;
                self.conns[c].inflight[idx].retx = RETX_NONE;
                let mut p = self.new_pkt(c, true, e.opcode, e.abs, e.len);
                if e.read
                    || e.opcode == Opcode::RC_WRITE_FIRST.0
                    || e.opcode == Opcode::RC_WRITE_ONLY.0
                {
                    p.reth = Reth {
                        va: e.va,
                        rkey: 0x1000 + self.conns[c].resp_qpn,
                        dma_len: e.dma_len,
                    };
                }
                p.bad = e.bad;
                p.retx = e.retx;
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                if e.retx != RETX_NONE {
                    let cause = if e.retx == RETX_NAK {
                        RetransmitCause::Nak
                    } else {
                        RetransmitCause::Timeout
                    };
                    self.truth(qpn, psn_w, TruthEvent::Retransmit { cause });
                    self.stats.qps[c].retransmissions += 1;
                    if let Some(ind) = self.conns[c].indication.take() {
                        push_bounded(
                            &mut self.stats.indication_to_packet_ns,
                            (self.now - ind) / NS,
                        );
                    }
                }
                let conn = &self.conns[c];
                if !e.read && conn.aes {
                    let counter = e.abs;
                    let aes_ns = self.p.aes_ns;
                    self.slot(
                        SlotKind::Aes,
                        qpn,
                        psn_w,
                        Verdict::Transformed,
                        aes_ns,
                        counter as u32,
                    );
                }
                let conn = &self.conns[c];
                if !e.read && conn.app != AppOp::None {
                    let lat = self.p.app_slot_cycles * self.cyc / NS;
                    let detail = conn.app as u32;
                    self.slot(SlotKind::App, qpn, psn_w, Verdict::Transformed, lat, detail);
                }
                let node = self.conns[c].req as usize;
                self.nodes[node].last_grant = self.conns[c].req_qpn;
                let frame_len = u64::from(p.frame_len);
                self.dcqcn_pace(c, frame_len);
                self.alloc(p)
            }
            Stream::Resp(c) => {
                let c = c as usize;
                let Some(r) = self.conns[c].resp_q.pop_front() else {
                    return self.alloc(self.new_pkt(c, false, Opcode::RC_ACK.0, 0, 0));
                };
                let mut p = self.new_pkt(c, false, r.opcode, r.abs, r.len);
                p.aeth = Aeth {
                    syndrome: 0x1F,
                    msn: r.msn & 0xFF_FFFF,
                };
                if self.conns[c].aes {
                    let aes_ns = self.p.aes_ns;
                    let (qpn, psn_w) = (p.dest_qp, p.psn);
                    self.slot(
                        SlotKind::Aes,
                        qpn,
                        psn_w,
                        Verdict::Transformed,
                        aes_ns,
                        r.abs as u32,
                    );
                }
                let node = self.conns[c].resp as usize;
                self.nodes[node].last_grant = self.conns[c].resp_qpn;
                self.alloc(p)
            }
        }
    }

    /// Spaces the requester's next packet at its DCQCN rate, after the
    /// rate's recovery up to now.
    fn dcqcn_pace(&mut self, c: usize, frame_len: u64) {
        let (cfg, now) = (self.dcqcn_cfg, self.now);
        let Some(d) = self.conns[c].dcqcn.as_mut() else {
            return;
        };
        if !d.limited() {
            return;
        }
        d.advance(&cfg, now);
        let (rate, gap) = (d.rate_gbps, d.gap_ps(wire::wire_bytes(frame_len) * 8));
        self.conns[c].dcqcn_next_tx = now + gap;
        self.log_dcqcn_rate(c, rate);
    }

    /// A CNP at the requester: its DCQCN reaction point cuts the rate.
    fn dcqcn_on_cnp(&mut self, c: usize) {
        let (cfg, now) = (self.dcqcn_cfg, self.now);
        let Some(d) = self.conns[c].dcqcn.as_mut() else {
            return;
        };
        d.on_cnp(&cfg, now);
        let rate = d.rate_gbps;
        self.stats.qps[c].dcqcn_cnps += 1;
        self.log_dcqcn_rate(c, rate);
    }

    fn log_dcqcn_rate(&mut self, c: usize, rate_gbps: f64) {
        let log = &mut self.stats.qps[c].dcqcn_rates;
        if log.len() < DCQCN_RATES_MAX && log.last().is_none_or(|&(_, r)| r != rate_gbps) {
            log.push((self.now / NS, rate_gbps));
        }
    }

    /// Serialisation time of a frame on a link (memoised per frame length).
    #[inline]
    fn ser_ps(&mut self, frame_len: u64) -> Ps {
        let compute = |p: &Params| (wire::wire_time_ps(frame_len, 1) as f64 / p.link_gbps) as Ps;
        let i = frame_len as usize;
        if i >= SER_CACHE_MAX {
            return compute(&self.p);
        }
        if i >= self.ser_cache.len() {
            self.ser_cache.resize(i + 1, NEVER);
        }
        let v = self.ser_cache[i];
        if v != NEVER {
            return v;
        }
        let v = compute(&self.p);
        self.ser_cache[i] = v;
        v
    }

    fn transmit(&mut self, node: usize, id: u32) {
        let now = self.now;
        let frame_len = u64::from(self.pkts[id as usize].frame_len);
        let ser = self.ser_ps(frame_len);
        let n = &mut self.nodes[node];
        n.tx_free = now + ser;
        n.busy_ps += ser;
        self.stats.packets_sent += 1;
        self.capture(id, Direction::Tx, node);
        let arrive = now + ser + ps_of_ns(self.p.mac_latency_ns + self.p.link_prop_ns);
        if let Some(extra) = self.apply_faults(id, node, true) {
            self.schedule(arrive + extra, Ev::SwitchArrive(id));
        }
    }

    /// Applies the fault rules of one link direction to a frame. Returns the
    /// extra delay, or None when the frame is gone.
    #[inline]
    fn apply_faults(&mut self, id: u32, node: usize, to_switch: bool) -> Option<Ps> {
        let on = 2 * node + usize::from(to_switch);
        if self.faults_on.get(on).is_none_or(Vec::is_empty) {
            return Some(0);
        }
        self.apply_fault_rules(id, on, to_switch)
    }

    fn apply_fault_rules(&mut self, id: u32, on: usize, to_switch: bool) -> Option<Ps> {
        let rules = self.faults_on.get(on).map_or(0, Vec::len);
        let now_ns = self.now / NS;
        let conn = self.pkts[id as usize].conn as usize;
        let mut extra = 0;
        let mut dup = false;
        for k in 0..rules {
            let i = self.faults_on[on][k];
            let f = self.scenario.faults[i].clone();
            // A repeating rule: time within its period, hits per period.
            let t_ns = match now_ns.checked_div(f.every_ns) {
                Some(period) => {
                    if self.fault_period[i] != period {
                        self.fault_period[i] = period;
                        self.fault_hits[i] = 0;
                    }
                    now_ns % f.every_ns
                }
                None => now_ns,
            };
            if f.qp.is_some_and(|q| q != conn)
                || t_ns < f.start_ns
                || (f.end_ns != 0 && t_ns >= f.end_ns)
            {
                continue;
            }
            let hit = if f.kind == FaultKind::LinkDown {
                true
            } else if f.nth != 0 {
                self.fault_hits[i] += 1;
                self.fault_hits[i] == f.nth
            } else {
                self.rng.chance(f.probability)
            };
            if !hit {
                continue;
            }
            let p = &mut self.pkts[id as usize];
            match f.kind {
                FaultKind::Loss | FaultKind::LinkDown => {
                    let (qpn, psn_w) = (p.dest_qp, p.psn);
                    self.stats.wire_drops += 1;
                    self.truth(qpn, psn_w, TruthEvent::WireDrop);
                    self.release(id);
                    return None;
                }
                FaultKind::Corrupt => {
                    if !p.corrupt {
                        p.corrupt = true;
                        let (qpn, psn_w) = (p.dest_qp, p.psn);
                        self.stats.wire_corrupt += 1;
                        self.truth(qpn, psn_w, TruthEvent::WireCorrupt);
                    }
                }
                FaultKind::Reorder => extra += ps_of_ns(f.delay_ns),
                FaultKind::Duplicate => dup = true,
            }
        }
        if dup {
            let copy = self.pkts[id as usize].clone();
            let id2 = self.alloc(copy);
            let ev_t = self.now + extra + ps_of_ns(1);
            let ser = (wire::wire_time_ps(u64::from(self.pkts[id2 as usize].frame_len), 1) as f64
                / self.p.link_gbps) as Ps;
            let base = ps_of_ns(self.p.link_prop_ns + self.p.mac_latency_ns);
            let ev = if to_switch {
                Ev::SwitchArrive(id2)
            } else {
                Ev::NodeArrive(id2)
            };
            self.schedule(ev_t + ser + base, ev);
        }
        Some(extra)
    }

    // ------------------------------------------------------------ switch

    fn on_switch_arrive(&mut self, id: u32) {
        let now = self.now;
        let (dst, src, frame_len) = {
            let p = &self.pkts[id as usize];
            (p.dst as usize, p.src as usize, u64::from(p.frame_len))
        };
        let bytes = wire::wire_bytes(frame_len);
        let ser = self.ser_ps(frame_len);
        let port = &mut self.ports[dst];
        while let Some(&(end, b)) = port.q.front() {
            if end > now {
                break;
            }
            port.occ -= b;
            port.q.pop_front();
        }
        if port.occ + bytes > self.p.switch_buffer_bytes {
            let p = &self.pkts[id as usize];
            let (qpn, psn_w) = (p.dest_qp, p.psn);
            self.stats.wire_drops += 1;
            self.truth(qpn, psn_w, TruthEvent::WireDrop);
            self.release(id);
            return;
        }
        let occ = port.occ;
        if self.p.ecn_threshold_bytes > 0 && occ > self.p.ecn_threshold_bytes {
            let p = &mut self.pkts[id as usize];
            if p.ecn != 0 && p.ecn != 3 {
                p.ecn = 3;
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                self.stats.ecn_marked += 1;
                self.truth(qpn, psn_w, TruthEvent::EcnMarked);
            }
        }
        let port = &mut self.ports[dst];
        let start = (now + ps_of_ns(self.p.switch_latency_ns)).max(port.free);
        let end = start + ser;
        port.free = end;
        port.q.push_back((end, bytes));
        port.occ += bytes;
        if self.p.pfc_enabled != 0 && port.occ > self.p.pfc_xoff_bytes {
            // Pause the sender until the queue drains below XON.
            let mut left = port.occ;
            let mut resume = now;
            for &(e, b) in &port.q {
                if left <= self.p.pfc_xon_bytes {
                    break;
                }
                left -= b;
                resume = e;
            }
            if self.nodes[src].paused_until <= now {
                let p = &self.pkts[id as usize];
                let (qpn, psn_w) = (p.dest_qp, p.psn);
                self.truth(
                    qpn,
                    psn_w,
                    TruthEvent::PfcPause {
                        ns: (resume - now) / NS,
                    },
                );
            }
            let n = &mut self.nodes[src];
            n.paused_until = n.paused_until.max(resume);
        }
        let arrive = end + ps_of_ns(self.p.link_prop_ns + self.p.mac_latency_ns);
        if let Some(extra) = self.apply_faults(id, dst, false) {
            self.schedule(arrive + extra, Ev::NodeArrive(id));
        }
    }

    // ------------------------------------------------------------ receive

    fn on_node_arrive(&mut self, id: u32) {
        let node = self.pkts[id as usize].dst as usize;
        self.capture(id, Direction::Rx, node);
        let p = &self.pkts[id as usize];
        if p.corrupt {
            // ICRC check fails: dropped by the receiver.
            self.release(id);
            return;
        }
        let op = p.opcode;
        if is_request(op) {
            self.responder_rx(id);
            self.release(id);
        } else if op == Opcode::CNP.0 {
            let c = p.conn as usize;
            if self.conns[c].req as usize == node {
                self.dcqcn_on_cnp(c);
            }
            self.release(id);
        } else {
            let ready = self.now + self.rx_latency(node);
            self.nodes[node].fsm_q.push_back((ready, id));
            self.schedule_fsm(node);
        }
    }

    fn schedule_fsm(&mut self, node: usize) {
        let n = &mut self.nodes[node];
        let Some(&(ready, _)) = n.fsm_q.front() else {
            return;
        };
        let t = ready.max(n.fsm_free).max(self.now);
        if t < n.fsm_event_at {
            n.fsm_event_at = t;
            self.schedule(t, Ev::FsmReady(node as u16));
        }
    }

    fn on_fsm_ready(&mut self, node: usize) {
        if self.nodes[node].fsm_event_at != self.now {
            return;
        }
        self.nodes[node].fsm_event_at = NEVER;
        let now = self.now;
        let n = &self.nodes[node];
        if n.fsm_free > now {
            self.schedule_fsm(node);
            return;
        }
        let Some(&(ready, id)) = n.fsm_q.front() else {
            return;
        };
        if ready > now {
            self.schedule_fsm(node);
            return;
        }
        self.nodes[node].fsm_q.pop_front();
        let busy = match self.nodes[node].kind {
            NodeKind::Balboa => self.p.resp_proc_cycles + self.p.ack_gap_cycles,
            NodeKind::Connectx => 1,
        };
        self.nodes[node].fsm_free = now + busy * self.cyc;
        self.requester_rx(id);
        self.release(id);
        self.schedule_fsm(node);
    }

    fn abs_of(base: u64, psn24: u32) -> u64 {
        let d = psn::psn_diff(psn24, (base & 0xFF_FFFF) as u32);
        base.wrapping_add_signed(i64::from(d))
    }

    /// A request packet at the responder.
    fn responder_rx(&mut self, id: u32) {
        let p = self.pkts[id as usize].clone();
        let c = p.conn as usize;
        let node = p.dst as usize;
        let kind = self.nodes[node].kind;
        let out_t = self.now + self.rx_latency(node);
        let ack_t = out_t + self.tx_latency(node);
        let abs = Self::abs_of(self.conns[c].epsn, p.psn);
        // ECN CE at a ConnectX: one CNP per interval.
        if kind == NodeKind::Connectx && p.ecn == 3 {
            let interval = ps_of_ns(self.p.cx_cnp_interval_ns);
            let due = self.conns[c]
                .last_cnp
                .is_none_or(|t| self.now >= t + interval);
            if due {
                self.conns[c].last_cnp = Some(self.now);
                let mut cnp = self.new_pkt(c, false, Opcode::CNP.0, 0, 0);
                cnp.becn = true;
                cnp.ecn = 0b10;
                let cid = self.alloc(cnp);
                self.nodes[node].ctrl.push_back((ack_t, cid));
                self.stats.cnps += 1;
                self.truth(p.dest_qp, p.psn, TruthEvent::CnpSent);
                self.kick(node, ack_t);
            }
        }
        let epsn = self.conns[c].epsn;
        let is_read = p.opcode == Opcode::RC_READ_REQUEST.0;
        if abs == epsn {
            self.conns[c].nak_sent = false;
            if is_read {
                // RTL quirk: the IP packet is trimmed before the RETH parser.
                let needed = 20 + 8 + 12 + 16;
                if self.p.read_req_trim_bytes < needed {
                    self.send_ack(c, ack_t, 0x60 | 1, epsn, true);
                    self.stats.naks += 1;
                    self.truth(p.dest_qp, p.psn, TruthEvent::NakSent { code: 1 });
                    return;
                }
                let n = u64::from(p.reth.dma_len).div_ceil(self.p.pmtu_bytes).max(1);
                self.conns[c].epsn += n;
                self.conns[c].msn = self.conns[c].msn.wrapping_add(1);
                self.execute_read(c, abs, p.reth.dma_len, out_t);
            } else {
                if self.conns[c].dpi {
                    let (ok, class) = self.dpi_check(&p);
                    let dpi_ns = self.p.dpi_ns;
                    let verdict = if ok { Verdict::Pass } else { Verdict::Drop };
                    self.slot(
                        SlotKind::Dpi,
                        p.dest_qp,
                        p.psn,
                        verdict,
                        dpi_ns,
                        u32::from(class),
                    );
                    if !ok {
                        // Unacceptable WRITE: dropped and NAKed; the PSN is consumed.
                        self.stats.dpi_drops += 1;
                        self.truth(p.dest_qp, p.psn, TruthEvent::DpiDrop);
                        self.conns[c].epsn += 1;
                        self.send_ack(c, ack_t, 0x60 | 1, abs, true);
                        self.stats.naks += 1;
                        self.truth(p.dest_qp, p.psn, TruthEvent::NakSent { code: 1 });
                        return;
                    }
                }
                if self.conns[c].aes {
                    let aes_ns = self.p.aes_ns;
                    self.slot(
                        SlotKind::Aes,
                        p.dest_qp,
                        p.psn,
                        Verdict::Transformed,
                        aes_ns,
                        abs as u32,
                    );
                }
                self.conns[c].epsn += 1;
                let last = matches!(p.opcode, 0x08 | 0x0A);
                if last {
                    self.conns[c].msn = self.conns[c].msn.wrapping_add(1);
                }
                self.dma_write(node, out_t, u64::from(p.payload_len));
                let ack = match kind {
                    NodeKind::Balboa => true,
                    NodeKind::Connectx => {
                        self.conns[c].unacked += 1;
                        last || self.conns[c].unacked >= self.p.cx_ack_every
                    }
                };
                if ack {
                    self.conns[c].unacked = 0;
                    let psn_ack = self.conns[c].epsn - 1;
                    self.send_ack(c, ack_t, 0x1F, psn_ack, false);
                }
            }
        } else if abs > epsn {
            self.stats.psn_drops += 1;
            if !self.conns[c].nak_sent {
                self.conns[c].nak_sent = true;
                self.send_ack(c, ack_t, 0x60, epsn, true);
                self.stats.naks += 1;
                self.truth(
                    p.dest_qp,
                    (epsn & 0xFF_FFFF) as u32,
                    TruthEvent::NakSent { code: 0 },
                );
                self.qp_record(c, false);
            }
        } else if is_read {
            // Duplicate READ: executed again.
            self.execute_read(c, abs, p.reth.dma_len, out_t);
        } else {
            // Duplicate WRITE: ACKed again.
            let psn_ack = epsn - 1;
            self.send_ack(c, ack_t, 0x1F, psn_ack, false);
        }
    }

    fn send_ack(&mut self, c: usize, at: Ps, syndrome: u8, abs_psn: u64, _nak: bool) {
        let mut a = self.new_pkt(c, false, Opcode::RC_ACK.0, abs_psn, 0);
        a.aeth = Aeth {
            syndrome,
            msn: self.conns[c].msn & 0xFF_FFFF,
        };
        let node = self.conns[c].resp as usize;
        let id = self.alloc(a);
        self.nodes[node].ctrl.push_back((at, id));
        self.kick(node, at);
    }

    fn execute_read(&mut self, c: usize, abs: u64, dma_len: u32, at: Ps) {
        let pmtu = self.p.pmtu_bytes;
        let node = self.conns[c].resp as usize;
        let start = at
            + match self.nodes[node].kind {
                NodeKind::Balboa => ps_of_ns(self.p.read_responder_ns),
                NodeKind::Connectx => 0,
            };
        let txl = self.tx_latency(node);
        let extra = if self.conns[c].aes {
            ps_of_ns(self.p.aes_ns)
        } else {
            0
        };
        let total = u64::from(dma_len).max(1);
        let n = total.div_ceil(pmtu);
        let msn = self.conns[c].msn;
        for k in 0..n {
            let len = (total - k * pmtu).min(pmtu);
            let opcode = match (k == 0, k + 1 == n) {
                (true, true) => Opcode::RC_READ_RESPONSE_ONLY,
                (true, false) => Opcode::RC_READ_RESPONSE_FIRST,
                (false, false) => Opcode::RC_READ_RESPONSE_MIDDLE,
                (false, true) => Opcode::RC_READ_RESPONSE_LAST,
            }
            .0;
            let done = self.dma_read(node, start, len);
            self.conns[c].resp_q.push_back(RespPkt {
                abs: abs + k,
                opcode,
                len: if dma_len == 0 { 0 } else { len as u32 },
                ready: done + txl + extra,
                msn,
            });
        }
        let t = self.conns[c].resp_q.front().map_or(at, |r| r.ready);
        self.kick(node, t);
    }

    fn dpi_check(&mut self, p: &Pkt) -> (bool, u8) {
        let mut buf = std::mem::take(&mut self.payload_buf);
        self.plaintext_into(p, p.payload_len as usize, &mut buf);
        let r = slots::dpi_verdict(&buf, p.dest_qp);
        self.payload_buf = buf;
        r
    }

    /// A response (ACK, NAK, READ response) processed by the requester's FSM.
    fn requester_rx(&mut self, id: u32) {
        let p = self.pkts[id as usize].clone();
        let c = p.conn as usize;
        if self.conns[c].state != QpState::Rts {
            return;
        }
        let una = self.conns[c].una;
        let abs = Self::abs_of(una, p.psn);
        let in_range = abs >= una && abs < self.conns[c].next_psn;
        if p.opcode == Opcode::RC_ACK.0 {
            let syn = p.aeth.syndrome;
            match syn >> 5 {
                0 if in_range => self.ack_up_to(c, abs + 1),
                3 if in_range && syn & 0x1F == 0 => {
                    // PSN sequence error: Go-Back-N from the NAKed PSN.
                    self.ack_up_to(c, abs);
                    self.go_back_n(c, abs, RETX_NAK);
                }
                3 if in_range => {
                    // Fatal NAK of one request (DPI reject): complete its
                    // WR with an error and move on.
                    let wr_id = self.conns[c]
                        .inflight
                        .iter()
                        .find(|e| e.abs <= abs && abs < e.abs + u64::from(e.npsn))
                        .map(|e| e.wr_id);
                    if let Some(w) = self.conns[c].wrs.iter_mut().find(|w| Some(w.id) == wr_id) {
                        w.error = true;
                    }
                    self.ack_up_to(c, abs + 1);
                }
                _ => {}
            }
        } else if is_read_response(p.opcode) {
            if abs == una && una < self.conns[c].next_psn {
                self.conns[c].read_gap = false;
                let node = self.conns[c].req as usize;
                let visible = self.dma_write(node, self.now, u64::from(p.payload_len));
                // The completion waits for a flushing read behind the data.
                let visible = visible + ps_of_ns(self.p.pcie_read_latency_ns);
                self.stats.qps[c].acked_bytes += u64::from(p.payload_len);
                self.ack_read_one(c, visible);
            } else if abs > una && abs < self.conns[c].next_psn && !self.conns[c].read_gap {
                // A response is missing: ask again from it.
                self.conns[c].read_gap = true;
                self.go_back_n(c, una, RETX_NAK);
            }
        }
        self.admit(c);
    }

    fn ack_read_one(&mut self, c: usize, visible: Ps) {
        let conn = &mut self.conns[c];
        conn.una += 1;
        conn.retry_count = 0;
        conn.timer_backoff = false;
        let mut complete = None;
        if let Some(front) = conn.inflight.front()
            && conn.una >= front.abs + u64::from(front.npsn)
        {
            if front.last {
                complete = Some(front.wr_id);
            }
            conn.inflight.pop_front();
            conn.send_idx = conn.send_idx.saturating_sub(1);
        }
        if conn.retx_state != 0 && conn.send_idx >= conn.inflight.len() {
            conn.retx_state = 0;
        }
        if let Some(w) = complete {
            self.complete(c, w, visible);
        }
        self.restart_timer(c);
    }

    /// Cumulative acknowledgement of every PSN below `upto`.
    fn ack_up_to(&mut self, c: usize, upto: u64) {
        let now = self.now;
        let mut done = Vec::new();
        let conn = &mut self.conns[c];
        if upto <= conn.una {
            return;
        }
        while let Some(front) = conn.inflight.front() {
            if front.abs + u64::from(front.npsn) > upto {
                break;
            }
            if front.last {
                done.push(front.wr_id);
            }
            if !front.read {
                self.stats.qps[c].acked_bytes += u64::from(front.len);
            }
            conn.inflight.pop_front();
            conn.send_idx = conn.send_idx.saturating_sub(1);
        }
        conn.una = upto;
        conn.retry_count = 0;
        conn.timer_backoff = false;
        if conn.retx_state != 0 && conn.send_idx >= conn.inflight.len() {
            conn.retx_state = 0;
        }
        for w in done {
            self.complete(c, w, now);
        }
        self.restart_timer(c);
    }

    fn complete(&mut self, c: usize, wr_id: u64, card_done: Ps) {
        let conn = &mut self.conns[c];
        let Some(pos) = conn.wrs.iter().position(|w| w.id == wr_id) else {
            return;
        };
        let Some(wr) = conn.wrs.remove(pos) else {
            return;
        };
        if pos < conn.admit_idx {
            conn.admit_idx -= 1;
        }
        let host = card_done.max(self.now) + ps_of_ns(self.p.host_completion_ns);
        let closed_loop = conn.rate_gbps <= 0.0;
        let s = &mut self.stats.qps[c];
        s.messages += 1;
        if wr.error {
            s.errors += 1;
        } else {
            s.bytes += wr.size;
        }
        s.latency_sum_ns += (host - wr.app_ps) / NS;
        if self.record_completions {
            s.completions.push((host / NS, wr.size));
        }
        if closed_loop {
            let t = host + ps_of_ns(self.p.host_post_ns);
            self.schedule(t, Ev::Post(c as u32));
        }
    }

    fn go_back_n(&mut self, c: usize, from: u64, cause: u8) {
        let pmtu = self.p.pmtu_bytes;
        let now = self.now;
        let node = self.conns[c].req as usize;
        let setup = self.cyc * self.p.retrans_setup_cycles;
        let txl = self.tx_latency(node);
        let fetch_4k = ps_of_ns(self.p.hbm_fetch_ns);
        let conn = &mut self.conns[c];
        let Some(idx) = conn
            .inflight
            .iter()
            .position(|e| e.abs <= from && from < e.abs + u64::from(e.npsn))
        else {
            return;
        };
        {
            let e = &mut conn.inflight[idx];
            if e.read && from > e.abs {
                let skip = from - e.abs;
                e.va += skip * pmtu;
                e.dma_len = e.dma_len.saturating_sub((skip * pmtu) as u32);
                e.npsn -= skip as u32;
                e.abs = from;
            }
        }
        let old_send = conn.send_idx;
        conn.send_idx = idx;
        conn.retx_state = cause;
        conn.indication = Some(now);
        let mut hbm_free = self.nodes[node].hbm_free;
        for i in idx..conn.inflight.len() {
            let e = &mut conn.inflight[i];
            if !e.sent && i >= old_send {
                continue;
            }
            e.retx = cause;
            if e.read {
                e.ready = now + setup + txl;
            } else {
                // Payload comes back from the HBM retransmission buffer.
                let start = (now + setup).max(hbm_free);
                let dur = fetch_4k * u64::from(e.len.max(64)).div_ceil(64) / (pmtu / 64).max(1);
                let dur = if u64::from(e.len) == pmtu {
                    fetch_4k
                } else {
                    dur
                };
                hbm_free = start + dur;
                e.ready = hbm_free + txl;
                // Fetches done by now count for no probe: dropped here, so
                // that a run without the probe does not keep them all.
                let fetches = &mut self.nodes[node].hbm_fetches;
                while fetches.front().is_some_and(|&t| t <= now) {
                    fetches.pop_front();
                }
                fetches.push_back(hbm_free);
                if u64::from(e.len) == pmtu {
                    push_bounded(&mut self.stats.hbm_fetch_ns, dur / NS);
                }
            }
        }
        self.nodes[node].hbm_free = hbm_free;
        self.qp_record(c, true);
        let t = self.conns[c].inflight.get(idx).map_or(now, |e| e.ready);
        self.kick(node, t);
    }

    fn on_timer(&mut self, c: usize) {
        let now = self.now;
        let conn = &mut self.conns[c];
        conn.timer_event_at = NEVER;
        if conn.timer_deadline == NEVER || conn.state != QpState::Rts {
            return;
        }
        if now < conn.timer_deadline {
            conn.timer_event_at = conn.timer_deadline;
            let t = conn.timer_deadline;
            self.schedule(t, Ev::Timer(c as u32));
            return;
        }
        // Expired: retransmit from the oldest unacknowledged PSN.
        conn.timer_deadline = NEVER;
        conn.retry_count += 1;
        conn.timer_backoff = true;
        self.stats.qps[c].timeouts += 1;
        if u64::from(self.conns[c].retry_count) > self.p.retry_limit {
            self.conns[c].state = QpState::Err;
            self.conns[c].retx_state = 3;
            self.qp_record(c, true);
            return;
        }
        let una = self.conns[c].una;
        self.conns[c].read_gap = false;
        self.go_back_n(c, una, RETX_TIMEOUT);
        self.arm_timer(c);
    }

    // ------------------------------------------------------------ payloads

    /// The first `n` bytes of a packet's plaintext payload (before AES).
    fn plaintext_into(&self, p: &Pkt, n: usize, out: &mut Vec<u8>) {
        out.clear();
        let conn = &self.conns[p.conn as usize];
        let n = n.min(p.payload_len as usize);
        let base = conn.seed ^ p.abs_psn.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let words = n.div_ceil(8);
        for w in 0..words {
            let v = mix64(base ^ w as u64);
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.truncate(n);
        if p.bad {
            let sig = slots::dpi_signature_beat();
            for beat in out.chunks_mut(64) {
                let l = beat.len();
                beat.copy_from_slice(&sig[..l]);
            }
        }
        if conn.app != AppOp::None && is_request(p.opcode) {
            slots::app_apply(conn.app, self.p.app_modulus as u32, out);
        }
    }

    /// The first `n` bytes of the payload as on the wire (after AES).
    fn wire_payload_into(&self, p: &Pkt, n: usize, out: &mut Vec<u8>) {
        self.plaintext_into(p, n, out);
        let conn = &self.conns[p.conn as usize];
        if conn.aes {
            slots::aes_ctr_apply(&conn.aes_key, conn.req_qpn, p.abs_psn, out);
        }
    }

    fn hdr_fields(&self, p: &Pkt) -> template::HdrFields {
        template::HdrFields {
            src_ip: self.nodes[p.src as usize].ip,
            dst_ip: self.nodes[p.dst as usize].ip,
            udp_src_port: match self.nodes[p.src as usize].kind {
                NodeKind::Balboa => BALBOA_UDP_SRC_PORT,
                NodeKind::Connectx => 0xC000 | (p.dest_qp as u16 & 0x3FFF),
            },
            opcode: p.opcode,
            dest_qp: p.dest_qp,
            psn: p.psn,
            ecn: p.ecn,
            becn: p.becn,
            payload_len: p.payload_len as usize,
            reth: p.reth,
            aeth: p.aeth,
        }
    }

    fn builder(&self, p: &Pkt) -> PacketBuilder {
        let src_ip = self.nodes[p.src as usize].ip;
        let dst_ip = self.nodes[p.dst as usize].ip;
        let mut b = PacketBuilder::rocev2_ipv4(src_ip, dst_ip, Opcode(p.opcode), p.dest_qp, p.psn);
        if let rocescope_decoders::NetHeader::Ipv4 { ecn, dscp, .. } = &mut b.net {
            *ecn = p.ecn;
            if p.opcode == Opcode::CNP.0 {
                *dscp = 48;
            }
        }
        b.udp_src_port = match self.nodes[p.src as usize].kind {
            NodeKind::Balboa => BALBOA_UDP_SRC_PORT,
            NodeKind::Connectx => 0xC000 | (p.dest_qp as u16 & 0x3FFF),
        };
        b.bth.mig_req = true;
        b.bth.becn = p.becn;
        b.ext.reth = p.reth;
        b.ext.aeth = p.aeth;
        if p.opcode == Opcode::CNP.0 {
            b.bth.ack_req = false;
        }
        b
    }

    // ------------------------------------------------------------ sniffer

    /// The sniffer's view of a frame at `node` (if it taps that node).
    #[inline]
    fn capture(&mut self, id: u32, dir: Direction, node: usize) {
        if self
            .sniff
            .as_ref()
            .is_some_and(|sn| sn.node as usize == node)
        {
            self.capture_frame(id, dir);
        }
    }

    fn capture_frame(&mut self, id: u32, dir: Direction) {
        let Some(sn) = &self.sniff else {
            return;
        };
        let (filter, fixed, quirk, tag) =
            (sn.filter, sn.fixed_card, sn.rx_cut_quirk, sn.tag_direction);
        let p = &self.pkts[id as usize];
        let info = self.ops[usize::from(p.opcode)];
        let own = info.cut;
        let flags = match dir {
            Direction::Rx if quirk => sn.last_tx_flags,
            _ => own,
        };
        let full_len = p.frame_len as usize;
        // Every simulated frame is Ethernet / IPv4 / UDP to port 4791, so
        // the card's decision depends only on the cut flags: made once per
        // flag pair from the first such frame's headers.
        let slot = usize::from(flags.aeth) | usize::from(flags.reth) << 1;
        let known = sn.decisions[slot];
        if known == Some(Capture::Ignore) {
            if dir == Direction::Tx
                && let Some(sn) = &mut self.sniff
            {
                sn.last_tx_flags = own;
            }
            return;
        }
        // Headers from the template writer (the builder only for opcodes
        // it does not cover); the builder again only when payload is wanted.
        let mut hdr_bytes = [0u8; template::MAX_HDR];
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let hdr = if info.simple {
            template::write_headers(&self.hdr_fields(p), &info, &mut hdr_bytes)
        } else {
            let b = self.builder(p);
            b.build_headers_into(p.payload_len as usize, &mut buf);
            b.header_len()
        };
        let headers: &[u8] = if info.simple { &hdr_bytes[..hdr] } else { &buf };
        let decision = match known {
            Some(d) => d,
            None => {
                let d = sniffer::decide(headers, filter, fixed, flags);
                if let Some(sn) = &mut self.sniff {
                    sn.decisions[slot] = Some(d);
                }
                d
            }
        };
        let want = match decision {
            Capture::Ignore => {
                self.buf = buf;
                if dir == Direction::Tx
                    && let Some(sn) = &mut self.sniff
                {
                    sn.last_tx_flags = own;
                }
                return;
            }
            Capture::Whole => full_len,
            Capture::Cut(n) => n.min(full_len),
        };
        // The record's bytes: straight from the header template when that
        // is all the capture keeps (the usual header-only case).
        let direct = want <= hdr && info.simple;
        if want <= hdr {
            if !direct {
                buf.truncate(want);
            }
        } else {
            if info.simple {
                buf.extend_from_slice(&hdr_bytes[..hdr]);
            }
            let b = self.builder(p);
            let mut pay = std::mem::take(&mut self.payload_buf);
            let need = p.payload_len as usize;
            if want >= hdr + need {
                self.wire_payload_into(p, need, &mut pay);
                b.build_into(&pay, &mut buf);
            } else {
                self.wire_payload_into(p, want - hdr, &mut pay);
                buf.extend_from_slice(&pay);
            }
            buf.truncate(want);
            self.payload_buf = pay;
        }
        if p.corrupt && buf.len() > hdr {
            buf[hdr] ^= 0xFF;
        }
        let cap_len = if direct { want } else { buf.len() };
        let now = self.now;
        let rate = self.p.sniffer_gbytes_s / 1000.0; // bytes per ps
        let cap = self.p.sniffer_buffer_bytes as f64;
        let (qpn, psn_w) = (p.dest_qp, p.psn);
        let Some(sn) = &mut self.sniff else {
            return;
        };
        if dir == Direction::Tx {
            sn.last_tx_flags = own;
        }
        sn.backlog = (sn.backlog - (now - sn.last_ps) as f64 * rate).max(0.0);
        sn.last_ps = now;
        let slots = sniffer::dump_slot_bytes(cap_len) as f64;
        if sn.backlog + slots > cap {
            sn.dropped += 1;
            let dropped = sn.dropped;
            self.buf = buf;
            self.stats.capture_drops += 1;
            self.truth(qpn, psn_w, TruthEvent::CaptureDrop);
            self.emit(Record::Drops(DropCount {
                ts_ns: now / NS,
                interface: 0,
                dropped,
                reason: DropReason::CaptureLoss,
            }));
            return;
        }
        sn.backlog += slots;
        self.stats.frames_captured += 1;
        let start = self.out_bytes.len() as u32;
        self.out_bytes
            .extend_from_slice(if direct { &hdr_bytes[..want] } else { &buf });
        self.out.push(Out::Frame {
            ts_ns: now / NS,
            direction: tag.then_some(dir),
            orig_len: full_len as u32,
            start,
            len: cap_len as u32,
        });
        self.buf = buf;
    }

    // ------------------------------------------------------------ profiler

    fn define_probes(&mut self) {
        let filter = self.scenario.profiler.probes.clone();
        let mut defs = Vec::new();
        for (i, n) in self.scenario.nodes.iter().enumerate() {
            let i = i as u16;
            let name = &n.name;
            defs.push((
                ProbeKind::TxCtrlQueue(i),
                format!("{name}.tx_ctrl_queue"),
                "packets",
                "tx_arbiter",
            ));
            defs.push((
                ProbeKind::Grant(i),
                format!("{name}.arbiter_grant"),
                "qpn",
                "tx_arbiter",
            ));
            defs.push((
                ProbeKind::TxBusy(i),
                format!("{name}.mac_tx_busy"),
                "",
                "mac_tx",
            ));
            defs.push((
                ProbeKind::LinkUtil(i),
                format!("{name}.link_util"),
                "%",
                "mac_tx",
            ));
            defs.push((
                ProbeKind::FsmBacklog(i),
                format!("{name}.resp_fsm_backlog"),
                "packets",
                "rx_resp_fsm",
            ));
            defs.push((
                ProbeKind::HbmInflight(i),
                format!("{name}.hbm_fetches_inflight"),
                "",
                "retrans_buffer",
            ));
            defs.push((
                ProbeKind::PcieTags(i),
                format!("{name}.pcie_tags_in_use"),
                "tags",
                "host_dma",
            ));
            defs.push((
                ProbeKind::SwitchQueue(i),
                format!("switch.port_{name}.queue"),
                "bytes",
                "switch",
            ));
        }
        for (c, conn) in self.conns.iter().enumerate() {
            let name = &self.scenario.nodes[conn.req as usize].name;
            let q = conn.req_qpn;
            defs.push((
                ProbeKind::WindowFill(c as u32),
                format!("{name}.qp{q:#x}.window_fill"),
                "packets",
                "qp_state",
            ));
            defs.push((
                ProbeKind::RetxState(c as u32),
                format!("{name}.qp{q:#x}.retx_state"),
                "",
                "retransmit",
            ));
        }
        for (kind, name, unit, module) in defs {
            if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let probe = self.probes.len() as u16;
            self.emit(Record::ProbeDef(ProbeDef {
                probe,
                name,
                unit: unit.to_owned(),
                module: module.to_owned(),
            }));
            self.probes.push(Probe { kind, last: None });
        }
    }

    fn probe_value(&mut self, k: ProbeKind) -> i64 {
        let now = self.now;
        match k {
            ProbeKind::TxCtrlQueue(n) => self.nodes[n as usize].ctrl.len() as i64,
            ProbeKind::Grant(n) => i64::from(self.nodes[n as usize].last_grant),
            ProbeKind::TxBusy(n) => i64::from(self.nodes[n as usize].tx_free > now),
            ProbeKind::LinkUtil(n) => {
                let node = &mut self.nodes[n as usize];
                let d = node.busy_ps - node.busy_ps_sampled;
                node.busy_ps_sampled = node.busy_ps;
                (d * 100 / self.prof_period.max(1)).min(100) as i64
            }
            ProbeKind::FsmBacklog(n) => self.nodes[n as usize].fsm_q.len() as i64,
            ProbeKind::HbmInflight(n) => {
                let q = &mut self.nodes[n as usize].hbm_fetches;
                while q.front().is_some_and(|&t| t <= now) {
                    q.pop_front();
                }
                q.len() as i64
            }
            ProbeKind::PcieTags(n) => self.nodes[n as usize]
                .dma_tags
                .iter()
                .filter(|&&(i, d)| i <= now && d > now)
                .count() as i64,
            ProbeKind::SwitchQueue(n) => {
                let port = &mut self.ports[n as usize];
                while let Some(&(end, b)) = port.q.front() {
                    if end > now {
                        break;
                    }
                    port.occ -= b;
                    port.q.pop_front();
                }
                port.occ as i64
            }
            ProbeKind::WindowFill(c) => {
                let conn = &self.conns[c as usize];
                (conn.next_psn - conn.una) as i64
            }
            ProbeKind::RetxState(c) => i64::from(self.conns[c as usize].retx_state),
        }
    }

    fn on_prof_tick(&mut self) {
        let on_change = self.scenario.profiler.on_change;
        let cycle = self.now / self.cyc.max(1);
        for i in 0..self.probes.len() {
            let v = self.probe_value(self.probes[i].kind);
            if on_change && self.probes[i].last == Some(v) {
                continue;
            }
            self.probes[i].last = Some(v);
            self.emit(Record::Profiler(ProfilerSample {
                cycle,
                ts_ns: self.now / NS,
                probe: i as u16,
                value: v,
            }));
        }
        let t = self.now + self.prof_period;
        if t <= self.end {
            self.schedule(t, Ev::ProfTick);
        }
    }
}
