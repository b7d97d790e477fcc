//! The profiler: probe definitions, their values and the periodic tick.

use super::*;

/// Each node's probes, in probe order: its kind, its name after the
/// node's, its unit and its module.
type NodeProbe = (
    fn(u16) -> ProbeKind,
    &'static str,
    &'static str,
    &'static str,
);
const NODE_PROBES: [NodeProbe; 7] = [
    (
        ProbeKind::TxCtrlQueue,
        "tx_ctrl_queue",
        "packets",
        "tx_arbiter",
    ),
    (ProbeKind::Grant, "arbiter_grant", "qpn", "tx_arbiter"),
    (ProbeKind::TxBusy, "mac_tx_busy", "", "mac_tx"),
    (ProbeKind::LinkUtil, "link_util", "%", "mac_tx"),
    (
        ProbeKind::FsmBacklog,
        "resp_fsm_backlog",
        "packets",
        "rx_resp_fsm",
    ),
    (
        ProbeKind::HbmInflight,
        "hbm_fetches_inflight",
        "",
        "retrans_buffer",
    ),
    (ProbeKind::PcieTags, "pcie_tags_in_use", "tags", "host_dma"),
];

impl Simulator {
    pub(super) fn define_probes(&mut self) {
        let filter = self.scenario.profiler.probes.clone();
        let mut defs = Vec::new();
        for (i, n) in self.scenario.nodes.iter().enumerate() {
            let i = i as u16;
            let name = &n.name;
            for (kind, probe, unit, module) in NODE_PROBES {
                defs.push((kind(i), format!("{name}.{probe}"), unit, module));
            }
            defs.push((
                ProbeKind::SwitchQueue(i),
                format!("switch.port_{name}.queue"),
                "bytes",
                "switch",
            ));
        }
        for (c, conn) in self.conns.iter().enumerate() {
            let name = &self.scenario.nodes[conn.req_node as usize].name;
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

    pub(super) fn probe_value(&mut self, k: ProbeKind) -> i64 {
        let now = self.now_ps;
        match k {
            ProbeKind::TxCtrlQueue(n) => self.nodes[n as usize].ctrl_queue.len() as i64,
            ProbeKind::Grant(n) => i64::from(self.nodes[n as usize].last_grant),
            ProbeKind::TxBusy(n) => i64::from(self.nodes[n as usize].tx_free_ps > now),
            ProbeKind::LinkUtil(n) => {
                let node = &mut self.nodes[n as usize];
                let d = node.busy_ps - node.busy_ps_sampled;
                node.busy_ps_sampled = node.busy_ps;
                (d * 100 / self.profiler_period_ps.max(1)).min(100) as i64
            }
            ProbeKind::FsmBacklog(n) => self.nodes[n as usize].fsm_queue.len() as i64,
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
                while let Some(&(end, b)) = port.queue.front() {
                    if end > now {
                        break;
                    }
                    port.occupancy_bytes -= b;
                    port.queue.pop_front();
                }
                port.occupancy_bytes as i64
            }
            ProbeKind::WindowFill(c) => {
                let conn = &self.conns[c as usize];
                (conn.next_psn - conn.oldest_unacked_psn) as i64
            }
            ProbeKind::RetxState(c) => i64::from(self.conns[c as usize].retx_state),
        }
    }

    pub(super) fn on_prof_tick(&mut self) {
        let on_change = self.scenario.profiler.on_change;
        let cycle = self.now_ps / self.cycle_ps.max(1);
        for i in 0..self.probes.len() {
            let v = self.probe_value(self.probes[i].kind);
            if on_change && self.probes[i].last == Some(v) {
                continue;
            }
            self.probes[i].last = Some(v);
            self.emit(Record::Profiler(ProfilerSample {
                cycle,
                ts_ns: self.now_ps / NS,
                probe: i as u16,
                value: v,
            }));
        }
        let t = self.now_ps + self.profiler_period_ps;
        if t <= self.end_ps {
            self.schedule(t, Event::ProfTick);
        }
    }
}
