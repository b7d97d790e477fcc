//! The period check's transform (issue 51): an output of one period as
//! the next period hands it out (times later by the period, PSNs, MSNs,
//! RETH WR slots and the sniffer's drop count advanced by its deltas), and
//! the check of a steady period's outputs against its previous period's so
//! shifted, before any replay trusts the transform (`period.rs`,
//! `replay.rs`).

use super::period::{Detector, SightLog};
use super::*;

/// An output as handed out, for the period check.
#[derive(Debug, Clone)]
pub(super) enum Logged {
    Record(Record),
    Header(HeaderFrame),
    /// A frame cut past its headers, as its fields (boxed: rare, and
    /// larger than the others).
    Cut(Box<PayloadCut>),
    /// One the check cannot shift (frame bytes, a capture point's frame).
    Other,
}

/// The QP of each QPN, sorted by QPN: looked up for every output a replay
/// hands out (a `HashMap`'s SipHash took 15% of line-rate's replaying run).
#[derive(Debug, Default)]
pub(super) struct QpnMap(Vec<(u32, usize)>);

impl QpnMap {
    /// The map of `(qpn, qp)` pairs; `None` when a QPN names two QPs.
    pub(super) fn new(mut pairs: Vec<(u32, usize)>) -> Option<QpnMap> {
        pairs.sort_unstable();
        pairs.dedup();
        let ambiguous = pairs.windows(2).any(|w| w[0].0 == w[1].0);
        (!ambiguous).then_some(QpnMap(pairs))
    }

    pub(super) fn get(&self, qpn: &u32) -> Option<&usize> {
        let i = self.0.binary_search_by_key(qpn, |&(q, _)| q).ok()?;
        self.0.get(i).map(|(_, c)| c)
    }
}

/// One period's deltas: its length, per QP (PSN, MSN, WR id), the
/// sniffer's drop count.
#[derive(Debug, Clone)]
pub(super) struct Shift {
    pub(super) ps: Ps,
    pub(super) conns: Vec<(u64, u32, u64)>,
    pub(super) dropped: u64,
}

impl Shift {
    /// From sight `a` to sight `b`.
    pub(super) fn between(a: &SightLog, b: &SightLog) -> Shift {
        Shift {
            ps: b.at_ps - a.at_ps,
            conns: a
                .conns
                .iter()
                .zip(&b.conns)
                .map(|(x, y)| {
                    (
                        y.0.wrapping_sub(x.0),
                        y.1.wrapping_sub(x.1),
                        y.2.wrapping_sub(x.2),
                    )
                })
                .collect(),
            dropped: b.sniffer_dropped.wrapping_sub(a.sniffer_dropped),
        }
    }
}

impl Simulator {
    /// The last `p` steps' outputs against those of the `p` before,
    /// shifted (the steady period's check, `PeriodStats::checks`).
    pub(super) fn check_period(&self, d: &mut Detector, p: usize) -> bool {
        let n = d.log.len();
        if n < 2 * p + 1 {
            return false;
        }
        let (a, b, c) = (&d.log[n - 1 - 2 * p], &d.log[n - 1 - p], &d.log[n - 1]);
        if a.rng != c.rng || a.off_period_events != c.off_period_events {
            return false;
        }
        let Some(qpn_conn) = &d.qpn_conn else {
            d.stats.checks_unsupported += 1;
            return false;
        };
        let shift = Shift::between(a, b);
        let template = d.log.range(n - 2 * p..n - p).flat_map(|s| &s.outputs);
        let actual = d.log.range(n - p..n).flat_map(|s| &s.outputs);
        let mut failure = None;
        let (mut count_t, mut count_a) = (0usize, 0usize);
        let mut unsupported = c.at_ps - b.at_ps != shift.ps;
        for (t, x) in template.zip(actual) {
            count_t += 1;
            count_a += 1;
            let Some(want) = self.shifted(t, &shift, qpn_conn) else {
                unsupported = true;
                break;
            };
            let got = Self::written(&x.1);
            if failure.is_none() && (x.0 != t.0 + shift.ps || got.as_ref() != Some(&want)) {
                failure = Some(format!(
                    "at {} ps: predicted {want:?}, handed out {got:?}",
                    x.0
                ));
            }
        }
        let count_t_all = d
            .log
            .range(n - 2 * p..n - p)
            .map(|s| s.outputs.len())
            .sum::<usize>();
        let count_a_all = d
            .log
            .range(n - p..n)
            .map(|s| s.outputs.len())
            .sum::<usize>();
        if unsupported {
            d.stats.checks_unsupported += 1;
            return false;
        }
        if failure.is_none() && count_t_all != count_a_all {
            failure = Some(format!(
                "{count_t_all} outputs predicted, {count_a_all} handed out (compared {count_t}/{count_a})"
            ));
        }
        d.stats.checks += 1;
        if let Some(f) = failure {
            d.stats.check_failures += 1;
            d.stats.first_failure.get_or_insert(f);
            return false;
        }
        true
    }

    /// An output as its sink sees it: frames written to bytes.
    fn written(o: &Logged) -> Option<Record> {
        match o {
            Logged::Record(r) => Some(r.clone()),
            Logged::Header(h) => Some(h.lend(|f| f.to_record())),
            Logged::Cut(c) => Some(Record::Frame {
                ts_ns: c.ts_ns,
                port: 0,
                direction: c.direction,
                orig_len: c.orig_len,
                data: c.bytes(),
            }),
            Logged::Other => None,
        }
    }

