//! The replay of a checked period (issue 51; off unless asked for,
//! [`Simulator::replay_periods`], as `rocescope sim`, the workbench's sim
//! feed and the agent do): once a steady period's outputs were
//! predicted exactly from the one before (`period.rs`), it becomes the
//! template; from then on the detector compares a cheap prefix of each
//! state's key with the template end's and, on a match, the whole key
//! word for word; from a matching state it hands out the template's
//! outputs for whole periods, shifted in time and in each QP's PSN, MSN
//! and WR counters, moves the state by as many periods and advances the
//! counters by the period's deltas, up to just before anything off the
//! period is due (a timer, the end, the caller's limit; the profiler's
//! ticks are computed inside it once a period is recorded, `ticks.rs`).
//! The next state is then computed event by event again. A template
//! unmatched for 16 periods is dropped and detection starts again.

use super::period::{Detector, RECORDINGS_MAX, Template, WARMUP_PS};
use super::ticks::VirtualTick;
use super::transform::{Logged, Shift};
use super::*;

/// Outputs one replay hands out at most.
const REPLAY_OUTPUTS_MAX: usize = 1 << 14;

impl Simulator {
    /// Replay whole periods once a period's outputs were checked
    /// ([`detect_periods`](Self::detect_periods) on). Off by default.
    pub fn replay_periods(&mut self, on: bool) {
        if let Some(d) = self.period.as_mut() {
            d.replay = on;
            if on && !self.started {
                // Detection from the first millisecond on (`WARMUP_PS`).
                self.period_look_ps = self.period_look_ps.max(WARMUP_PS);
                d.resuming = true;
            }
        }
    }

    /// Every counter a replay advances by a period's deltas, in one fixed
    /// order: `replay_counters` reads them, `add_replay_counters` adds.
    fn each_replay_counter(&mut self, mut f: impl FnMut(&mut u64)) {
        let s = &mut self.stats;
        for x in [
            &mut s.packets_sent,
            &mut s.frames_captured,
            &mut s.capture_drops,
            &mut s.wire_drops,
            &mut s.wire_corrupt,
            &mut s.naks,
            &mut s.cnps,
            &mut s.ecn_marked,
            &mut s.dpi_drops,
            &mut s.psn_drops,
            &mut s.events,
        ] {
            f(x);
        }
        s.events_by_kind.iter_mut().for_each(&mut f);
        for q in &mut s.qps {
            for x in [
                &mut q.messages,
                &mut q.bytes,
                &mut q.acked_bytes,
                &mut q.errors,
                &mut q.latency_sum_ns,
                &mut q.retransmissions,
                &mut q.timeouts,
                &mut q.dcqcn_cnps,
            ] {
                f(x);
            }
        }
        self.nodes.iter_mut().for_each(|n| f(&mut n.busy_ps));
        self.fault_hits.iter_mut().for_each(f);
    }

    /// The counters a replay advances, in `each_replay_counter`'s order.
    pub(super) fn replay_counters(&mut self) -> Vec<u64> {
        let mut v = Vec::new();
        self.each_replay_counter(|x| v.push(*x));
        v
    }

    fn add_replay_counters(&mut self, delta: &[u64]) {
        let mut it = delta.iter().copied();
        self.each_replay_counter(|x| *x = x.wrapping_add(it.next().unwrap_or(0)));
    }

