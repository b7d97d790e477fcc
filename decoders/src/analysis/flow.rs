//! The state of one flow (one direction of a QP): what was sent and is
//! outstanding, gaps, the open episode, pending NAKs, ACK round trips.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(super) struct FlowKey {
    pub(super) src: [u8; 16],
    pub(super) dst: [u8; 16],
    pub(super) dest_qp: u32,
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct Gap {
    /// First missing PSN and how many.
    pub(super) first_psn: u32,
    pub(super) psn_count: u32,
    /// Row and time of the packet after the gap (the first out of
    /// sequence).
    pub(super) index: u64,
    pub(super) ts_ns: u64,
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct OpenEpisode {
    pub(super) episode: Episode,
    /// The highest PSN sent before the episode: new data resumes after it.
    pub(super) resume_psn: u32,
    /// The PSN resent last: a resend at or before it starts a new pass.
    pub(super) last_psn: u32,
}

/// Loss evidence waiting for the resend it should cause.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct PendingNak {
    pub(super) psn: u32,
    pub(super) ts_ns: u64,
    pub(super) index: u64,
    pub(super) cause: EpisodeCause,
    /// The out-of-sequence arrival before the NAK to the NAK, when the
    /// capture saw the gap (it sits at or after the loss: the receiver's
    /// side).
    pub(super) generation_ns: Option<u64>,
}

/// A resend comes from the timer when the evidence before it is older than
/// this many smoothed round trips (and the configured timeout silence).
pub(super) const TIMER_RTTS: u64 = 8;

/// The longest a sender takes from the ACK that opened its window to its
/// next packet (the ACK through the receive pipeline, the payload's DMA,
/// the transmit pipeline: about 1.4 µs on BALBOA, 2 µs on a ConnectX).
pub(super) const ACK_TURNAROUND_NS: u64 = 4_000;

/// Timer expiries kept per flow for the retry schedule and the QP state.
pub(super) const MAX_EXPIRIES: usize = 4096;

/// RNR NAKs in a row on one PSN: the RNR retry count being spent.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct RnrRun {
    pub(super) psn: u32,
    pub(super) naks: u32,
    /// The last NAK: its time, row and the wait it asked for.
    pub(super) ts_ns: u64,
    pub(super) index: u64,
    pub(super) wait_ns: u64,
}

/// State of one flow (one direction of one QP connection).
///
/// Laid out in declaration order, what every packet touches first: with
/// dozens of flows interleaved, the fields a packet reads, placed by the
/// compiler across a 728-byte struct (twelve cache lines), fell out of the
/// cache between two packets of a flow; now they share the first four
/// lines, each flow starting on a line.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[repr(C, align(64))]
pub(super) struct Flow {
    // Every packet of the flow.
    pub(super) packets: u64,
    pub(super) last_ts_ns: u64,
    pub(super) wire_bytes: u64,
    /// The series bin last used (see `Series::bin_at`).
    pub(super) cursor: BinCursor,
    pub(super) requests: u64,
    pub(super) responses: u64,
    pub(super) series: Series,
    /// The reverse flow, once paired.
    pub(super) peer: Option<u32>,
    /// The sending host (its link's bytes, `accounting.rs`).
    pub(super) src_host: u32,
    // Requester side: the requests this flow carries.
    pub(super) started: bool,
    pub(super) last_req_read: bool,
    pub(super) next_psn: u32,
    /// The PSN of `outstanding`'s front, kept beside it (a send's PSN never
    /// changes): a capture of one direction keeps 65,536 sends outstanding,
    /// and reading the front of that ring for every packet missed the
    /// cache, a sixth of the analysis' time.
    front_psn: u32,
    /// Requests sent and not yet acknowledged, oldest first: pushed by
    /// [`Flow::track_sent`], taken off by [`Flow::pop_sent`].
    pub(super) outstanding: SendQueue,
    // Responder side (responses this flow carries for the peer's requests).
    pub(super) last_ack_psn: Option<u32>,
    pub(super) read_resp_next: Option<u32>,
    /// The first READ response PSN found missing, until it arrives: the
    /// READ it belongs to is not done, whatever later AETHs acknowledge.
    pub(super) read_gap: Option<u32>,
    pub(super) pmtu_bytes: u32,
    pub(super) peak_outstanding: u32,
    /// Outstanding right after the last new request: the level the sender
    /// waits at until an ACK frees room.
    pub(super) level_after_req: u32,
    pub(super) last_req_ts_ns: u64,
    /// Smoothed ACK round trip (1/8 gain), 0 before the first sample.
    pub(super) rtt_avg_ns: u64,
    pub(super) rtt_ns: RttSamples,
    /// The first ACK since the last request that took sends off (0: none).
    pub(super) first_free_ack_ts_ns: u64,
    /// The most outstanding at which the capture showed the sender held:
    /// it waited long for an ACK and sent at once when one came. Without
    /// it the most outstanding seen is only a floor of the window (a QP
    /// whose messages are smaller than its window never fills it).
    pub(super) window_held: u32,
    pub(super) gaps: Vec<Gap>,
    pub(super) pending_nak: Option<PendingNak>,
    /// RNR NAKs in a row on one PSN, until an ACK passes it.
    pub(super) rnr_run: Option<RnrRun>,
    pub(super) counters: Counters,
    pub(super) episode: Option<OpenEpisode>,
    // Rarely: pairing, conversations, errors, timer expiries.
    pub(super) key: FlowKey,
    /// QP conversation id this flow belongs to.
    pub(super) qp: u32,
    /// The conversation slot made with the flow: a flow that joined its
    /// pair's conversation as the response direction goes back to it when
    /// it carries requests of its own (both ends post requests).
    pub(super) own_slot: u32,
    pub(super) expiries: Vec<TimerExpiry>,
    pub(super) error: Option<QpError>,
    pub(super) first_ts_ns: u64,
    /// Its time-by-state account once it sends a request
    /// (`accounting::NO_ACCT` before).
    pub(super) acct: u32,
    /// A request sent after its fatal NAK was acknowledged: the requester
    /// went on (a simulated BALBOA does), so its time is not in error.
    pub(super) went_on_after_error: bool,
    /// It has sent a READ request (whose responses count as ACKs).
    pub(super) reads: bool,
    /// New payload bytes of its requests (WRITE, SEND) and of the READ
    /// responses to them, resends and duplicates not counted: its goodput.
    pub(super) goodput_bytes: u64,
}

