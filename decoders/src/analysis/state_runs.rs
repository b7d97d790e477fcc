//! A requester QP's time by state as runs (a start and a state; a run ends
//! where the next begins), packed in blocks, with each state's total: what
//! [`super::time_states`] labels and every output reads.

use std::collections::VecDeque;
use std::sync::Arc;

use super::time_states::{TIME_STATES, TimeState};

/// Runs a block holds (32 KiB): full blocks are shared by the reports
/// taken of a running analysis, never copied.
const RUN_BLOCK: usize = 8192;

/// Runs kept per QP (4 MiB); past it the oldest blocks go, counted in
/// [`StateRuns::let_go`], while the totals keep every nanosecond.
pub const MAX_RUNS: usize = 1 << 20;

/// Bits of a packed run below its start: the state.
const STATE_BITS: u32 = 4;

/// The latest start a 32-bit packed run holds past its block's base
/// (268 ms): a run starting later begins a block of its own.
const MAX_REL_NS: u64 = (1 << (32 - STATE_BITS)) - 1;

/// Runs from a base: each packed as `(start - base) << 4 | state` in 32
/// bits (4 bytes a run, half a 64-bit one: two runs a request is most of
/// the accounting's memory).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Block {
    base_ns: u64,
    runs: Vec<u32>,
}

impl Block {
    #[inline]
    fn start(&self, i: usize) -> u64 {
        self.base_ns + u64::from(self.runs[i] >> STATE_BITS)
    }

    #[inline]
    fn run(&self, i: usize) -> (u64, TimeState) {
        let r = self.runs[i];
        let state = TimeState::from_code((r & ((1 << STATE_BITS) - 1)) as u8);
        (
            self.base_ns + u64::from(r >> STATE_BITS),
            state.unwrap_or(TimeState::Idle),
        )
    }
}

/// One QP's runs of states over its span, and the time in each state.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StateRuns {
    /// The span's start (time before it is in no run).
    base_ns: u64,
    /// Sealed blocks, oldest first, [`RUN_BLOCK`] runs each unless a long
    /// silence sealed one early; `sealed` runs in all.
    blocks: VecDeque<Arc<Block>>,
    sealed: usize,
    tail: Block,
    /// The span: its first run's start (before any was let go) and where
    /// the last run ends.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Runs let go, the oldest first, past [`MAX_RUNS`].
    pub let_go: u64,
    /// Nanoseconds in each state over the whole span, by [`TimeState`]
    /// code: they sum to `end_ns - start_ns`.
    pub totals_ns: [u64; TIME_STATES],
    /// The last run's state, kept beside the runs (every push reads it).
    last: Option<TimeState>,
}

impl StateRuns {
    /// No runs yet; the span starts at `start_ns`.
    pub(crate) fn starting(start_ns: u64) -> StateRuns {
        StateRuns {
            base_ns: start_ns,
            start_ns,
            end_ns: start_ns,
            ..StateRuns::default()
        }
    }

    /// Whether no time is accounted.
    pub fn is_empty(&self) -> bool {
        self.end_ns <= self.start_ns
    }

    /// Runs kept.
    pub fn len(&self) -> usize {
        self.sealed + self.tail.runs.len()
    }

    /// The block at `b` among the sealed ones, the tail after them.
    #[inline]
    fn block(&self, b: usize) -> Option<&Block> {
        match self.blocks.get(b) {
            Some(block) => Some(block),
            None if b == self.blocks.len() => Some(&self.tail),
            None => None,
        }
    }

    /// The last run kept: (start, state).
    fn last_run(&self) -> Option<(u64, TimeState)> {
        if let Some(i) = self.tail.runs.len().checked_sub(1) {
            return Some(self.tail.run(i));
        }
        let b = self.blocks.back()?;
        b.runs.len().checked_sub(1).map(|i| b.run(i))
    }

    /// The state of the last run.
    pub fn last_state(&self) -> Option<TimeState> {
        self.last
    }

    /// `[end_ns, to)` is in `state`: extends the last run when it is in
    /// `state` already. Time before `end_ns` is never assigned twice.
    #[inline(always)]
    pub(crate) fn push(&mut self, to: u64, state: TimeState) {
        if to <= self.end_ns {
            return;
        }
        self.totals_ns[state as usize] += to - self.end_ns;
        if self.last != Some(state) {
            self.new_run(state);
        }
        self.end_ns = to;
    }

    /// A run of `state` from `end_ns`.
    #[inline(always)]
    fn new_run(&mut self, state: TimeState) {
        // Wrapping: an empty tail's base may lie past `end_ns` (the runs
        // after a time dropped for the error state), or before any run (a
        // new account's): rebased. An empty tail's base otherwise is the
        // last sealed run's start, which holds the next one as well as its
        // own start would (the start read back is the same), so that
        // emptiness is not asked on every run.
        let mut rel = self.end_ns.wrapping_sub(self.tail.base_ns);
        if rel > MAX_REL_NS {
            rel = self.rebase();
        }
        self.tail
            .runs
            .push((rel as u32) << STATE_BITS | u32::from(state.code()));
        self.last = Some(state);
        if self.tail.runs.len() == RUN_BLOCK {
            self.seal();
        }
    }

