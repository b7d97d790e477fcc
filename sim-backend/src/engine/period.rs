//! Repeating periods of the simulator's whole state (issue 51): the
//! state's key and the detection of its repeats, counted, and the check
//! that a steady period's outputs are its previous period's shifted (the
//! transform the replay hands out, `transform.rs`), before a checked period
//! becomes the template a replay starts from (`replay.rs`). With the
//! replay on, detection keys no state in the steps after a generator draw
//! and pauses after an attempt that made no template, so a scenario whose
//! periods never replay pays almost nothing (`may_key`).
//!
//! The key is what the model's future depends on, made independent of
//! where the run is: times relative to now, PSNs relative to each QP's
//! oldest unacknowledged PSN, MSNs relative to its responder's MSN, work
//! request ids relative to its next one. Two sights of one key give the
//! same events and records thereafter, shifted in time and in those
//! counters, up to what the key leaves out on purpose, which a replay must
//! stop before or advance itself:
//! - pending retransmission-timer and profiler events (absolute deadlines
//!   off the period: a replay stops before the next is due), and what only
//!   the profiler's tick reads (each probe's last value, each node's busy
//!   time since the last tick: unchanged, or advanced by the period's
//!   share, until the tick);
//! - the generator's state (a loss rule draws for every frame it sees:
//!   `PeriodStats::repeats_without_draws` counts the repeats with no draw
//!   between the two sights, whose replay needs no draw);
//! - fields that only reach records and counters, never a decision: RETH
//!   addresses (`va`), absolute PSNs, MSNs and WR ids, the counters of
//!   [`SimStats`], the sniffer's drop count.
//!
//! Sights are told apart by a 128-bit hash of the key: a replay (step 2)
//! must hold the template's whole key and compare it word for word before
//! it trusts a repeat.
//!
//! Times that are only compared with now or raised to a later time are
//! folded: any time before now keys alike. Scenarios whose model reads
//! absolute time or state the key does not hold are not keyed at all (the
//! reason in [`PeriodStats::off`]): DCQCN, capture points, told reasons,
//! DPI, host stalls, fault rules with a time window.

use std::collections::HashMap;

use super::transform::{Logged, QpnMap, Shift};
use super::*;

/// Sights of states kept for detection; past this the table starts again
/// (counted in [`PeriodStats::table_resets`]): 72 bytes a sight, about
/// 5.5 MB with the table's slack.
const TABLE_MAX: usize = 1 << 16;

/// A key word for a time at or after now, or `NEVER`.
const KEY_NEVER: u64 = u64::MAX;
/// A key word for a time before now (folded).
const KEY_PAST: u64 = u64::MAX - 1;

/// What the period detector found, for tests and the census.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeriodStats {
    /// Why the scenario's states are not keyed (`None`: they are).
    pub off: Option<&'static str>,
    /// States keyed: one after each response-FSM step.
    pub keys: u64,
    /// Keys seen before (the same 128-bit hash).
    pub repeats: u64,
    /// Of those, with no draw of the generator between the two sights.
    pub repeats_without_draws: u64,
    /// Of those, with no timer or profiler event between the two sights
    /// either: the period between them is one a replay could repeat.
    pub repeats_replayable: u64,
    /// The longest run of consecutive steps each repeating the state the
    /// same number of steps before (a steady period).
    pub longest_run: u64,
    /// Templates made (checked periods a replay starts from) and dropped
    /// (unmatched for 16 periods: detection again).
    pub templates: u64,
    pub templates_dropped: u64,
    /// That steady period: steps and simulated ps between the two sights.
    pub longest_run_period_steps: u64,
    pub longest_run_period_ps: u64,
    /// Step and time at which that run started.
    pub longest_run_from_step: u64,
    pub longest_run_from_ps: u64,
    /// Times the sight table was full and started again.
    pub table_resets: u64,
    /// With the replay on: FSM steps not keyed because the generator drew
    /// since the step before (a draw breaks every period through it, so
    /// detection starts again after it).
    pub steps_after_draws: u64,
    /// With the replay on: times detection paused, an attempt of
    /// `ATTEMPT_STEPS_MAX` FSM steps (or one whose check found outputs it
    /// cannot shift) having made no template, and the simulated time it
    /// paused for in all (each pause twice the one before, up to
    /// `PAUSE_MAX_PS`; the last may reach past the run's end).
    pub detection_pauses: u64,
    pub paused_ps: u64,
    /// Step 2's check, no replay yet: once a steady period has held for a
    /// whole period with no draw or timer/profiler event, the outputs of
    /// its last period predicted from the one before (times shifted by the
    /// period, PSNs, MSNs, WR slots and the sniffer's drop count advanced
    /// by the period's deltas) and compared with what was handed out.
    pub checks: u64,
    /// Periods whose outputs differed from the prediction.
    pub check_failures: u64,
    /// Periods not checked: an output the prediction cannot shift (a frame
    /// with payload bytes, a record of another kind) or a QPN of two QPs.
    pub checks_unsupported: u64,
    /// The first difference, for the test's message.
    pub first_failure: Option<String>,
    /// Replays (each from a state whose key is the template end's), the
    /// periods they covered and the outputs they handed out.
    pub replays: u64,
    pub replayed_periods: u64,
    pub replayed_outputs: u64,
    /// Periods recorded for the profiler's ticks (`ticks.rs`), recordings
    /// that failed (a tick or timer inside, or another length), and the
    /// ticks computed inside replays.
    pub recordings: u64,
    pub recordings_failed: u64,
    pub replayed_ticks: u64,
}

