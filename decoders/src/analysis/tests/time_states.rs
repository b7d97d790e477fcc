//! Time by state per requester QP (issue 48): hand-built traces, one per
//! state, each checking where the time went and that every nanosecond of
//! the span is in exactly one state.

use super::*;
use crate::analysis::{StateRuns, TimeState};

/// A 4 KiB WRITE Middle on the wire at 100 Gb/s: 4154 bytes, FCS,
/// preamble and gap, 334 ns.
const PACKET_NS: u64 = 334;

fn op(k: u32, n: u32) -> Opcode {
    match (k, n) {
        (0, 1) => Opcode::RC_WRITE_ONLY,
        (0, _) => Opcode::RC_WRITE_FIRST,
        (k, n) if k + 1 == n => Opcode::RC_WRITE_LAST,
        _ => Opcode::RC_WRITE_MIDDLE,
    }
}

/// Nanoseconds in `state`.
fn ns(runs: &StateRuns, state: TimeState) -> u64 {
    runs.totals_ns[state as usize]
}

/// Every nanosecond in one state: the totals sum to the span, the runs
/// tile it, and the runs' own time per state is the totals.
fn check_tiles(runs: &StateRuns) {
    assert_eq!(
        runs.totals_ns.iter().sum::<u64>(),
        runs.end_ns - runs.start_ns,
        "{runs:?}"
    );
    let mut at = runs.start_ns;
    let mut by_state = [0u64; crate::analysis::TIME_STATES];
    for (start, end, state) in runs.iter() {
        assert_eq!(start, at, "runs tile the span");
        assert!(end > start);
        by_state[state as usize] += end - start;
        at = end;
    }
    assert_eq!(at, runs.end_ns);
    assert_eq!(by_state, runs.totals_ns);
}

impl Trace {
    /// A message of `n` WRITEs from A, `gap_ns` apart, none ACKed yet.
    fn burst(&mut self, psn: &mut u32, n: u32, gap_ns: u64) {
        for k in 0..n {
            self.req(op(k, n), *psn, if k == 0 { 0 } else { gap_ns });
            *psn += 1;
        }
    }
}

#[test]
fn frames_back_to_back_a_rounded_nanosecond_apart_are_one_sending_run() {
    let mut t = Trace::new();
    let mut psn = 0;
    // A Middle's 334.24 ns on the wire, stamped 335 ns apart: the
    // nanosecond between is the clock's rounding, not a host gap.
    t.req(Opcode::RC_WRITE_FIRST, psn, 0);
    psn += 1;
    for _ in 0..20 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, 336);
        psn += 1;
    }
    let r = t.an.report();
    let runs = &r.qps[0].states;
    check_tiles(runs);
    assert_eq!(ns(runs, TimeState::HostLimited), 0, "{:?}", runs.totals_ns);
    assert_eq!(runs.len(), 1, "{:?}", runs.iter().collect::<Vec<_>>());
}

#[test]
fn a_message_is_sending_and_host_gaps_and_the_time_between_messages_idle() {
    let mut t = Trace::new();
    let mut psn = 0;
    for _ in 0..2 {
        // 8 packets 400 ns apart: 334 ns on the wire, 66 ns of host gap.
        t.burst(&mut psn, 8, 400);
        t.ack(psn - 1, 2_000);
        t.t += 10_000;
    }
    let r = t.an.report();
    let runs = &r.qps[0].states;
    check_tiles(runs);
    // A First carries a RETH: 335 ns on the wire.
    assert_eq!(ns(runs, TimeState::Sending), 2 * (335 + 7 * PACKET_NS));
    assert_eq!(
        ns(runs, TimeState::HostLimited),
        2 * ((400 - 335) + 6 * (400 - PACKET_NS))
    );
    // After the first Last: its ACK 2 µs later, then 10 µs with nothing
    // posted; the span ends a nanosecond after the second one's ACK.
    assert_eq!(
        ns(runs, TimeState::Idle),
        (2_000 - PACKET_NS) + 10_000 + (2_000 - PACKET_NS) + 1
    );
    assert_eq!(
        r.time_state_at(0, r.qps[0].first_ts_ns + 3 * 400 + 100),
        Some(TimeState::Sending)
    );
    assert_eq!(
        r.time_state_at(0, r.qps[0].first_ts_ns + 3 * 400 + 350),
        Some(TimeState::HostLimited)
    );
    assert_eq!(
        r.time_state_at(0, r.qps[0].last_ts_ns),
        Some(TimeState::Idle)
    );
}

