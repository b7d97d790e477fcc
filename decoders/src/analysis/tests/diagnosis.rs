//! The diagnosis cases of DIAGNOSIS.md: each asserts the findings exactly,
//! so a missing finding and a false one both fail; and the bounds on what
//! the analysis keeps.

use super::*;
use crate::analysis::TimeState;

impl Trace {
    /// A request with a payload of `len` bytes.
    fn req_len(&mut self, op: Opcode, psn: u32, len: usize, gap_ns: u64) -> Class {
        let b = PacketBuilder::rocev2_ipv4(A, B, op, 0x12, psn);
        self.push(b.build(&vec![0; len]), gap_ns)
    }

    /// A packet of an unrelated QP between other hosts: the capture goes on.
    fn elsewhere(&mut self, gap_ns: u64) {
        let b =
            PacketBuilder::rocev2_ipv4([10, 0, 9, 1], [10, 0, 9, 2], Opcode::RC_SEND_ONLY, 0x99, 0);
        self.push(b.build(&[0; 64]), gap_ns);
    }

    pub(super) fn cnp_to_requester(&mut self, gap_ns: u64) {
        let mut cnp = PacketBuilder::rocev2_ipv4(B, A, Opcode::CNP, 0x11, 0);
        cnp.bth.becn = true;
        self.push(cnp.build(&[0; 16]), gap_ns);
    }

    fn cnp_to_responder(&mut self, gap_ns: u64) {
        let mut cnp = PacketBuilder::rocev2_ipv4(A, B, Opcode::CNP, 0x12, 0);
        cnp.bth.becn = true;
        self.push(cnp.build(&[0; 16]), gap_ns);
    }

    /// A message of `n` 4 KiB WRITEs (First, Middles, Last) every 400 ns,
    /// each ACKed 100 ns later.
    fn message(&mut self, psn: &mut u32, n: u32) {
        for k in 0..n {
            let op = match k {
                0 => Opcode::RC_WRITE_FIRST,
                k if k + 1 == n => Opcode::RC_WRITE_LAST,
                _ => Opcode::RC_WRITE_MIDDLE,
            };
            self.req(op, *psn, 300);
            self.ack(*psn, 100);
            *psn += 1;
        }
    }

    /// A trace that starts with [`Trace::steady`] from PSN 0, and the PSN
    /// after it.
    pub(super) fn steady_from_start(n: u32) -> (Trace, u32) {
        let (mut t, mut psn) = (Trace::new(), 0);
        t.steady(&mut psn, n);
        (t, psn)
    }

    /// `n` 4 KiB WRITEs every 400 ns (10 GB/s), each ACKed 100 ns later.
    pub(super) fn steady(&mut self, psn: &mut u32, n: u32) {
        for _ in 0..n {
            self.req(Opcode::RC_WRITE_MIDDLE, *psn, 300);
            self.ack(*psn, 100);
            *psn += 1;
        }
    }

    fn causes(&self) -> Vec<FindingCause> {
        self.an.report().findings.iter().map(|f| f.cause).collect()
    }

    /// The findings' causes are `want`, in order (else all of them shown).
    fn assert_causes(&self, want: &[FindingCause]) {
        let r = self.an.report();
        assert_eq!(self.causes(), want, "{:#?}", r.findings);
    }
}

/// A finding's text says `part`.
fn assert_says(f: &Finding, part: &str) {
    assert!(f.text.contains(part), "{}", f.text);
}

#[test]
fn healthy_messages_with_idle_gaps_raise_no_finding() {
    let mut t = Trace::new();
    let mut psn = 0;
    // 20 messages of 64 packets at 10 GB/s, 50 µs apart, all ACKed: the
    // gaps have nothing outstanding.
    for _ in 0..20 {
        t.message(&mut psn, 64);
        t.t += 50_000;
    }
    let r = t.an.report();
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    // In a gap the QP is idle, in a message ready.
    let q = &r.qps[0];
    let gap_ns = q.first_ts_ns + 64 * 400 + 20_000;
    assert_eq!(r.qp_state_at(0, gap_ns), Some(QpState::Idle));
    assert_eq!(
        r.qp_state_at(0, q.first_ts_ns + 10_000),
        Some(QpState::Ready)
    );
}

/// A steady stream, then PSN `stuck` is never ACKed: resent by the timer
/// at 1 ms, then `more` times every 64 ms (BALBOA's schedule).
fn timer_retries(t: &mut Trace, more: u32) -> u32 {
    let mut psn = 0;
    t.steady(&mut psn, 250);
    let stuck = psn;
    t.req(Opcode::RC_WRITE_MIDDLE, stuck, 300);
    t.req(Opcode::RC_WRITE_MIDDLE, stuck, 1_000_000);
    for _ in 0..more {
        t.req(Opcode::RC_WRITE_MIDDLE, stuck, 64_000_000);
    }
    stuck
}