/// FSM steps an attempt of detection takes at most without making a
/// template, with the replay on (line-rate's template comes at its 129th
/// key, from 1 ms on); then detection pauses (`PeriodStats::detection_pauses`), so a
/// scenario whose periods never replay pays an attempt a pause, not a key
/// a step (a key costs about 40 k instructions).
const ATTEMPT_STEPS_MAX: u64 = 4096;
/// FSM steps with no draw before states are keyed, with the replay on: a
/// scenario whose generator draws every step or two (default's loss rule)
/// keys nearly nothing; a period of p steps needs 2p + 1 more to be checked.
const DRAW_FREE_STEPS_MIN: u64 = 16;
/// The first pause's simulated time; each next pause is twice the one
/// before, up to `PAUSE_MAX_PS`; a template made starts again from the
/// first.
const PAUSE_MIN_PS: Ps = 1_000_000_000;
const PAUSE_MAX_PS: Ps = 64_000_000_000;
/// FSM steps an attempt takes at most without a key (the generator drew
/// before nearly every one, as default's loss rule does): the simulator
/// looks after every event while an attempt lasts.
const STEPS_WITHOUT_KEY_MAX: u64 = 256;
/// Keys an attempt makes at most without one repeat (a steady period of
/// up to this many steps repeats within them; line-rate's is 64).
const KEYS_WITHOUT_REPEAT_MAX: u64 = 128;
/// Detection's budget, in key words (about 25 instructions each): an
/// attempt starts only while the words keyed so far are at most this plus
/// an eighth of the events run (an event costs about 600 instructions:
/// under 1% in all), so a short run pays one attempt at most.
const BUDGET_WORDS_START: u64 = 1 << 17;
/// No detection in the first millisecond of simulated time with the replay
/// on: most scenarios start unsteady (line-rate repeats from 329 us on),
/// and a run that short has nothing to gain.
pub(super) const WARMUP_PS: Ps = 1_000_000_000;

/// Recordings of a template's period tried before its ticks stay event by
/// event (a recording fails when a tick or timer falls inside it).
pub(super) const RECORDINGS_MAX: u32 = 8;

/// Longest period (steps) whose outputs are checked; the log holds two.
const CHECK_PERIOD_MAX: u64 = 4096;
/// Outputs the log holds at most (about 64 bytes each).
const LOG_OUTPUTS_MAX: usize = 1 << 17;