#[test]
fn two_qps_of_one_host_at_the_link_rate_are_each_sending_half_and_sharing_half() {
    let mut t = Trace::new();
    let (mut a, mut b) = (0u32, 1_000u32);
    for k in 0..64u32 {
        let o = op(k, 64);
        // QP 0x12, then QP 0x13, back to back at 100 Gb/s.
        let f = PacketBuilder::rocev2_ipv4(A, B, o, 0x12, a).build(&[0; 4096]);
        t.push(f, if k == 0 { 0 } else { PACKET_NS });
        let f = PacketBuilder::rocev2_ipv4(A, B, o, 0x13, b).build(&[0; 4096]);
        t.push(f, PACKET_NS);
        a += 1;
        b += 1;
    }
    let r = t.an.report();
    assert_eq!(r.qps.len(), 2);
    let runs = &r.qps[0].states;
    check_tiles(runs);
    let span = runs.end_ns - runs.start_ns;
    let sending = ns(runs, TimeState::Sending);
    let sharing = ns(runs, TimeState::Sharing);
    assert!(sending + sharing >= span * 99 / 100, "{:?}", runs.totals_ns);
    assert!(
        sending.abs_diff(sharing) <= span / 50,
        "{sending} {sharing}"
    );
}

#[test]
fn outstanding_at_a_known_window_is_window_full() {
    let mut t = Trace::new();
    t.an = RcAnalysis::new(AnalysisConfig {
        window_packets: 4,
        ..AnalysisConfig::default()
    });
    let mut psn = 0;
    for _ in 0..10 {
        // 4 back to back fill the window; the ACKs come 10 µs later and the
        // next message follows at once.
        t.burst(&mut psn, 4, PACKET_NS);
        t.ack(psn - 1, 10_000);
    }
    let r = t.an.report();
    let runs = &r.qps[0].states;
    check_tiles(runs);
    let span = runs.end_ns - runs.start_ns;
    let full = ns(runs, TimeState::WindowFull);
    // Each round: 3 packets sending, then the 4th on the wire and the wait
    // for the ACK with the window full.
    assert_eq!(ns(runs, TimeState::Sending), 10 * 3 * PACKET_NS);
    assert!(full >= span * 9 / 10, "{:?}", runs.totals_ns);
    assert_eq!(
        r.time_state_at(0, r.qps[0].last_ts_ns - 5_000),
        Some(TimeState::WindowFull)
    );
}

/// READs of 4 packets at a window of 4, each issued 200 ns after the
/// last response of the one before: the READ responses cut the wait, the
/// window full until the last of them (the next READ needs 4), then idle
/// (a READ ends its message). The steady path of a QP that sends READs.
#[test]
fn reads_at_the_window_are_window_full_until_the_last_response_then_idle() {
    let mut t = Trace::new();
    t.an = RcAnalysis::new(AnalysisConfig {
        window_packets: 4,
        ..AnalysisConfig::default()
    });
    let rounds = 20;
    let mut psn = 0;
    for k in 0..rounds {
        t.req(Opcode::RC_READ_REQUEST, psn, if k == 0 { 0 } else { 200 });
        t.resp(Opcode::RC_READ_RESPONSE_FIRST, psn, ACK, 1_000);
        t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, psn + 1, ACK, 400);
        t.resp(Opcode::RC_READ_RESPONSE_MIDDLE, psn + 2, ACK, 400);
        t.resp(Opcode::RC_READ_RESPONSE_LAST, psn + 3, ACK, 400);
        psn += 4;
    }
    let r = t.an.report();
    let q = r.qps.iter().find(|q| q.requests > 0).unwrap();
    let runs = &q.states;
    check_tiles(runs);
    let idle = ns(runs, TimeState::Idle);
    // 200 ns before each READ after the first; after the last READ's
    // first response, with no READ of 4 to come, the window has room:
    // idle, to a nanosecond past the last response (the report's end).
    assert_eq!(
        idle,
        200 * (rounds - 1) + 3 * 400 + 1,
        "{:?}",
        runs.totals_ns
    );
    assert_eq!(
        ns(runs, TimeState::WindowFull) + idle,
        runs.end_ns - runs.start_ns,
        "{:?}",
        runs.totals_ns
    );
    // Between the first two responses of the READ before the last: the
    // window full (the next READ needs it empty).
    assert_eq!(
        runs.at(runs.end_ns - 1 - 3 * 400 - 1_000 - 200 - 200),
        Some(TimeState::WindowFull),
        "{runs:?}"
    );
}

