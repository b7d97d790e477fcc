//! One pass over a store's rows for each requester QP of its report: the
//! messages it posted (their kinds, first packets, completions) and the
//! ordinals of its frames, where a derived loss rule hits.

use std::collections::HashMap;

use rocescope_decoders::analysis::Report;
use rocescope_decoders::psn::psn_diff;
use rocescope_decoders::{DecodeConfig, LinkLayer, decode};
use rocescope_replay::Direction;
use rocescope_replay::store::{ConvKey, Flags, Row, Store};

/// What one requester QP's frames show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QpScan {
    /// WRITE, SEND and READ messages started (new, not resent).
    pub writes: u64,
    pub sends: u64,
    pub reads: u64,
    /// First new request and last request of the QP.
    pub first_request_ns: Option<u64>,
    pub last_request_ns: u64,
    /// The most messages started and not yet complete at once.
    pub most_in_flight: u32,
    /// Each completed message's time from its first packet to the response
    /// that completed it (ACK covering its last PSN, its READ's last
    /// response), in completion order.
    pub completion_ns: Vec<u64>,
    /// Request frames (both new and resent) in capture order: their PSNs
    /// and times, for the ordinal a loss of one is at.
    pub request_psns: Vec<(u32, u64)>,
    /// Times of the frames toward the requester (responses, ACKs, CNPs).
    pub response_ts_ns: Vec<u64>,
    /// Each Go-Back-N pass: the PSN the requester went back to, when, and
    /// the 1-based ordinal among its request frames of that PSN's send
    /// before (`None`: the capture never saw it sent whole: a READ
    /// resent from inside it, its response lost) (at most [`MAX_PASSES`]).
    pub passes: Vec<Pass>,
    /// WRITE messages' lengths as their first packet's RETH gives them
    /// (at most [`MAX_SIZES`]).
    pub write_sizes: Vec<u64>,
    /// Each message started with none outstanding: the time since the
    /// last completion (at most [`MAX_SIZES`]). Short: the application
    /// posts when one completes; long: at a pace of its own.
    pub restart_gaps_ns: Vec<u64>,
    /// The longest READ request (RETH length): a READ's whole length where
    /// the requester asks for it at once.
    pub read_max_bytes: u64,
    /// Frames past [`MAX_FRAMES`] not kept: the QP is too long to model.
    pub frames_not_kept: u64,
    /// Times of the CNPs toward the requester (at most [`MAX_FRAMES`],
    /// counted among its frames).
    pub cnp_ns: Vec<u64>,
}

/// A Go-Back-N pass seen in a QP's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub psn: u32,
    pub ts_ns: u64,
    pub lost_ordinal: Option<u64>,
}

/// Request frames and frames toward the requester a scan keeps per QP
/// (16 and 8 bytes each): a longer capture is refused, not cut.
pub const MAX_FRAMES: usize = 4_000_000;

/// Go-Back-N passes a scan keeps.
pub const MAX_PASSES: usize = 65_536;

/// WRITE message lengths a scan keeps.
pub const MAX_SIZES: usize = 65_536;

impl QpScan {
    /// Messages started.
    pub fn messages(&self) -> u64 {
        self.writes + self.sends + self.reads
    }

    /// Request frames seen before `ts_ns`.
    pub fn requests_before(&self, ts_ns: u64) -> u64 {
        self.request_psns
            .iter()
            .filter(|&&(_, t)| t < ts_ns)
            .count() as u64
    }

    /// Frames toward the requester seen before `ts_ns`.
    pub fn responses_before(&self, ts_ns: u64) -> u64 {
        self.response_ts_ns.iter().filter(|&&t| t < ts_ns).count() as u64
    }

    /// Median and 99th percentile message completion time.
    pub fn completion_p50_p99_ns(&self) -> (Option<u64>, Option<u64>) {
        if self.completion_ns.is_empty() {
            return (None, None);
        }
        let mut v = self.completion_ns.clone();
        v.sort_unstable();
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        (Some(at(0.5)), Some(at(0.99)))
    }
}

