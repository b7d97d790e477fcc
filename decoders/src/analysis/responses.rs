//! The response side: ACKs, NAKs and READ responses against the
//! outstanding requests of the paired flow.

use super::*;

impl RcAnalysis {
    pub(super) fn response<O: Observed>(
        &mut self,
        index: u64,
        id: u32,
        req: u32,
        o: &O,
        op: Operation,
        class: &mut Class,
    ) {
        // What the requester's capture shows outstanding before it (for
        // its time by state).
        let before = if self.flows[req as usize].acct == accounting::NO_ACCT {
            0
        } else {
            self.acct_outstanding(req)
        };
        let syndrome = o.syndrome().map(Syndrome::from_u8);
        let read_resp = is_read_response(Some(op));
        let mut goodput = 0u64;
        // The READ response PSN expected when this one showed a gap.
        let mut missing_read_psn = None;
        // ACK counts go to the requests they answer (the flow `req`), so
        // that where both ends request each end's report has its own (three
        // counters, not a whole `Counters` zeroed and summed per packet).
        let mut acks = 0u64;
        let mut duplicate_acks = 0u64;
        let mut duplicate_read_responses = 0u64;
        {
            let r = &mut self.flows[id as usize];
            match syndrome {
                Some(Syndrome::Ack { .. }) if !read_resp => {
                    acks += 1;
                    if r.last_ack_psn
                        .is_some_and(|last| psn_diff(o.psn(), last) <= 0)
                    {
                        class.add(Class::DUPLICATE);
                        duplicate_acks += 1;
                    }
                    r.last_ack_psn = Some(r.last_ack_psn.map_or(o.psn(), |l| {
                        if psn_diff(o.psn(), l) > 0 { o.psn() } else { l }
                    }));
                }
                _ => {}
            }
            if read_resp {
                let first = matches!(
                    op,
                    Operation::ReadResponseFirst | Operation::ReadResponseOnly
                );
                match r.read_resp_next {
                    Some(next) if psn_diff(o.psn(), next) < 0 => {
                        class.add(Class::DUPLICATE);
                        duplicate_read_responses += 1;
                    }
                    Some(next) if !first && psn_diff(o.psn(), next) > 0 => {
                        class.add(Class::OUT_OF_SEQUENCE);
                        missing_read_psn = Some(next);
                    }
                    _ => goodput = u64::from(o.payload_len()),
                }
                r.read_resp_next = Some(psn_add(o.psn(), 1));
                if r.read_gap == Some(o.psn()) {
                    r.read_gap = None;
                } else if r.read_gap.is_none() {
                    r.read_gap = missing_read_psn;
                }
            }
            if goodput > 0 {
                r.series.bin_at(&mut r.cursor, o.ts_ns()).goodput_bytes += goodput;
            }
        }
        let q = &mut self.flows[req as usize];
        q.goodput_bytes += goodput;
        q.counters.acks += acks;
        q.counters.duplicate_acks += duplicate_acks;
        q.counters.duplicate_read_responses += duplicate_read_responses;
        if read_resp {
            q.pmtu_bytes = q.pmtu_bytes.max(o.payload_len());
            // Extend the READ's span if the responses run past the estimate.
            if let Some(s) = q
                .outstanding
                .iter_mut()
                .rev()
                .find(|s| s.read() && psn_diff(o.psn(), s.psn()) >= 0)
            {
                let need = (psn_diff(o.psn(), s.psn()) + 1) as u32;
                if need > s.psn_count {
                    let grow = need - s.psn_count;
                    s.psn_count = need;
                    if psn_diff(psn_add(s.psn(), s.psn_count), q.next_psn) > 0 {
                        q.next_psn = psn_add(q.next_psn, grow);
                    }
                }
            }
        }
        // Cumulative: an ACK acknowledges through its PSN. An Acknowledge
        // whose AETH the capture cut (a header-only sniffer's RX cut) may be
        // an ACK or a NAK of its PSN; it is read as the ACK it nearly always
        // is. Read as acknowledging only what is before its PSN, every cut
        // ACK left one packet more outstanding than the sender had (17 on
        // BALBOA's window of 16); a NAK read as an ACK is told by the resend
        // it causes (a Go-Back-N episode, its NAK inferred).
        let read_gap = self.flows[id as usize].read_gap;
        // Packets the capture missed (gaps the ACK covers), for the notes.
        let mut missed = Vec::new();
        let q = &mut self.flows[req as usize];
        // For the requester's time by state: an episode closed, the QP in
        // error, sends taken off by this response.
        let had_episode = q.episode.is_some();
        let had_error = q.error.is_some();
        let mut progress = false;
        let acked_through = match syndrome {
            // A READ response past a missing one acknowledges only up to it.
            Some(Syndrome::Ack { .. }) if read_resp && read_gap.is_some() => {
                read_gap.map(|m| psn_add(m, 0xFF_FFFF))
            }
            Some(Syndrome::Ack { .. }) => Some(o.psn()),
            None if op == Operation::Acknowledge => Some(o.psn()),
            _ => None,
        };
        if let Some(acked_through) = acked_through {
            if q.rnr_run
                .is_some_and(|r| psn_diff(acked_through, r.psn) >= 0)
            {
                q.rnr_run = None;
            }
            {
                while let Some(s) = q.outstanding.front() {
                    let last = psn_add(s.psn(), s.psn_count - 1);
                    if psn_diff(acked_through, last) >= 0 {
                        if q.first_free_ack_ts_ns <= q.last_req_ts_ns {
                            q.first_free_ack_ts_ns = o.ts_ns();
                        }
                        progress = true;
                        if q.error.is_some_and(|e| s.ts_ns > e.ts_ns) {
                            q.went_on_after_error = true;
                        }
                        if !s.resent() && !s.read() {
                            let rtt = o.ts_ns().saturating_sub(s.ts_ns);
                            q.rtt_ns.add(rtt);
                            q.rtt_avg_ns = if q.rtt_avg_ns == 0 {
                                rtt
                            } else {
                                (q.rtt_avg_ns * 7 + rtt) / 8
                            };
                        }
                        q.pop_sent();
                    } else {
                        break;
                    }
                }
                // Gaps the ACK covers without NAK or resend: capture loss
                // (mostly there are none: skip the walk and its list).
                if !q.gaps.is_empty() {
                    q.resolve_gaps(acked_through, &mut self.late, &mut missed);
                }
                if q.episode.as_ref().is_some_and(|open| {
                    psn_diff(acked_through, psn_add(open.resume_psn, u32::MAX)) >= 0
                }) {
                    // Everything up to the pre-episode frontier is ACKed.
                    q.close_episode(o.ts_ns(), &mut self.episodes);
                }
                // Evidence of a loss an ACK shows recovered is spent (a READ
                // response's AETH says nothing of the responses before it).
                if !read_resp
                    && q.pending_nak.is_some_and(|p| {
                        p.cause != EpisodeCause::Rnr && psn_diff(acked_through, p.psn) >= 0
                    })
                {
                    q.pending_nak = None;
                }
            }
        }
        match syndrome {
            Some(Syndrome::Nak(code)) => {
                if matches!(
                    code,
                    NakCode::InvalidRequest
                        | NakCode::RemoteAccessError
                        | NakCode::RemoteOperationalError
                ) && q.error.is_none()
                {
                    // Fatal for the requester (IBTA 9.9.3): its QP goes to
                    // the error state; nothing it sends after is answered.
                    q.error = Some(QpError {
                        ts_ns: o.ts_ns(),
                        index,
                        psn: o.psn(),
                        reason: QpErrorReason::Nak(code),
                    });
                }
                let cause = match code {
                    NakCode::PsnSequenceError => {
                        q.counters.packet_seq_err += 1;
                        Some(EpisodeCause::NakSeqErr)
                    }
                    NakCode::InvalidRequest => {
                        q.counters.nak_invalid_request += 1;
                        None
                    }
                    NakCode::RemoteAccessError => {
                        q.counters.nak_remote_access += 1;
                        None
                    }
                    NakCode::RemoteOperationalError => {
                        q.counters.nak_remote_operational += 1;
                        None
                    }
                    _ => None,
                };
                if let Some(cause) = cause {
                    // Also during an episode: a NAK there starts the next pass.
                    if q.pending_nak.is_none() {
                        let generation_ns =
                            q.gap_at(o.psn()).map(|g| o.ts_ns().saturating_sub(g.ts_ns));
                        q.pending_nak = Some(PendingNak {
                            psn: o.psn(),
                            ts_ns: o.ts_ns(),
                            index,
                            cause,
                            generation_ns,
                        });
                    }
                }
                q.forget_gaps_at(o.psn());
            }
            Some(Syndrome::RnrNak { timer }) => {
                q.counters.rnr_nak += 1;
                let wait_ns = Syndrome::rnr_timer_ns(timer);
                let naks = q.rnr_run.filter(|r| r.psn == o.psn()).map_or(0, |r| r.naks);
                q.rnr_run = Some(RnrRun {
                    psn: o.psn(),
                    naks: naks + 1,
                    ts_ns: o.ts_ns(),
                    index,
                    wait_ns,
                });
                if q.pending_nak.is_none() {
                    q.pending_nak = Some(PendingNak {
                        psn: o.psn(),
                        ts_ns: o.ts_ns(),
                        index,
                        cause: EpisodeCause::Rnr,
                        generation_ns: None,
                    });
                }
            }
            _ => {}
        }
        if let Some(psn) = missing_read_psn
            && q.pending_nak.is_none()
        {
            // A missing READ response: a requester with an implied-NAK
            // path re-issues the READ from it at once.
            q.pending_nak = Some(PendingNak {
                psn,
                ts_ns: o.ts_ns(),
                index,
                cause: EpisodeCause::ImpliedNak,
                generation_ns: None,
            });
        }
        let outstanding = q.outstanding_psns();
        let b = q.series.bin_at(&mut q.cursor, o.ts_ns());
        b.max_outstanding = b.max_outstanding.max(outstanding);
        b.end_outstanding = Some(outstanding);
        let recovered = had_episode && q.episode.is_none();
        let error = !had_error && q.error.is_some();
        let acct = accounting::AcctOf {
            acct: q.acct,
            host: q.src_host,
            reads: q.reads,
        };
        for (ts_ns, packets) in missed {
            self.capture_loss(ts_ns, packets, true);
        }
        self.account_response(
            req,
            acct,
            o.ts_ns(),
            before,
            outstanding,
            progress,
            recovered,
            error,
        );
    }
}
