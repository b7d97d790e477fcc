//! The analysis [`Report`]: per-QP reports, episodes kept, ACK RTT
//! histograms, and [`RcAnalysis::report`] that builds it.

use super::*;

/// A QP's ends: the fields of its [`QpReport`] that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpEnds {
    pub requester: [u8; 16],
    pub responder: [u8; 16],
    pub dest_qp: u32,
    pub requester_qp: Option<u32>,
}

/// Per-QP results.
#[derive(Debug, Clone, PartialEq)]
pub struct QpReport {
    /// Requester and responder addresses and the responder's QPN.
    /// Where both ends post requests, each end's requests are a report of
    /// their own, with requester and responder swapped (`both_request`).
    pub requester: [u8; 16],
    pub responder: [u8; 16],
    pub dest_qp: u32,
    /// QPN of the requester, when its responses were seen.
    pub requester_qp: Option<u32>,
    pub packets: u64,
    pub wire_bytes: u64,
    /// New payload bytes moved: WRITE and SEND payload, READ response
    /// payload; resends and duplicates not counted.
    pub goodput_bytes: u64,
    pub requests: u64,
    pub responses: u64,
    pub next_psn: u32,
    pub oldest_unacked_psn: Option<u32>,
    pub outstanding: u32,
    /// Outstanding as the requester counts them when the capture ends:
    /// `outstanding` and those its card has not taken the responses for
    /// yet (when the source says how long its card takes one).
    pub outstanding_counted: u32,
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
    /// The window in packets: the configured one, else the most
    /// outstanding at which the capture shows the sender held, else the
    /// most this QP had outstanding in the capture (then only a floor of
    /// the window: `window_seen` is false).
    pub window_packets: u32,
    /// The window is configured or the capture shows the sender held at
    /// it; without, the QP is never said to have its window full.
    pub window_seen: bool,
    /// Where `window_packets` comes from.
    pub window_from: WindowFrom,
    /// Every expiry of the requester's timer seen (at most 4096).
    pub timer_expiries: Vec<TimerExpiry>,
    /// The QP went to the error state (a fatal NAK, retries exceeded).
    pub error: Option<QpError>,
    /// First and last packet of the QP, both directions.
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// Its time by state from its first request to the end of its last
    /// packet: the runs and the time in each state (`states.totals_ns`,
    /// summing to the span).
    pub states: StateRuns,
    /// The responder posts requests too: they are the report with this
    /// one's requester and responder swapped. Counters, requests and RTTs
    /// here are this direction's requests and the responses to them;
    /// packets and bytes count both directions.
    pub both_request: bool,
}

impl QpReport {
    /// Its goodput over its span (first request to the end of its last
    /// packet; first to last packet where time was not accounted), GB/s.
    pub fn goodput_gbytes_s(&self) -> f64 {
        let span_ns = match self.states.end_ns.saturating_sub(self.states.start_ns) {
            0 => self.last_ts_ns.saturating_sub(self.first_ts_ns),
            s => s,
        };
        if span_ns == 0 {
            return 0.0;
        }
        self.goodput_bytes as f64 / span_ns as f64
    }
}

/// Where a QP's window comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowFrom {
    /// `AnalysisConfig::window_packets`.
    Configured,
    /// The source's (a simulator's scenario, in its records).
    Source,
    /// The most outstanding the capture shows the sender held at.
    Held,
    /// Only the most outstanding seen: a floor of the window.
    MostOutstanding,
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

/// Buckets of [`rtt_bucket_ns`]: eight of one nanosecond, then four per
/// power of two up to 2^64.
const RTT_BUCKETS: usize = 8 + 61 * 4;

/// Where `ns`'s bucket stands among all buckets, lowest first.
fn rtt_bucket_index(ns: u64) -> usize {
    if ns < 8 {
        return ns as usize;
    }
    let shift = 63 - ns.leading_zeros() - 2;
    8 + (shift as usize - 1) * 4 + ((ns >> shift) as usize - 4)
}