#[test]
fn seven_timeouts_on_one_psn_exhaust_the_retries_and_the_qp_is_in_error() {
    let mut t = Trace::new();
    let stuck = timer_retries(&mut t, 6);
    let last_retry_ns = t.t;
    // The capture goes on past the next expiry (another QP's traffic).
    t.elsewhere(100_000_000);
    let r = t.an.report();
    let c = r.qps[0].counters;
    assert_eq!(c.local_ack_timeout_err, 7, "every expiry counts");
    assert_eq!(c.req_transport_retries_exceeded, 1);
    assert_eq!(r.counters.req_transport_retries_exceeded, 1);
    assert_eq!(r.episodes.len(), 1);
    let e = r.episodes[0];
    assert_eq!(
        (e.cause, e.timer_expiries, e.retries),
        (EpisodeCause::Timeout, 7, 6)
    );
    assert!(!e.recovered, "a dead QP is not recovered");
    let err = r.qps[0].error.expect("in error");
    assert_eq!(
        (err.reason, err.psn),
        (QpErrorReason::RetriesExceeded, stuck)
    );
    assert_eq!(err.ts_ns, last_retry_ns + 64_000_000);
    assert_eq!(t.causes(), vec![FindingCause::RetriesExceeded]);
    let f = &r.findings[0];
    assert_says(
        f,
        &format!(
            "PSN {stuck} never acknowledged; the timer fired 7 times (1 ms, then 64 ms x6 (BALBOA's schedule: 1 ms, then 64 ms)) and the retry count (7) ran out: the QP is in error"
        ),
    );
    assert_eq!(f.rows.len(), 7, "the seven resends: {:?}", f.rows);
    // Waiting since the resend before left the wire.
    let before = last_retry_ns - 64_000_000;
    assert!(
        matches!(
            r.qp_state_at(0, last_retry_ns - 1_000_000),
            Some(QpState::WaitingOnTimer { since_ns }) if since_ns > before && since_ns < before + 1_000
        ),
        "{:?}",
        r.qp_state_at(0, last_retry_ns - 1_000_000)
    );
    assert!(matches!(
        r.qp_state_at(0, err.ts_ns + 1),
        Some(QpState::Error {
            reason: QpErrorReason::RetriesExceeded,
            ..
        })
    ));
}

#[test]
fn a_qp_still_retrying_when_its_traffic_ends_is_stuck_not_done() {
    let mut t = Trace::new();
    let stuck = timer_retries(&mut t, 2);
    let r = t.an.report();
    assert_eq!(r.qps[0].counters.local_ack_timeout_err, 3);
    assert_eq!(r.counters.req_transport_retries_exceeded, 0);
    assert_eq!(r.qps[0].error, None);
    assert_eq!(t.causes(), vec![FindingCause::QpStuck]);
    let text = &r.findings[0].text;
    assert!(
        text.contains(&format!("PSN {stuck} and 0 more unacknowledged; the timer fired 3 times (1 ms, then 64 ms x2 (BALBOA's schedule")),
        "{text}"
    );
    rocescope_testkit::assert_contains(text, "a dead QP, not the end of its workload");
}

#[test]
fn unacknowledged_data_at_the_end_with_no_resend_is_a_stuck_qp() {
    let (mut t, psn) = Trace::steady_from_start(100);
    t.req(Opcode::RC_WRITE_MIDDLE, psn, 300);
    t.req(Opcode::RC_WRITE_MIDDLE, psn + 1, 300);
    // Other traffic runs on for 5 ms; this QP never hears back.
    t.elsewhere(5_000_000);
    assert_eq!(t.causes(), vec![FindingCause::QpStuck]);
    let r = t.an.report();
    assert_says(
        &r.findings[0],
        &format!("PSN {psn} and 1 more unacknowledged, no resend"),
    );
    // The same end with everything ACKed is the end of the workload.
    let (mut t, _) = Trace::steady_from_start(100);
    t.elsewhere(5_000_000);
    assert_eq!(t.causes(), vec![]);
}

#[test]
fn an_ibta_timer_is_named_by_its_exponent() {
    // 4.096 µs x 2^14 = 67.1 ms, three times.
    let (mut t, psn) = Trace::steady_from_start(50);
    t.req(Opcode::RC_WRITE_MIDDLE, psn, 300);
    for _ in 0..3 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 67_108_864);
    }
    let r = t.an.report();
    assert_eq!(t.causes(), vec![FindingCause::QpStuck]);
    assert_says(
        &r.findings[0],
        "67.109 ms x3 (IBTA local ACK timeout 14: 4.096 µs x 2^14 = 67.109 ms)",
    );
}