    /// After a checked period of `p` steps ending now: it becomes the
    /// template, unless its counters moved in ways a replay cannot repeat.
    pub(super) fn make_template(&mut self, d: &mut Detector, p: usize) {
        let n = d.log.len();
        if n < p + 1 || self.record_completions {
            return;
        }
        let (b, c) = (&d.log[n - 1 - p], &d.log[n - 1]);
        if c.at_ps <= b.at_ps || b.counters.len() != c.counters.len() {
            return;
        }
        // Retransmissions push to bounded logs a replay does not keep.
        let retx_moved = (0..self.stats.qps.len()).any(|q| {
            let i = 11 + 7 + q * 8 + 5;
            b.counters.get(i) != c.counters.get(i)
        });
        if retx_moved || d.qpn_conn.is_none() {
            return;
        }
        let mut key = Vec::new();
        self.period_key(&mut key);
        let mut prefix = Vec::new();
        self.period_prefix(&mut prefix);
        let template = Template {
            steps: p as u64,
            key,
            prefix,
            outputs: d
                .log
                .range(n - p..n)
                .flat_map(|s| s.outputs.iter().cloned())
                .collect(),
            end_ps: c.at_ps,
            end_conns: c.conns.clone(),
            end_dropped: c.sniffer_dropped,
            one: Shift::between(b, c),
            counters: b
                .counters
                .iter()
                .zip(&c.counters)
                .map(|(x, y)| y.wrapping_sub(*x))
                .collect(),
            snaps: None,
            recordings_tried: 0,
        };
        d.template = Some(template);
        d.template_idle_steps = 0;
        d.stats.templates += 1;
        // Detection's log is not needed while the template holds.
        d.log.clear();
        d.logged_outputs = 0;
        d.seen.clear();
        d.run_len = 0;
    }

    /// A few words of the key, cheap to take: the template's whole key is
    /// compared only when these match.
    pub(super) fn period_prefix(&self, k: &mut Vec<u64>) {
        let now = self.now_ps;
        for e in self.events.iter_in_order() {
            if !matches!(e.ev, Event::Timer(_) | Event::ProfTick) {
                k.push(e.t - now);
            }
        }
        for n in &self.nodes {
            k.extend([
                n.ctrl_queue.len() as u64,
                n.fsm_queue.len() as u64,
                n.next_stream as u64,
            ]);
        }
        for c in &self.conns {
            k.extend([
                c.inflight.len() as u64,
                c.send_idx as u64,
                c.response_queue.len() as u64,
                c.next_psn.wrapping_sub(c.oldest_unacked_psn),
            ]);
        }
    }

    /// With a template: a replay when the state now is its end's (the
    /// whole key compared word for word), else one step more; the
    /// template dropped after 16 periods unmatched.
    pub(super) fn template_sight(&mut self, d: &mut Detector, limit: Ps) {
        let Some(tp) = d.template.as_ref() else {
            return;
        };
        d.template_idle_steps += 1;
        let mut prefix = std::mem::take(&mut d.key);
        prefix.clear();
        self.period_prefix(&mut prefix);
        let matched = prefix == tp.prefix && {
            prefix.clear();
            self.period_key(&mut prefix);
            prefix == tp.key
        };
        d.key = prefix;
        if matched {
            d.template_idle_steps = 0;
            if let Some(r) = d.recording.take() {
                let (steps, period_ps) = (tp.steps, tp.one.ps);
                match self.finish_recording(r, steps, period_ps) {
                    Some(snaps) => {
                        d.stats.recordings += 1;
                        if let Some(tp) = d.template.as_mut() {
                            tp.snaps = Some(snaps);
                        }
                    }
                    None => d.stats.recordings_failed += 1,
                }
            }
            let Some(tp) = d.template.as_mut() else {
                return;
            };
            if !self.probes.is_empty() && tp.snaps.is_none() && tp.recordings_tried < RECORDINGS_MAX
            {
                // This period runs event by event, recorded for the ticks.
                tp.recordings_tried += 1;
                d.recording = Some(self.start_recording());
                return;
            }
            self.replay_template(d, limit);
        } else if d.template_idle_steps > 16 * tp.steps {
            d.template = None;
            d.stats.templates_dropped += 1;
        }
    }