    /// `o` one period later, as handed out (`None`: not shiftable).
    fn shifted(&self, o: &(Ps, Logged), s: &Shift, qpn_conn: &QpnMap) -> Option<Record> {
        Self::written(&self.shifted_logged(o, s, qpn_conn)?)
    }

    /// A RETH's address of QP `c`, `s` later: its WR slot moved on
    /// (`None`: an address the simulator does not give).
    #[inline(always)]
    fn shifted_va(&self, va: u64, c: usize, s: &Shift) -> Option<u64> {
        // va = base + (WR id % 64) * size rounded up + offset.
        let unit = self.conns[c].size_bytes.next_power_of_two().max(1);
        let rel = va.checked_sub(0x1000_0000)?;
        let slot = (rel / unit + s.conns[c].2) % 64;
        Some(0x1000_0000 + slot * unit + rel % unit)
    }

    /// A header-only frame handed out at `at_ps`, one period later.
    #[inline(always)]
    pub(super) fn shifted_header(
        &self,
        h: &HeaderFrame,
        at_ps: Ps,
        s: &Shift,
        qpn_conn: &QpnMap,
    ) -> Option<HeaderFrame> {
        let mut h = *h;
        h.ts_ns = (at_ps + s.ps) / NS;
        self.shift_fields(&mut h.fields, s, qpn_conn)?;
        Some(h)
    }

    /// A frame cut past its headers handed out at `at_ps`, one period
    /// later: its payload's bytes those of its PSN then.
    pub(super) fn shifted_cut(
        &self,
        x: &PayloadCut,
        at_ps: Ps,
        s: &Shift,
        qpn_conn: &QpnMap,
    ) -> Option<PayloadCut> {
        let mut x = *x;
        x.ts_ns = (at_ps + s.ps) / NS;
        let c = self.shift_fields(&mut x.fields, s, qpn_conn)?;
        x.abs_psn = x.abs_psn.wrapping_add(s.conns.get(c)?.0);
        Some(x)
    }

    /// A frame's header fields one period later: PSN, MSN, the RETH's WR
    /// slot. Its QP; `None` when its QPN or address is not the simulator's.
    #[inline(always)]
    fn shift_fields(
        &self,
        f: &mut template::HdrFields,
        s: &Shift,
        qpn_conn: &QpnMap,
    ) -> Option<usize> {
        let c = *qpn_conn.get(&f.dest_qp)?;
        let &(dpsn, dmsn, _) = s.conns.get(c)?;
        f.psn = (f.psn.wrapping_add(dpsn as u32)) & 0xFF_FFFF;
        if !is_request(f.opcode) {
            f.aeth.msn = (f.aeth.msn.wrapping_add(dmsn)) & 0xFF_FFFF;
        }
        if f.reth.va != 0 {
            f.reth.va = self.shifted_va(f.reth.va, c, s)?;
        }
        Some(c)
    }

    /// `o` one period later (`None`: not shiftable).
    pub(super) fn shifted_logged(
        &self,
        o: &(Ps, Logged),
        s: &Shift,
        qpn_conn: &QpnMap,
    ) -> Option<Logged> {
        let ts_ns = (o.0 + s.ps) / NS;
        let psn = |c: usize, psn: u32| (psn.wrapping_add(s.conns[c].0 as u32)) & 0xFF_FFFF;
        let msn = |c: usize, msn: u32| (msn.wrapping_add(s.conns[c].1)) & 0xFF_FFFF;
        match &o.1 {
            Logged::Header(h) => Some(Logged::Header(self.shifted_header(h, o.0, s, qpn_conn)?)),
            Logged::Cut(x) => Some(Logged::Cut(Box::new(
                self.shifted_cut(x, o.0, s, qpn_conn)?,
            ))),
            Logged::Record(r) => {
                let mut r = r.clone();
                match &mut r {
                    Record::Truth(g) => {
                        let c = *qpn_conn.get(&g.qpn)?;
                        g.ts_ns = ts_ns;
                        g.psn = psn(c, g.psn);
                    }
                    Record::Slot(x) => {
                        let c = *qpn_conn.get(&x.qpn)?;
                        x.ts_ns = ts_ns;
                        x.psn = psn(c, x.psn);
                        if x.slot == SlotKind::Aes {
                            // Its detail is the AES counter, the absolute PSN.
                            x.detail = x.detail.wrapping_add(s.conns[c].0 as u32);
                        }
                    }
                    Record::QpState(q) => {
                        let c = *qpn_conn.get(&q.qpn)?;
                        q.ts_ns = ts_ns;
                        q.next_psn = psn(c, q.next_psn);
                        q.oldest_unacked_psn = psn(c, q.oldest_unacked_psn);
                        q.epsn = psn(c, q.epsn);
                        q.msn = msn(c, q.msn);
                    }
                    Record::Drops(x) => {
                        x.ts_ns = ts_ns;
                        x.dropped = x.dropped.wrapping_add(s.dropped);
                    }
                    _ => return None,
                }
                Some(Logged::Record(r))
            }
            Logged::Other => None,
        }
    }
}
