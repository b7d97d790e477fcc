//! The profiler's ticks inside a replay (issue 51, step 3): a replay no
//! longer stops before each tick (every 100 us, about 4.4 of line-rate's
//! periods); the tick's samples are computed from what the probes read
//! after each event of one period, recorded once per template
//! (`ProbeSnap`), at the tick's time and in the stream where the tick
//! falls, exactly as the event-by-event run gives them. A tick at the time
//! of an event of the period (whose order with the tick the record does
//! not keep) ends the replay before that period, as before.

use super::*;

/// Events a recorded period holds at most: a longer one keeps its ticks
/// event by event.
const SNAPS_MAX: usize = 1 << 15;

/// What one probe reads, as of one event of the recorded period, to give
/// its value at a later tick. Times are from the period's start (earlier
/// ones as 0: they compare alike with any tick inside the period).
#[derive(Debug)]
enum SnapValue {
    Const(i64),
    /// 1 while this time is later than the tick (`TxBusy`).
    After(Ps),
    /// The node's busy time since the period's start (`LinkUtil`).
    Busy(u64),
    /// Fetches done at these times: those done by the tick are dropped
    /// from the front, the rest counted (`HbmInflight`).
    Fetches(Vec<Ps>),
    /// Tags (issue, done): those in use at the tick counted (`PcieTags`).
    Tags(Vec<(Ps, Ps)>),
    /// A port's occupancy and its queue (end, bytes): the entries ended by
    /// the tick dropped from the front (`SwitchQueue`).
    Port(u64, Vec<(Ps, u64)>),
}

/// The probes' inputs after one event of the recorded period.
#[derive(Debug)]
pub(super) struct ProbeSnap {
    /// The event's time from the period's start.
    t_rel: Ps,
    /// Pending events but the timers' and the profiler's.
    nonfixed: usize,
    values: Vec<SnapValue>,
}

/// A period being recorded: from a state whose key is the template end's
/// to the next such state.
#[derive(Debug)]
pub(super) struct Recording {
    start_ps: Ps,
    start_steps: u64,
    off_period_events: u64,
    busy0: Vec<u64>,
    fixed: usize,
    pub(super) snaps: Vec<ProbeSnap>,
}

/// A tick inside a replay: its time, its period (0: the first replayed)
/// and its time from that period's start.
#[derive(Debug, Clone, Copy)]
pub(super) struct VirtualTick {
    pub(super) t_ps: Ps,
    pub(super) period: u64,
    pub(super) tau_ps: Ps,
}

impl Simulator {
    /// Timer and profiler events pending.
    pub(super) fn fixed_events(&self) -> usize {
        self.events
            .iter_in_order()
            .filter(|e| matches!(e.ev, Event::Timer(_) | Event::ProfTick))
            .count()
    }

    /// Starts recording the period from now (a state whose key is the
    /// template end's).
    pub(super) fn start_recording(&self) -> Recording {
        let off = self.stats.events_by_kind[5] + self.stats.events_by_kind[6];
        let mut r = Recording {
            start_ps: self.now_ps,
            start_steps: self.stats.events_by_kind[4],
            off_period_events: off,
            busy0: self.nodes.iter().map(|n| n.busy_ps).collect(),
            fixed: self.fixed_events(),
            snaps: Vec::new(),
        };
        // The state at the start itself: a tick before the period's first
        // event reads it.
        let s = self.probe_snap(&r);
        r.snaps.push(s);
        r
    }

    /// After an event of a recorded period. False: it grew past its cap.
    pub(super) fn record_snap(&self, r: &mut Recording) -> bool {
        if r.snaps.len() >= SNAPS_MAX {
            return false;
        }
        let s = self.probe_snap(r);
        r.snaps.push(s);
        true
    }

    /// The recording, if it covered exactly one period of `steps` FSM steps
    /// and `period_ps` with no timer or profiler event.
    pub(super) fn finish_recording(
        &self,
        r: Recording,
        steps: u64,
        period_ps: Ps,
    ) -> Option<Vec<ProbeSnap>> {
        let off = self.stats.events_by_kind[5] + self.stats.events_by_kind[6];
        (self.stats.events_by_kind[4] - r.start_steps == steps
            && self.now_ps - r.start_ps == period_ps
            && off == r.off_period_events
            && r.fixed == self.fixed_events())
        .then_some(r.snaps)
    }