/// What the check keeps of each sight: counters to take deltas of, and
/// the outputs since the sight before, with the time of their event.
#[derive(Debug)]
pub(super) struct SightLog {
    pub(super) at_ps: Ps,
    pub(super) rng: [u64; 4],
    pub(super) off_period_events: u64,
    /// Per QP: oldest unacknowledged PSN, responder MSN, next WR id.
    pub(super) conns: Vec<(u64, u32, u64)>,
    pub(super) sniffer_dropped: u64,
    /// The counters a replay advances (`replay.rs`).
    pub(super) counters: Vec<u64>,
    pub(super) outputs: Vec<(Ps, Logged)>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Sight {
    step: u64,
    at_ps: Ps,
    rng: [u64; 4],
    /// Timer and profiler events processed before the sight.
    off_period_events: u64,
}

/// The detector's state.
#[derive(Debug, Default)]
pub(super) struct Detector {
    pub(super) stats: PeriodStats,
    /// Response-FSM events processed at the last look.
    fsm_steps: u64,
    pub(super) seen: HashMap<u128, Sight>,
    pub(super) key: Vec<u64>,
    /// The current run: its period in steps, ps, its length and start.
    run_period: (u64, u64),
    pub(super) run_len: u64,
    run_from: (u64, u64),
    /// Outputs since the last sight, and the sights' logs.
    pending: Vec<(Ps, Logged)>,
    pub(super) log: std::collections::VecDeque<SightLog>,
    pub(super) logged_outputs: usize,
    /// The QP of each QPN (`None`: a QPN names two QPs).
    pub(super) qpn_conn: Option<QpnMap>,
    /// Replay checked periods (`replay.rs`).
    pub(super) replay: bool,
    /// The checked period a replay starts from, once there is one: the
    /// detector then keys a state only when its cheap prefix matches.
    pub(super) template: Option<Template>,
    /// FSM steps since the template last matched.
    pub(super) template_idle_steps: u64,
    /// The period being recorded for the profiler's ticks (`ticks.rs`).
    pub(super) recording: Option<super::ticks::Recording>,
    /// Outputs are logged for the next sight (the last step was keyed, or
    /// the census keys every step).
    pub(super) logging: bool,
    /// With the replay on: the generator's state at the last FSM step, the
    /// FSM steps of this attempt, whether its check found outputs it cannot
    /// shift, the steps since the last draw, whether the next look ends a
    /// pause, the next pause's length.
    last_rng: [u64; 4],
    attempt_steps: u64,
    attempt_failed: bool,
    /// Keys and repeats of this attempt, and the key words of every
    /// attempt (the budget's).
    attempt_keys: u64,
    attempt_repeats: u64,
    words_keyed: u64,
    draw_free_steps: u64,
    pub(super) resuming: bool,
    next_pause_ps: Ps,
}

impl Detector {
    /// Detection from scratch: no sight, run or log kept.
    pub(super) fn restart(&mut self) {
        if !self.seen.is_empty() {
            self.seen.clear();
        }
        self.log.clear();
        self.logged_outputs = 0;
        self.pending.clear();
        self.run_len = 0;
    }
}

/// A checked period to replay from any state whose key is its end's.
#[derive(Debug)]
pub(super) struct Template {
    pub(super) steps: u64,
    /// The end's key, and its cheap prefix (`period_prefix`).
    pub(super) key: Vec<u64>,
    pub(super) prefix: Vec<u64>,
    /// The period's outputs at their times, and its end's time, QP
    /// counters and drop count (what a replay shifts from).
    pub(super) outputs: Vec<(Ps, Logged)>,
    pub(super) end_ps: Ps,
    pub(super) end_conns: Vec<(u64, u32, u64)>,
    pub(super) end_dropped: u64,
    /// One period's deltas.
    pub(super) one: Shift,
    pub(super) counters: Vec<u64>,
    /// What the probes read after each event of one period, once recorded
    /// (`ticks.rs`); recordings tried.
    pub(super) snaps: Option<Vec<super::ticks::ProbeSnap>>,
    pub(super) recordings_tried: u32,
}

/// A key as two 64-bit hashes of its words: an FNV-style fold of each
/// word mixed (`mix64`), and a multiply-rotate fold of the words as they
/// are. SipHash took 56 instructions a word (about 85 k a key of
/// line-rate's 1,500 words); sights are compared by this hash, and a
/// replay's start by the whole key, word for word.
fn hash128(words: &[u64]) -> u128 {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x9e37_79b9_7f4a_7c15;
    for &w in words {
        a = (a ^ crate::rng::mix64(w)).wrapping_mul(0x0000_0100_0000_01b3);
        b = (b ^ w).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
    }
    (u128::from(crate::rng::mix64(b ^ words.len() as u64)) << 64) | u128::from(a)
}

impl Simulator {
    /// Key each state after a response-FSM step and count its repeats
    /// ([`period_stats`](Self::period_stats)). Off by default: it changes
    /// no record or counter, and costs a key a step.
    pub fn detect_periods(&mut self, on: bool) {
        let qpn_conn = QpnMap::new(
            self.conns
                .iter()
                .enumerate()
                .flat_map(|(c, conn)| [(conn.req_qpn, c), (conn.resp_qpn, c)])
                .collect(),
        );
        self.period_look_ps = if on { 0 } else { NEVER };
        self.period = on.then(|| {
            let mut d = Box::<Detector>::default();
            d.stats.off = self.period_off();
            d.qpn_conn = qpn_conn;
            d.last_rng = self.rng.state();
            d
        });
    }

