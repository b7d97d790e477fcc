//! What the analysis tells: each packet's [`Class`], verdicts changed after
//! the fact, Go-Back-N episodes, timer expiries and QP errors.

use super::*;

/// The analysis verdicts of a packet.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Class(pub u8);

impl Class {
    pub const RETRANSMISSION: Class = Class(1);
    pub const DUPLICATE: Class = Class(2);
    pub const OUT_OF_SEQUENCE: Class = Class(4);
    /// Packets before this one were missed by the capture (not the wire).
    pub const CAPTURE_LOSS: Class = Class(8);

    pub fn contains(self, c: Class) -> bool {
        self.0 & c.0 == c.0
    }
    pub(super) fn add(&mut self, c: Class) {
        self.0 |= c.0;
    }
}

/// A verdict changed after the fact (a gap resolved as capture loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LateClass {
    pub index: u64,
    pub set: Class,
    pub clear: Class,
}

/// Why a Go-Back-N episode started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum EpisodeCause {
    /// NAK (PSN sequence error) from the responder.
    NakSeqErr,
    /// RNR NAK: the responder had no receive buffer.
    Rnr,
    /// A resend with no NAK after a silence: the requester's timer fired.
    Timeout,
    /// A READ response went missing: the requester re-issued the READ.
    ImpliedNak,
}

impl EpisodeCause {
    pub const ALL: [EpisodeCause; 4] = [
        EpisodeCause::NakSeqErr,
        EpisodeCause::Rnr,
        EpisodeCause::Timeout,
        EpisodeCause::ImpliedNak,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            EpisodeCause::NakSeqErr => "nak_seq_err",
            EpisodeCause::Rnr => "rnr",
            EpisodeCause::Timeout => "timeout",
            EpisodeCause::ImpliedNak => "implied_nak",
        }
    }

    /// The cause of that [`EpisodeCause::name`].
    pub fn from_name(name: &str) -> Option<EpisodeCause> {
        EpisodeCause::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// One retransmission episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Episode {
    /// The QP conversation (index into [`Report::qps`]).
    pub qp: u32,
    pub cause: EpisodeCause,
    /// Row of the first evidence (the NAK, or the first resend on a timeout).
    pub first_index: u64,
    pub last_index: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// PSN the resend started from.
    pub from_psn: u32,
    pub packets_resent: u64,
    pub bytes_resent: u64,
    /// From the first loss evidence to the first new packet after the resend
    /// (or the ACK that covered it).
    pub recovery_ns: u64,
    /// Silence before a timeout resend.
    pub silence_ns: u64,
    /// The NAK was not in the capture (its AETH was cut or the frame
    /// missed): the cause is inferred from a resend after a short silence.
    pub nak_inferred: bool,
    /// Go-Back-N passes after the first (each rewinds to an older PSN).
    pub retries: u32,
    /// Passes the requester's timer started (each one is an expiry
    /// `local_ack_timeout_err` counts).
    pub timer_expiries: u32,
    /// Loss evidence the requester saw and did not act on: its timer
    /// fired much later (a READ-response gap on a NIC without an
    /// implied-NAK path, such as BALBOA).
    pub unacted: Option<Unacted>,
    /// New data or an ACK of everything sent before it ended the episode;
    /// `false`: it was still open when the source ended.
    pub recovered: bool,
    /// A NAK episode where the capture saw the gap (at or after the loss:
    /// the receiver's side): the first out-of-sequence arrival to the NAK
    /// (Lumina's NAK generation).
    pub nak_generation_ns: Option<u64>,
    /// A NAK episode where the capture saw no gap (before the loss: the
    /// requester's side): the NAK to the first resend (Lumina's NAK
    /// reaction, where the capture is the requester's).
    pub nak_reaction_ns: Option<u64>,
}

/// Loss evidence before a timer-driven resend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unacted {
    /// What it would have been read as (implied NAK, NAK).
    pub cause: EpisodeCause,
    pub ts_ns: u64,
    pub index: u64,
    /// The PSN it showed missing.
    pub psn: u32,
}

/// One expiry of a requester's retransmission timer: a Go-Back-N pass
/// after a silence with no NAK acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimerExpiry {
    /// Time and row of the resend it caused.
    pub ts_ns: u64,
    pub index: u64,
    pub psn: u32,
    /// Silence before it: the timer's interval as the capture shows it.
    pub silence_ns: u64,
}

/// Why a QP went to the error state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum QpErrorReason {
    /// A fatal NAK from the responder (invalid request, remote access or
    /// remote operational error).
    Nak(NakCode),
    /// The retry count ran out with the oldest PSN still unacknowledged.
    RetriesExceeded,
    /// The RNR retry count ran out: the requester stopped resending after
    /// `naks` RNR NAKs on one PSN (mlx5's `rnr_nak_retry_err`).
    RnrRetriesExceeded { naks: u32 },
}

impl QpErrorReason {
    /// Its name in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            QpErrorReason::Nak(NakCode::InvalidRequest) => "nak_invalid_request",
            QpErrorReason::Nak(NakCode::RemoteAccessError) => "nak_remote_access",
            QpErrorReason::Nak(_) => "nak_remote_operational",
            QpErrorReason::RetriesExceeded => "retries_exceeded",
            QpErrorReason::RnrRetriesExceeded { .. } => "rnr_retries_exceeded",
        }
    }
}

/// The QP's move to the error state, with its evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QpError {
    /// When it happened (retries exceeded: the last retry plus the timer's
    /// last interval, the expiry no packet shows).
    pub ts_ns: u64,
    /// The NAK's row, or the last retry's.
    pub index: u64,
    pub psn: u32,
    pub reason: QpErrorReason,
}