#[test]
fn loss_is_recovering_from_the_nak_and_a_timer_resend_waiting_on_the_timer() {
    let mut t = Trace::new();
    let mut psn = 0;
    t.steady(&mut psn, 20);
    // PSN 20 lost: 21 NAKed 1 µs later, resent 5 µs after the NAK.
    t.req(Opcode::RC_WRITE_MIDDLE, 21, 300);
    t.seq_nak(20, 1_000);
    let nak_ns = t.t;
    t.req(Opcode::RC_WRITE_MIDDLE, 20, 5_000);
    t.req(Opcode::RC_WRITE_MIDDLE, 21, 400);
    t.ack(21, 1_000);
    let acked_ns = t.t;
    psn = 22;
    t.steady(&mut psn, 20);
    // PSN 42's ACK lost: the timer resends it 1 ms later.
    t.req(Opcode::RC_WRITE_MIDDLE, 42, 300);
    let sent_ns = t.t;
    t.req(Opcode::RC_WRITE_MIDDLE, 42, 1_000_000);
    let resent_ns = t.t;
    t.ack(42, 1_000);
    psn = 43;
    t.steady(&mut psn, 5);
    let r = t.an.report();
    let runs = &r.qps[0].states;
    check_tiles(runs);
    // From the NAK to the ACK of all it had sent.
    assert!(ns(runs, TimeState::Recovering) >= acked_ns - nak_ns);
    assert_eq!(
        r.time_state_at(0, nak_ns + 2_000),
        Some(TimeState::Recovering)
    );
    // From the last progress (42 on the wire) to the resend.
    let waited = ns(runs, TimeState::WaitingOnTimer);
    assert!(
        waited <= resent_ns - sent_ns && waited + 2 * PACKET_NS >= resent_ns - sent_ns,
        "{waited}"
    );
    assert_eq!(
        r.time_state_at(0, resent_ns - 500_000),
        Some(TimeState::WaitingOnTimer)
    );
}

#[test]
fn an_rnr_nak_is_an_rnr_wait_and_a_fatal_nak_the_error_state() {
    let mut t = Trace::new();
    let mut psn = 0;
    t.steady(&mut psn, 10);
    t.req(Opcode::RC_SEND_ONLY, 10, 300);
    t.resp(Opcode::RC_ACK, 10, Syndrome::RnrNak { timer: 14 }, 500);
    let rnr_ns = t.t;
    t.req(Opcode::RC_SEND_ONLY, 10, 200_000);
    let resent_ns = t.t;
    t.ack(10, 500);
    t.req(Opcode::RC_SEND_ONLY, 11, 300);
    t.resp(
        Opcode::RC_ACK,
        11,
        Syndrome::Nak(NakCode::RemoteAccessError),
        500,
    );
    let fatal_ns = t.t;
    t.req(Opcode::RC_SEND_ONLY, 12, 3_000);
    let r = t.an.report();
    let runs = &r.qps[0].states;
    check_tiles(runs);
    assert_eq!(ns(runs, TimeState::RnrWait), resent_ns - rnr_ns);
    assert_eq!(ns(runs, TimeState::Error), runs.end_ns - fatal_ns);
    assert_eq!(r.time_state_at(0, fatal_ns + 1), Some(TimeState::Error));
}

