//! Observing packets: the entry points, and the request side (new data,
//! resends, gaps, episodes opened).

use super::*;

impl RcAnalysis {
    /// Classify one packet; `index` is its row number.
    pub fn observe<O: Observed>(&mut self, index: u64, o: &O) -> Class {
        let id = self.flow_id(o);
        self.observe_flow(index, id, o)
    }

    /// Like [`RcAnalysis::observe`] for a caller that already interned the
    /// packet's (source, destination, DestQP) into a dense id `key_id` (the
    /// store does): skips hashing the key on the per-packet path. Inlined
    /// into the caller's loop: the lookup is a few instructions, the call
    /// around it was more.
    #[inline]
    pub fn observe_keyed<O: Observed>(&mut self, index: u64, key_id: u32, o: &O) -> Class {
        let slot = key_id as usize;
        let id = match self.by_key_id.get(slot) {
            Some(&id) if id != u32::MAX => id,
            _ => {
                let id = self.flow_id(o);
                if slot >= self.by_key_id.len() {
                    self.by_key_id.resize(slot + 1, u32::MAX);
                }
                self.by_key_id[slot] = id;
                id
            }
        };
        self.observe_flow(index, id, o)
    }

    pub(super) fn observe_flow<O: Observed>(&mut self, index: u64, id: u32, o: &O) -> Class {
        self.last_ts_ns = self.last_ts_ns.max(o.ts_ns());
        self.first_ts_ns = self.first_ts_ns.min(o.ts_ns());
        let mut class = Class::default();
        // The opcode's kind once (a table lookup each time it is asked).
        let kind = o.opcode().kind();
        let cnp = matches!(kind, OpcodeKind::Cnp);
        let op = kind.operation();
        // The sender's host, read while the flow is at hand (its link's
        // time by state).
        let host = {
            let f = &mut self.flows[id as usize];
            f.packets += 1;
            f.last_ts_ns = f.last_ts_ns.max(o.ts_ns());
            f.wire_bytes += u64::from(o.wire_len());
            let b = f.series.bin_at(&mut f.cursor, o.ts_ns());
            b.packets += 1;
            b.wire_bytes += u64::from(o.wire_len());
            if o.ecn_ce() {
                f.counters.np_ecn_marked_roce_packets += 1;
                b.ecn_marked += 1;
            }
            if cnp {
                b.cnps += 1;
            }
            f.src_host
        };
        if self.config.time_by_state {
            self.on_link(host, o.ts_ns(), o.wire_len());
        }
        if cnp {
            self.flows[id as usize].counters.np_cnp_sent += 1;
            if let Some(peer) = self.flows[id as usize].peer.or_else(|| self.pair_any(id)) {
                self.flows[peer as usize].counters.rp_cnp_handled += 1;
                self.account_cnp(peer);
            }
            return class;
        }
        if let Some(cm) = o.cm() {
            self.note_cm(o, cm);
            return class;
        }
        let Some(op) = op else { return class };
        if op.is_response() {
            self.flows[id as usize].responses += 1;
            if let Some(req) = self.pair(id, o) {
                self.response(index, id, req, o, op, &mut class);
            }
        } else {
            self.flows[id as usize].requests += 1;
            self.request(index, id, o, op, &mut class);
        }
        if class.contains(Class::RETRANSMISSION) {
            let f = &mut self.flows[id as usize];
            f.series
                .bin_at(&mut f.cursor, o.ts_ns())
                .retransmitted_packets += 1;
        }
        class
    }
}