#[test]
fn fatal_naks_are_findings_and_leave_the_qp_in_error() {
    for (code, name) in [
        (NakCode::InvalidRequest, "Invalid Request NAK"),
        (NakCode::RemoteAccessError, "Remote Access Error NAK"),
    ] {
        let (mut t, psn) = Trace::steady_from_start(100);
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 300);
        let nak_row = t.index;
        t.resp(Opcode::RC_ACK, psn, Syndrome::Nak(code), 100);
        let nak_ns = t.t;
        // The application goes on posting; nothing is answered.
        for k in 1..50 {
            t.req(Opcode::RC_WRITE_MIDDLE, psn + k, 400);
        }
        let r = t.an.report();
        assert_eq!(t.causes(), vec![FindingCause::FatalNak], "{name}");
        let f = &r.findings[0];
        assert_eq!(f.first_index, Some(nak_row));
        assert_eq!(f.rows, vec![nak_row]);
        assert_says(f, &format!("{name} at PSN {psn} (row {}): ", nak_row + 1));
        assert_says(f, "the QP is in error from then on");
        assert_eq!(
            r.qp_state_at(0, nak_ns + 1),
            Some(QpState::Error {
                since_ns: nak_ns,
                reason: QpErrorReason::Nak(code)
            })
        );
        assert_eq!(r.qp_state_at(0, nak_ns - 2_000), Some(QpState::Ready));
    }
}

/// READs of 4 packets, one after the other, each answered 1 µs later.
fn steady_reads(t: &mut Trace, psn: &mut u32, n: u32) {
    for _ in 0..n {
        t.req(Opcode::RC_READ_REQUEST, *psn, 200);
        t.resp(Opcode::RC_READ_RESPONSE_FIRST, *psn, ACK, 1_000);
        t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, *psn + 1, ACK, 400);
        t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, *psn + 2, ACK, 400);
        t.resp(Opcode::RC_READ_RESPONSE_LAST, *psn + 3, ACK, 400);
        *psn += 4;
    }
}

#[test]
fn a_read_reissued_by_the_timer_after_a_visible_gap_is_a_timeout_and_says_both() {
    let mut t = Trace::new();
    let mut psn = 0;
    steady_reads(&mut t, &mut psn, 60);
    let lost = psn + 1;
    t.req(Opcode::RC_READ_REQUEST, psn, 200);
    t.resp(Opcode::RC_READ_RESPONSE_FIRST, psn, ACK, 1_000);
    // psn + 1 lost: the gap shows at psn + 2.
    t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, psn + 2, ACK, 800);
    let gap_row = t.index - 1;
    t.resp(Opcode::RC_READ_RESPONSE_LAST, psn + 3, ACK, 400);
    // BALBOA has no implied-NAK path: its 1 ms timer re-issues the READ.
    assert_eq!(
        t.req(Opcode::RC_READ_REQUEST, psn + 1, 1_000_000),
        Class::RETRANSMISSION
    );
    t.resp(Opcode::RC_READ_RESPONSE_FIRST, psn + 1, ACK, 1_000);
    t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, psn + 2, ACK, 400);
    t.resp(Opcode::RC_READ_RESPONSE_LAST, psn + 3, ACK, 400);
    psn += 4;
    steady_reads(&mut t, &mut psn, 60);
    let r = t.an.report();
    assert_eq!(r.episodes.len(), 1);
    let e = r.episodes[0];
    assert_eq!(e.cause, EpisodeCause::Timeout);
    let u = e.unacted.expect("the gap is kept as evidence");
    assert_eq!(
        (u.cause, u.psn, u.index),
        (EpisodeCause::ImpliedNak, lost, gap_row)
    );
    assert_eq!(
        (
            r.counters.local_ack_timeout_err,
            r.counters.implied_nak_seq_err
        ),
        (1, 0)
    );
    assert_eq!(t.causes(), vec![FindingCause::TimeoutStall]);
    let f = &r.findings[0];
    assert_says(
        f,
        &format!(
            "; timeout after 1.002 ms; the gap in READ responses at PSN {lost} was visible 1 ms earlier: the requester did not act on it"
        ),
    );
    assert!(f.rows.contains(&gap_row), "{:?}", f.rows);
}

#[test]
fn congestion_on_read_responses_is_found_in_the_reverse_direction() {
    let mut t = Trace::new();
    let mut psn = 0;
    steady_reads(&mut t, &mut psn, 40);
    // The responses are CE-marked and slowed to a quarter; the requester's
    // CNPs go back towards the responder.
    for _ in 0..20 {
        t.req(Opcode::RC_READ_REQUEST, psn, 200);
        for k in 0..4 {
            let op = match k {
                0 => Opcode::RC_READ_RESPONSE_FIRST,
                3 => Opcode::RC_READ_RESPONSE_LAST,
                _ => Opcode::RC_READ_RESPONSE_MIDDLE,
            };
            let mut b = PacketBuilder::rocev2_ipv4(B, A, op, 0x11, psn + k);
            b.ext.aeth.syndrome = ACK.to_u8();
            if let crate::NetHeader::Ipv4 { ecn, .. } = &mut b.net {
                *ecn = 3;
            }
            t.push(b.build(&[0; 4096]), if k == 0 { 1_000 } else { 1_600 });
        }
        t.cnp_to_responder(10);
        psn += 4;
    }
    steady_reads(&mut t, &mut psn, 40);
    let r = t.an.report();
    t.assert_causes(&[FindingCause::Congestion]);
    assert_says(&r.findings[0], "congestion: ");
}