/// A message started and not complete: its first packet's time, the PSN
/// whose acknowledgement completes it (`None` until its last packet), and
/// whether it is a READ (completed by its last response).
#[derive(Debug, Clone, Copy)]
struct Open {
    start_ns: u64,
    last_psn: Option<u32>,
    read: bool,
}

#[derive(Debug, Default)]
struct State {
    scan: QpScan,
    open: Vec<Open>,
    /// The last completion's time.
    last_done_ns: Option<u64>,
    /// Where the last READ request's data ends: a request that starts
    /// there is the rest of the same READ, split by the window.
    read_end_va: Option<u64>,
    /// That request's length.
    read_last_len: u64,
}

/// A request's RETH (virtual address, length), from its frame's bytes.
fn reth_of(store: &Store, index: u64) -> Option<(u64, u64)> {
    let bytes = store.frame_bytes(index).ok()?;
    let p = decode(&bytes, LinkLayer::Ethernet, &DecodeConfig::default());
    let r = p.ext().reth()?;
    Some((r.va(), u64::from(r.dma_len())))
}

/// Messages a QP's scan keeps open at most.
const MAX_OPEN: usize = 4096;

const SEND_FIRST: u8 = 0x00;
const SEND_ONLY: u8 = 0x04;
const SEND_ONLY_IMM: u8 = 0x05;
const SEND_LAST: u8 = 0x02;
const SEND_LAST_IMM: u8 = 0x03;
const WRITE_FIRST: u8 = 0x06;
const WRITE_LAST: u8 = 0x08;
const WRITE_LAST_IMM: u8 = 0x09;
const WRITE_ONLY: u8 = 0x0A;
const WRITE_ONLY_IMM: u8 = 0x0B;
const READ_REQUEST: u8 = 0x0C;
const READ_RESPONSE_LAST: u8 = 0x0F;
const READ_RESPONSE_ONLY: u8 = 0x10;
const ACK: u8 = 0x11;

/// Scans `store`'s rows for each of `report`'s QPs (the index is the QP's).
pub fn scan(store: &Store, report: &Report) -> Vec<QpScan> {
    // Conversation id -> (QP, the request direction).
    let mut by_key: HashMap<ConvKey, (usize, bool)> = HashMap::new();
    for (i, q) in report.qps.iter().enumerate() {
        by_key.insert(
            ConvKey {
                src: q.requester,
                dst: q.responder,
                dest_qp: q.dest_qp,
            },
            (i, true),
        );
        if let Some(rq) = q.requester_qp {
            by_key
                .entry(ConvKey {
                    src: q.responder,
                    dst: q.requester,
                    dest_qp: rq,
                })
                .or_insert((i, false));
        }
    }
    let of_conv: Vec<Option<(usize, bool)>> = store
        .conversations()
        .iter()
        .map(|c| by_key.get(&c.key).copied())
        .collect();
    let mut states: Vec<State> = (0..report.qps.len()).map(|_| State::default()).collect();
    each_row(store, |index, r| {
        if !r.flags.contains(Flags::ROCE) {
            return Ok::<(), std::convert::Infallible>(());
        }
        let Some(Some((qp, request))) = of_conv.get(r.conversation as usize).copied() else {
            return Ok(());
        };
        let st = &mut states[qp];
        if request {
            let fresh =
                !r.flags.contains(Flags::RETRANSMISSION) && !r.flags.contains(Flags::DUPLICATE);
            let wants_reth = fresh
                && (r.opcode == READ_REQUEST
                    || (matches!(r.opcode, WRITE_FIRST | WRITE_ONLY | WRITE_ONLY_IMM)
                        && st.scan.write_sizes.len() < MAX_SIZES));
            let reth = if wants_reth {
                reth_of(store, index)
            } else {
                None
            };
            request_row(st, r, reth);
        } else {
            response_row(st, r);
        }
        Ok(())
    })
    .unwrap_or_else(|never| match never {});
    states.into_iter().map(|s| s.scan).collect()
}