    /// What the period detector found (default values when it is off).
    pub fn period_stats(&self) -> PeriodStats {
        self.period
            .as_ref()
            .map(|d| d.stats.clone())
            .unwrap_or_default()
    }

    /// Why this scenario's states cannot be keyed, if they cannot.
    fn period_off(&self) -> Option<&'static str> {
        if self.conns.iter().any(|c| c.dcqcn.is_some()) {
            return Some("DCQCN reaction points (floating-point rate state)");
        }
        if self.points.is_some() {
            return Some("capture points (their own clocks)");
        }
        if self.record_states {
            return Some("told reasons (they read past times)");
        }
        if self.conns.iter().any(|c| c.dpi) {
            return Some("DPI (its verdict reads the payload of the absolute PSN)");
        }
        if self.has_host_stalls {
            return Some("host-stall rules");
        }
        if self
            .scenario
            .faults
            .iter()
            .any(|f| f.every_ns != 0 || f.start_ns != 0 || f.end_ns != 0)
        {
            return Some("fault rules with a time window");
        }
        None
    }

    /// After an event: if it was a response-FSM step, the state's key,
    /// and whether it was seen.
    #[cold]
    #[inline(never)]
    pub(super) fn period_sight(&mut self, limit: Ps) {
        let Some(mut d) = self.period.take() else {
            return;
        };
        let fsm_steps = self.stats.events_by_kind[4];
        let stepped = fsm_steps != d.fsm_steps;
        d.fsm_steps = fsm_steps;
        if let Some(r) = d.recording.as_mut()
            && !self.record_snap(r)
        {
            // Too long a period: its ticks stay event by event.
            d.recording = None;
            d.stats.recordings_failed += 1;
            if let Some(tp) = d.template.as_mut() {
                tp.recordings_tried = RECORDINGS_MAX;
            }
        }
        if d.resuming {
            // The first look after a pause: only the generator's state (no
            // step counted: this event may be of another kind).
            d.resuming = false;
            d.last_rng = self.rng.state();
            self.period = Some(d);
            return;
        }
        if d.logging {
            let now = self.now_ps;
            for o in &self.out {
                let logged = match o {
                    Out::Record(r) => Logged::Record(r.clone()),
                    Out::Header(h) => Logged::Header(*h),
                    Out::Frame {
                        cut, start, len, ..
                    } => {
                        // Shifted only if its fields give its bytes.
                        let bytes = self.out_bytes.get(*start as usize..(start + len) as usize);
                        match self.payload_cuts.get((*cut as usize).wrapping_sub(1)) {
                            Some(c) if bytes == Some(&c.bytes()[..]) => Logged::Cut(Box::new(*c)),
                            _ => Logged::Other,
                        }
                    }
                    Out::PointFrame { .. } => Logged::Other,
                };
                d.pending.push((now, logged));
            }
            self.payload_cuts.clear();
        }
        if !stepped || !self.started || self.finished || d.stats.off.is_some() {
            self.period = Some(d);
            return;
        }
        if d.template.is_some() {
            self.template_sight(&mut d, limit);
            d.logging = false;
            if d.template.is_none() {
                // Dropped: a new attempt.
                (d.attempt_steps, d.attempt_keys, d.attempt_repeats) = (0, 0, 0);
                d.recording = None;
            }
            self.period = Some(d);
            return;
        }
        d.logging = self.may_key(&mut d);
        if d.logging {
            let mut key = std::mem::take(&mut d.key);
            key.clear();
            self.period_key(&mut key);
            let h = hash128(&key);
            d.words_keyed += key.len() as u64;
            d.attempt_keys += 1;
            d.key = key;
            let step = d.stats.keys;
            d.stats.keys += 1;
            let now = self.now_ps;
            let sight = Sight {
                step,
                at_ps: now,
                rng: self.rng.state(),
                off_period_events: self.stats.events_by_kind[5] + self.stats.events_by_kind[6],
            };
            if d.seen.len() >= TABLE_MAX {
                d.seen.clear();
                d.stats.table_resets += 1;
            }
            match d.seen.insert(h, sight) {
                Some(before) => {
                    d.stats.repeats += 1;
                    d.attempt_repeats += 1;
                    if before.rng == sight.rng {
                        d.stats.repeats_without_draws += 1;
                        if before.off_period_events == sight.off_period_events {
                            d.stats.repeats_replayable += 1;
                        }
                    }
                    let period = (step - before.step, now - before.at_ps);
                    if period == d.run_period && d.run_len > 0 {
                        d.run_len += 1;
                    } else {
                        d.run_period = period;
                        d.run_len = 1;
                        d.run_from = (step, now);
                    }
                    if d.run_len > d.stats.longest_run {
                        let s = &mut d.stats;
                        s.longest_run = d.run_len;
                        (s.longest_run_period_steps, s.longest_run_period_ps) = d.run_period;
                        (s.longest_run_from_step, s.longest_run_from_ps) = d.run_from;
                    }
                }
                None => d.run_len = 0,
            }
            self.log_sight(&mut d, sight);
            let (p, len) = (d.run_period.0, d.run_len);
            if len > p && len % p == 1 && p <= CHECK_PERIOD_MAX {
                let unsupported = d.stats.checks_unsupported;
                if self.check_period(&mut d, p as usize) && d.replay {
                    self.make_template(&mut d, p as usize);
                    if d.template.is_some() {
                        d.logging = false;
                        d.next_pause_ps = PAUSE_MIN_PS;
                        self.template_sight(&mut d, limit);
                    }
                } else if d.replay && d.stats.checks_unsupported != unsupported {
                    // Its outputs cannot be shifted: no use keying on.
                    d.attempt_failed = true;
                }
            }
        }
        self.period = Some(d);
    }