#[test]
fn a_dcqcn_staircase_is_found_against_the_level_before_the_first_cnp() {
    let mut t = Trace::new();
    let mut psn = 0u32;
    // 1 KiB WRITEs; `per_us` of them every µs.
    let mut run = |t: &mut Trace, per_us: u64, us: u64, cnp_first: bool| {
        for u in 0..us {
            if cnp_first && u == 0 {
                t.cnp_to_requester(0);
            }
            for _ in 0..per_us {
                t.req_len(Opcode::RC_WRITE_MIDDLE, psn, 1024, 1_000 / per_us - 10);
                t.ack(psn, 10);
                psn += 1;
            }
        }
    };
    run(&mut t, 10, 100, false);
    // A CNP every 50 µs, each cutting the rate by a fifth (never by half
    // at once): 10 -> 8 -> 6 -> 5 -> 4 -> 3 packets a µs.
    for per_us in [8, 6, 5, 4, 3] {
        run(&mut t, per_us, 50, true);
    }
    run(&mut t, 3, 150, false);
    run(&mut t, 10, 100, false);
    let r = t.an.report();
    t.assert_causes(&[FindingCause::Congestion]);
    let f = &r.findings[0];
    assert_says(
        f,
        "a stepwise rate cut (DCQCN-style) from the level before the first CNP",
    );
    assert!(
        f.before_gbytes_s > 9.0,
        "the level before the first CNP: {f:?}"
    );
}

#[test]
fn a_window_full_at_the_window_the_capture_shows_is_window_limited() {
    let mut t = Trace::new();
    let mut psn = 0u32;
    // 4 packets in flight, ACKed one RTT later: at 1 µs RTT 16 KiB a µs,
    // then the RTT grows to 8 µs (a slow responder): 2 KiB a µs.
    let mut burst = |t: &mut Trace, rtt_ns: u64, rounds: u32| {
        for _ in 0..rounds {
            for k in 0..4 {
                t.req(Opcode::RC_WRITE_MIDDLE, psn + k, 50);
            }
            t.ack(psn + 3, rtt_ns);
            psn += 4;
        }
    };
    burst(&mut t, 1_000, 100);
    burst(&mut t, 8_000, 10);
    burst(&mut t, 1_000, 100);
    let r = t.an.report();
    assert_eq!(r.qps[0].window_packets, 4);
    t.assert_causes(&[FindingCause::WindowLimited]);
    assert_says(
        &r.findings[0],
        "the window full at 4 packets (the capture shows the sender held at it)",
    );
}

#[test]
fn drops_of_one_kind_on_one_qp_are_one_finding_with_each_as_an_item() {
    let (mut t, mut psn) = Trace::steady_from_start(250);
    let mut naks = Vec::new();
    for _ in 0..10 {
        let (nak_row, _) = t.go_back_n(&mut psn, 300, 20_000, 100);
        naks.push(nak_row);
        t.steady(&mut psn, 250);
    }
    let r = t.an.report();
    assert_eq!(r.episodes.len(), 10);
    t.assert_causes(&[FindingCause::LossGoBackN]);
    let f = &r.findings[0];
    assert_eq!(f.items.len(), 10);
    rocescope_testkit::assert_starts_with(
        &f.text,
        "QP 0x000012 10.0.0.1 > 10.0.0.2: 10 drops from loss and Go-Back-N resends from ",
    );
    assert_says(f, "; the worst, ");
    for nak in &naks {
        assert!(f.rows.contains(nak), "NAK row {nak} in {:?}", f.rows);
    }
    assert!(
        f.items
            .iter()
            .all(|i| i.text.contains("NAK (PSN sequence error) at PSN"))
    );
}

#[test]
fn the_qp_state_is_the_state_at_the_time_not_its_history() {
    let (mut t, mut psn) = Trace::steady_from_start(100);
    let (_, nak_ns) = t.go_back_n(&mut psn, 300, 20_000, 100);
    t.steady(&mut psn, 100);
    let r = t.an.report();
    assert_eq!(
        r.qp_state_at(0, nak_ns + 10_000),
        Some(QpState::Recovering {
            since_ns: nak_ns,
            cause: EpisodeCause::NakSeqErr
        })
    );
    // Once recovered it is ready again, not "recovering" for ever.
    assert_eq!(r.qp_state_at(0, t.t - 5_000), Some(QpState::Ready));
    assert_eq!(r.qp_state_at(0, r.qps[0].first_ts_ns - 1), None);
    assert_eq!(r.qp_state_at(7, t.t), None);
}

