//! A scenario from a capture: its nodes (one per address), each requester
//! QP's workload as the capture shows it, the link rate, windows and
//! propagation, losses as fault rules at the frames they hit.

use std::collections::BTreeSet;

use rocescope_decoders::Endpoint;
use rocescope_decoders::analysis::{EpisodeCause, TimeState, WindowFrom};

use super::scan::{QpScan, pauses_received, scan};
use super::{Analysed, WhatIfError, run};
use crate::scenario::{FaultAt, ProfilerSpec};
use crate::{
    CnpAt, FaultKind, FaultSpec, LinkDir, NodeKind, NodeSpec, OpKind, Params, PauseAt, QpSpec,
    Scenario, SnifferSpec,
};

/// A capture QP's name and the name the simulator gives its twin.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QpKey {
    pub src_ip: String,
    pub dst_ip: String,
    pub dest_qp: u32,
    /// The twin's requester and responder addresses and responder QPN.
    pub sim_src: [u8; 16],
    pub sim_dst: [u8; 16],
    pub sim_dest_qp: u32,
}

impl QpKey {
    /// Whether `q` is this QP: by the capture's names in the capture
    /// (`capture`), else by the simulator's names of its twin.
    pub fn is(&self, q: &rocescope_decoders::analysis::QpReport, capture: bool) -> bool {
        if capture {
            Endpoint(q.requester).to_string() == self.src_ip
                && Endpoint(q.responder).to_string() == self.dst_ip
                && q.dest_qp == self.dest_qp
        } else {
            q.requester == self.sim_src
                && q.responder == self.sim_dst
                && q.dest_qp == self.sim_dest_qp
        }
    }
}

/// The derived scenario and how its QPs map to the capture's.
#[derive(Debug, Clone)]
pub struct Derived {
    pub scenario: Scenario,
    /// Index: the scenario's QP (and the capture report's).
    pub qp_keys: Vec<QpKey>,
    /// The capture's QPs as scanned.
    pub scans: Vec<QpScan>,
    /// What the derivation could not take from the capture and assumed.
    pub assumed: Vec<String>,
}

/// The longest a host takes from a completion on the wire to the next
/// message's first packet when it posts as soon as one completes (its
/// completion handling and post, about 3.2 µs in the model, twice that).
const CLOSED_LOOP_TURNAROUND_NS: u64 = 8_000;

/// The longest capture the what-if reruns (its twin and changed run are
/// simulated and analysed whole, in memory).
const MAX_SPAN_NS: u64 = 50_000_000;

/// A share of its span a QP spent at its window above which its
/// application's queue depth does not show in what it had in flight.
const WINDOW_FULL_SHARE: f64 = 0.01;

/// A share of its span a QP spent paced after CNPs above which it has a
/// reaction point that acts on them (a card that ignores CNPs, as BALBOA
/// does, shows a sliver at most).
const CNP_SLOWED_SHARE: f64 = 0.02;

/// A share of its span a QP spent idle above which its application posted
/// at a rate of its own (not as soon as one completed).
const IDLE_SHARE_OPEN_LOOP: f64 = 0.05;

fn mapped_v4(ip: [u8; 4]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[10] = 0xff;
    a[11] = 0xff;
    a[12..].copy_from_slice(&ip);
    a
}

