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

mod accounting;
mod diagnose;
mod series;
mod state;
mod state_runs;
mod time_states;

use std::collections::{HashMap, VecDeque};

pub use diagnose::{CARD_QP, Finding, FindingCause, FindingItem, MAX_EVIDENCE_ROWS};
use series::BinCursor;
pub use series::{Bin, MAX_BINS, Series};
pub use state::QpState;
pub use state_runs::{MAX_RUNS, StateRuns};
pub use time_states::{TIME_STATES, TimeState};

use crate::headers::{NakCode, Syndrome};
use crate::opcode::{Opcode, OpcodeKind, Operation};
use crate::packet::Packet;
use crate::psn::{psn_add, psn_diff};

mod counters;
mod flow;
mod observation;
mod pairing;
mod report;
mod requests;
mod responses;
mod rows;
mod sends;
mod verdicts;

pub use counters::*;
use flow::*;
pub use observation::*;
pub use report::*;
pub use rows::*;
use sends::{PSN_MASK, SendQueue, Sent};
pub use verdicts::*;

/// Tunables of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The link rate in Gb/s (`--link-gbps`), 0 to take the source's (a
    /// simulator's scenario) or the fastest the capture shows.
    pub link_gbps: f64,
    /// Account each requester QP's time by state (off: what it costs is
    /// measured against it, BENCHMARKS.md "Time by state").
    pub time_by_state: bool,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            timeout_silence_ns: 100_000,
            window_packets: 0,
            retry_limit: 7,
            link_gbps: 0.0,
            time_by_state: true,
        }
    }
}