    /// From a state whose key is the template's end: whole periods handed
    /// out shifted and the state moved by as many, up to just before
    /// anything off the period is due (a timer or profiler event, the end,
    /// `limit`).
    fn replay_template(&mut self, d: &mut Detector, limit: Ps) {
        let (Some(tp), Some(qpn_conn)) = (d.template.as_ref(), d.qpn_conn.as_ref()) else {
            return;
        };
        // With the period recorded, the profiler's ticks are computed
        // inside the replay (`ticks.rs`); else they end it, as timers do.
        let snaps = tp.snaps.as_deref();
        let mut horizon = limit.min(self.end_ps);
        let mut tick_at = None;
        for e in self.events.iter_in_order() {
            match e.ev {
                Event::ProfTick if snaps.is_some() && tick_at.is_none() => tick_at = Some(e.t),
                Event::Timer(_) | Event::ProfTick => horizon = horizon.min(e.t),
                _ => {}
            }
        }
        let now = self.now_ps;
        let period_ps = tp.one.ps;
        if horizon <= now || period_ps == 0 {
            return;
        }
        let by_room = REPLAY_OUTPUTS_MAX / tp.outputs.len().max(1);
        let mut k = ((horizon - 1 - now) / period_ps).min(by_room as u64);
        let mut ticks = Vec::new();
        if let (Some(snaps), Some(first_ps)) = (snaps, tick_at) {
            k = self.virtual_ticks(snaps, first_ps, period_ps, k, &mut ticks);
        }
        // No moved event may end at the time of one that stays (a timer,
        // the profiler's next tick): their order would be a guess.
        let q_ps = self.profiler_period_ps;
        loop {
            if k == 0 {
                return;
            }
            ticks.retain(|v: &VirtualTick| v.period < k);
            let next_tick = match ticks.last() {
                Some(v) => (v.t_ps + q_ps <= self.end_ps).then_some(v.t_ps + q_ps),
                None => tick_at,
            };
            let dt = k * period_ps;
            let fixed_at = |t: Ps| {
                next_tick == Some(t)
                    || self.events.iter_in_order().any(|f| {
                        f.t == t
                            && match f.ev {
                                Event::Timer(_) => true,
                                Event::ProfTick => tick_at.is_none(),
                                _ => false,
                            }
                    })
            };
            // Nor may the next tick fall at a timer's time (their order is
            // their pushes').
            let tick_at_timer = !ticks.is_empty()
                && self
                    .events
                    .iter_in_order()
                    .any(|f| matches!(f.ev, Event::Timer(_)) && Some(f.t) == next_tick);
            let tied = tick_at_timer
                || self.events.iter_in_order().any(|e| {
                    !matches!(e.ev, Event::Timer(_) | Event::ProfTick) && fixed_at(e.t + dt)
                });
            if !tied {
                break;
            }
            k -= 1;
        }
        // From the template's end to now, then j periods.
        let base: Vec<(u64, u32, u64)> = self
            .conns
            .iter()
            .zip(&tp.end_conns)
            .map(|(c, e)| {
                (
                    c.oldest_unacked_psn.wrapping_sub(e.0),
                    c.msn.wrapping_sub(e.1),
                    c.wr_seq.wrapping_sub(e.2),
                )
            })
            .collect();
        let dropped_now = self.sniffer.as_ref().map_or(0, |s| s.dropped);
        let shift_by = |j: u64| Shift {
            ps: now - tp.end_ps + period_ps * j,
            conns: base
                .iter()
                .zip(&tp.one.conns)
                .map(|(b, o)| {
                    (
                        b.0.wrapping_add(o.0.wrapping_mul(j)),
                        b.1.wrapping_add(o.1.wrapping_mul(j as u32)),
                        b.2.wrapping_add(o.2.wrapping_mul(j)),
                    )
                })
                .collect(),
            dropped: dropped_now
                .wrapping_sub(tp.end_dropped)
                .wrapping_add(tp.one.dropped.wrapping_mul(j)),
        };
        // Made in place after the outputs already queued (not in a vector of
        // its own copied over: a seventh of line-rate's simulator), cut
        // back to them if the replay gives up.
        let mut out = std::mem::take(&mut self.out);
        let queued = out.len();
        out.reserve(tp.outputs.len() * k as usize);
        // The ticks' effects, kept once the whole replay is made.
        let mut last: Vec<Option<i64>> = self.probes.iter().map(|p| p.last).collect();
        let mut busy_sampled: Vec<u64> = self.nodes.iter().map(|n| n.busy_ps_sampled).collect();
        let mut peak = self.stats.queue_peak;
        let fixed = self.fixed_events();
        let busy_index = 11 + self.stats.events_by_kind.len() + 8 * self.stats.qps.len();
        let tp_start_ps = tp.end_ps - period_ps;
        let mut ti = 0;
        // The bytes of frames cut past their headers, after this event's.
        let bytes_base = self.out_bytes.len() as u32;
        let mut cut_bytes = Vec::new();
        for j in 1..=k {
            let s = shift_by(j);
            let busy_at_start: Vec<u64> = self
                .nodes
                .iter()
                .enumerate()
                .map(|(n, node)| {
                    let one = tp.counters.get(busy_index + n).copied().unwrap_or(0);
                    node.busy_ps.wrapping_add(one.wrapping_mul(j - 1))
                })
                .collect();
            let mut tick_until = |rel: Ps, out: &mut Vec<Out>, ti: &mut usize| {
                while let Some(&v) = ticks.get(*ti)
                    && v.period == j - 1
                    && v.tau_ps < rel
                    && let Some(snaps) = snaps
                {
                    self.tick_samples(
                        snaps,
                        v,
                        &busy_at_start,
                        &mut last,
                        &mut busy_sampled,
                        &mut peak,
                        fixed,
                        out,
                    );
                    *ti += 1;
                }
            };
            for o in &tp.outputs {
                tick_until(o.0 - tp_start_ps, &mut out, &mut ti);
                match &o.1 {
                    Logged::Header(h) => match self.shifted_header(h, o.0, &s, qpn_conn) {
                        Some(h) => out.push(Out::Header(h)),
                        None => return self.give_up_replay(out, queued),
                    },
                    Logged::Cut(c) => {
                        // Its bytes written again, after this event's.
                        let Some(c) = self.shifted_cut(c, o.0, &s, qpn_conn) else {
                            return self.give_up_replay(out, queued);
                        };
                        let start = bytes_base + cut_bytes.len() as u32;
                        c.write(&mut cut_bytes);
                        out.push(Out::Frame {
                            ts_ns: c.ts_ns,
                            direction: c.direction,
                            orig_len: c.orig_len,
                            start,
                            len: c.len,
                            cut: 0,
                        });
                    }
                    _ => match self.shifted_logged(o, &s, qpn_conn) {
                        Some(Logged::Record(r)) => out.push(Out::Record(r)),
                        _ => return self.give_up_replay(out, queued),
                    },
                }
            }
            tick_until(Ps::MAX, &mut out, &mut ti);
        }
        if ti != ticks.len() {
            // Every tick falls in a replayed period: not one left behind.
            return self.give_up_replay(out, queued);
        }
        let all = Shift {
            ps: period_ps * k,
            conns: tp
                .one
                .conns
                .iter()
                .map(|&(a, m, w)| {
                    (
                        a.wrapping_mul(k),
                        m.wrapping_mul(k as u32),
                        w.wrapping_mul(k),
                    )
                })
                .collect(),
            dropped: tp.one.dropped.wrapping_mul(k),
        };
        let delta_k: Vec<u64> = tp.counters.iter().map(|x| x.wrapping_mul(k)).collect();
        d.stats.replays += 1;
        d.stats.replayed_periods += k;
        d.stats.replayed_outputs += (out.len() - queued) as u64;
        d.stats.replayed_ticks += ticks.len() as u64;
        if let Some(v) = ticks.last() {
            for (p, l) in self.probes.iter_mut().zip(last) {
                p.last = l;
            }
            for (n, b) in self.nodes.iter_mut().zip(busy_sampled) {
                n.busy_ps_sampled = b;
            }
            self.stats.queue_peak = peak;
            let n = ticks.len() as u64;
            self.stats.events += n;
            self.stats.events_by_kind[6] += n;
            // The profiler's next tick, as the last one scheduled it.
            let next = v.t_ps + q_ps;
            let v = self.events.entries_mut();
            if next <= self.end_ps {
                for e in v.iter_mut().filter(|e| e.ev == Event::ProfTick) {
                    e.t = next;
                }
            } else {
                v.retain(|e| e.ev != Event::ProfTick);
            }
        }
        self.out = out;
        self.out_bytes.extend_from_slice(&cut_bytes);
        self.shift_state(&all);
        self.add_replay_counters(&delta_k);
        if let Some(sn) = self.sniffer.as_mut() {
            sn.dropped = sn.dropped.wrapping_add(all.dropped);
        }
    }

