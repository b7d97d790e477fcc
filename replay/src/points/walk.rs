//! The ends of each QP read in their own order: the receiver's point (the
//! last on the requests' way, at a host) and the requester's (the first).
//!
//! At the receiver, a model of its expected PSN: a request that arrives in
//! sequence is pending until a response accepts it (an ACK or READ
//! response at or past its PSN). One the receiver NAKs, or that arrives
//! again before any response accepted it, or that nothing ever accepts,
//! arrived and was not taken: a candidate for a drop in the receiving
//! stack (checked against every point's responses in `place.rs`). Frames
//! past a gap are out of sequence, discarded by the rules, never a loss.
//! Its NAK after the first out-of-sequence arrival is the NAK generation
//! time.
//!
//! At the requester, a NAK's arrival to the first resend of its PSN is the
//! NAK reaction time, and that resend to the last one of the pass (before
//! new data) the resend span.

use std::collections::{HashMap, VecDeque};

use rocescope_decoders::psn::{psn_add, psn_diff};

use super::align::Aligned;
use super::journey::{Flows, NONE, Role};
use super::{EpisodeTimes, Sighting};

/// A request pending at the receiver beyond this long before its capture
/// ends, never accepted, was not taken (shorter: its answer may be past
/// the end).
const UNANSWERED_NS: i64 = 200_000;

fn is_read_request(op: u8) -> bool {
    op == 0x0C
}

fn is_read_response(op: u8) -> bool {
    matches!(op, 0x0D..=0x10)
}

/// One NAK's episode as the two ends show it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct EpisodeRaw {
    pub flow: u32,
    pub psn: u32,
    pub t: i64,
    pub generation: Option<(i64, u8)>,
    pub reaction: Option<(i64, u8)>,
    pub span: Option<i64>,
}

/// What the walks found.
#[derive(Debug, Default)]
pub(super) struct Walked {
    /// Requests the receiver saw and did not take (journeys), with the
    /// reason in words and whether the receiver said so itself (a NAK):
    /// else responses seen elsewhere may still show it taken.
    pub not_taken: Vec<(u32, &'static str, bool)>,
    /// By NAK journey.
    pub episodes: HashMap<u32, EpisodeRaw>,
}

impl Walked {
    /// Lumina's latencies, in time order.
    pub fn episodes(&self, a: &Aligned) -> Vec<EpisodeTimes> {
        let mut v: Vec<EpisodeTimes> = self
            .episodes
            .values()
            .map(|e| {
                let key = a.flows.keys[e.flow as usize];
                EpisodeTimes {
                    dest_qp: key.dest_qp,
                    psn: e.psn,
                    ts_ns: (a.t0 as i64 + e.t).max(0) as u64,
                    nak_generation_ns: e.generation.map(|g| g.0),
                    nak_reaction_ns: e.reaction.map(|r| r.0),
                    resend_span_ns: e.span,
                    generation_at: e.generation.map(|g| g.1),
                    reaction_at: e.reaction.map(|r| r.1),
                }
            })
            .collect();
        v.sort_by_key(|e| (e.ts_ns, e.dest_qp, e.psn));
        v
    }
}

#[derive(Debug, Default)]
struct Receiver {
    epsn: Option<u32>,
    /// (PSN, journey, arrival) of requests taken in sequence, not yet
    /// accepted by a response.
    pending: VecDeque<(u32, u32, i64)>,
    last_read: bool,
    /// A sequence-error NAK was sent: everything but the expected PSN is
    /// discarded until it arrives.
    awaiting: bool,
    /// The first out-of-sequence arrival since the last one in sequence.
    oos_since: Option<i64>,
    /// One response has accepted several requests: the receiver
    /// coalesces its ACKs (a ConnectX), so a request sent again before
    /// any ACK, or left unanswered at the end, proves nothing.
    coalesces: bool,
}

#[derive(Debug, Default)]
struct Requester {
    /// The PSN after the newest request sent.
    next: Option<u32>,
    /// The last NAK (PSN, arrival, journey) not yet acted on.
    nak: Option<(u32, i64, u32)>,
    /// The resend pass open: (NAK journey, first resend, last resend,
    /// the newest PSN before it).
    pass: Option<(u32, i64, i64, u32)>,
}

/// Whether point `p` is a host's (the first or last given).
fn at_host(p: usize, n: usize) -> bool {
    p == 0 || p + 1 == n
}

/// Whether point `p` of `n` is walked: a host's point, aligned.
pub(super) fn walks(p: usize, n: usize, a: &Aligned) -> bool {
    at_host(p, n) && a.summaries.get(p).is_none_or(|s| s.aligned)
}

/// The host points' findings merged, in point order (one NAK's
/// generation comes from the receiver's point, its reaction from the
/// requester's).
pub(super) fn merge(parts: impl IntoIterator<Item = Walked>) -> Walked {
    let mut out = Walked::default();
    for w in parts {
        out.not_taken.extend(w.not_taken);
        for (k, e) in w.episodes {
            let m = out.episodes.entry(k).or_insert(e);
            m.t = m.t.min(e.t);
            m.generation = m.generation.or(e.generation);
            m.reaction = m.reaction.or(e.reaction);
            m.span = m.span.or(e.span);
        }
    }
    out
}

/// One host point's walk, fed a sighting at a time in its capture's order
/// with the journey its mark names: by the marking pass (`place.rs`), each
/// span of the sightings and marks read once, while in the cache, rather
/// than all of a host's sightings read a second time.
pub(super) struct Walker<'a> {
    a: &'a Aligned,
    p: usize,
    /// What the walk reads of each of the point's conversations (by id),
    /// `None` for one it skips: looked up once, not for every sighting.
    ends: Vec<Option<Ends>>,
    recv: Vec<Receiver>,
    reqr: Vec<Requester>,
    out: Walked,
}