/// Derives the twin of an analysed capture (`name` names it in errors).
pub fn derive(cap: &Analysed, name: &str) -> Result<Derived, WhatIfError> {
    let report = &cap.report;
    let qps: Vec<_> = report.qps.iter().filter(|q| q.requests > 0).collect();
    if qps.is_empty() {
        return Err(WhatIfError::NoQps { path: name.into() });
    }
    let (first_ns, span_ns) = cap
        .store
        .row(cap.store.len().saturating_sub(1))
        .zip(cap.store.row(cap.store.first_row()))
        .map_or((0, 0), |(last, first)| {
            (first.ts_ns, last.ts_ns.saturating_sub(first.ts_ns))
        });
    if span_ns > MAX_SPAN_NS {
        return Err(WhatIfError::Unmodelable {
            path: name.into(),
            message: format!(
                "it spans {:.1} ms; the what-if reruns at most {} ms (three simulated runs of it): cut the capture to the time of interest first, e.g. its first {} ms with Wireshark's editcap: editcap -A {} -B {} {name} cut.pcapng",
                span_ns as f64 / 1e6,
                MAX_SPAN_NS / 1_000_000,
                MAX_SPAN_NS / 1_000_000,
                epoch_seconds(first_ns),
                epoch_seconds(first_ns + MAX_SPAN_NS),
            ),
        });
    }
    let scans_all = scan(&cap.store, report);
    if let Some((i, s)) = scans_all
        .iter()
        .enumerate()
        .find(|(_, s)| s.frames_not_kept > 0)
    {
        let q = &report.qps[i];
        return Err(WhatIfError::Unmodelable {
            path: name.into(),
            message: format!(
                "QP {:#x} ({} -> {}) has more than {} frames one way ({} more): too long to model; cut the capture",
                q.dest_qp,
                Endpoint(q.requester),
                Endpoint(q.responder),
                super::scan::MAX_FRAMES,
                s.frames_not_kept
            ),
        });
    }
    // Nodes: every address, in order (the simulator numbers them so).
    let addrs: BTreeSet<[u8; 16]> = qps
        .iter()
        .flat_map(|q| [q.requester, q.responder])
        .collect();
    let addrs: Vec<[u8; 16]> = addrs.into_iter().collect();
    if addrs.len() > 250 {
        return Err(WhatIfError::Unmodelable {
            path: name.into(),
            message: format!(
                "{} addresses; a scenario holds at most 250 nodes",
                addrs.len()
            ),
        });
    }
    let node_of = |a: [u8; 16]| addrs.iter().position(|x| *x == a).unwrap_or(0);
    let mut assumed = Vec::new();
    let mut params = Params::default();
    if report.link_gbps > 0.0 {
        params.link_gbps = report.link_gbps.clamp(1.0, 1600.0);
    } else {
        assumed.push(format!("link rate {} Gb/s (none seen)", params.link_gbps));
    }
    // Windows the capture shows (the source's, or where the sender held).
    let windows: Vec<(usize, u32)> = qps
        .iter()
        .filter(|q| q.window_from != WindowFrom::MostOutstanding)
        .map(|q| (node_of(q.requester), q.window_packets))
        .collect();
    let mut kinds = vec![NodeKind::Balboa; addrs.len()];
    match (
        windows.iter().map(|w| w.1).min(),
        windows.iter().map(|w| w.1).max(),
    ) {
        (Some(lo), Some(hi)) if lo == hi => params.window_packets = u64::from(lo.max(1)),
        (Some(lo), Some(hi)) => {
            // Two kinds of requester: the larger windows are ConnectX's.
            params.window_packets = u64::from(lo.max(1));
            params.cx_window_packets = u64::from(hi);
            for &(n, w) in &windows {
                if w == hi {
                    kinds[n] = NodeKind::Connectx;
                }
            }
        }
        _ => assumed.push(format!(
            "window {} packets (the capture never shows a sender held at one)",
            params.window_packets
        )),
    }
    if report.counters.np_cnp_sent > 0 && kinds.contains(&NodeKind::Connectx) {
        params.dcqcn_enabled = 1;
    }
    // CNPs as seen: a requester that slowed after the CNPs it got has a
    // reaction point (DCQCN, a ConnectX's), and each CNP is replayed at its
    // time, since the queues that caused them (other traffic's) are not in
    // the capture.
    for (i, q) in report.qps.iter().enumerate() {
        let span_ns = q.states.end_ns.saturating_sub(q.states.start_ns).max(1);
        let slowed = q.states.totals_ns[TimeState::RateLimited as usize] as f64 / span_ns as f64
            > CNP_SLOWED_SHARE;
        if q.requests == 0 || !slowed || scans_all[i].cnp_ns.is_empty() {
            continue;
        }
        params.dcqcn_enabled = 1;
        let n = node_of(q.requester);
        if kinds[n] != NodeKind::Connectx {
            kinds[n] = NodeKind::Connectx;
            params.cx_window_packets = u64::from(q.window_packets.max(1));
        }
    }
    if report
        .qps
        .iter()
        .any(|q| q.states.totals_ns[TimeState::Paused as usize] > 0)
    {
        params.pfc_enabled = 1;
    }
    let t0 = cap.store.row(cap.store.first_row()).map_or(0, |r| r.ts_ns);
    let end_ns = report.qps.iter().map(|q| q.last_ts_ns).max().unwrap_or(t0);
    let duration_ns = end_ns.saturating_sub(t0).max(1_000) + 1_000;
    let mut specs = Vec::new();
    let mut keys = Vec::new();
    let mut scans = Vec::new();
    let mut next_qpn = vec![0x100u32; addrs.len()];
    let mut faults = Vec::new();
    let mut cnps = Vec::new();
    for (i, q) in report.qps.iter().enumerate() {
        if q.requests == 0 {
            continue;
        }
        let s = &scans_all[i];
        let (from, to) = (node_of(q.requester), node_of(q.responder));
        let index = specs.len();
        let messages = s.messages().max(1);
        let op = match (s.writes > 0, s.reads > 0, s.sends > 0) {
            (_, _, true) => OpKind::Send,
            (true, true, _) => OpKind::Mixed,
            (false, true, _) => OpKind::Read,
            _ => OpKind::Write,
        };
        // WRITEs say their length; READs and SENDs by what they moved.
        // A READ asks for its whole length at once where the window has
        // room, unless that is more than one request may ask for: below
        // that cap the longest request is the READ's length.
        let read_cap = params.read_max_packets * params.pmtu_bytes;
        let size_bytes = match median(&s.write_sizes) {
            Some(n) if op == OpKind::Write => n,
            _ if op == OpKind::Read && s.read_max_bytes > 0 && s.read_max_bytes < read_cap => {
                s.read_max_bytes
            }
            _ => q.goodput_bytes / messages,
        }
        .clamp(1, 1 << 31);
        let span_ns = q.states.end_ns.saturating_sub(q.states.start_ns).max(1);
        let idle = q.states.totals_ns[TimeState::Idle as usize] as f64 / span_ns as f64;
        // Posted as soon as one completed unless it waited on its
        // application (idle, and its messages started long after the last
        // completion); then at the rate it moved.
        let paced = median(&s.restart_gaps_ns).is_some_and(|g| g > CLOSED_LOOP_TURNAROUND_NS);
        let rate_gbps = if idle > IDLE_SHARE_OPEN_LOOP && paced {
            q.goodput_bytes as f64 * 8.0 / span_ns as f64
        } else {
            0.0
        };
        // Messages in flight at once are the application's queue where the
        // window never held it back; behind a full window the queue does
        // not show (then at least the model's usual 4).
        let window_full =
            q.states.totals_ns[TimeState::WindowFull as usize] as f64 / span_ns as f64;
        let queue_depth = if window_full > WINDOW_FULL_SHARE {
            s.most_in_flight.clamp(4, 65_536)
        } else {
            s.most_in_flight.clamp(1, 65_536)
        };
        // A QP that stopped well before the capture's end posted no more.
        let stopped = end_ns.saturating_sub(s.last_request_ns) > duration_ns / 10;
        let start_ns = s
            .first_request_ns
            .unwrap_or(q.first_ts_ns)
            .saturating_sub(t0);
        if params.dcqcn_enabled != 0 && kinds[from] == NodeKind::Connectx {
            cnps.extend(s.cnp_ns.iter().map(|&t| CnpAt {
                qp: index,
                at_ns: t.saturating_sub(t0),
            }));
        }
        specs.push(QpSpec {
            messages: if stopped { s.messages() } else { 0 },
            rate_gbps,
            start_ns,
            ..QpSpec::plain(from, to, op, size_bytes, queue_depth)
        });
        for rule in loss_rules(report, i, s, index, from, to) {
            let mut rule = rule;
            // A frame one rule drops is not counted by the rules after it
            // on the same link: their ordinals leave it out.
            let before = faults
                .iter()
                .filter(|f: &&FaultSpec| {
                    f.node == rule.node && f.direction == rule.direction && f.qp == rule.qp
                })
                .count() as u64;
            rule.nth = rule.nth.saturating_sub(before).max(1);
            faults.push(rule);
        }
        let resp_qpn = next_qpn[to];
        next_qpn[to] += 1;
        next_qpn[from] += 1;
        keys.push(QpKey {
            src_ip: Endpoint(q.requester).to_string(),
            dst_ip: Endpoint(q.responder).to_string(),
            dest_qp: q.dest_qp,
            sim_src: mapped_v4([10, 0, 0, (from + 1) as u8]),
            sim_dst: mapped_v4([10, 0, 0, (to + 1) as u8]),
            sim_dest_qp: resp_qpn,
        });
        scans.push(s.clone());
    }
    // The capture point: the node whose frames the capture marks as sent
    // (a card's own sniffer), else the node most QPs have at one end.
    let sniffer_node = sent_by(&cap.store)
        .and_then(|a| addrs.iter().position(|x| *x == a))
        .unwrap_or_else(|| {
            let n = |n: usize| specs.iter().filter(|q| q.from == n || q.to == n).count();
            (0..addrs.len()).fold(0, |best, i| if n(i) > n(best) { i } else { best })
        });
    // Pauses as seen: each PFC frame the capture's host received reaches the
    // capture point's node at its time, since the queue that sent it (other
    // hosts' traffic into the switch) is not in the capture.
    let seen = pauses_received(&cap.store).map_err(|message| WhatIfError::Unmodelable {
        path: name.into(),
        message,
    })?;
    let pauses = replayed_pauses(&seen, t0, params.link_gbps, sniffer_node);
    if !pauses.is_empty() {
        params.pfc_enabled = 1;
    }
    let nodes = addrs
        .iter()
        .zip(&kinds)
        .enumerate()
        .map(|(i, (a, k))| NodeSpec {
            name: format!(
                "node{i}_{}",
                Endpoint(*a).to_string().replace([':', '.'], "_")
            ),
            kind: *k,
        })
        .collect();
    let mut sc = Scenario {
        name: format!("whatif of {name}"),
        description: format!("Derived by rocescope whatif from {name}."),
        seed: 1,
        duration_ns,
        until_stopped: false,
        params,
        nodes,
        qps: specs,
        faults,
        sniffer: Some(SnifferSpec {
            node: sniffer_node,
            filter: crate::sniffer::filter::ROCE_V4_HEADER_ONLY,
            fixed_card: true,
            rx_cut_quirk: false,
            tag_direction: true,
        }),
        profiler: ProfilerSpec {
            enabled: false,
            ..ProfilerSpec::default()
        },
        points: Vec::new(),
        cnps,
        pauses,
    };
    calibrate_propagation(&mut sc, cap, &keys);
    Ok(Derived {
        scenario: sc,
        qp_keys: keys,
        scans,
        assumed,
    })
}