/// A PFC or PAUSE frame the capture's host received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseSeen {
    pub ts_ns: u64,
    /// Its hold in quanta of 512 bit times (the longest of its classes;
    /// 0 releases the link).
    pub quanta: u16,
}

/// The longest frame read back as a possible PAUSE or PFC frame: those are
/// minimum-size MAC Control frames (64 bytes, 68 with a VLAN tag).
const MAX_PAUSE_FRAME_BYTES: u32 = 128;

/// The PFC and PAUSE frames `store` shows its host received (not those it
/// sent: they hold the switch), read back from their bytes (the rows keep
/// no quanta); `Err` says why they cannot all be (a frame unreadable, more
/// than [`MAX_FRAMES`]).
pub fn pauses_received(store: &Store) -> Result<Vec<PauseSeen>, String> {
    let mut out = Vec::new();
    let mut not_kept = 0u64;
    each_row(store, |index, r| {
        if r.flags.contains(Flags::ROCE)
            || r.dir == Some(Direction::Tx)
            || r.caplen > MAX_PAUSE_FRAME_BYTES
        {
            return Ok::<(), String>(());
        }
        let bytes = store
            .frame_bytes(index)
            .map_err(|e| format!("frame {index} (a possible PFC frame): {e}"))?;
        let p = decode(&bytes, LinkLayer::Ethernet, &DecodeConfig::default());
        let Some(quanta) = p.pause_quanta() else {
            return Ok(());
        };
        if out.len() == MAX_FRAMES {
            not_kept += 1;
            return Ok(());
        }
        out.push(PauseSeen {
            ts_ns: r.ts_ns,
            quanta,
        });
        Ok(())
    })?;
    if not_kept > 0 {
        return Err(format!(
            "more than {MAX_FRAMES} PFC frames ({not_kept} more): too many to replay; cut the capture"
        ));
    }
    Ok(out)
}

/// Calls `f` with every row of `store` and its index, read 64 Ki rows at a
/// time; the first `Err` stops the walk.
fn each_row<E>(store: &Store, mut f: impl FnMut(u64, &Row) -> Result<(), E>) -> Result<(), E> {
    let mut rows: Vec<Row> = Vec::new();
    let len = store.len();
    let mut at = store.first_row();
    while at < len {
        let end = (at + 65_536).min(len);
        rows.clear();
        store.rows(at..end, &mut rows);
        for (k, r) in rows.iter().enumerate() {
            f(at + k as u64, r)?;
        }
        at = end;
    }
    Ok(())
}