/// A conversation the walk follows: a QP's requests or responses on a way
/// of two or more points.
#[derive(Debug, Clone, Copy)]
struct Ends {
    qp: u32,
    /// The QP's request flow.
    req_flow: u32,
    request: bool,
    /// The point is the last on the requests' way (the receiver's), the
    /// first (the requester's).
    receiver: bool,
    requester: bool,
}

impl Ends {
    /// Point `p`'s conversation `conv`, as the walk reads it.
    fn of(flows: &Flows, p: usize, conv: u32) -> Option<Ends> {
        let flow = flows.flow_of(p, conv)?;
        let (qp, role) = flows.role[flow as usize];
        if qp == NONE || role == Role::Other {
            return None;
        }
        let req_flow = flows.qps[qp as usize].req?;
        let path = flows.paths[req_flow as usize].as_slice();
        let (&first, &last) = (path.first()?, path.last()?);
        if path.len() < 2 {
            return None;
        }
        Some(Ends {
            qp,
            req_flow,
            request: role == Role::Request,
            receiver: usize::from(last) == p,
            requester: usize::from(first) == p,
        })
    }
}

impl<'a> Walker<'a> {
    /// Point `p`'s walk, of its `convs` conversations.
    pub fn new(flows: &'a Flows, a: &'a Aligned, p: usize, convs: usize) -> Walker<'a> {
        let qps = flows.qps.len();
        Walker {
            a,
            p,
            ends: (0..convs).map(|c| Ends::of(flows, p, c as u32)).collect(),
            recv: (0..qps).map(|_| Receiver::default()).collect(),
            reqr: (0..qps).map(|_| Requester::default()).collect(),
            out: Walked::default(),
        }
    }

    /// The point's next sighting, `j` its journey (`NONE`: none).
    #[inline]
    pub fn step(&mut self, s: &Sighting, j: u32) {
        let Some(Some(e)) = self.ends.get(s.conv as usize).copied() else {
            return;
        };
        if j == NONE {
            return;
        }
        let p = self.p;
        let Some(t) = self.a.at(p, s.ts_ns) else {
            return;
        };
        let out = &mut self.out;
        if e.receiver {
            let r = &mut self.recv[e.qp as usize];
            if e.request {
                r.arrive(s.psn, s.opcode, j, t, out);
            } else {
                r.depart(s, j, t, p as u8, e.req_flow, out);
            }
        }
        if e.requester {
            let q = &mut self.reqr[e.qp as usize];
            if e.request {
                q.send(s.psn, t, p as u8, out);
            } else {
                q.hear(s, j, t, e.req_flow, out);
            }
        }
    }

    /// What the walk found, the point's sightings all stepped.
    pub fn finish(self) -> Walked {
        let Walker {
            a,
            p,
            recv,
            mut reqr,
            mut out,
            ..
        } = self;
        let end = a.spans.get(p).map_or(i64::MAX, |s| s.1);
        for r in recv.iter().filter(|r| !r.coalesces) {
            for &(_, j, t) in &r.pending {
                if end - t > UNANSWERED_NS {
                    out.not_taken
                        .push((j, "no response ever accepted it", false));
                }
            }
        }
        for q in &mut reqr {
            q.close_pass(&mut out);
        }
        out
    }
}