/// The pauses `seen` as the engine replays them at `node`: times from
/// `t0`; a release (0 quanta) cuts the pause before it short, as the
/// engine's pauses only hold.
fn replayed_pauses(
    seen: &[super::scan::PauseSeen],
    t0: u64,
    link_gbps: f64,
    node: usize,
) -> Vec<PauseAt> {
    let quantum_ns = 512.0 / link_gbps.max(1e-9);
    let mut out: Vec<PauseAt> = Vec::new();
    for p in seen {
        let at_ns = p.ts_ns.saturating_sub(t0);
        if p.quanta > 0 {
            out.push(PauseAt {
                node,
                at_ns,
                quanta: p.quanta,
            });
        } else if let Some(last) = out.last_mut() {
            let held = ((at_ns.saturating_sub(last.at_ns)) as f64 / quantum_ns).ceil() as u64;
            last.quanta = last.quanta.min(held.clamp(1, u64::from(u16::MAX)) as u16);
        }
    }
    out
}

/// The source address of the first RoCE frame the capture marks as sent
/// by its own host.
fn sent_by(store: &rocescope_replay::store::Store) -> Option<[u8; 16]> {
    let mut rows = Vec::new();
    let first = store.first_row();
    store.rows(first..store.len().min(first + 4096), &mut rows);
    let r = rows.iter().find(|r| {
        r.dir == Some(rocescope_replay::Direction::Tx)
            && r.conversation != rocescope_replay::store::NO_CONVERSATION
    })?;
    store.conversation(r.conversation).map(|c| c.key.src)
}