    /// The tail starts at `end_ns` (sealed first when it holds runs, too
    /// far back for the next one's start).
    #[cold]
    #[inline(never)]
    fn rebase(&mut self) -> u64 {
        if !self.tail.runs.is_empty() {
            self.seal();
        }
        self.tail.base_ns = self.end_ns;
        0
    }

    /// The tail is full (or too far back): a block of its own, the oldest
    /// let go past the cap.
    #[cold]
    #[inline(never)]
    fn seal(&mut self) {
        let full = std::mem::replace(
            &mut self.tail,
            Block {
                base_ns: self.end_ns,
                runs: Vec::with_capacity(RUN_BLOCK),
            },
        );
        self.sealed += full.runs.len();
        self.blocks.push_back(Arc::new(full));
        while self.sealed > MAX_RUNS {
            let Some(old) = self.blocks.pop_front() else {
                break;
            };
            self.sealed -= old.runs.len();
            self.let_go += old.runs.len() as u64;
        }
    }

    /// Every run kept: (start, end, state), in time order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, TimeState)> + '_ {
        let mut runs = self
            .blocks
            .iter()
            .map(|b| &**b)
            .chain(std::iter::once(&self.tail))
            .flat_map(|b| (0..b.runs.len()).map(move |i| b.run(i)))
            .peekable();
        let end = self.end_ns;
        std::iter::from_fn(move || {
            let (start, state) = runs.next()?;
            let next = runs.peek().map_or(end, |&(s, _)| s);
            Some((start, next, state))
        })
    }

    /// The run at (block, place) among those kept: (start, state).
    #[inline]
    fn run_at(&self, (b, i): (usize, usize)) -> Option<(u64, TimeState)> {
        let block = self.block(b)?;
        (i < block.runs.len()).then(|| block.run(i))
    }

    /// The place after (block, place).
    #[inline]
    fn next_place(&self, (b, i): (usize, usize)) -> (usize, usize) {
        match self.block(b) {
            Some(block) if i + 1 < block.runs.len() => (b, i + 1),
            _ => (b + 1, 0),
        }
    }

    /// The place (block, run) of the run holding `ts_ns`, if one kept does.
    fn index_at(&self, ts_ns: u64) -> Option<(usize, usize)> {
        if ts_ns >= self.end_ns || ts_ns < self.base_ns {
            return None;
        }
        // The last block whose first run starts at or before `ts_ns`.
        let blocks = self.blocks.len() + 1;
        let (mut lo, mut hi) = (0usize, blocks);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let first = self
                .block(mid)
                .filter(|b| !b.runs.is_empty())
                .map(|b| b.start(0));
            if first.is_some_and(|s| s <= ts_ns) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let b = lo.checked_sub(1)?;
        let block = self.block(b)?;
        // ...and in it the last run starting at or before `ts_ns`.
        let (mut lo, mut hi) = (0usize, block.runs.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if block.start(mid) <= ts_ns {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1).map(|i| (b, i))
    }

    /// The state at `ts_ns`, if a run kept holds it.
    pub fn at(&self, ts_ns: u64) -> Option<TimeState> {
        let place = self.index_at(ts_ns)?;
        self.run_at(place).map(|r| r.1)
    }

    /// Nanoseconds in each state within `from..to` (runs kept only).
    pub fn between(&self, from: u64, to: u64) -> [u64; TIME_STATES] {
        let mut out = [0; TIME_STATES];
        if to <= from {
            return out;
        }
        let mut place = self.index_at(from.max(self.base_ns)).unwrap_or((0, 0));
        while let Some((start, state)) = self.run_at(place) {
            if start >= to {
                break;
            }
            let next = self.next_place(place);
            let end = self.run_at(next).map_or(self.end_ns, |n| n.0);
            let (a, b) = (start.max(from), end.min(to));
            if b > a {
                out[state as usize] += b - a;
            }
            place = next;
        }
        out
    }

    /// From `ts_ns` on, the span is in `state` (a QP in error from a time
    /// only the end of the capture shows): later runs are dropped, their
    /// time moved to `state`.
    pub(crate) fn in_state_from(&mut self, ts_ns: u64, state: TimeState) {
        let end = self.end_ns;
        if ts_ns >= end {
            return;
        }
        let ts_ns = ts_ns.max(self.base_ns);
        for (k, ns) in self.between(ts_ns, end).into_iter().enumerate() {
            self.totals_ns[k] -= ns;
        }
        // Drop the runs starting at or after `ts_ns`.
        while let Some((start, _)) = self.last_run() {
            if start < ts_ns {
                break;
            }
            if self.tail.runs.pop().is_none() {
                match self.blocks.pop_back() {
                    Some(b) => {
                        self.sealed -= b.runs.len();
                        let mut v = (*b).clone();
                        v.runs.pop();
                        self.tail = v;
                    }
                    None => break,
                }
            }
        }
        self.end_ns = ts_ns;
        self.last = self.last_run().map(|r| r.1);
        self.push(end, state);
    }
}