#[test]
fn a_pause_toward_the_sender_holds_it_and_a_cnp_paces_it() {
    let mut t = Trace::new();
    let mut psn = 0;
    t.burst(&mut psn, 4, PACKET_NS);
    // A PFC pause of 2000 quanta (10.24 µs at 100 Gb/s) mid-message.
    t.an.pause(t.t + 500, None, 2_000);
    let paused_ns = t.t + 500;
    t.burst_more(&mut psn, 4, 12_000);
    // A CNP from the responder, then gaps of 1 µs: paced.
    t.ack(psn - 1, 100);
    t.cnp_to_requester(100);
    let cnp_ns = t.t;
    for k in 0..10 {
        // The first 1 µs after the last packet (800 ns after the CNP).
        t.req(
            Opcode::RC_WRITE_MIDDLE,
            psn,
            if k == 0 { 800 } else { 1_000 },
        );
        psn += 1;
    }
    // Back at the link's rate: no longer paced.
    for _ in 0..10 {
        t.req(Opcode::RC_WRITE_MIDDLE, psn, PACKET_NS);
        psn += 1;
    }
    t.req(Opcode::RC_WRITE_MIDDLE, psn, 1_000);
    let r = t.an.report();
    let runs = &r.qps[0].states;
    check_tiles(runs);
    assert_eq!(ns(runs, TimeState::Paused), 10_240);
    assert_eq!(
        r.time_state_at(0, paused_ns + 5_000),
        Some(TimeState::Paused)
    );
    assert_eq!(ns(runs, TimeState::RateLimited), 10 * (1_000 - PACKET_NS));
    assert_eq!(
        r.time_state_at(0, cnp_ns + 1_500),
        Some(TimeState::RateLimited)
    );
    // The last gap after the rate came back is the host's.
    assert_eq!(
        r.time_state_at(0, r.qps[0].last_ts_ns - 100),
        Some(TimeState::HostLimited)
    );
}

impl Trace {
    /// `n` more Middles of a message, the first `first_gap_ns` after the
    /// last packet, then back to back.
    fn burst_more(&mut self, psn: &mut u32, n: u32, first_gap_ns: u64) {
        for k in 0..n {
            let gap = if k == 0 { first_gap_ns } else { PACKET_NS };
            self.req(Opcode::RC_WRITE_MIDDLE, *psn, gap);
            *psn += 1;
        }
    }
}
/// One step of a random trace: QPs of host A sending messages at and near
/// the link's rate, their responses from B, and what cuts a wait.
#[derive(Debug, Clone)]
enum Step {
    /// QP `qp`'s next request, `gap_ns` after the last frame, with a
    /// payload of `payload` bytes.
    Req {
        qp: u8,
        gap_ns: u64,
        payload: u16,
    },
    /// An ACK of QP `qp`'s newest PSN, or one `back` PSNs before it.
    Ack {
        qp: u8,
        gap_ns: u64,
        back: u8,
    },
    /// A sequence-error NAK, and QP `qp` resends `back` PSNs.
    Nak {
        qp: u8,
        gap_ns: u64,
        back: u8,
    },
    Cnp {
        qp: u8,
        gap_ns: u64,
    },
    Pause {
        gap_ns: u64,
        quanta: u16,
    },
    /// The next frame stamped `ns` before the last one (out of order).
    Back {
        ns: u64,
    },
    /// A report taken mid-trace (as the live workbench takes them).
    Report,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    // Gaps around a 4 KiB frame's 334 ns, the rounding, and longer waits.
    let gap = prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(3),
        Just(21),
        Just(PACKET_NS),
        Just(PACKET_NS + 1),
        Just(PACKET_NS + 21),
        10u64..2_000,
        2_000u64..200_000,
    ];
    let payload = prop_oneof![Just(4096u16), Just(1024), Just(0), 1u16..4096];
    prop_oneof![
        12 => (0u8..4, gap.clone(), payload).prop_map(|(qp, gap_ns, payload)| Step::Req { qp, gap_ns, payload }),
        5 => (0u8..4, gap.clone(), 0u8..4).prop_map(|(qp, gap_ns, back)| Step::Ack { qp, gap_ns, back }),
        1 => (0u8..4, gap.clone(), 0u8..6).prop_map(|(qp, gap_ns, back)| Step::Nak { qp, gap_ns, back }),
        1 => (0u8..4, gap.clone()).prop_map(|(qp, gap_ns)| Step::Cnp { qp, gap_ns }),
        1 => (gap.clone(), 0u16..400).prop_map(|(gap_ns, quanta)| Step::Pause { gap_ns, quanta }),
        1 => (1u64..3_000).prop_map(|ns| Step::Back { ns }),
        1 => Just(Step::Report),
    ]
}

/// Plays `steps` into an analysis: the reports taken on the way and at
/// the end.
fn play(steps: &[Step]) -> Vec<Report> {
    play_with(steps, &Facts::default())
}

/// What the source tells a trace's analysis besides the frames.
#[derive(Debug, Clone, Default)]
struct Facts {
    /// Each QP's card response time: (latency, each) ns.
    card_ns: Option<(u64, u64)>,
    /// Each QP's window, packets.
    window: Option<u32>,
    /// Every request by the general path.
    general_only: bool,
}

