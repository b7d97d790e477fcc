//! The frames of the worst retransmission episode, for its ladder diagram:
//! a few frames of the QP before the first evidence, then the episode to its
//! last frame (the middle elided when it is long).

use std::collections::VecDeque;

use rocescope_decoders::analysis::{Episode, QpReport};
use rocescope_replay::store::{Row, Store};

use crate::view::View;

/// Frames of the QP shown before the episode's first evidence.
const CONTEXT_BEFORE: usize = 6;
/// Frames shown from the start of the episode...
const HEAD: usize = 40;
/// ...and from its end, when the episode is longer than both.
const TAIL: usize = 14;
/// Rows read from the store at a time.
const CHUNK: u64 = 4096;
/// Most rows scanned each way, so a QP that is rare in a huge capture costs
/// a bounded time.
const MAX_SCAN: u64 = 1 << 22;

/// One arrow of the ladder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrow {
    /// Row number in the store (frame number - 1).
    pub index: u64,
    pub row: Row,
    /// Requester to responder (a request); otherwise a response or an ACK.
    pub rightward: bool,
    /// Inside the episode (from its first evidence to its last frame).
    pub in_episode: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    pub episode: Episode,
    /// Index into the report's QPs.
    pub qp: usize,
    pub arrows: Vec<Arrow>,
    /// Frames left out between `arrows[gap.0 - 1]` and `arrows[gap.0]`.
    pub gap: Option<(usize, u64)>,
}

/// Store conversation ids of the QP's two directions: (requests, responses).
pub(crate) fn conversations(store: &Store, q: &QpReport) -> (Option<u32>, Option<u32>) {
    let convs = store.conversations();
    let find = |src: [u8; 16], dst: [u8; 16], qpn: u32| {
        convs
            .iter()
            .position(|c| c.key.src == src && c.key.dst == dst && c.key.dest_qp == qpn)
            .map(|i| i as u32)
    };
    let req = find(q.requester, q.responder, q.dest_qp);
    let resp = q
        .requester_qp
        .and_then(|rq| find(q.responder, q.requester, rq));
    (req, resp)
}

/// The ladder of the view's worst episode, if there is one and its frames
/// are in the store.
pub fn worst(view: &View<'_>) -> Option<Ladder> {
    let episode = *view.report.episodes.get(view.worst?)?;
    let qp = episode.qp as usize;
    let q = view.report.qps.get(qp)?;
    let (req, resp) = conversations(view.store, q);
    let ours = |r: &Row| Some(r.conversation) == req || Some(r.conversation) == resp;
    let arrow = |index: u64, row: Row, in_episode: bool| Arrow {
        index,
        row,
        rightward: Some(row.conversation) == req,
        in_episode,
    };
    let store = view.store;
    let len = store.len();
    let first = episode.first_index.min(len);
    let last = episode.last_index.min(len.saturating_sub(1));
    let mut buf = Vec::new();

    // Context: scan back from the first evidence.
    let mut before = Vec::new();
    let mut lo = first;
    while before.len() < CONTEXT_BEFORE && lo > 0 && first - lo < MAX_SCAN {
        let a = lo.saturating_sub(CHUNK);
        buf.clear();
        store.rows(a..lo, &mut buf);
        for (k, r) in buf.iter().enumerate().rev() {
            if ours(r) {
                before.push(arrow(a + k as u64, *r, false));
                if before.len() == CONTEXT_BEFORE {
                    break;
                }
            }
        }
        lo = a;
    }
    before.reverse();

    // The episode: the first HEAD frames, the last TAIL, and a count of
    // those between.
    let mut head = Vec::new();
    let mut tail = VecDeque::new();
    let mut skipped = 0u64;
    let end = last.saturating_add(1).min(first.saturating_add(MAX_SCAN));
    let mut at = first;
    while at < end {
        let b = (at + CHUNK).min(end);
        buf.clear();
        store.rows(at..b, &mut buf);
        for (k, r) in buf.iter().enumerate() {
            if !ours(r) {
                continue;
            }
            let a = arrow(at + k as u64, *r, true);
            if head.len() < HEAD {
                head.push(a);
            } else {
                tail.push_back(a);
                if tail.len() > TAIL {
                    tail.pop_front();
                    skipped += 1;
                }
            }
        }
        at = b;
    }
    let mut arrows = before;
    arrows.extend(head);
    let gap = (skipped > 0).then_some((arrows.len(), skipped));
    arrows.extend(tail);
    if arrows.is_empty() {
        return None;
    }
    Some(Ladder {
        episode,
        qp,
        arrows,
        gap,
    })
}