/// "Window full" means the window is full then: messages smaller than
/// the window never fill it, whatever the most outstanding was, and a QP
/// with nothing outstanding is not full (issue 53: "window full ... 0/4").
#[test]
fn a_window_is_full_only_at_a_window_the_sender_was_held_at() {
    // Messages of 4 packets (a fifth of the window), each ACKed, the next
    // posted 4.5 µs after the last ACK.
    let mut t = Trace::new();
    let mut psn = 0u32;
    // Times with 4 outstanding, the most this QP ever has.
    let mut at_four = Vec::new();
    for _ in 0..20 {
        for op in [
            Opcode::RC_WRITE_FIRST,
            Opcode::RC_WRITE_MIDDLE,
            Opcode::RC_WRITE_MIDDLE,
            Opcode::RC_WRITE_LAST,
        ] {
            t.req(op, psn, 335);
            psn += 1;
        }
        at_four.push(t.t + 100);
        for k in (1..=4).rev() {
            t.ack(psn - k, if k == 4 { 860 } else { 335 });
        }
        t.t += 4_500;
    }
    let r = t.an.report();
    let q = &r.qps[0];
    assert_eq!((q.window_packets, q.window_seen), (4, false));
    for ts in at_four {
        assert_eq!(r.qp_state_at(0, ts), Some(QpState::Ready), "at {ts}");
    }
    for ts in (q.first_ts_ns..=q.last_ts_ns).step_by(50) {
        assert!(
            !matches!(r.qp_state_at(0, ts), Some(QpState::WindowFull { .. })),
            "window full at {ts} with {:?} outstanding",
            r.outstanding_at(0, ts)
        );
    }
    assert_eq!(r.qp_state_at(0, q.last_ts_ns), Some(QpState::Idle));
    assert_eq!(r.outstanding_at(0, q.last_ts_ns), Some(0));

    // 16 in flight, ACKed 200 µs later, each ACK letting one more go at
    // once: held at 16.
    let mut t = Trace::new();
    let mut next = 0u32;
    for _ in 0..16 {
        t.req(Opcode::RC_WRITE_MIDDLE, next, 335);
        next += 1;
    }
    let held_ns = t.t + 100_000;
    for round in 0..4 {
        for k in 0..16 {
            t.ack(round * 16 + k, if k == 0 { 200_000 } else { 235 });
            t.req(Opcode::RC_WRITE_MIDDLE, next, 100);
            next += 1;
        }
    }
    let r = t.an.report();
    let q = &r.qps[0];
    assert_eq!((q.window_packets, q.window_seen), (16, true));
    assert_eq!(
        r.qp_state_at(0, held_ns),
        Some(QpState::WindowFull { window_packets: 16 })
    );
    assert_eq!(
        r.qp_state_at(0, q.last_ts_ns),
        Some(QpState::WindowFull { window_packets: 16 }),
        "the capture ends with the window full"
    );
}

/// A fall in the rate where the capture missed frames is a gap in the
/// capture, not a drop in throughput (issue 53: "unexplained drops ... no
/// loss, congestion, full window or idle sender" while the live link's
/// client dropped records).
#[test]
fn a_fall_where_the_capture_missed_frames_is_told_as_capture_loss() {
    // Missed by the link: 250 packets never reach the analysis, the client
    // counting them (a running count, read twice).
    let gap = |t: &mut Trace, counted: bool| {
        let mut psn = 0u32;
        t.steady(&mut psn, 250);
        // 8 sent whose ACKs the capture misses, then 100 µs missed.
        for _ in 0..8 {
            t.req(Opcode::RC_WRITE_MIDDLE, psn, 300);
            psn += 1;
        }
        if counted {
            // The client's wall clock, not the capture's.
            assert!(!t.an.capture_drop_total(7, 0, 1 << 60));
            assert!(t.an.capture_drop_total(7, 500, (1 << 60) + 1_000));
        }
        t.t += 100_000;
        psn += 242;
        t.steady(&mut psn, 250);
    };
    let mut t = Trace::new();
    gap(&mut t, true);
    let r = t.an.report();
    t.assert_causes(&[FindingCause::CaptureLoss]);
    assert_says(
        &r.findings[0],
        "the capture missed 500 frames then: a gap in what was captured, not a fall in what was sent",
    );
    // Missed by the sniffer: the ACKs after the gap show the PSNs were sent.
    let mut t = Trace::new();
    gap(&mut t, false);
    let r = t.an.report();
    assert_eq!(r.counters.capture_loss_packets, 242);
    t.assert_causes(&[FindingCause::CaptureLoss]);
}

/// A Go-Back-N episode is told however coarse the rate series has grown:
/// a long run (a live session) says what a short recording of it says
/// (issue 53: the live workbench had "no findings (yet)" with hundreds of
/// NAKs).
#[test]
fn a_loss_is_told_however_long_the_capture() {
    let told = |tail_ms: u64| {
        let (mut t, mut psn) = Trace::steady_from_start(250);
        // PSN `psn` lost: the next one is NAKed, 40 µs later Go-Back-N.
        t.go_back_n(&mut psn, 300, 40_000, 100);
        // Then `tail_ms` more of the steady stream, one packet a µs.
        for _ in 0..tail_ms * 1_000 {
            t.req(Opcode::RC_WRITE_MIDDLE, psn, 900);
            t.ack(psn, 100);
            psn += 1;
        }
        let r = t.an.report();
        (r.qps[0].series.bin_ns, t.causes(), r.findings)
    };
    let (fine_ns, short, _) = told(1);
    let (coarse_ns, long, findings) = told(50);
    assert!(
        coarse_ns >= 16_000 && fine_ns <= 2_000,
        "{fine_ns} {coarse_ns}"
    );
    assert_eq!(short, vec![FindingCause::LossGoBackN]);
    assert_eq!(long, short, "{findings:#?}");
    assert_says(&findings[0], "NAK (PSN sequence error) at PSN 250");
}