impl RcAnalysis {
    pub(super) fn request<O: Observed>(
        &mut self,
        index: u64,
        id: u32,
        o: &O,
        op: Operation,
        class: &mut Class,
    ) {
        // Read only where the requester's card has responses to take
        // (`Acct::take_effects`): else not worked out.
        let seen_before = if self.config.time_by_state && self.acct_pending(id) {
            self.acct_outstanding(id)
        } else {
            0
        };
        let f = &mut self.flows[id as usize];
        let silence = o.ts_ns().saturating_sub(f.last_req_ts_ns);
        let read = op == Operation::ReadRequest;
        if matches!(
            op,
            Operation::WriteFirst
                | Operation::WriteMiddle
                | Operation::SendFirst
                | Operation::SendMiddle
        ) {
            f.pmtu_bytes = f.pmtu_bytes.max(o.payload_len());
        }
        let span = if read { f.read_span(o.dma_len()) } else { 1 };
        f.reads |= read;
        if !f.started {
            f.started = true;
            f.next_psn = o.psn();
            self.split_requester(id);
        }
        let f = &mut self.flows[id as usize];
        let d = psn_diff(o.psn(), f.next_psn);
        if d > 0 && f.last_req_read {
            // The READ before consumed more PSNs than estimated: not a gap.
            if let Some(last) = f.outstanding.back_mut() {
                last.psn_count += d as u32;
            }
            f.next_psn = o.psn();
        }
        let d = psn_diff(o.psn(), f.next_psn);
        // What the responder had ACKed (the peer flow's state): a resend
        // only needs it.
        let peer_acked = match f.peer {
            Some(p) if d < 0 => self.flows[p as usize].last_ack_psn,
            _ => None,
        };
        let f = &mut self.flows[id as usize];
        let mut goodput = 0u64;
        // The window the capture shows grew (what accounts look up again).
        let mut held_grew = false;
        // What ended the requester's wait, for its time by state.
        let mut end = time_states::WaitEnd {
            span,
            ..Default::default()
        };
        if d == 0 {
            // Held by the window: silent for longer than the ACK that
            // ended the wait took to bring this packet out.
            let ack = f.first_free_ack_ts_ns;
            if ack > f.last_req_ts_ns
                && o.ts_ns().saturating_sub(ack) <= ACK_TURNAROUND_NS
                && ack - f.last_req_ts_ns > o.ts_ns().saturating_sub(ack)
            {
                if f.level_after_req > f.window_held {
                    f.window_held = f.level_after_req;
                    held_grew = true;
                }
                end.held = true;
            }
            f.next_psn = psn_add(o.psn(), span);
            f.track_sent(o.psn(), span, o.ts_ns(), read);
            goodput = u64::from(o.payload_len());
            // New data after a resend closes the episode.
            if f.episode
                .as_ref()
                .is_some_and(|open| psn_diff(o.psn(), open.resume_psn) >= 0)
            {
                f.close_episode(o.ts_ns(), &mut self.episodes);
            }
        } else if d > 0 {
            // Beyond the next PSN: PSNs the capture did not see (yet).
            class.add(Class::OUT_OF_SEQUENCE);
            f.counters.out_of_sequence += 1;
            f.note_gap(Gap {
                first_psn: f.next_psn,
                psn_count: d as u32,
                index,
                ts_ns: o.ts_ns(),
            });
            f.next_psn = psn_add(o.psn(), span);
            f.track_sent(o.psn(), span, o.ts_ns(), read);
            goodput = u64::from(o.payload_len());
        } else {
            // A PSN already sent: a retransmission.
            class.add(Class::RETRANSMISSION);
            f.counters.retransmitted_packets += 1;
            f.counters.retransmitted_bytes += u64::from(o.payload_len());
            if peer_acked.is_some_and(|a| psn_diff(o.psn(), a) <= 0) {
                // The responder had ACKed this PSN: it sees a duplicate request.
                f.counters.duplicate_request += 1;
            }
            f.note_resent(o.psn());
            // A resend at or before the last one resent starts a new
            // Go-Back-N pass: a retry, caused by a NAK or the timer.
            let continues = f
                .episode
                .as_ref()
                .is_some_and(|open| psn_diff(o.psn(), open.last_psn) > 0);
            if continues {
                if let Some(open) = &mut f.episode {
                    open.episode.last_index = index;
                    open.episode.end_ns = o.ts_ns();
                    open.episode.packets_resent += 1;
                    open.episode.bytes_resent += u64::from(o.payload_len());
                    open.last_psn = o.psn();
                }
            } else {
                // What made the requester resend. Evidence it waited on far
                // longer than a round trip did not trigger it: its timer
                // did (RNR NAKs carry their own wait).
                let timer_ns = self
                    .config
                    .timeout_silence_ns
                    .max(f.rtt_avg_ns.saturating_mul(TIMER_RTTS));
                let pending = f.pending_nak.take();
                // The NAK's generation where this capture saw the gap (the
                // receiver's side); else its reaction: the NAK's arrival to
                // this first resend (the requester's side).
                let (nak_generation_ns, nak_reaction_ns) = match pending {
                    Some(p) if p.cause == EpisodeCause::NakSeqErr => match p.generation_ns {
                        Some(g) => (Some(g), None),
                        None => (None, Some(o.ts_ns().saturating_sub(p.ts_ns))),
                    },
                    _ => (None, None),
                };
                let (cause, start_ns, first_index, inferred, unacted) = match pending {
                    Some(p)
                        if p.cause != EpisodeCause::Rnr
                            && o.ts_ns().saturating_sub(p.ts_ns) >= timer_ns =>
                    {
                        let unacted = Unacted {
                            cause: p.cause,
                            ts_ns: p.ts_ns,
                            index: p.index,
                            psn: p.psn,
                        };
                        (
                            EpisodeCause::Timeout,
                            o.ts_ns(),
                            index,
                            false,
                            Some(unacted),
                        )
                    }
                    Some(p) => (p.cause, p.ts_ns, p.index, false, None),
                    // A resend with no NAK before it: the requester's timer,
                    // unless the silence was too short for any timer, which
                    // means the NAK went by unseen (a cut AETH, a missed frame).
                    None if silence < self.config.timeout_silence_ns => {
                        (EpisodeCause::NakSeqErr, o.ts_ns(), index, true, None)
                    }
                    None => (EpisodeCause::Timeout, o.ts_ns(), index, false, None),
                };
                let timer = cause == EpisodeCause::Timeout;
                match cause {
                    EpisodeCause::Timeout => end.timer = true,
                    EpisodeCause::Rnr => end.rnr_from = Some(start_ns),
                    _ => end.recovering_from = Some(start_ns),
                }
                match cause {
                    EpisodeCause::Timeout => {
                        f.counters.local_ack_timeout_err += 1;
                        if f.expiries.len() < MAX_EXPIRIES {
                            f.expiries.push(TimerExpiry {
                                ts_ns: o.ts_ns(),
                                index,
                                psn: o.psn(),
                                silence_ns: silence,
                            });
                        }
                    }
                    EpisodeCause::ImpliedNak => f.counters.implied_nak_seq_err += 1,
                    _ => {}
                }
                match &mut f.episode {
                    Some(open) => {
                        open.episode.last_index = index;
                        open.episode.end_ns = o.ts_ns();
                        open.episode.packets_resent += 1;
                        open.episode.bytes_resent += u64::from(o.payload_len());
                        open.episode.retries += 1;
                        open.episode.timer_expiries += u32::from(timer);
                        if timer {
                            open.episode.silence_ns = silence;
                        }
                        if open.episode.unacted.is_none() {
                            open.episode.unacted = unacted;
                        }
                        open.last_psn = o.psn();
                    }
                    None => {
                        f.episode = Some(OpenEpisode {
                            episode: Episode {
                                qp: f.qp,
                                cause,
                                first_index,
                                last_index: index,
                                start_ns,
                                end_ns: o.ts_ns(),
                                from_psn: o.psn(),
                                packets_resent: 1,
                                bytes_resent: u64::from(o.payload_len()),
                                recovery_ns: 0,
                                silence_ns: if timer { silence } else { 0 },
                                nak_inferred: inferred,
                                retries: 0,
                                timer_expiries: u32::from(timer),
                                unacted,
                                recovered: false,
                                nak_generation_ns: if timer { None } else { nak_generation_ns },
                                nak_reaction_ns: if timer { None } else { nak_reaction_ns },
                            },
                            resume_psn: f.next_psn,
                            last_psn: o.psn(),
                        });
                    }
                }
            }
        }
        f.last_req_ts_ns = o.ts_ns();
        f.last_req_read = read;
        let outstanding = f.outstanding_psns();
        f.peak_outstanding = f.peak_outstanding.max(outstanding);
        if d >= 0 {
            f.level_after_req = outstanding;
        }
        // `observe_flow` looked this packet's bin up already.
        let b = f.series.bin_again(&mut f.cursor, o.ts_ns());
        b.goodput_bytes += goodput;
        f.goodput_bytes += goodput;
        b.max_outstanding = b.max_outstanding.max(outstanding);
        b.end_outstanding = Some(outstanding);
        // A new request continues its message unless it is the last of it.
        let mid = (d >= 0).then_some(matches!(
            op,
            Operation::WriteFirst
                | Operation::WriteMiddle
                | Operation::SendFirst
                | Operation::SendMiddle
        ));
        let (acct, host, episode, reads) = (f.acct, f.src_host, f.episode.is_some(), f.reads);
        if !self.config.time_by_state {
            return;
        }
        if held_grew {
            self.facts_epoch += 1;
        }
        self.account_request(accounting::RequestOnWire {
            id,
            ts_ns: o.ts_ns(),
            frame_bytes: o.wire_len(),
            before: seen_before,
            outstanding,
            resend: d < 0,
            end: &end,
            mid_message: mid,
            port: o.tx_port(),
            acct,
            host,
            episode,
            reads,
        });
    }
}