impl Flow {
    pub(super) fn new(key: FlowKey, qp: u32, ts_ns: u64, src_host: u32) -> Flow {
        Flow {
            key,
            peer: None,
            src_host,
            acct: accounting::NO_ACCT,
            went_on_after_error: false,
            reads: false,
            goodput_bytes: 0,
            qp,
            own_slot: qp,
            started: false,
            next_psn: 0,
            outstanding: SendQueue::default(),
            front_psn: 0,
            last_req_ts_ns: ts_ns,
            last_req_read: false,
            pmtu_bytes: 0,
            gaps: Vec::new(),
            pending_nak: None,
            episode: None,
            expiries: Vec::new(),
            error: None,
            rnr_run: None,
            rtt_avg_ns: 0,
            peak_outstanding: 0,
            level_after_req: 0,
            first_free_ack_ts_ns: 0,
            window_held: 0,
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

    /// Tracks a send of `psn` consuming `psn_count` PSNs. The send is made
    /// after the cap check, not before: kept across that call it was
    /// written to the stack field by field and read back whole, a
    /// store-forwarding stall on every request (`perf annotate` put a
    /// sixth of the analysis' samples on the copy).
    #[inline(always)]
    pub(super) fn track_sent(&mut self, psn: u32, psn_count: u32, ts_ns: u64, read: bool) {
        if self.outstanding.len() >= MAX_TRACKED_SENDS {
            self.untrack_oldest();
        }
        if self.outstanding.is_empty() {
            self.front_psn = psn & PSN_MASK;
        }
        self.outstanding
            .push_back(Sent::new(psn, psn_count, ts_ns, read));
    }

    #[cold]
    #[inline(never)]
    fn untrack_oldest(&mut self) {
        self.pop_sent();
        self.counters.untracked_sends += 1;
    }

    /// `psn` was sent again: its sends are marked resent (no round trip is
    /// taken from them), and a gap it falls in was lost on the wire, not by
    /// the capture. Out of line and cold, as are the other walks of the
    /// sends and gaps: inlined, they lengthened every packet's path.
    #[cold]
    #[inline(never)]
    pub(super) fn note_resent(&mut self, psn: u32) {
        for s in self.outstanding.iter_mut().filter(|s| s.psn() == psn) {
            s.mark_resent();
        }
        self.gaps.retain(|g| {
            !(psn_diff(psn, g.first_psn) >= 0 && psn_diff(psn, g.first_psn) < g.psn_count as i32)
        });
    }

    /// The open episode recovered at `ts_ns`: closed, its loss evidence
    /// spent, and logged. Out of line: once per episode.
    #[cold]
    #[inline(never)]
    pub(super) fn close_episode(&mut self, ts_ns: u64, log: &mut EpisodeLog) {
        if let Some(open) = self.episode.take() {
            let mut ep = open.episode;
            ep.recovery_ns = ts_ns.saturating_sub(ep.start_ns);
            ep.recovered = true;
            self.pending_nak = None;
            log.push(ep);
        }
    }

    /// PSNs the capture did not see (yet) before a request: out of line, as
    /// a gap is rare.
    #[cold]
    #[inline(never)]
    pub(super) fn note_gap(&mut self, gap: Gap) {
        self.gaps.push(gap);
    }

    /// A NAK for `psn`: the gap at or just before it was lost on the wire,
    /// not by the capture.
    #[cold]
    #[inline(never)]
    /// The gap holding `psn`, if the capture saw one.
    pub(super) fn gap_at(&self, psn: u32) -> Option<&Gap> {
        self.gaps.iter().find(|g| {
            psn_diff(psn, g.first_psn) >= 0 && psn_diff(psn, g.first_psn) <= g.psn_count as i32
        })
    }

    pub(super) fn forget_gaps_at(&mut self, psn: u32) {
        self.gaps.retain(|g| {
            !(psn_diff(psn, g.first_psn) >= 0 && psn_diff(psn, g.first_psn) <= g.psn_count as i32)
        });
    }

    /// Gaps an ACK through `acked_through` covers with no NAK pending:
    /// lost by the capture, not on the wire; their packets' classes change
    /// after the fact (`late`), and each becomes a note of capture loss
    /// for the diagnosis (`missed`: time, packets).
    #[cold]
    #[inline(never)]
    pub(super) fn resolve_gaps(
        &mut self,
        acked_through: u32,
        late: &mut Vec<LateClass>,
        missed: &mut Vec<(u64, u64)>,
    ) {
        let mut resolved = Vec::new();
        let nak_pending = self.pending_nak.is_some();
        self.gaps.retain(|g| {
            let last = psn_add(g.first_psn, g.psn_count - 1);
            if psn_diff(acked_through, last) >= 0 && !nak_pending {
                resolved.push(*g);
                false
            } else {
                true
            }
        });
        for g in resolved {
            missed.push((g.ts_ns, u64::from(g.psn_count)));
            self.counters.capture_loss_packets += u64::from(g.psn_count);
            self.counters.out_of_sequence = self.counters.out_of_sequence.saturating_sub(1);
            late.push(LateClass {
                index: g.index,
                set: Class::CAPTURE_LOSS,
                clear: Class::OUT_OF_SEQUENCE,
            });
        }
    }

    /// Takes the oldest outstanding send off.
    #[inline]
    pub(super) fn pop_sent(&mut self) {
        self.outstanding.pop_front();
        if let Some(next) = self.outstanding.front() {
            self.front_psn = next.psn();
        }
    }

    #[inline]
    pub(super) fn outstanding_psns(&self) -> u32 {
        if self.started && !self.outstanding.is_empty() {
            psn_diff(self.next_psn, self.front_psn).max(0) as u32
        } else {
            0
        }
    }

    /// PSNs a READ of `dma_len` bytes consumes, with the PMTU seen so far.
    #[inline]
    pub(super) fn read_span(&self, dma_len: Option<u32>) -> u32 {
        let pmtu = if self.pmtu_bytes == 0 {
            4096
        } else {
            self.pmtu_bytes
        };
        dma_len.map_or(1, |len| len.div_ceil(pmtu).max(1))
    }
}

/// ACK round trips of one flow, for its percentiles, in bounded memory:
/// every sample up to [`RTT_SAMPLES_MAX`], then an even thinning over the
/// whole flow (every other sample dropped and the stride doubled each time
/// the store fills), so that hours of ACKs keep 64 Ki samples spread over
/// all of them.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct RttSamples {
    pub(super) kept: Vec<u64>,
    /// Keep one sample in `stride`.
    pub(super) stride: u64,
    pub(super) seen: u64,
}

pub(super) const RTT_SAMPLES_MAX: usize = 1 << 16;

impl RttSamples {
    #[inline]
    pub(super) fn add(&mut self, rtt_ns: u64) {
        let stride = self.stride.max(1);
        if self.seen.is_multiple_of(stride) {
            if self.kept.len() == RTT_SAMPLES_MAX {
                self.thin(stride);
            }
            if self.seen.is_multiple_of(self.stride.max(1)) {
                self.kept.push(rtt_ns);
            }
        }
        self.seen += 1;
    }

    /// The store is full: every other sample dropped, the stride doubled.
    /// Once per 64 Ki samples kept, so out of every ACK's path.
    #[cold]
    #[inline(never)]
    fn thin(&mut self, stride: u64) {
        let mut i = 0;
        self.kept.retain(|_| {
            i += 1;
            i % 2 == 1
        });
        self.stride = stride * 2;
    }
}