/// Histogram of samples in any order: each non-empty bucket's lower bound
/// and count, lowest first. Counted into fixed buckets, not sorted: a
/// report of a long capture has 65,536 samples a flow.
pub(super) fn rtt_histogram(samples_ns: &[u64]) -> Vec<(u64, u64)> {
    let counts = count_in_turn::<RTT_BUCKETS>(samples_ns, |ns| Some(rtt_bucket_index(ns)));
    (0..RTT_BUCKETS)
        .zip(counts)
        .map(|(i, n)| (rtt_bucket_lower_ns(i), n))
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// The samples counted into `K` counts, `at` naming each one's (`None`:
/// not counted). Four sets of counts, taken in turn, then summed, so that
/// samples landing in one count (round trips cluster) do not wait on each
/// other's increments.
fn count_in_turn<const K: usize>(
    samples_ns: &[u64],
    at: impl Fn(u64) -> Option<usize>,
) -> [u64; K] {
    let mut sets = [[0u64; K]; 4];
    let [c0, c1, c2, c3] = &mut sets;
    let count = |c: &mut [u64; K], ns: u64| {
        if let Some(n) = at(ns).and_then(|i| c.get_mut(i)) {
            *n += 1;
        }
    };
    let mut quads = samples_ns.chunks_exact(4);
    for q in &mut quads {
        if let &[a, b, c, d] = q {
            count(c0, a);
            count(c1, b);
            count(c2, c);
            count(c3, d);
        }
    }
    for &ns in quads.remainder() {
        count(c0, ns);
    }
    let mut sums = [0u64; K];
    for (i, s) in sums.iter_mut().enumerate() {
        *s = c0[i] + c1[i] + c2[i] + c3[i];
    }
    sums
}

/// The lower bound of the bucket at `index` (see [`rtt_bucket_index`]).
fn rtt_bucket_lower_ns(index: usize) -> u64 {
    if index < 8 {
        return index as u64;
    }
    let k = index - 8;
    ((k % 4 + 4) as u64) << (k / 4 + 1)
}

/// The samples at fractions `ps` of the samples in order (`None` without
/// samples), read off `histogram` (theirs, from [`rtt_histogram`]) and
/// the samples themselves, which are neither copied nor reordered: the
/// histogram names the bucket holding each rank, and counting passes over
/// the samples narrow that bucket down to the one value (one pass for
/// round trips under 8 us, shared by the ranks in one bucket; a few more
/// for longer ones).
pub(super) fn rtt_percentiles<const N: usize>(
    samples_ns: &[u64],
    histogram: &[(u64, u64)],
    ps: [f64; N],
) -> [Option<u64>; N] {
    let mut out = [None; N];
    let Some(last) = samples_ns.len().checked_sub(1) else {
        return out;
    };
    // Each rank's bucket (its lower bound) and its rank within it.
    let at = ps.map(|p| {
        let mut rank = ((last as f64 * p) as u64).min(last as u64);
        for &(lower, n) in histogram {
            if rank < n {
                return Some((lower, rank));
            }
            rank -= n;
        }
        None
    });
    for i in 0..N {
        // Resolved already with an earlier rank in the same bucket.
        let (Some(Some((lower, _))), Some(None)) = (at.get(i), out.get(i)) else {
            continue;
        };
        // The top bucket's bound saturates at u64::MAX, which it holds.
        let top = match rtt_bucket_ns(*lower).1 {
            u64::MAX => u64::MAX,
            upper => upper - 1,
        };
        let ranges = Ranges::count(samples_ns, *lower, top);
        for (o, a) in out.iter_mut().zip(&at).skip(i) {
            if let Some((l, rank)) = a
                && l == lower
            {
                *o = Some(ranges.nth(samples_ns, *rank));
            }
        }
    }
    out
}

/// Ranges a counting pass splits its span into.
const NARROW_BITS: u32 = 10;
const RANGES: usize = 1 << NARROW_BITS;

/// The samples in `lo..=hi` counted into 1,024 equal ranges.
struct Ranges {
    lo: u64,
    hi: u64,
    shift: u32,
    counts: [u64; RANGES],
}

impl Ranges {
    /// One pass over the samples.
    fn count(samples_ns: &[u64], lo: u64, hi: u64) -> Ranges {
        let span = hi.saturating_sub(lo);
        let shift = (u64::BITS - span.leading_zeros()).saturating_sub(NARROW_BITS);
        // In range when within the span (`span >> shift` < RANGES); the
        // mask only spares the bounds check.
        let counts = count_in_turn::<RANGES>(samples_ns, |ns| {
            let d = ns.wrapping_sub(lo);
            (d <= span).then_some((d >> shift) as usize & (RANGES - 1))
        });
        Ranges {
            lo,
            hi,
            shift,
            counts,
        }
    }

    /// The sample at `rank` (from 0) in order among those counted: the
    /// range holding it, narrowed by further passes until one value wide.
    fn nth(&self, samples_ns: &[u64], mut rank: u64) -> u64 {
        let mut range = RANGES - 1;
        for (i, &n) in self.counts.iter().enumerate() {
            if rank < n {
                range = i;
                break;
            }
            rank -= n;
        }
        let base = self.lo.saturating_add((range as u64) << self.shift);
        let top = self.hi.min(base.saturating_add((1u64 << self.shift) - 1));
        if self.shift == 0 || base >= top {
            return base;
        }
        // At most six levels: each takes ten bits off the span.
        Ranges::count(samples_ns, base, top).nth(samples_ns, rank)
    }
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
    /// The link rate the time by state was reckoned at, Gb/s.
    pub link_gbps: f64,
}

/// Episodes kept for the report: a live session on a lossy link closes
/// thousands a second for hours, so the oldest go (about 100 B each).
pub const MAX_EPISODES: usize = 1 << 17;

/// Evidence notes kept for the diagnosis, the newest.
pub const MAX_NOTES: usize = 1 << 16;

/// Closed episodes: the newest kept, every one counted per QP and cause.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct EpisodeLog {
    pub(super) kept: VecDeque<Episode>,
    pub(super) let_go: u64,
    /// Closed episodes per QP conversation id, by `EpisodeCause` index.
    pub(super) by_qp: Vec<[u64; EpisodeCause::ALL.len()]>,
}

