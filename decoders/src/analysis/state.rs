//! The state of a QP at one time, from the report: what it is doing then,
//! not the history of what it ever did.

use super::{EpisodeCause, QpErrorReason, Report};

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

    /// The state of QP `qp` (index into [`Report::qps`]) at `ts_ns`, or
    /// `None` if there is no such QP or it had not started then.
    pub fn qp_state_at(&self, qp: u32, ts_ns: u64) -> Option<QpState> {
        let q = self.qps.get(qp as usize)?;
        if ts_ns < q.first_ts_ns {
            return None;
        }
        if let Some(e) = q.error.filter(|e| e.ts_ns <= ts_ns) {
            return Some(QpState::Error {
                since_ns: e.ts_ns,
                reason: e.reason,
            });
        }
        // Before each timer-driven resend the QP sat silent waiting on it.
        if let Some(x) = q
            .timer_expiries
            .iter()
            .find(|x| ts_ns < x.ts_ns && ts_ns >= x.ts_ns.saturating_sub(x.silence_ns))
        {
            return Some(QpState::WaitingOnTimer {
                since_ns: x.ts_ns - x.silence_ns,
            });
        }
        let episodes = self.episodes.iter().filter(|e| e.qp == qp);
        if let Some(e) = episodes
            .clone()
            .find(|e| ts_ns >= e.start_ns && (!e.recovered || ts_ns < e.start_ns + e.recovery_ns))
        {
            // Past its last resend with the timer still to fire, the QP
            // waits on the timer (a stuck QP at the end of the capture).
            if !e.recovered && ts_ns > e.end_ns && e.timer_expiries > 0 {
                return Some(QpState::WaitingOnTimer { since_ns: e.end_ns });
            }
            return Some(QpState::Recovering {
                since_ns: e.start_ns,
                cause: e.cause,
            });
        }
        let s = &q.series;
        let Some(i) = s.index_at(ts_ns).filter(|_| ts_ns < q.last_ts_ns) else {
            // At or after the QP's last request or response.
            return Some(if q.outstanding == 0 {
                QpState::Idle
            } else if q.window_seen && q.outstanding >= q.window_packets {
                QpState::WindowFull {
                    window_packets: q.window_packets,
                }
            } else {
                QpState::WaitingOnTimer {
                    since_ns: q.last_ts_ns,
                }
            });
        };
        let b = s.bins[i];
        // The count then, not the most of the bin: a bin in which the
        // window filled and then emptied ends with nothing outstanding.
        let carried = s.outstanding_at_end(i);
        if b.packets == 0 && carried == 0 {
            return Some(QpState::Idle);
        }
        if q.window_seen && carried >= q.window_packets {
            return Some(QpState::WindowFull {
                window_packets: q.window_packets,
            });
        }
        Some(QpState::Ready)
    }
}