impl Receiver {
    fn arrive(&mut self, psn: u32, opcode: u8, j: u32, t: i64, out: &mut Walked) {
        if let Some(k) = self.pending.iter().position(|e| e.0 == psn) {
            // Sent again before any response took it: the first copy
            // arrived and was not taken (where every request is answered).
            if !self.coalesces {
                out.not_taken.push((
                    self.pending[k].1,
                    "its PSN arrived again before any response accepted it",
                    false,
                ));
            }
            self.pending.truncate(k);
            self.epsn = Some(psn);
        }
        let e = *self.epsn.get_or_insert(psn);
        let d = psn_diff(psn, e);
        if d == 0 || (d > 0 && self.last_read && !self.awaiting) {
            // In sequence (past a READ, whose span this model does not
            // know, the next request is taken as in sequence, unless a NAK
            // said otherwise).
            self.pending.push_back((psn, j, t));
            self.epsn = Some(psn_add(psn, 1));
            self.last_read = is_read_request(opcode);
            self.awaiting = false;
            self.oos_since = None;
        } else if d > 0 && self.oos_since.is_none() {
            self.oos_since = Some(t);
        }
    }

    fn depart(&mut self, s: &Sighting, j: u32, t: i64, p: u8, req_flow: u32, out: &mut Walked) {
        let x = s.psn;
        if s.is_ack() || is_read_response(s.opcode) {
            let before = self.pending.len();
            self.pending.retain(|e| psn_diff(e.0, x) > 0);
            if s.is_ack() && before - self.pending.len() > 1 {
                self.coalesces = true;
            }
            if self.epsn.is_none_or(|e| psn_diff(psn_add(x, 1), e) > 0) {
                self.epsn = Some(psn_add(x, 1));
            }
        } else if s.is_nak() {
            let code = s.syndrome & 0x1F;
            if code == 0
                && let Some(k) = self.pending.iter().position(|e| e.0 == x)
                && let Some(&(_, _, t_next)) = self.pending.get(k + 1)
            {
                // The request after the one not taken was the first out of
                // sequence (the model had taken it in sequence).
                self.oos_since = Some(self.oos_since.map_or(t_next, |o| o.min(t_next)));
            }
            if let Some(k) = self.pending.iter().position(|e| e.0 == x) {
                out.not_taken.push((
                    self.pending[k].1,
                    if code == 0 {
                        "the receiver NAKed its PSN (sequence error) after it arrived"
                    } else {
                        "the receiver rejected it with a NAK"
                    },
                    true,
                ));
                if code == 0 {
                    self.pending.truncate(k);
                } else {
                    self.pending.remove(k);
                }
            } else if code == 0 {
                self.pending.retain(|e| psn_diff(e.0, x) < 0);
            }
            if code == 0 {
                self.epsn = Some(x);
                self.awaiting = true;
                self.last_read = false;
                let ep = out.episodes.entry(j).or_insert(EpisodeRaw {
                    flow: req_flow,
                    psn: x,
                    t,
                    ..EpisodeRaw::default()
                });
                ep.t = ep.t.min(t);
                if let Some(since) = self.oos_since.take() {
                    ep.generation = Some((t - since, p));
                }
            }
        } else if s.syndrome != super::tap::NO_SYNDROME && s.syndrome & 0x60 == 0x20 {
            // RNR NAK: the receiver had no buffer for it.
            if let Some(k) = self.pending.iter().position(|e| e.0 == x) {
                out.not_taken.push((
                    self.pending[k].1,
                    "the receiver was not ready (RNR NAK)",
                    true,
                ));
                self.pending.remove(k);
            }
        }
    }
}

impl Requester {
    fn send(&mut self, psn: u32, t: i64, p: u8, out: &mut Walked) {
        let Some(next) = self.next else {
            self.next = Some(psn_add(psn, 1));
            return;
        };
        if psn_diff(psn, next) >= 0 {
            // New data: the pass before it is over.
            self.close_pass(out);
            self.next = Some(psn_add(psn, 1));
            return;
        }
        if let Some((e, t_nak, nj)) = self.nak
            && psn == e
        {
            self.nak = None;
            self.close_pass(out);
            if let Some(ep) = out.episodes.get_mut(&nj) {
                ep.reaction = Some((t - t_nak, p));
            }
            self.pass = Some((nj, t, t, next));
            return;
        }
        if let Some(pass) = &mut self.pass
            && psn_diff(psn, pass.3) < 0
        {
            pass.2 = t;
        }
    }

    fn hear(&mut self, s: &Sighting, j: u32, t: i64, req_flow: u32, out: &mut Walked) {
        if s.is_nak() && s.syndrome & 0x1F == 0 {
            self.nak = Some((s.psn, t, j));
            let ep = out.episodes.entry(j).or_insert(EpisodeRaw {
                flow: req_flow,
                psn: s.psn,
                t,
                ..EpisodeRaw::default()
            });
            ep.t = ep.t.min(t);
        }
    }

    fn close_pass(&mut self, out: &mut Walked) {
        if let Some((nj, first, last, _)) = self.pass.take()
            && let Some(ep) = out.episodes.get_mut(&nj)
        {
            ep.span = Some(last - first);
        }
    }
}