impl EpisodeLog {
    /// A closed episode: a few per QP at most, so out of the per-packet
    /// path.
    #[cold]
    #[inline(never)]
    pub(super) fn push(&mut self, ep: Episode) {
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

/// Where a report's series come from.
enum SeriesOf {
    /// Copies of the flows' own: the analysis goes on.
    Copied,
    /// Taken out of the flows (by flow id), each with the number of times
    /// the report still hands it out: copied for all but the last.
    Moved { series: Vec<Series>, uses: Vec<u32> },
}

impl SeriesOf {
    fn hand_out(&mut self, flows: &[Flow], id: u32) -> Series {
        let id = id as usize;
        match self {
            SeriesOf::Copied => flows[id].series.clone(),
            SeriesOf::Moved { series, uses } => {
                uses[id] = uses[id].saturating_sub(1);
                if uses[id] > 0 {
                    series[id].clone()
                } else {
                    let s = &mut series[id];
                    std::mem::replace(s, Series::empty_like(s))
                }
            }
        }
    }
}

impl RcAnalysis {
    /// Close open episodes (the source ended) and build the report. The
    /// analysis can go on: each QP's series is copied into it.
    pub fn report(&self) -> Report {
        self.build_report(SeriesOf::Copied)
    }

    /// The report of an analysis that sees no more packets (`rocescope
    /// stats`, `report`, `sim --headless`): each flow's series moves into
    /// it instead of being copied.
    /// For a capture of many QPs the copies were megabytes of fresh pages,
    /// faulted in at the end of the run while nothing else was left to do.
    pub fn into_report(mut self) -> Report {
        let mut uses = vec![0u32; self.flows.len()];
        for (req, peer) in self.reported_flows() {
            uses[req as usize] += 1;
            if let Some(p) = peer {
                uses[p as usize] += 1;
            }
        }
        let series = self
            .flows
            .iter_mut()
            .map(|f| {
                let empty = Series::empty_like(&f.series);
                std::mem::replace(&mut f.series, empty)
            })
            .collect();
        self.build_report(SeriesOf::Moved { series, uses })
    }

    /// Each QP's ends as [`RcAnalysis::report`] would give them, in its
    /// order, without building the rest of the report (the points' analysis
    /// needs no more, and the report of a busy capture costs as much as the
    /// matching).
    pub fn qp_ends(&self) -> Vec<QpEnds> {
        self.reported_flows()
            .map(|(req, peer)| {
                let f = &self.flows[req as usize];
                QpEnds {
                    requester: f.key.src,
                    responder: f.key.dst,
                    dest_qp: f.key.dest_qp,
                    requester_qp: peer.map(|p| self.flows[p as usize].key.dest_qp),
                }
            })
            .collect()
    }

    /// The flows the report has a row for, with their peers, in QP order:
    /// a slot whose flow joined another QP has none.
    fn reported_flows(&self) -> impl Iterator<Item = (u32, Option<u32>)> + '_ {
        self.qps
            .iter()
            .enumerate()
            .filter(|&(qp_id, &req)| self.flows[req as usize].qp as usize == qp_id)
            .map(|(_, &req)| (req, self.flows[req as usize].peer))
    }

    fn build_report(&self, mut series_of: SeriesOf) -> Report {
        let t0 = if self.first_ts_ns == u64::MAX {
            0
        } else {
            self.first_ts_ns
        };
        // From every flow's series, before the QPs' rows take them.
        let card_findings = match &series_of {
            SeriesOf::Copied => self.card_findings(self.flows.iter().map(|f| &f.series), t0),
            SeriesOf::Moved { series, .. } => self.card_findings(series.iter(), t0),
        };
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
                let wait_ns = run.wait_ns.max(self.config.timeout_silence_ns);
                if f.last_req_ts_ns <= run.ts_ns
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
                let mut ep = open.episode;
                // Still open: not recovered, whatever the time it has run.
                ep.recovery_ns = self.last_ts_ns.saturating_sub(ep.start_ns);
                let passes = ep.retries + 1;
                let next_expiry_ns = ep.end_ns.saturating_add(ep.silence_ns);
                if ep.timer_expiries > 0
                    && passes >= self.config.retry_limit
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
        for (req, peer_id) in self.reported_flows() {
            let f = &self.flows[req as usize];
            let peer = peer_id.map(|p| &self.flows[p as usize]);
            let both_request = self.both_request(req);
            let mut c = f.counters;
            // Where both ends request, the peer's counters are its own report's.
            if let Some(p) = peer.filter(|_| !both_request) {
                c.add(&p.counters);
            }
            let report_index = qps.len() as u32;
            // The first cause of error stands: a fatal NAK, else retries.
            let error = f.error.or_else(|| exhausted.get(&req).copied());
            let last_ts_ns = f.last_ts_ns.max(peer.map_or(0, |p| p.last_ts_ns));
            let states = self.report_states(req, last_ts_ns, error.as_ref());
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
            // A flow keeps up to 65,536: counted, not copied and sorted.
            let rtt = &f.rtt_ns.kept;
            let rtt_histogram = rtt_histogram(rtt);
            let [rtt_p50_ns, rtt_p99_ns] = rtt_percentiles(rtt, &rtt_histogram, [0.5, 0.99]);
            qps.push(QpReport {
                requester: f.key.src,
                responder: f.key.dst,
                dest_qp: f.key.dest_qp,
                requester_qp: peer.map(|p| p.key.dest_qp),
                packets: f.packets + peer.map_or(0, |p| p.packets),
                wire_bytes: f.wire_bytes + peer.map_or(0, |p| p.wire_bytes),
                goodput_bytes: f.goodput_bytes,
                requests: f.requests + peer.filter(|_| !both_request).map_or(0, |p| p.requests),
                responses: peer.map_or(0, |p| p.responses)
                    + if both_request { 0 } else { f.responses },
                next_psn: f.next_psn,
                oldest_unacked_psn: f.outstanding.front().map(|s| s.psn()),
                outstanding: f.outstanding_psns(),
                outstanding_counted: self.outstanding_counted(req, last_ts_ns),
                counters: c,
                episodes_by_cause: by_cause,
                rtt_p50_ns,
                rtt_p99_ns,
                rtt_histogram,
                series: series_of.hand_out(&self.flows, req),
                reverse_series: peer_id.map(|p| series_of.hand_out(&self.flows, p)),
                window_packets: self.window_of(req).unwrap_or(f.peak_outstanding),
                window_seen: self.window_of(req).is_some(),
                window_from: if self.config.window_packets > 0 {
                    WindowFrom::Configured
                } else if self.window_given(req).is_some() {
                    WindowFrom::Source
                } else if f.window_held > 0 {
                    WindowFrom::Held
                } else {
                    WindowFrom::MostOutstanding
                },
                timer_expiries: f.expiries.clone(),
                error,
                first_ts_ns: f.first_ts_ns.min(peer.map_or(u64::MAX, |p| p.first_ts_ns)),
                last_ts_ns,
                states,
                both_request,
            });
        }
        let findings = diagnose::diagnose(
            &qps,
            &diagnose::Context {
                episodes: &episodes,
                notes: &self.notes,
                cfg: &self.config,
                t0_ns: t0,
                end_ns: self.last_ts_ns,
            },
        );
        let mut findings = findings;
        findings.extend(card_findings);
        findings.sort_by_key(|f| (f.start_ns, f.qp));
        Report {
            qps,
            counters,
            episodes,
            findings,
            episodes_let_go: self.episodes.let_go,
            notes_let_go: self.notes_let_go,
            link_gbps: self.link_gbps(),
        }
    }

    /// Findings from the card's counters against `series`, every flow's.
    fn card_findings<'a>(
        &self,
        series: impl Iterator<Item = &'a Series>,
        t0_ns: u64,
    ) -> Vec<Finding> {
        let mut card = self.card.clone();
        card.extend(self.card_pending);
        let totals = self
            .flows
            .iter()
            .map(|f| f.counters)
            .fold(Counters::default(), |mut a, c| {
                a.add(&c);
                a
            });
        diagnose::card(&card, series, &totals, t0_ns)
    }
}