fn median(v: &[u64]) -> Option<u64> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// How long after an episode's end a pass still belongs to it (the
/// resend that ends it comes after the evidence).
const PASS_SLACK_NS: u64 = 1_000;

/// The losses a QP's Go-Back-N passes show, as fault rules: each pass
/// back to a PSN the capture saw sent is that send lost after the capture
/// point; one back into a READ the capture saw answered in part is its
/// response lost on its way to the requester; an RNR wait loses nothing.
fn loss_rules(
    report: &rocescope_decoders::analysis::Report,
    qp_report: usize,
    s: &QpScan,
    qp: usize,
    from: usize,
    to: usize,
) -> Vec<FaultSpec> {
    let rule = |node, direction, nth: u64| FaultSpec {
        kind: FaultKind::Loss,
        node,
        direction,
        at: FaultAt::Wire,
        qp: Some(qp),
        probability: 0.0,
        nth: nth.max(1),
        start_ns: 0,
        end_ns: 0,
        delay_ns: 0,
        every_ns: 0,
    };
    let mut out = Vec::new();
    for pass in &s.passes {
        let cause = report
            .episodes
            .iter()
            .find(|e| {
                e.qp as usize == qp_report
                    && e.start_ns <= pass.ts_ns
                    && pass.ts_ns <= e.end_ns.saturating_add(PASS_SLACK_NS)
            })
            .map(|e| e.cause);
        match (cause, pass.lost_ordinal) {
            (Some(EpisodeCause::Rnr), _) => {}
            (Some(EpisodeCause::ImpliedNak), _) | (_, None) => out.push(rule(
                from,
                LinkDir::FromSwitch,
                s.responses_before(pass.ts_ns) + 1,
            )),
            (_, Some(n)) => out.push(rule(to, LinkDir::FromSwitch, n)),
        }
    }
    out
}