    fn probe_snap(&self, r: &Recording) -> ProbeSnap {
        let start = r.start_ps;
        let rel = |t: Ps| t.saturating_sub(start);
        let values = self
            .probes
            .iter()
            .map(|p| match p.kind {
                ProbeKind::TxCtrlQueue(n) => {
                    SnapValue::Const(self.nodes[n as usize].ctrl_queue.len() as i64)
                }
                ProbeKind::Grant(n) => {
                    SnapValue::Const(i64::from(self.nodes[n as usize].last_grant))
                }
                ProbeKind::TxBusy(n) => SnapValue::After(rel(self.nodes[n as usize].tx_free_ps)),
                ProbeKind::LinkUtil(n) => SnapValue::Busy(
                    self.nodes[n as usize]
                        .busy_ps
                        .wrapping_sub(r.busy0[n as usize]),
                ),
                ProbeKind::FsmBacklog(n) => {
                    SnapValue::Const(self.nodes[n as usize].fsm_queue.len() as i64)
                }
                ProbeKind::HbmInflight(n) => SnapValue::Fetches(
                    self.nodes[n as usize]
                        .hbm_fetches
                        .iter()
                        .map(|&t| rel(t))
                        .collect(),
                ),
                ProbeKind::PcieTags(n) => SnapValue::Tags(
                    self.nodes[n as usize]
                        .dma_tags
                        .iter()
                        .map(|&(i, d)| (rel(i), rel(d)))
                        .collect(),
                ),
                ProbeKind::SwitchQueue(n) => {
                    let port = &self.ports[n as usize];
                    SnapValue::Port(
                        port.occupancy_bytes,
                        port.queue.iter().map(|&(e, b)| (rel(e), b)).collect(),
                    )
                }
                ProbeKind::WindowFill(c) => {
                    let conn = &self.conns[c as usize];
                    SnapValue::Const(conn.next_psn.wrapping_sub(conn.oldest_unacked_psn) as i64)
                }
                ProbeKind::RetxState(c) => {
                    SnapValue::Const(i64::from(self.conns[c as usize].retx_state))
                }
            })
            .collect();
        ProbeSnap {
            t_rel: self.now_ps - start,
            nonfixed: self.events.len() - r.fixed,
            values,
        }
    }

    /// The profiler's ticks due in the `k` periods of `period_ps` from now,
    /// the first at `first_ps`: those before any tick at the time of an
    /// event of the period, with the periods before that one (the new
    /// `k`).
    pub(super) fn virtual_ticks(
        &self,
        snaps: &[ProbeSnap],
        first_ps: Ps,
        period_ps: Ps,
        mut k: u64,
        ticks: &mut Vec<VirtualTick>,
    ) -> u64 {
        let now = self.now_ps;
        let mut t = first_ps;
        while t <= now + k * period_ps {
            if t <= now {
                return 0;
            }
            let period = (t - now - 1) / period_ps;
            let tau_ps = t - now - period * period_ps;
            if snaps.iter().any(|s| s.t_rel == tau_ps) {
                k = period;
                break;
            }
            ticks.push(VirtualTick {
                t_ps: t,
                period,
                tau_ps,
            });
            let next = t + self.profiler_period_ps;
            if next > self.end_ps {
                break;
            }
            t = next;
        }
        ticks.retain(|v| v.period < k);
        k
    }

    /// A tick's samples, as `on_prof_tick` would give them: the probes'
    /// last values and each node's busy time at its last sample advanced
    /// in `last` and `busy_sampled` (the caller keeps them once the whole
    /// replay is made), the queue's peak in `peak`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tick_samples(
        &self,
        snaps: &[ProbeSnap],
        v: VirtualTick,
        busy_at_start: &[u64],
        last: &mut [Option<i64>],
        busy_sampled: &mut [u64],
        peak: &mut u64,
        fixed: usize,
        out: &mut Vec<Out>,
    ) {
        // The state the tick reads: after the period's last event before it.
        let i = snaps.partition_point(|s| s.t_rel < v.tau_ps);
        let Some(s) = i.checked_sub(1).and_then(|i| snaps.get(i)) else {
            return;
        };
        let tau = v.tau_ps;
        let on_change = self.scenario.profiler.on_change;
        let cycle = v.t_ps / self.cycle_ps.max(1);
        for (p, (probe, value)) in self.probes.iter().zip(&s.values).enumerate() {
            let x = match (value, probe.kind) {
                (SnapValue::Const(x), _) => *x,
                (SnapValue::After(t), _) => i64::from(*t > tau),
                (SnapValue::Busy(b), ProbeKind::LinkUtil(n)) => {
                    let n = n as usize;
                    let busy = busy_at_start[n].wrapping_add(*b);
                    let d = busy.wrapping_sub(busy_sampled[n]);
                    busy_sampled[n] = busy;
                    (d * 100 / self.profiler_period_ps.max(1)).min(100) as i64
                }
                (SnapValue::Busy(_), _) => 0,
                (SnapValue::Fetches(f), _) => {
                    let done = f.iter().take_while(|&&t| t <= tau).count();
                    (f.len() - done) as i64
                }
                (SnapValue::Tags(tags), _) => {
                    tags.iter().filter(|&&(i, d)| i <= tau && d > tau).count() as i64
                }
                (SnapValue::Port(occ, q), _) => {
                    let ended: u64 = q
                        .iter()
                        .take_while(|&&(end, _)| end <= tau)
                        .map(|&(_, b)| b)
                        .sum();
                    (occ - ended) as i64
                }
            };
            if on_change && last[p] == Some(x) {
                continue;
            }
            last[p] = Some(x);
            out.push(Out::Record(Record::Profiler(ProfilerSample {
                cycle,
                ts_ns: v.t_ps / NS,
                probe: p as u16,
                value: x,
            })));
        }
        if v.t_ps + self.profiler_period_ps <= self.end_ps {
            *peak = (*peak).max((s.nonfixed + fixed) as u64);
        }
    }
}