/// The analysis state over one source.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RcAnalysis {
    config: AnalysisConfig,
    flows: Vec<Flow>,
    flow_ids: HashMap<FlowKey, u32>,
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
    /// The earliest time seen, `u64::MAX` before any (a plain minimum on
    /// every packet's path, not an `Option`).
    first_ts_ns: u64,
    last_ts_ns: u64,
    /// Evidence only other sources can give (simulator ground truth, the
    /// card's counters): PFC pauses and DPI drops with their times.
    notes: VecDeque<diagnose::Note>,
    notes_let_go: u64,
    /// The last reading of each running drop count (`capture_drop_total`).
    drop_totals: Vec<(u64, u64)>,
    /// Readings of the card's own counters, in time order: the first, the
    /// first with STRM down, the latest (all the diagnosis reads, so that
    /// hours of polling hold three).
    card: Vec<(u64, CardCounters)>,
    /// The card's counter probes (a live link's `counters` module) and the
    /// reading their samples are building.
    card_probes: Vec<(u16, CardCounter)>,
    card_pending: Option<(u64, CardCounters)>,
    // Time by state (`accounting.rs`): each sending host's link, the
    // requester flows' accounts, pauses, what the source knows.
    hosts: Vec<accounting::Host>,
    host_ids: HashMap<[u8; 16], u32>,
    accts: Vec<time_states::Acct>,
    pauses: VecDeque<time_states::Pause>,
    /// The fastest pair of frames from one host: (ns apart, the first's
    /// bytes on the wire).
    fastest: (u64, u64),
    source_link_gbps: Option<f64>,
    /// Windows the source gives: (DestQP, requester QPN, packets).
    qp_windows: Vec<(u32, u32, u32)>,
    /// How the requester's card takes responses, as the source gives it:
    /// (DestQP, requester QPN, latency ns, ns each).
    qp_response_times: Vec<(u32, u32, u64, u64)>,
    /// QPs whose requester the source says does not slow down on CNPs.
    qp_unpaced: Vec<(u32, u32)>,
    /// The link rate the time by state reckons with (`link_gbps`).
    link_gbps: f64,
    /// ...as femtoseconds a byte (the per-packet arithmetic).
    fs_per_byte: u64,
    /// The longest hold of any pause in `pauses`.
    pause_reach_ns: u64,
    /// Counts changes of what a QP's window and response time rest on,
    /// so that each account looks them up again only then.
    facts_epoch: u32,
    /// Every request by the general path (tests: the steady paths against
    /// it).
    #[cfg(test)]
    #[serde(skip)]
    general_only: bool,
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
    /// The settings the analysis runs with (a saved analysis is taken back
    /// only under the same ones).
    pub fn config(&self) -> AnalysisConfig {
        self.config
    }

    pub fn new(cfg: AnalysisConfig) -> RcAnalysis {
        let mut an = RcAnalysis {
            config: cfg,
            flows: Vec::new(),
            flow_ids: HashMap::new(),
            by_key_id: Vec::new(),
            cm_reqs: HashMap::new(),
            cm_pairs: Vec::new(),
            qps: Vec::new(),
            episodes: EpisodeLog::default(),
            late: Vec::new(),
            first_ts_ns: u64::MAX,
            last_ts_ns: 0,
            notes: VecDeque::new(),
            notes_let_go: 0,
            drop_totals: Vec::new(),
            card: Vec::new(),
            card_probes: Vec::new(),
            card_pending: None,
            hosts: Vec::new(),
            host_ids: HashMap::new(),
            accts: Vec::new(),
            pauses: VecDeque::new(),
            fastest: (0, 0),
            source_link_gbps: None,
            qp_windows: Vec::new(),
            qp_response_times: Vec::new(),
            qp_unpaced: Vec::new(),
            link_gbps: 0.0,
            fs_per_byte: 0,
            pause_reach_ns: 0,
            facts_epoch: 0,
            #[cfg(test)]
            general_only: false,
        };
        an.set_rate();
        an
    }

    /// Record evidence the frames cannot show (a PFC pause, a DPI drop, the
    /// READ tag limit), for the diagnosis.
    pub fn note(&mut self, ts_ns: u64, what: FindingCause) {
        self.push_note(diagnose::Note {
            ts_ns,
            what,
            count: 1,
            from_psns: false,
        });
    }

    fn push_note(&mut self, note: diagnose::Note) {
        if self.notes.len() == MAX_NOTES {
            self.notes.pop_front();
            self.notes_let_go += 1;
        }
        self.notes.push_back(note);
    }

    /// The capture missed `frames` frames at about `ts_ns` (`from_psns`:
    /// PSNs the ACKs showed were sent, else a source's count): a fall in
    /// the rate there is a gap in what was captured, not in what was sent.
    pub(super) fn capture_loss(&mut self, ts_ns: u64, frames: u64, from_psns: bool) {
        if frames > 0 {
            self.push_note(diagnose::Note {
                ts_ns,
                what: FindingCause::CaptureLoss,
                count: frames,
                from_psns,
            });
        }
    }

    /// A running count of frames lost before the analysis (a sniffer's
    /// drops, a live link's queues), read at `ts_ns`, `source` naming the
    /// counter: what it grew by since its last reading is capture loss
    /// then. A reading from another clock (a client's wall clock against a
    /// simulator's time) is placed where the stream is now, after the last
    /// frame seen. Returns whether it grew.
    pub fn capture_drop_total(&mut self, source: u64, total: u64, ts_ns: u64) -> bool {
        let i = match self.drop_totals.iter().position(|(s, _)| *s == source) {
            Some(i) => i,
            None => {
                self.drop_totals.push((source, 0));
                self.drop_totals.len() - 1
            }
        };
        let last = &mut self.drop_totals[i].1;
        let grew = total.saturating_sub(*last);
        *last = (*last).max(total);
        let at = if self.first_ts_ns == u64::MAX {
            0
        } else if (self.first_ts_ns..=self.last_ts_ns.saturating_add(1_000_000_000))
            .contains(&ts_ns)
        {
            ts_ns
        } else {
            self.last_ts_ns
        };
        self.capture_loss(at, grew, false);
        grew > 0
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
        let id = self.flow_ids.get(&FlowKey { src, dst, dest_qp })?;
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
}

#[cfg(test)]
mod tests;