/// Sets the cables' propagation so that the twin's median ACK round trip
/// matches the capture's: a round trip crosses four cables.
fn calibrate_propagation(sc: &mut Scenario, cap: &Analysed, keys: &[QpKey]) {
    let mut probe = sc.clone();
    // A short run is enough to see the round trips.
    probe.duration_ns = probe.duration_ns.min(500_000);
    let twin = run(&probe);
    let mut deltas: Vec<i64> = keys
        .iter()
        .filter_map(|k| {
            let c = cap.report.qps.iter().find(|q| {
                Endpoint(q.requester).to_string() == k.src_ip && q.dest_qp == k.dest_qp
            })?;
            let t = twin
                .report
                .qps
                .iter()
                .find(|q| q.requester == k.sim_src && q.dest_qp == k.sim_dest_qp)?;
            Some(c.rtt_p50_ns? as i64 - t.rtt_p50_ns? as i64)
        })
        .collect();
    if deltas.is_empty() {
        return;
    }
    deltas.sort_unstable();
    let delta = deltas[deltas.len() / 2];
    let prop = sc.params.link_prop_ns as i64 + delta / 4;
    sc.params.link_prop_ns = prop.clamp(0, 100_000_000) as u64;
}

/// `ts_ns` as editcap's `-A`/`-B` take it: Unix seconds, to the nanosecond.
fn epoch_seconds(ts_ns: u64) -> String {
    format!("{}.{:09}", ts_ns / 1_000_000_000, ts_ns % 1_000_000_000)
}