/// Every drop is told by where its time went (issue 48): a 197 µs PFC
/// pause toward the requester, its PAUSE and XON frames in the capture and
/// no other evidence, is a `pfc_pause` finding naming the paused time.
#[test]
fn a_pause_frame_toward_the_requester_tells_the_drop_it_causes() {
    let mut t = Trace::new();
    let mut psn = 0u32;
    t.message(&mut psn, 250);
    let first = psn;
    t.req(Opcode::RC_WRITE_FIRST, first, 300);
    t.ack(first, 100);
    psn += 1;
    // PAUSE for 38,477 quanta (197 µs at 100 Gb/s), XON after 197 µs.
    t.an.pause(t.t + 300, None, 38_477);
    t.t += 300;
    t.an.pause(t.t + 197_000, None, 0);
    t.t += 197_000;
    for _ in 0..250 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 400);
        t.ack(psn, 100);
        psn += 1;
    }
    let r = t.an.report();
    t.assert_causes(&[FindingCause::PfcPause]);
    let f = &r.findings[0];
    assert_says(f, "the link was paused (PFC); time: paused 9");
    let paused = r.qps[0].states.totals_ns[TimeState::Paused as usize];
    assert_eq!(paused, 197_000, "XON ends the pause");
}

#[test]
fn the_cards_counters_are_checked_against_the_capture() {
    let card = |psn_drops, retransmissions, stream_down| CardCounters {
        psn_drops,
        retransmissions,
        stream_down,
    };
    // A NAK loss the capture shows in full: 2 resends (told as loss, too
    // short a stall for a drop in the rate).
    let build = || {
        let (mut t, mut psn) = Trace::steady_from_start(50);
        t.go_back_n(&mut psn, 300, 2_000, 100);
        t.steady(&mut psn, 50);
        t
    };
    let first_ns = 1_000_000;
    // The card agrees: nothing told of the card.
    let mut t = build();
    let end = t.t + 5_000;
    t.an.card_counters(first_ns, card(1, 10, 0));
    t.an.card_counters(end, card(2, 12, 0));
    assert_eq!(t.causes(), vec![FindingCause::LossGoBackN]);
    // The card resent 5: the sniffer missed 3.
    let mut t = build();
    t.an.card_counters(first_ns, card(1, 10, 0));
    t.an.card_counters(end, card(2, 15, 0));
    assert_eq!(
        t.causes(),
        vec![FindingCause::CardCounterMismatch, FindingCause::LossGoBackN]
    );
    // The report of a finished analysis, its series moved, is the same.
    assert_eq!(t.an.clone().into_report(), t.an.report());
    let f = &t.an.report().findings[0];
    assert_eq!(f.qp, CARD_QP);
    assert_says(f, "the card counted 5 retransmissions between ");
    assert_says(
        f,
        ", the capture shows 2: the sniffer missed frames the card sent",
    );
    // STRM down.
    let mut t = build();
    t.an.card_counters(first_ns, card(1, 10, 0));
    t.an.card_counters(end, card(2, 12, 1));
    assert_eq!(
        t.causes(),
        vec![FindingCause::LossGoBackN, FindingCause::StreamDown]
    );
    assert!(
        t.an.report().findings[1]
            .text
            .contains("STRM down = 1: its network stack is down until the card is reprogrammed"),
    );
    // PSN drops on a capture that shows no loss at all.
    let (mut t, _) = Trace::steady_from_start(50);
    t.an.card_counters(first_ns, card(0, 0, 0));
    t.an.card_counters(t.t, card(4, 0, 0));
    assert_eq!(t.causes(), vec![FindingCause::CardCounterMismatch]);
    assert!(
        t.an.report().findings[0]
            .text
            .contains("the card dropped 4 requests for their PSN"),
    );
}