    /// Whether to key the state after this FSM step: always for the
    /// census; with the replay on, not after a draw of the generator (it
    /// breaks every period through it: detection starts again), and not
    /// once an attempt made no template: detection then pauses, the
    /// simulator not looking until the pause is over.
    fn may_key(&mut self, d: &mut Detector) -> bool {
        if !d.replay {
            return true;
        }
        if d.attempt_steps == 0 && d.words_keyed > BUDGET_WORDS_START + self.stats.events / 8 {
            // Over the budget: no attempt yet.
            d.attempt_failed = true;
        }
        d.attempt_steps += 1;
        if d.attempt_steps > ATTEMPT_STEPS_MAX
            || d.attempt_failed
            || (d.attempt_keys >= KEYS_WITHOUT_REPEAT_MAX && d.attempt_repeats == 0)
            || (d.attempt_steps > STEPS_WITHOUT_KEY_MAX && d.attempt_keys == 0)
        {
            let pause = d.next_pause_ps.clamp(PAUSE_MIN_PS, PAUSE_MAX_PS);
            d.next_pause_ps = (pause * 2).min(PAUSE_MAX_PS);
            d.stats.detection_pauses += 1;
            d.stats.paused_ps += pause;
            d.restart();
            (d.attempt_steps, d.attempt_failed, d.resuming) = (0, false, true);
            (d.attempt_keys, d.attempt_repeats) = (0, 0);
            d.draw_free_steps = 0;
            self.period_look_ps = self.now_ps.saturating_add(pause);
            return false;
        }
        let rng = self.rng.state();
        let drew = rng != d.last_rng;
        d.last_rng = rng;
        if drew {
            d.stats.steps_after_draws += 1;
            d.draw_free_steps = 0;
            d.restart();
            return false;
        }
        d.draw_free_steps += 1;
        d.draw_free_steps > DRAW_FREE_STEPS_MIN
    }

    /// Keeps the sight's counters and the outputs since the last one.
    fn log_sight(&mut self, d: &mut Detector, sight: Sight) {
        let outputs = std::mem::take(&mut d.pending);
        d.logged_outputs += outputs.len();
        d.log.push_back(SightLog {
            at_ps: sight.at_ps,
            rng: sight.rng,
            off_period_events: sight.off_period_events,
            conns: self
                .conns
                .iter()
                .map(|c| (c.oldest_unacked_psn, c.msn, c.wr_seq))
                .collect(),
            sniffer_dropped: self.sniffer.as_ref().map_or(0, |s| s.dropped),
            counters: if d.replay {
                self.replay_counters()
            } else {
                Vec::new()
            },
            outputs,
        });
        while d.log.len() as u64 > 2 * CHECK_PERIOD_MAX + 1 || d.logged_outputs > LOG_OUTPUTS_MAX {
            let Some(old) = d.log.pop_front() else {
                break;
            };
            d.logged_outputs -= old.outputs.len();
        }
    }

