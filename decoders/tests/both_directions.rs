//! A QP pair in which both ends post requests (SENDs both ways): each end's
//! requests are tracked (PSNs, ACKs, RTT, episodes) and reported apart,
//! named by which end sent them.
#![allow(clippy::unwrap_used)]

use rocescope_decoders::analysis::{EpisodeCause, Observation, RcAnalysis};
use rocescope_decoders::*;

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const QP_A: u32 = 0x11;
const QP_B: u32 = 0x12;

struct Trace {
    an: RcAnalysis,
    t_ns: u64,
    index: u64,
}

impl Trace {
    fn push(&mut self, frame: Vec<u8>, gap_ns: u64) {
        self.t_ns += gap_ns;
        let p = decode(&frame, LinkLayer::Ethernet, &DecodeConfig::default());
        let o = Observation::from_packet(&p, self.t_ns, frame.len() as u32).unwrap();
        self.an.observe(self.index, &o);
        self.index += 1;
    }
    fn send(&mut self, from: [u8; 4], to: [u8; 4], dest_qp: u32, psn: u32, gap_ns: u64) {
        let b = PacketBuilder::rocev2_ipv4(from, to, Opcode(0x04), dest_qp, psn);
        self.push(b.build(&[7; 512]), gap_ns);
    }
    fn ack(
        &mut self,
        from: [u8; 4],
        to: [u8; 4],
        dest_qp: u32,
        psn: u32,
        s: Syndrome,
        gap_ns: u64,
    ) {
        let mut b = PacketBuilder::rocev2_ipv4(from, to, Opcode::RC_ACK, dest_qp, psn);
        b.ext.aeth.syndrome = s.to_u8();
        self.push(b.build(&[]), gap_ns);
    }
}

const OK: Syndrome = Syndrome::Ack { credits: 31 };

#[test]
fn sends_both_ways_are_two_request_flows_each_with_its_acks_rtt_and_episodes() {
    let mut t = Trace {
        an: RcAnalysis::default(),
        t_ns: 1_000_000,
        index: 0,
    };
    // A opens with 3 SENDs to B, each ACKed 2 µs later.
    for psn in 100..103 {
        t.send(A, B, QP_B, psn, 1_000);
        t.ack(B, A, QP_A, psn, OK, 2_000);
    }
    // Then most requests flow the other way: B sends 20 to A, ACKed 5 µs
    // later; 510 is lost before the capture point, A NAKs it, B goes back.
    for psn in 500..520 {
        if psn == 510 {
            continue;
        }
        t.send(B, A, QP_A, psn, 1_000);
        if psn == 511 {
            t.ack(
                A,
                B,
                QP_B,
                510,
                Syndrome::Nak(NakCode::PsnSequenceError),
                5_000,
            );
            for again in 510..=511 {
                t.send(B, A, QP_A, again, 1_000);
            }
            t.ack(A, B, QP_B, 511, OK, 5_000);
        } else if psn != 510 {
            t.ack(A, B, QP_B, psn, OK, 5_000);
        }
    }
    // A sends once more, interleaved with B's traffic having ended.
    t.send(A, B, QP_B, 103, 1_000);
    t.ack(B, A, QP_A, 103, OK, 2_000);

    let r = t.an.report();
    assert_eq!(r.qps.len(), 2, "{:#?}", r.qps);
    // Each flow's series is in both rows (as one's series and the other's
    // reverse): moved into the report of the finished analysis, the same.
    assert!(r.qps.iter().all(|q| !q.series.bins.is_empty()));
    assert_eq!(t.an.clone().into_report(), r);
    let mapped = |a: [u8; 4]| {
        let mut m = [0u8; 16];
        m[10] = 0xFF;
        m[11] = 0xFF;
        m[12..].copy_from_slice(&a);
        m
    };
    // The QP whose requester is `host`, and its index.
    let qp_of = |host: [u8; 4]| {
        r.qps
            .iter()
            .enumerate()
            .find(|(_, q)| q.requester == mapped(host))
            .unwrap()
    };
    let ((ia, qa), (ib, qb)) = (qp_of(A), qp_of(B));
    assert!(qa.both_request && qb.both_request);
    // A's requests: to B's QP, answered from B's QP, 4 SENDs, 4 ACKs, RTT 2 µs.
    assert_eq!(
        (qa.responder, qa.dest_qp, qa.requester_qp),
        (mapped(B), QP_B, Some(QP_A))
    );
    assert_eq!((qa.requests, qa.responses, qa.counters.acks), (4, 4, 4));
    assert_eq!(qa.next_psn, 104);
    assert_eq!(qa.outstanding, 0);
    assert_eq!(qa.rtt_p50_ns, Some(2_000));
    assert_eq!(qa.counters.retransmitted_packets, 0);
    assert!(qa.episodes_by_cause.is_empty());
    // B's requests: 19 first sends plus 2 resends; the NAK and the episode
    // are B's, not A's; RTT 5 µs.
    assert_eq!(
        (qb.responder, qb.dest_qp, qb.requester_qp),
        (mapped(A), QP_A, Some(QP_B))
    );
    assert_eq!(qb.requests, 21);
    assert_eq!(qb.next_psn, 520);
    assert_eq!(qb.counters.retransmitted_packets, 2);
    assert_eq!(qb.counters.packet_seq_err, 1);
    assert_eq!(qb.rtt_p50_ns, Some(5_000));
    assert_eq!(qb.episodes_by_cause, vec![(EpisodeCause::NakSeqErr, 1)]);
    assert_eq!(r.episodes.len(), 1);
    assert_eq!(r.episodes[0].qp as usize, ib);
    assert_ne!(ia, ib);
    // The totals count every packet's verdict once.
    assert_eq!(r.counters.acks, qa.counters.acks + qb.counters.acks);
    assert_eq!(r.counters.retransmitted_packets, 2);
}