#[test]
fn a_share_of_a_busy_link_is_not_a_drop_but_a_lone_slowdown_is_told() {
    // QP 0x12 alone at 10 GB/s, then at 3 GB/s for 200 µs. With a second
    // QP between the same hosts taking the rest of the link, that is
    // sharing; alone, it is a drop its time by state tells: the host.
    for shared in [true, false] {
        let (mut t, mut psn) = Trace::steady_from_start(250);
        let mut other = 10_000u32;
        for k in 0..150u32 {
            // Each µs: 3 KiB of QP 0x12's, 7 KiB of QP 0x13's when shared.
            if k % 4 != 3 {
                t.req_len(Opcode::RC_WRITE_MIDDLE, psn, 4096, 1_300);
                t.ack(psn, 10);
                psn += 1;
            } else {
                t.t += 1_310;
            }
            if shared {
                for _ in 0..2 {
                    let b = PacketBuilder::rocev2_ipv4(A, B, Opcode::RC_WRITE_MIDDLE, 0x13, other);
                    t.push(b.build(&[0; 4096]), 10);
                    let mut ack = PacketBuilder::rocev2_ipv4(B, A, Opcode::RC_ACK, 0x14, other);
                    ack.ext.aeth.syndrome = ACK.to_u8();
                    t.push(ack.build(&[]), 10);
                    other += 1;
                }
            }
        }
        t.steady(&mut psn, 250);
        let r = t.an.report();
        let mine: Vec<FindingCause> = r
            .findings
            .iter()
            .filter(|f| f.qp == 0)
            .map(|f| f.cause)
            .collect();
        if shared {
            assert_eq!(r.qps.len(), 2);
            assert_eq!(mine, vec![], "{:#?}", r.findings);
        } else {
            // Told by where its time went: waiting on its host.
            assert_eq!(mine, vec![FindingCause::HostLimited], "{:#?}", r.findings);
            assert_says(
                &r.findings[0],
                "; time: host_limited 81% (16% before), sending 19% (84% before)",
            );
        }
    }
}

#[test]
fn an_rnr_storm_is_one_finding_and_waits_on_the_rnr_timer_not_a_timeout() {
    let (mut t, mut psn) = Trace::steady_from_start(250);
    // 5 times: an RNR NAK, the requester waits 200 µs (longer than the
    // timeout silence: still an RNR wait, not a timer expiry) and resends;
    // the stream goes on.
    for _ in 0..5 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 300);
        t.resp(Opcode::RC_ACK, psn, Syndrome::RnrNak { timer: 3 }, 100);
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 200_000);
        t.ack(psn, 100);
        psn += 1;
        t.steady(&mut psn, 250);
    }
    let r = t.an.report();
    assert_eq!(r.counters.rnr_nak, 5);
    assert_eq!(
        r.counters.local_ack_timeout_err, 0,
        "an RNR wait is not a timeout"
    );
    assert!(r.episodes.iter().all(|e| e.cause == EpisodeCause::Rnr));
    t.assert_causes(&[FindingCause::ReceiverNotReady]);
    let f = &r.findings[0];
    assert_eq!(f.items.len(), 5);
    assert_says(f, ": 5 drops from RNR NAKs from ");
}

/// RNR NAKs on one PSN until the requester stops resending: its RNR retry
/// count ran out (`rnr_nak_retry_err`), and the QP is in error, not idle.
#[test]
fn rnr_naks_until_the_requester_gives_up_exhaust_the_rnr_retries() {
    let (mut t, psn) = Trace::steady_from_start(250);
    let stuck = psn;
    t.req(Opcode::RC_WRITE_MIDDLE, stuck, 300);
    for _ in 0..7 {
        t.resp(Opcode::RC_ACK, stuck, Syndrome::RnrNak { timer: 3 }, 100);
        t.req(Opcode::RC_WRITE_MIDDLE, stuck, 30_000);
    }
    t.resp(Opcode::RC_ACK, stuck, Syndrome::RnrNak { timer: 3 }, 100);
    let last_nak_ns = t.t;
    t.elsewhere(10_000_000);
    let r = t.an.report();
    let c = r.qps[0].counters;
    assert_eq!((c.rnr_nak, c.rnr_nak_retry_err), (8, 1));
    assert_eq!(
        c.req_transport_retries_exceeded, 0,
        "not the timer's retries"
    );
    assert_eq!(r.counters.rnr_nak_retry_err, 1);
    let err = r.qps[0].error.expect("in error");
    assert_eq!(
        (err.reason, err.psn, err.ts_ns),
        (
            QpErrorReason::RnrRetriesExceeded { naks: 8 },
            stuck,
            last_nak_ns + 30_000
        )
    );
    assert!(
        t.causes().contains(&FindingCause::RnrRetriesExceeded),
        "{:#?}",
        r.findings
    );
    assert!(matches!(
        r.qp_state_at(0, err.ts_ns + 1),
        Some(QpState::Error {
            reason: QpErrorReason::RnrRetriesExceeded { naks: 8 },
            ..
        })
    ));
}

/// An RNR storm the requester rides out (it resends and is ACKed) spends no
/// RNR retry count.
#[test]
fn an_rnr_storm_that_recovers_is_no_rnr_retry_error() {
    let (mut t, mut psn) = Trace::steady_from_start(250);
    t.req(Opcode::RC_WRITE_MIDDLE, psn, 300);
    for _ in 0..3 {
        t.resp(Opcode::RC_ACK, psn, Syndrome::RnrNak { timer: 3 }, 100);
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 30_000);
    }
    t.ack(psn, 100);
    psn += 1;
    t.steady(&mut psn, 250);
    t.elsewhere(10_000_000);
    let r = t.an.report();
    assert_eq!(r.qps[0].counters.rnr_nak_retry_err, 0);
    assert_eq!(r.qps[0].error, None);
}