    /// The state's key (module docs): every word the model's future reads,
    /// relative to now and to each QP's counters.
    pub(super) fn period_key(&self, k: &mut Vec<u64>) {
        let now = self.now_ps;
        // Exact, relative to now (wrapping: a past time keys exactly too).
        let rel = |t: Ps| -> u64 {
            if t == NEVER {
                KEY_NEVER
            } else {
                t.wrapping_sub(now)
            }
        };
        // Folded: read only as `<= now` / `> now` or raised to a time at
        // or after now.
        let fold = |t: Ps| -> u64 {
            if t == NEVER {
                KEY_NEVER
            } else if t < now {
                KEY_PAST
            } else {
                t - now
            }
        };
        // Pending events in queue order (ties keep their order), without
        // the timers' and the profiler's.
        for e in self.events.iter_in_order() {
            match e.ev {
                Event::Timer(_) | Event::ProfTick => continue,
                Event::Post(c) => k.extend([1, rel(e.t), u64::from(c)]),
                Event::TxWake(n) => k.extend([2, rel(e.t), u64::from(n)]),
                Event::SwitchArrive(id) => {
                    k.extend([3, rel(e.t)]);
                    self.packet_key(id, k);
                }
                Event::NodeArrive(id) => {
                    k.extend([4, rel(e.t)]);
                    self.packet_key(id, k);
                }
                Event::FsmReady(n) => k.extend([5, rel(e.t), u64::from(n)]),
                Event::PauseArrive { node, quanta } => {
                    k.extend([6, rel(e.t), u64::from(node), u64::from(quanta)]);
                }
                Event::CnpAt(c) => k.extend([7, rel(e.t), u64::from(c)]),
            }
        }
        k.push(u64::MAX);
        for n in &self.nodes {
            k.extend([
                fold(n.tx_free_ps),
                rel(n.tx_wake_at_ps),
                fold(n.paused_until_ps),
                fold(n.pfc_asked_until_ps),
                n.next_stream as u64,
                fold(n.fsm_free_ps),
                rel(n.fsm_event_at_ps),
                n.dma_tag_head as u64,
                n.dma_tags.len() as u64,
                fold(n.dma_last_ps),
                fold(n.dma_write_free_ps),
                fold(n.hbm_free_ps),
                u64::from(n.last_grant),
                n.ctrl_queue.len() as u64,
                n.fsm_queue.len() as u64,
            ]);
            for &(t, id) in &n.ctrl_queue {
                k.push(fold(t));
                self.packet_key(id, k);
            }
            for &(t, id) in &n.fsm_queue {
                k.push(fold(t));
                self.packet_key(id, k);
            }
            for &(issue, done) in &n.dma_tags {
                k.extend([fold(issue), fold(done)]);
            }
            // Fetches done by now are dropped before any is counted.
            k.extend(n.hbm_fetches.iter().filter(|&&t| t > now).map(|&t| t - now));
            k.push(u64::MAX);
        }
        for (c, conn) in self.conns.iter().enumerate() {
            let base = conn.oldest_unacked_psn;
            let q = &self.scenario.qps[c];
            k.extend([
                conn.state as u64,
                conn.next_psn.wrapping_sub(base),
                conn.expected_psn.wrapping_sub(base),
                conn.send_idx as u64,
                conn.admit_idx as u64,
                u64::from(conn.retry_count),
                rel(conn.timer_deadline_ps),
                u64::from(conn.timer_event_at_ps != NEVER),
                u64::from(conn.timer_backoff),
                u64::from(conn.read_gap),
                conn.indication.map_or(KEY_NEVER, rel),
                u64::from(conn.retx_state),
                u64::from(conn.nak_sent),
                conn.unacked_packets,
                // A CNP is due again once the interval since the last is over.
                conn.last_cnp.map_or(KEY_NEVER, |t| {
                    fold(t.saturating_add(ps_of_ns(self.params.cx_cnp_interval_ns)))
                }),
                u64::from(conn.mid_message),
                conn.recover_psn.map_or(KEY_NEVER, |p| p.wrapping_sub(base)),
                fold(conn.rnr_until_ps),
                u64::from(conn.recv_credits),
                if q.recv_queue_depth != 0 {
                    rel(conn.recv_posted_ps)
                } else {
                    0
                },
                u64::from(conn.rnr_pending),
                // What the next work request will be: the messages left,
                // and the parity a mixed QP alternates on.
                if conn.messages != 0 {
                    conn.messages.saturating_sub(conn.wr_seq)
                } else {
                    KEY_NEVER
                },
                if conn.op == OpKind::Mixed {
                    conn.wr_seq % 2
                } else {
                    0
                },
                conn.work_requests.len() as u64,
                conn.inflight.len() as u64,
                conn.response_queue.len() as u64,
            ]);
            for w in &conn.work_requests {
                k.extend([
                    w.id.wrapping_sub(conn.wr_seq),
                    u64::from(w.read),
                    w.size_bytes,
                    w.admitted_bytes,
                    rel(w.app_ps),
                    u64::from(w.bad),
                    u64::from(w.error),
                ]);
            }
            for e in &conn.inflight {
                k.extend([
                    e.abs_psn.wrapping_sub(base),
                    u64::from(e.psn_count),
                    e.wr_id.wrapping_sub(conn.wr_seq),
                    u64::from(e.read),
                    u64::from(e.opcode),
                    u64::from(e.len_bytes),
                    u64::from(e.dma_len),
                    u64::from(e.last),
                    fold(e.ready_ps),
                    u64::from(e.sent),
                    u64::from(e.retx),
                    u64::from(e.bad),
                ]);
            }
            for r in &conn.response_queue {
                k.extend([
                    r.abs_psn.wrapping_sub(base),
                    u64::from(r.opcode),
                    u64::from(r.len_bytes),
                    fold(r.ready_ps),
                    u64::from(r.msn.wrapping_sub(conn.msn)),
                ]);
            }
            k.push(u64::MAX);
        }
        for p in &self.ports {
            // Queue entries ended by now are dropped before any is read.
            let live = p.queue.iter().filter(|&&(end, _)| end > now);
            let ended: u64 = p
                .queue
                .iter()
                .filter(|&&(end, _)| end <= now)
                .map(|&(_, b)| b)
                .sum();
            k.extend([fold(p.free_ps), p.occupancy_bytes - ended]);
            for &(end, bytes) in live {
                k.extend([end - now, bytes]);
            }
            k.push(u64::MAX);
        }
        if let Some(sn) = &self.sniffer {
            k.extend([
                sn.backlog.to_bits(),
                rel(sn.last_ps),
                u64::from(sn.last_tx_flags.aeth) | u64::from(sn.last_tx_flags.reth) << 1,
            ]);
            k.extend(sn.decisions.iter().map(|d| match d {
                None => 0,
                Some(Capture::Ignore) => 1,
                Some(Capture::Whole) => 2,
                Some(Capture::Cut(n)) => 3 | (*n as u64) << 2,
            }));
        }
        // A rule that hits its nth frame never hits again past it.
        for (i, f) in self.scenario.faults.iter().enumerate() {
            if f.nth != 0 {
                k.push(self.fault_hits[i].min(f.nth));
            }
        }
    }