    /// A replay that gave up: the outputs queued before it (`queued` of
    /// `out`) back in place, nothing of its own kept.
    #[cold]
    fn give_up_replay(&mut self, mut out: Vec<Out>, queued: usize) {
        out.truncate(queued);
        self.out = out;
    }

    /// Moves the whole state `s.ps` later and each QP's counters by its
    /// deltas, as that many periods run event by event would.
    fn shift_state(&mut self, s: &Shift) {
        let dt = s.ps;
        let t = |x: &mut Ps| {
            if *x != NEVER {
                *x += dt;
            }
        };
        self.now_ps += dt;
        // Events: all but the timers' and the profiler's (absolute) move;
        // those stay put and, at a tie, were pushed before the moved ones.
        let mut ids = Vec::new();
        {
            let v = self.events.entries_mut();
            for e in v.iter_mut() {
                match e.ev {
                    Event::Timer(_) | Event::ProfTick => {}
                    Event::SwitchArrive(id) | Event::NodeArrive(id) => {
                        e.t += dt;
                        ids.push(id);
                    }
                    _ => e.t += dt,
                }
            }
            let fixed = |e: &Pending<Event>| matches!(e.ev, Event::Timer(_) | Event::ProfTick);
            // Descending time; at a tie the earlier pushed (fixed) last.
            v.sort_by(|a, b| b.t.cmp(&a.t).then(fixed(a).cmp(&fixed(b))));
        }
        for n in &mut self.nodes {
            for x in [
                &mut n.tx_free_ps,
                &mut n.tx_wake_at_ps,
                &mut n.paused_until_ps,
                &mut n.pfc_asked_until_ps,
                &mut n.fsm_free_ps,
                &mut n.fsm_event_at_ps,
                &mut n.dma_last_ps,
                &mut n.dma_write_free_ps,
                &mut n.hbm_free_ps,
            ] {
                t(x);
            }
            for q in n.ctrl_queue.iter_mut().chain(n.fsm_queue.iter_mut()) {
                t(&mut q.0);
                ids.push(q.1);
            }
            for tag in &mut n.dma_tags {
                t(&mut tag.0);
                t(&mut tag.1);
            }
            for f in &mut n.hbm_fetches {
                t(f);
            }
        }
        for id in ids {
            let Some(p) = self.packets.get_mut(id as usize) else {
                continue;
            };
            let c = p.conn as usize;
            let Some(&(dpsn, dmsn, dwr)) = s.conns.get(c) else {
                continue;
            };
            if p.opcode != Opcode::CNP.0 {
                p.abs_psn = p.abs_psn.wrapping_add(dpsn);
                p.psn = (p.abs_psn & 0xFF_FFFF) as u32;
            }
            if !is_request(p.opcode) {
                p.aeth.msn = p.aeth.msn.wrapping_add(dmsn) & 0xFF_FFFF;
            }
            if p.reth.va != 0 {
                let unit = self.conns[c].size_bytes.next_power_of_two().max(1);
                p.reth.va = shift_va(p.reth.va, unit, dwr);
            }
        }
        for (c, conn) in self.conns.iter_mut().enumerate() {
            let Some(&(dpsn, dmsn, dwr)) = s.conns.get(c) else {
                continue;
            };
            let unit = conn.size_bytes.next_power_of_two().max(1);
            conn.next_psn = conn.next_psn.wrapping_add(dpsn);
            conn.oldest_unacked_psn = conn.oldest_unacked_psn.wrapping_add(dpsn);
            conn.expected_psn = conn.expected_psn.wrapping_add(dpsn);
            if let Some(r) = conn.recover_psn.as_mut() {
                *r = r.wrapping_add(dpsn);
            }
            conn.msn = conn.msn.wrapping_add(dmsn);
            conn.wr_seq = conn.wr_seq.wrapping_add(dwr);
            for x in [
                &mut conn.timer_deadline_ps,
                &mut conn.dcqcn_next_tx_ps,
                &mut conn.last_progress_ps,
                &mut conn.rnr_until_ps,
                &mut conn.sending_until_ps,
                &mut conn.recv_posted_ps,
            ] {
                t(x);
            }
            for x in [&mut conn.indication, &mut conn.last_cnp]
                .into_iter()
                .flatten()
            {
                *x += dt;
            }
            for w in &mut conn.work_requests {
                w.id = w.id.wrapping_add(dwr);
                w.app_ps += dt;
                w.va = shift_va(w.va, unit, dwr);
            }
            for e in &mut conn.inflight {
                e.abs_psn = e.abs_psn.wrapping_add(dpsn);
                e.wr_id = e.wr_id.wrapping_add(dwr);
                e.va = shift_va(e.va, unit, dwr);
                t(&mut e.ready_ps);
            }
            for r in &mut conn.response_queue {
                r.abs_psn = r.abs_psn.wrapping_add(dpsn);
                r.msn = r.msn.wrapping_add(dmsn);
                t(&mut r.ready_ps);
            }
        }
        for port in &mut self.ports {
            t(&mut port.free_ps);
            for q in &mut port.queue {
                t(&mut q.0);
            }
        }
        if let Some(sn) = self.sniffer.as_mut() {
            sn.last_ps += dt;
        }
    }
}