/// Hours of episodes keep the newest, and count every one per QP and cause.
#[test]
fn episodes_stay_bounded_and_every_one_is_counted() {
    let mut log = super::EpisodeLog::default();
    let ep = |qp: u32, cause: EpisodeCause, start_ns: u64| Episode {
        qp,
        cause,
        first_index: start_ns,
        last_index: start_ns,
        start_ns,
        end_ns: start_ns,
        from_psn: 0,
        packets_resent: 1,
        bytes_resent: 0,
        recovery_ns: 0,
        silence_ns: 0,
        nak_inferred: false,
        retries: 0,
        timer_expiries: 0,
        unacted: None,
        nak_generation_ns: None,
        nak_reaction_ns: None,
        recovered: true,
    };
    let n = super::MAX_EPISODES as u64 + 10;
    for i in 0..n {
        let cause = if i % 2 == 0 {
            EpisodeCause::NakSeqErr
        } else {
            EpisodeCause::Timeout
        };
        log.push(ep((i % 3) as u32, cause, i));
    }
    assert_eq!(log.kept.len(), super::MAX_EPISODES);
    assert_eq!(log.let_go, 10);
    assert_eq!(
        log.kept.front().map(|e| e.start_ns),
        Some(10),
        "the oldest go"
    );
    let all: u64 = log.by_qp.iter().flatten().sum();
    assert_eq!(all, n, "every episode counted");
    assert_eq!(log.by_qp.len(), 3);
}

/// Hours of ACKs keep a bounded, even sample of their round trips.
#[test]
fn rtt_samples_stay_bounded_and_spread_over_the_whole_flow() {
    let mut r = super::RttSamples::default();
    for i in 0..1_000_000u64 {
        r.add(i);
    }
    assert!(r.kept.len() <= super::RTT_SAMPLES_MAX, "{}", r.kept.len());
    assert!(
        r.kept.len() > super::RTT_SAMPLES_MAX / 4,
        "{}",
        r.kept.len()
    );
    // Evenly spread: the median sample is near the middle of the flow.
    let mid = r.kept[r.kept.len() / 2];
    assert!((400_000..600_000).contains(&mid), "{mid}");
    let mut few = super::RttSamples::default();
    for i in 0..100u64 {
        few.add(i);
    }
    assert_eq!(
        few.kept,
        (0..100).collect::<Vec<_>>(),
        "all kept below the bound"
    );
}

/// What most packets read and write of their flow stays within its first
/// three cache lines, a requester's round trips in the fourth, each flow
/// starting on a line (the layout the analysis' speed depends on: a field
/// moved to the end shows here).
#[test]
fn a_flows_hot_fields_share_its_first_three_cache_lines() {
    use std::mem::{align_of, offset_of, size_of};
    assert_eq!(align_of::<Flow>(), 64);
    let every_packet = [
        ("packets", offset_of!(Flow, packets), size_of::<u64>()),
        ("last_ts_ns", offset_of!(Flow, last_ts_ns), size_of::<u64>()),
        ("wire_bytes", offset_of!(Flow, wire_bytes), size_of::<u64>()),
        ("cursor", offset_of!(Flow, cursor), size_of::<BinCursor>()),
        ("requests", offset_of!(Flow, requests), size_of::<u64>()),
        ("responses", offset_of!(Flow, responses), size_of::<u64>()),
    ];
    for (name, at, len) in every_packet {
        assert!(at + len <= 64, "{name} at {at}: past the first line");
    }
    let requests_and_acks = [
        ("series", offset_of!(Flow, series), size_of::<Series>()),
        ("peer", offset_of!(Flow, peer), 8),
        ("started", offset_of!(Flow, started), 1),
        ("last_req_read", offset_of!(Flow, last_req_read), 1),
        ("next_psn", offset_of!(Flow, next_psn), 4),
        ("outstanding", offset_of!(Flow, outstanding), 32),
        ("last_ack_psn", offset_of!(Flow, last_ack_psn), 8),
        ("read_resp_next", offset_of!(Flow, read_resp_next), 8),
        ("read_gap", offset_of!(Flow, read_gap), 8),
        ("pmtu_bytes", offset_of!(Flow, pmtu_bytes), 4),
        ("peak_outstanding", offset_of!(Flow, peak_outstanding), 4),
    ];
    for (name, at, len) in requests_and_acks {
        assert!(at + len <= 192, "{name} at {at}: past the third line");
    }
    // A requester's fourth line: its last request's time and the ACK
    // round trips.
    for (name, at, len) in [
        ("last_req_ts_ns", offset_of!(Flow, last_req_ts_ns), 8),
        ("rtt_avg_ns", offset_of!(Flow, rtt_avg_ns), 8),
        ("rtt_ns", offset_of!(Flow, rtt_ns), size_of::<RttSamples>()),
    ] {
        assert!(
            (192..=256).contains(&(at + len)),
            "{name} at {at}: not in the fourth line"
        );
    }
}
