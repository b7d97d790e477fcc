//! Building a simulator and running it: construction, stepping, the event
//! queue's scheduling and the dispatch of each event.

use super::*;

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
                tx_free_ps: 0,
                tx_wake_at_ps: NEVER,
                paused_until_ps: 0,
                pfc_asked_until_ps: 0,
                ctrl_queue: VecDeque::new(),
                streams: Vec::new(),
                next_stream: 0,
                busy_ps: 0,
                busy_ps_sampled: 0,
                fsm_queue: VecDeque::new(),
                fsm_free_ps: 0,
                fsm_event_at_ps: NEVER,
                dma_tags: Vec::new(),
                dma_tag_head: 0,
                dma_last_ps: 0,
                dma_write_free_ps: 0,
                hbm_free_ps: 0,
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
                size_bytes: q.size_bytes,
                messages: q.messages,
                queue_depth: q.queue_depth,
                rate_gbps: q.rate_gbps,
                aes: q.aes,
                dpi: q.dpi,
                app: q.app,
                dpi_bad_every: q.dpi_bad_every,
                req_node: q.from as u16,
                resp_node: q.to as u16,
                req_qpn,
                resp_qpn,
                state: QpState::Reset,
                window,
                next_psn: start_psn,
                oldest_unacked_psn: start_psn,
                send_idx: 0,
                work_requests: VecDeque::new(),
                admit_idx: 0,
                wr_seq: 0,
                inflight: VecDeque::new(),
                retry_count: 0,
                timer_deadline_ps: NEVER,
                timer_event_at_ps: NEVER,
                timer_backoff: false,
                read_gap: false,
                indication: None,
                retx_state: 0,
                expected_psn: start_psn,
                msn: 0,
                nak_sent: false,
                unacked_packets: 0,
                last_cnp: None,
                dcqcn: (p.dcqcn_enabled != 0 && scenario.nodes[q.from].kind == NodeKind::Connectx)
                    .then(|| Dcqcn::new(&dcqcn_cfg)),
                dcqcn_next_tx_ps: 0,
                response_queue: VecDeque::new(),
                aes_key: slots::aes_key(scenario.seed, req_qpn),
                seed: mix64(scenario.seed ^ (i as u64) << 32),
                mid_message: false,
                last_progress_ps: 0,
                recover_psn: None,
                rnr_until_ps: 0,
                sending_until_ps: 0,
                reason: reasons::code::NONE,
                recv_credits: q.recv_queue_depth,
                recv_posted_ps: 0,
                rnr_pending: false,
            });
        }
        let sniff = scenario.sniffer.as_ref().map(|s| SnifferState {
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
        let faults_on = (0..FAULT_SLOTS * nodes.len())
            .map(|k| {
                let (node, slot) = (k / FAULT_SLOTS, k % FAULT_SLOTS);
                (0..scenario.faults.len())
                    .filter(|&i| {
                        let f = &scenario.faults[i];
                        f.node == node
                            && f.kind != FaultKind::HostStall
                            && match (f.at, slot) {
                                (FaultAt::Wire, SLOT_TO_SWITCH) => {
                                    f.direction != LinkDir::FromSwitch
                                }
                                (FaultAt::Wire, SLOT_FROM_SWITCH) => {
                                    f.direction != LinkDir::ToSwitch
                                }
                                (FaultAt::Switch, s) => s == SLOT_SWITCH_QUEUE,
                                (FaultAt::Stack, s) => s == SLOT_STACK,
                                _ => false,
                            }
                    })
                    .collect()
            })
            .collect();
        let points = points::PointsState::new(&scenario.points, nodes.len(), scenario.seed);
        let scenario_has_host_stalls = scenario
            .faults
            .iter()
            .any(|f| f.kind == FaultKind::HostStall);
        let pcie_ps_per_byte = 1000.0 / p.pcie_gbytes_s;
        let pcie_mrrs_ps = (p.pcie_mrrs_bytes as f64 * pcie_ps_per_byte) as Ps;
        let sniffer_bytes_per_ps = p.sniffer_gbytes_s / 1000.0;
        let sniffer_cap_bytes = p.sniffer_buffer_bytes as f64;
        Simulator {
            fault_hits: vec![0; scenario.faults.len()],
            fault_period: vec![0; scenario.faults.len()],
            faults_on,
            points,
            scenario,
            params: p,
            now_ps: 0,
            end_ps: end,
            until_stopped: false,
            events: EventQueue::new(),
            rng,
            nodes,
            conns,
            packets: Vec::new(),
            free_packets: Vec::new(),
            ports,
            sniffer: sniff,
            probes: Vec::new(),
            profiler_period_ps: prof_period,
            started: false,
            finished: false,
            out: Vec::new(),
            out_bytes: Vec::with_capacity(1024),
            payload_cuts: Vec::new(),
            stats,
            record_completions: false,
            buf: Vec::with_capacity(128),
            payload_buf: Vec::new(),
            cycle_ps: cyc,
            ops: template::op_table(),
            ser_ps_cache: Vec::new(),
            dcqcn_cfg,
            pcie_ps_per_byte,
            pcie_mrrs_ps,
            sniffer_bytes_per_ps,
            sniffer_cap_bytes,
            record_states: false,
            reasons_at_ps: 0,
            has_host_stalls: scenario_has_host_stalls,
            period: None,
            period_look_ps: NEVER,
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
            sim.end_ps = UNBOUNDED_END;
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
                n.ctrl_queue.len()
                    + n.streams.len()
                    + n.fsm_queue.len()
                    + n.dma_tags.len()
                    + n.hbm_fetches.len()
            })
            .sum();
        let conns: usize = self
            .conns
            .iter()
            .map(|c| c.work_requests.len() + c.inflight.len() + c.response_queue.len())
            .sum();
        let ports: usize = self.ports.iter().map(|p| p.queue.len()).sum();
        let qp_stats: usize = self.stats.qps.iter().map(|q| q.completions.len()).sum();
        self.events.len()
            + self.packets.len()
            + self.free_packets.len()
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
        self.now_ps / NS
    }

    /// The simulated time the run ends at, in ns (about 53 days for a run
    /// until stopped).
    pub fn duration_ns(&self) -> u64 {
        self.end_ps / NS
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
        if self.now_ps >= self.period_look_ps {
            // One event a step: no replay (a limit of now).
            self.period_sight(self.now_ps);
        }
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
        let limit = ps_of_ns(t_ns).min(self.end_ps);
        while !self.finished {
            if !self.step_inner(limit) {
                break;
            }
            // Out of the event's own code, which it would slow (measured);
            // one comparison an event while there is no detector or it
            // pauses.
            if self.now_ps >= self.period_look_ps {
                self.period_sight(limit);
            }
            // Most events make no record: no call for them.
            if !self.out.is_empty() {
                self.flush(sink);
            }
        }
        self.flush(sink);
        if !self.finished && limit >= self.end_ps {
            self.finish();
            self.flush(sink);
        }
        if !self.finished {
            self.now_ps = self.now_ps.max(limit);
        }
        !self.finished
    }

    /// Hands the records of the last event to `sink`, in order.
    #[inline]
    pub(super) fn flush(&mut self, sink: &mut impl RecordSink) {
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
                    cut: _,
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
                Out::Header(h) => sink.header_frame(&h),
                Out::PointFrame {
                    point,
                    ts_ns,
                    orig_len,
                    start,
                    len,
                } => sink.point_frame(
                    point,
                    FrameRef {
                        ts_ns,
                        port: 0,
                        direction: None,
                        orig_len,
                        data: self
                            .out_bytes
                            .get(start as usize..(start + len) as usize)
                            .unwrap_or_default(),
                    },
                ),
            }
        }
        self.out_bytes.clear();
    }

    /// Runs to the end of the scenario.
    pub fn run(&mut self, sink: &mut impl FnMut(Record)) {
        let end = self.end_ps / NS;
        self.run_until(end, sink);
    }

    /// [`run`](Self::run) with every record written to `path` as pcapng,
    /// as `rocescope sim --record` writes them. The first write error
    /// stops the writing and is the outcome.
    pub fn record_to(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut w = rocescope_replay::PcapngWriter::new(file)?;
        let mut failed = None;
        self.run(&mut |rec: Record| {
            if failed.is_none()
                && let Err(e) = w.write_record(&rec)
            {
                failed = Some(e);
            }
        });
        match failed {
            Some(e) => Err(e),
            None => w.finish().map(drop),
        }
    }

    /// [`run`](Self::run) with frames lent to a [`RecordSink`].
    pub fn run_into(&mut self, sink: &mut impl RecordSink) {
        let end = self.end_ps / NS;
        self.run_until_into(end, sink);
    }

    #[inline]
    pub(super) fn step_inner(&mut self, limit: Ps) -> bool {
        let Some(top) = self.events.peek() else {
            // Every message posted and answered: a card left running idles.
            if !self.until_stopped {
                self.finish();
            }
            return false;
        };
        if top.t > self.end_ps {
            self.finish();
            return false;
        }
        if top.t > limit {
            return false;
        }
        let Some(e) = self.events.pop() else {
            return false;
        };
        self.now_ps = e.t;
        self.stats.events += 1;
        self.handle(e.ev);
        true
    }

    pub(super) fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.now_ps = self.now_ps.max(self.end_ps);
        self.emit(Record::Marker {
            ts_ns: self.end_ps / NS,
            kind: MarkerKind::Stop,
            text: format!("sim: scenario {} ended", self.scenario.name),
        });
    }

    /// Schedules `ev` at `t` (not before now), after every event already
    /// due then.
    pub(super) fn schedule(&mut self, t: Ps, ev: Event) {
        self.events.push(Pending {
            t: t.max(self.now_ps),
            ev,
        });
        self.stats.queue_peak = self.stats.queue_peak.max(self.events.len() as u64);
    }

    pub(super) fn start(&mut self) {
        self.started = true;
        self.emit(Record::Marker {
            ts_ns: 0,
            kind: MarkerKind::Start,
            text: format!(
                "sim: scenario {} seed {}",
                self.scenario.name, self.scenario.seed
            ),
        });
        self.tell_scenario();
        if self.scenario.profiler.enabled {
            self.define_probes();
        }
        for i in 0..self.scenario.cnps.len() {
            let cnp = self.scenario.cnps[i];
            self.schedule(ps_of_ns(cnp.at_ns), Event::CnpAt(cnp.qp as u32));
        }
        // The switch sends PFC frames only where PFC is on: a run with it
        // off has none of a capture's.
        let pauses = if self.params.pfc_enabled != 0 {
            self.scenario.pauses.len()
        } else {
            0
        };
        for i in 0..pauses {
            let p = self.scenario.pauses[i];
            self.schedule(
                ps_of_ns(p.at_ns),
                Event::PauseArrive {
                    node: p.node as u16,
                    quanta: p.quanta,
                },
            );
        }
        for c in 0..self.conns.len() {
            for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
                self.conns[c].state = state;
                self.qp_record(c, true);
                self.qp_record(c, false);
            }
            let start = ps_of_ns(self.scenario.qps[c].start_ns);
            let post = start + ps_of_ns(self.params.host_post_ns);
            if self.conns[c].rate_gbps > 0.0 {
                self.schedule(post, Event::Post(c as u32));
            } else {
                for _ in 0..self.conns[c].queue_depth {
                    self.schedule(post, Event::Post(c as u32));
                }
            }
        }
        if !self.probes.is_empty() {
            self.schedule(0, Event::ProfTick);
        }
    }

    #[inline]
    pub(super) fn handle(&mut self, ev: Event) {
        if self.record_states {
            let now = self.now_ps;
            self.reasons_before(now);
            self.dispatch(ev);
            self.reasons_after(now);
        } else {
            self.dispatch(ev);
        }
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        // Counted by kind here, in the one dispatch (constant indices).
        let by_kind = &mut self.stats.events_by_kind;
        match ev {
            Event::Post(c) => {
                by_kind[0] += 1;
                self.on_post(c as usize);
            }
            Event::TxWake(n) => {
                by_kind[1] += 1;
                self.on_tx_wake(n as usize);
            }
            Event::SwitchArrive(id) => {
                by_kind[2] += 1;
                self.on_switch_arrive(id);
            }
            Event::NodeArrive(id) => {
                by_kind[3] += 1;
                self.on_node_arrive(id);
            }
            Event::FsmReady(n) => {
                by_kind[4] += 1;
                self.on_fsm_ready(n as usize);
            }
            Event::Timer(c) => {
                by_kind[5] += 1;
                self.on_timer(c as usize);
            }
            Event::ProfTick => {
                by_kind[6] += 1;
                self.on_prof_tick();
            }
            Event::PauseArrive { node, quanta } => self.on_pause_arrive(node as usize, quanta),
            Event::CnpAt(c) => self.on_cnp_at(c as usize),
        }
    }
}