/// [`play`] with the source's `facts`.
fn play_with(steps: &[Step], facts: &Facts) -> Vec<Report> {
    let mut t = Trace::new();
    t.an.general_only = facts.general_only;
    for qp in 0..4 {
        if let Some((latency_ns, each_ns)) = facts.card_ns {
            t.an.qp_response_time(0x100 + qp, 0x200 + qp, latency_ns, each_ns);
        }
        if let Some(w) = facts.window {
            t.an.qp_window(0x100 + qp, 0x200 + qp, w);
        }
    }
    let mut psn = [0u32; 4];
    let mut pos = [0u32; 4];
    let mut reports = Vec::new();
    for s in steps {
        match *s {
            Step::Req {
                qp,
                gap_ns,
                payload,
            } => {
                let k = usize::from(qp);
                // Messages of 5: First, Middles, Last.
                let op = match pos[k] % 5 {
                    0 => Opcode::RC_WRITE_FIRST,
                    4 => Opcode::RC_WRITE_LAST,
                    _ => Opcode::RC_WRITE_MIDDLE,
                };
                pos[k] += 1;
                let mut b = PacketBuilder::rocev2_ipv4(A, B, op, 0x100 + u32::from(qp), psn[k]);
                b.ext.reth.dma_len = 5 * 4096;
                psn[k] += 1;
                t.push(b.build(&vec![0; usize::from(payload)]), gap_ns);
            }
            Step::Ack { qp, gap_ns, back } => {
                let k = usize::from(qp);
                let p = psn[k].saturating_sub(1 + u32::from(back));
                let mut b =
                    PacketBuilder::rocev2_ipv4(B, A, Opcode::RC_ACK, 0x200 + u32::from(qp), p);
                b.ext.aeth.syndrome = ACK.to_u8();
                t.push(b.build(&[]), gap_ns);
            }
            Step::Nak { qp, gap_ns, back } => {
                let k = usize::from(qp);
                let p = psn[k].saturating_sub(1 + u32::from(back));
                let mut b =
                    PacketBuilder::rocev2_ipv4(B, A, Opcode::RC_ACK, 0x200 + u32::from(qp), p);
                b.ext.aeth.syndrome = Syndrome::Nak(NakCode::PsnSequenceError).to_u8();
                t.push(b.build(&[]), gap_ns);
                psn[k] = p;
            }
            Step::Cnp { qp, gap_ns } => {
                let mut cnp =
                    PacketBuilder::rocev2_ipv4(B, A, Opcode::CNP, 0x200 + u32::from(qp), 0);
                cnp.bth.becn = true;
                t.push(cnp.build(&[0; 16]), gap_ns);
            }
            Step::Pause { gap_ns, quanta } => t.an.pause(t.t + gap_ns, None, quanta),
            Step::Back { ns } => t.t = t.t.saturating_sub(ns),
            Step::Report => reports.push(t.an.report()),
        }
    }
    reports.push(t.an.report());
    reports
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Every nanosecond of every QP's span in exactly one state, in every
    /// report, on random traces of four QPs of one host at and near the
    /// link's rate: ACKs, NAKs and resends, CNPs, pauses, frames stamped
    /// out of time order, reports taken mid-trace.
    #[test]
    fn random_traces_account_every_nanosecond_once(
        steps in proptest::collection::vec(step(), 1..300)
    ) {
        for r in play(&steps) {
            for (i, q) in r.qps.iter().enumerate() {
                check_tiles(&q.states);
                // The state at the end is the last run's.
                let last = q.states.iter().last().map(|run| run.2);
                proptest::prop_assert_eq!(q.states.last_state(), last, "qp {}", i);
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// The steady paths label every request as the general path does: the
    /// same reports with and without them, on random traces with and
    /// without the card's response time (responses pending when the next
    /// request comes, as from the live simulator) and a window.
    #[test]
    fn steady_paths_label_as_the_general_path(
        steps in proptest::collection::vec(step(), 1..300),
        card_ns in proptest::option::of((0u64..500, 0u64..600)),
        window in proptest::option::of(1u32..12),
    ) {
        let facts = Facts { card_ns, window, general_only: false };
        let steady = play_with(&steps, &facts);
        let general = play_with(&steps, &Facts { general_only: true, ..facts });
        proptest::prop_assert_eq!(steady, general);
    }
}

/// A wait longer than the link's frames kept (another QP's 1,100
/// stretches in it), cut by a response the card takes in it: the piece
/// before the oldest frame kept spreads the other QPs' bytes, read at the
/// change, as the general path does.
#[test]
fn a_wait_past_the_frames_kept_cut_by_a_pending_response_labels_as_the_general_path() {
    let mut steps = vec![
        Step::Req {
            qp: 0,
            gap_ns: 0,
            payload: 4096,
        },
        Step::Req {
            qp: 0,
            gap_ns: PACKET_NS,
            payload: 4096,
        },
        Step::Ack {
            qp: 0,
            gap_ns: 100,
            back: 0,
        },
    ];
    steps.extend((0..1_100).map(|_| Step::Req {
        qp: 1,
        gap_ns: 1_000,
        payload: 0,
    }));
    steps.push(Step::Req {
        qp: 0,
        gap_ns: 1_000,
        payload: 4096,
    });
    let facts = Facts {
        card_ns: Some((50_000, 356)),
        ..Facts::default()
    };
    let steady = play_with(&steps, &facts);
    let general = play_with(
        &steps,
        &Facts {
            general_only: true,
            ..facts
        },
    );
    assert_eq!(steady, general);
    let qp0 = &steady[0].qps[0].states;
    check_tiles(qp0);
    // Its wait: sharing (the other QP's frames) and host limited.
    assert!(ns(qp0, TimeState::Sharing) > 0 && ns(qp0, TimeState::HostLimited) > 0);
}

/// Runs kept in 32-bit blocks: across full blocks and silences too long
/// for a block's base (a block of its own), the runs, the state at a time,
/// the time in a range and the error state from a time read as the
/// plain list of runs says.
#[test]
fn runs_across_blocks_and_long_silences_read_as_a_plain_list() {
    let mut runs = StateRuns::starting(1_000);
    let mut plain: Vec<(u64, u64, TimeState)> = Vec::new();
    let mut at = 1_000u64;
    for k in 0..20_000u64 {
        // Mostly short, now and then longer than a block's 268 ms reach.
        let ns = if k % 4_999 == 7 {
            400_000_000
        } else {
            3 + k % 17
        };
        let state = TimeState::ALL[(k % 3) as usize + 5];
        runs.push(at + ns, state);
        plain.push((at, at + ns, state));
        at += ns;
    }
    check_tiles(&runs);
    assert_eq!(runs.len(), plain.len());
    assert!(runs.iter().eq(plain.iter().copied()));
    for &(start, end, state) in plain.iter().step_by(97) {
        assert_eq!(runs.at(start), Some(state));
        assert_eq!(runs.at(end - 1), Some(state));
    }
    assert_eq!(runs.at(999), None);
    assert_eq!(runs.at(at), None);
    let (from, to) = (plain[4_990].0 + 1, plain[15_003].1 - 1);
    let mut want = [0u64; crate::analysis::TIME_STATES];
    for &(s, e, state) in &plain {
        let (a, b) = (s.max(from), e.min(to));
        if b > a {
            want[state as usize] += b - a;
        }
    }
    assert_eq!(runs.between(from, to), want);
    // In error from the middle of a run in an early block.
    let cut = plain[8_200].0 + 1;
    runs.in_state_from(cut, TimeState::Error);
    check_tiles(&runs);
    assert_eq!(runs.at(cut), Some(TimeState::Error));
    assert_eq!(runs.at(cut - 1), Some(plain[8_200].2));
    assert_eq!(ns(&runs, TimeState::Error), at - cut);
}

/// The error state from inside a full block's last run, the one run after
/// it (a block of its own) dropped: the runs go on from before that
/// block's base.
#[test]
fn error_from_inside_a_sealed_blocks_last_run_reopens_it() {
    let mut runs = StateRuns::starting(0);
    // One block (8,192 runs) and one more.
    for k in 0..8_193u64 {
        runs.push(10 * (k + 1), TimeState::ALL[(k % 2) as usize + 6]);
    }
    runs.in_state_from(10 * 8_191 + 5, TimeState::Error);
    check_tiles(&runs);
    assert_eq!(runs.at(10 * 8_191 + 4), Some(TimeState::ALL[6 + 8_191 % 2]));
    assert_eq!(runs.at(10 * 8_191 + 5), Some(TimeState::Error));
    assert_eq!(ns(&runs, TimeState::Error), 15);
}