    /// A pending packet's key: its fields, PSN and MSN relative to its QP.
    fn packet_key(&self, id: u32, k: &mut Vec<u64>) {
        let Some(p) = self.packets.get(id as usize) else {
            k.push(KEY_NEVER);
            return;
        };
        let Some(conn) = self.conns.get(p.conn as usize) else {
            k.push(KEY_NEVER);
            return;
        };
        k.extend([
            u64::from(p.conn),
            u64::from(p.src_node) | u64::from(p.dst_node) << 16 | u64::from(p.opcode) << 32,
            p.abs_psn.wrapping_sub(conn.oldest_unacked_psn),
            u64::from(p.dest_qp),
            u64::from(p.payload_len_bytes),
            u64::from(p.reth.dma_len),
            u64::from(p.aeth.syndrome),
            // A request carries no AETH: its MSN is 0, no counter's.
            if is_request(p.opcode) {
                u64::from(p.aeth.msn)
            } else {
                u64::from(p.aeth.msn.wrapping_sub(conn.msn) & 0xFF_FFFF)
            },
            u64::from(p.ecn)
                | u64::from(p.becn) << 8
                | u64::from(p.corrupt) << 9
                | u64::from(p.retx) << 16
                | u64::from(p.bad) << 24,
            u64::from(p.frame_len_bytes),
        ]);
    }
}