/// A work request's address `dwr` requests later: `0x1000_0000 + (id %
/// 64) * unit + offset` (`host.rs`).
fn shift_va(va: u64, unit: u64, dwr: u64) -> u64 {
    let Some(rel) = va.checked_sub(0x1000_0000) else {
        return va;
    };
    let slot = (rel / unit + dwr % 64) % 64;
    0x1000_0000 + slot * unit + rel % unit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ts_ns: u64) -> Out {
        Out::Frame {
            ts_ns,
            direction: None,
            orig_len: 64,
            start: 0,
            len: 0,
            cut: 0,
        }
    }

    fn times(out: &[Out]) -> Vec<u64> {
        out.iter()
            .map(|o| match o {
                Out::Frame { ts_ns, .. } => *ts_ns,
                _ => u64::MAX,
            })
            .collect()
    }

    /// A replay made in place after the queued outputs and given up keeps
    /// those, and only those, in their order.
    #[test]
    fn a_replay_given_up_leaves_the_queued_outputs() {
        let Some(sc) = crate::Scenario::builtin("default") else {
            panic!("no default scenario");
        };
        let mut sim = Simulator::new(sc);
        sim.out.extend([frame(1), frame(2)]);
        let mut out = std::mem::take(&mut sim.out);
        let queued = out.len();
        out.extend([frame(3), frame(4), frame(5)]);
        sim.give_up_replay(out, queued);
        assert_eq!(times(&sim.out), [1, 2]);
    }
}