fn request_row(st: &mut State, r: &Row, reth: Option<(u64, u64)>) {
    let s = &mut st.scan;
    if s.request_psns.len() == MAX_FRAMES {
        s.frames_not_kept += 1;
        return;
    }
    // Back to a PSN sent before: a Go-Back-N pass starts.
    if let Some(&(prev, _)) = s.request_psns.last()
        && psn_diff(r.psn, prev) <= 0
        && s.passes.len() < MAX_PASSES
    {
        let lost_ordinal = s
            .request_psns
            .iter()
            .rposition(|&(p, _)| p == r.psn)
            .map(|i| i as u64 + 1);
        s.passes.push(Pass {
            psn: r.psn,
            ts_ns: r.ts_ns,
            lost_ordinal,
        });
    }
    s.request_psns.push((r.psn, r.ts_ns));
    s.last_request_ns = r.ts_ns;
    if r.flags.contains(Flags::RETRANSMISSION) || r.flags.contains(Flags::DUPLICATE) {
        return;
    }
    let op = r.opcode;
    if op == READ_REQUEST
        && let Some((va, len)) = reth
    {
        // A READ's parts are contiguous, but so may its successor be: a
        // request shorter than the longest READ request yet was cut by the
        // window, and the request that continues it is its rest.
        let rest = st.read_end_va == Some(va) && st.read_last_len < s.read_max_bytes;
        s.read_max_bytes = s.read_max_bytes.max(len);
        st.read_end_va = Some(va.wrapping_add(len));
        st.read_last_len = len;
        if rest && let Some(m) = st.open.iter_mut().rev().find(|m| m.read) {
            // The rest of a READ split by the window: its last request's
            // responses complete it.
            m.last_psn = Some(r.psn);
            return;
        }
    }
    if let Some((_, len)) = reth
        && op != READ_REQUEST
    {
        s.write_sizes.push(len);
    }
    let starts = matches!(
        op,
        SEND_FIRST | SEND_ONLY | SEND_ONLY_IMM | WRITE_FIRST | WRITE_ONLY | WRITE_ONLY_IMM
    ) || op == READ_REQUEST;
    if starts {
        s.first_request_ns.get_or_insert(r.ts_ns);
        if st.open.is_empty()
            && let Some(done) = st.last_done_ns
            && s.restart_gaps_ns.len() < MAX_SIZES
        {
            s.restart_gaps_ns.push(r.ts_ns.saturating_sub(done));
        }
        match op {
            SEND_FIRST | SEND_ONLY | SEND_ONLY_IMM => s.sends += 1,
            READ_REQUEST => s.reads += 1,
            _ => s.writes += 1,
        }
        // A capture with no responses completes nothing: the oldest go,
        // bounded (their completions are unknown, not counted).
        if st.open.len() == MAX_OPEN {
            st.open.remove(0);
        }
        st.open.push(Open {
            start_ns: r.ts_ns,
            last_psn: None,
            read: op == READ_REQUEST,
        });
    }
    let ends = matches!(
        op,
        SEND_ONLY
            | SEND_ONLY_IMM
            | SEND_LAST
            | SEND_LAST_IMM
            | WRITE_ONLY
            | WRITE_ONLY_IMM
            | WRITE_LAST
            | WRITE_LAST_IMM
    );
    if ends && let Some(m) = st.open.iter_mut().rev().find(|m| !m.read) {
        m.last_psn.get_or_insert(r.psn);
    }
    if op == READ_REQUEST
        && let Some(m) = st.open.last_mut()
    {
        // Its responses start at its PSN; its last one completes it.
        m.last_psn = Some(r.psn);
    }
    s.most_in_flight = s.most_in_flight.max(st.open.len() as u32);
}

fn response_row(st: &mut State, r: &Row) {
    if st.scan.response_ts_ns.len() == MAX_FRAMES {
        st.scan.frames_not_kept += 1;
        return;
    }
    st.scan.response_ts_ns.push(r.ts_ns);
    if r.flags.contains(Flags::CNP) {
        st.scan.cnp_ns.push(r.ts_ns);
        return;
    }
    if r.flags.contains(Flags::NAK) {
        return;
    }
    let op = r.opcode;
    let read_done = matches!(op, READ_RESPONSE_LAST | READ_RESPONSE_ONLY);
    if op != ACK && !read_done {
        return;
    }
    // Complete the oldest messages this response covers, in order.
    while let Some(m) = st.open.first().copied() {
        let done = match m.last_psn {
            None => false,
            Some(last) if m.read => read_done && psn_diff(r.psn, last) >= 0,
            Some(last) => psn_diff(r.psn, last) >= 0,
        };
        if !done {
            break;
        }
        st.open.remove(0);
        st.last_done_ns = Some(r.ts_ns);
        if st.scan.completion_ns.len() < MAX_FRAMES {
            st.scan
                .completion_ns
                .push(r.ts_ns.saturating_sub(m.start_ns));
        }
    }
}
