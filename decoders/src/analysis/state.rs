//! The state of a QP at one time, from the report: what it is doing then,
//! not the history of what it ever did.

use super::{EpisodeCause, QpErrorReason, Report, TimeState};

/// What a QP is doing at one time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpState {
    /// Nothing outstanding and nothing sent in the bin: waiting for work.
    Idle,
    /// Sending and acknowledged as it goes (RTS, nothing wrong).
    Ready,
    /// As many packets outstanding as the window the QP has (configured,
    /// else the one the capture shows the sender held at): sending waits
    /// on ACKs.
    WindowFull { window_packets: u32 },
    /// Silent with data unacknowledged until its retransmission timer
    /// fires (a later resend shows it did), or to the end of the capture.
    WaitingOnTimer { since_ns: u64 },
    /// In a retransmission episode since `since_ns`.
    Recovering { since_ns: u64, cause: EpisodeCause },
    /// In the error state (a fatal NAK, retries exceeded): it sends nothing
    /// that will be answered until it is reset.
    Error {
        since_ns: u64,
        reason: QpErrorReason,
    },
}

impl QpState {
    /// Short name for tables: `idle`, `RTS`, `window full`...
    pub fn name(self) -> &'static str {
        match self {
            QpState::Idle => "idle",
            QpState::Ready => "RTS",
            QpState::WindowFull { .. } => "window full",
            QpState::WaitingOnTimer { .. } => "waiting on timer",
            QpState::Recovering { .. } => "recovering",
            QpState::Error { .. } => "error",
        }
    }

    /// Every [`QpState::name`], so that a table can be as wide as the
    /// longest before it is shown.
    pub const NAMES: [&'static str; 6] = [
        "idle",
        "RTS",
        "window full",
        "waiting on timer",
        "recovering",
        "error",
    ];
}

impl Report {
    /// QP `qp`'s outstanding packets at `ts_ns`, as far as the series
    /// tells it: the count after the last request or response of the bin
    /// holding `ts_ns`, the count at the end after the QP's last packet;
    /// `None` for no such QP or before its first packet.
    pub fn outstanding_at(&self, qp: u32, ts_ns: u64) -> Option<u32> {
        let q = self.qps.get(qp as usize)?;
        if ts_ns < q.first_ts_ns {
            return None;
        }
        Some(match q.series.index_at(ts_ns) {
            Some(i) if ts_ns < q.last_ts_ns => q.series.outstanding_at_end(i),
            _ => q.outstanding,
        })
    }

    /// QP `qp`'s time state at `ts_ns` (see [`TimeState`]), from its runs:
    /// the state the QP views, the ladder and `state_at_end` show, so that
    /// they agree with its time by state. At or after the end of its span,
    /// the last state; `None` for no such QP, before its first request, or
    /// a time whose run was let go.
    pub fn time_state_at(&self, qp: u32, ts_ns: u64) -> Option<TimeState> {
        let q = self.qps.get(qp as usize)?;
        let s = &q.states;
        if s.is_empty() || ts_ns < s.start_ns {
            return None;
        }
        if ts_ns >= s.end_ns {
            // An error the end of the capture showed may come after its
            // last packet.
            if q.error
                .is_some_and(|e| e.ts_ns >= s.end_ns && e.ts_ns <= ts_ns)
            {
                return Some(TimeState::Error);
            }
            return s.last_state();
        }
        s.at(ts_ns)
    }

    /// The state of QP `qp` (index into [`Report::qps`]) at `ts_ns`, or
    /// `None` if there is no such QP or it had not started then: its time
    /// state with what the episodes and errors add (since when, why).
    pub fn qp_state_at(&self, qp: u32, ts_ns: u64) -> Option<QpState> {
        let q = self.qps.get(qp as usize)?;
        let state = self.time_state_at(qp, ts_ns)?;
        let run_start = |ts: u64| {
            q.states
                .iter()
                .take_while(|(start, _, _)| *start <= ts)
                .filter(|(_, _, s)| *s == state)
                .last()
                .map_or(ts, |(start, _, _)| start)
        };
        Some(match state {
            TimeState::Error => match q.error {
                Some(e) => QpState::Error {
                    since_ns: e.ts_ns,
                    reason: e.reason,
                },
                None => QpState::Ready,
            },
            TimeState::WaitingOnTimer => QpState::WaitingOnTimer {
                since_ns: run_start(ts_ns),
            },
            TimeState::Recovering | TimeState::RnrWait => {
                let e = self
                    .episodes
                    .iter()
                    .rev()
                    .find(|e| e.qp == qp && e.start_ns <= ts_ns);
                QpState::Recovering {
                    since_ns: e.map_or_else(|| run_start(ts_ns), |e| e.start_ns),
                    cause: match (state, e) {
                        (TimeState::RnrWait, _) => EpisodeCause::Rnr,
                        (_, Some(e)) => e.cause,
                        (_, None) => EpisodeCause::NakSeqErr,
                    },
                }
            }
            TimeState::WindowFull => QpState::WindowFull {
                window_packets: q.window_packets,
            },
            TimeState::Idle => QpState::Idle,
            _ => QpState::Ready,
        })
    }
}
