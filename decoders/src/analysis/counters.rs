//! Counters per QP and the card's own counters.

/// Counters, named as mlx5 / rxe name them where the meaning matches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Requests that arrived beyond the expected PSN.
    pub out_of_sequence: u64,
    /// NAKs (PSN sequence error).
    pub packet_seq_err: u64,
    /// Requests re-sent over PSNs the responder already had.
    pub duplicate_request: u64,
    /// Expiries of the requester's retransmission timer (every
    /// timer-driven Go-Back-N pass, several per episode on a stuck PSN).
    pub local_ack_timeout_err: u64,
    /// READ responses missing: the requester re-issued a READ.
    pub implied_nak_seq_err: u64,
    /// RNR NAKs.
    pub rnr_nak: u64,
    /// QPs whose RNR retry count ran out: RNR NAKs on one PSN, then no
    /// resend for longer than the wait they asked for, to the capture's end.
    pub rnr_nak_retry_err: u64,
    pub nak_invalid_request: u64,
    pub nak_remote_access: u64,
    pub nak_remote_operational: u64,
    /// CNPs seen (sent by notification points).
    pub np_cnp_sent: u64,
    /// CNPs that reached a known requester (reaction points).
    pub rp_cnp_handled: u64,
    /// RoCE packets with ECN CE.
    pub np_ecn_marked_roce_packets: u64,
    /// QPs whose retry count ran out ([`AnalysisConfig::retry_limit`]
    /// timer-driven passes on one PSN, then silence for another interval).
    pub req_transport_retries_exceeded: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    pub duplicate_acks: u64,
    pub duplicate_read_responses: u64,
    /// PSNs the capture missed (ACKed, never NAKed or resent).
    pub capture_loss_packets: u64,
    pub acks: u64,
    /// Requests no longer tracked for their ACK: more than
    /// [`MAX_TRACKED_SENDS`] were outstanding (a capture of one direction
    /// only, or ACKs the capture missed). Their ACKs count no RTT.
    pub untracked_sends: u64,
}

/// Requests tracked per flow while their ACK is awaited. RC allows at most
/// 2^23 PSNs in flight, NICs far fewer; the cap keeps memory bounded when a
/// capture never shows the ACKs.
pub const MAX_TRACKED_SENDS: usize = 1 << 16;

impl Counters {
    /// `(name, value)` pairs for tables and JSON.
    pub fn named(&self) -> [(&'static str, u64); 21] {
        [
            ("out_of_sequence", self.out_of_sequence),
            ("packet_seq_err", self.packet_seq_err),
            ("duplicate_request", self.duplicate_request),
            ("local_ack_timeout_err", self.local_ack_timeout_err),
            ("implied_nak_seq_err", self.implied_nak_seq_err),
            ("rnr_nak", self.rnr_nak),
            ("rnr_nak_retry_err", self.rnr_nak_retry_err),
            ("nak_invalid_request", self.nak_invalid_request),
            ("nak_remote_access", self.nak_remote_access),
            ("nak_remote_operational", self.nak_remote_operational),
            ("np_cnp_sent", self.np_cnp_sent),
            ("rp_cnp_handled", self.rp_cnp_handled),
            (
                "np_ecn_marked_roce_packets",
                self.np_ecn_marked_roce_packets,
            ),
            (
                "req_transport_retries_exceeded",
                self.req_transport_retries_exceeded,
            ),
            ("retransmitted_packets", self.retransmitted_packets),
            ("retransmitted_bytes", self.retransmitted_bytes),
            ("duplicate_acks", self.duplicate_acks),
            ("duplicate_read_responses", self.duplicate_read_responses),
            ("capture_loss_packets", self.capture_loss_packets),
            ("acks", self.acks),
            ("untracked_sends", self.untracked_sends),
        ]
    }

    pub(super) fn add(&mut self, o: &Counters) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            out_of_sequence,
            packet_seq_err,
            duplicate_request,
            local_ack_timeout_err,
            implied_nak_seq_err,
            rnr_nak,
            rnr_nak_retry_err,
            nak_invalid_request,
            nak_remote_access,
            nak_remote_operational,
            np_cnp_sent,
            rp_cnp_handled,
            np_ecn_marked_roce_packets,
            req_transport_retries_exceeded,
            retransmitted_packets,
            retransmitted_bytes,
            duplicate_acks,
            duplicate_read_responses,
            capture_loss_packets,
            acks,
            untracked_sends
        );
    }
}

/// Which of [`CardCounters`] a counter probe feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum CardCounter {
    PsnDrops,
    Retransmissions,
    StreamDown,
}

impl CardCounter {
    /// From a counter's name as the driver file labels it, normalised
    /// (`PSN drop count` -> `psn_drop_count`, `STRM down` -> `strm_down`).
    pub(super) fn from_name(name: &str) -> Option<CardCounter> {
        let n = name.to_ascii_lowercase();
        // The counter file's later ports (`qsfp1_retrans_cnt`): the sniffer
        // sits beside the first port's MAC, so only its counters compare.
        if n.strip_prefix("qsfp")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.contains('_'))
        {
            return None;
        }
        if n.contains("psn") && n.contains("drop") {
            Some(CardCounter::PsnDrops)
        } else if n.contains("retrans") {
            Some(CardCounter::Retransmissions)
        } else if (n.contains("strm") || n.contains("stream")) && n.contains("down") {
            Some(CardCounter::StreamDown)
        } else {
            None
        }
    }
}

/// The card's own counters at one reading (the BALBOA driver's
/// `cyt_attr_nstats`: running totals since the card was programmed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CardCounters {
    /// Requests the card's responder dropped for their PSN (out of order).
    pub psn_drops: u64,
    /// Packets the card's requester retransmitted.
    pub retransmissions: u64,
    /// "STRM down": above 0, the card's network stack is down until the
    /// card is reprogrammed.
    pub stream_down: u64,
}
