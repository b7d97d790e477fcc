//! The sniffer's view of frames: what it taps and how it cuts them.

use super::*;

impl Simulator {
    /// The sniffer's view of a frame at `node` (if it taps that node).
    #[inline]
    pub(super) fn capture(&mut self, id: u32, dir: Direction, node: usize) {
        if self
            .sniffer
            .as_ref()
            .is_some_and(|sn| sn.node as usize == node)
        {
            self.capture_frame(id, dir);
        }
    }

    pub(super) fn capture_frame(&mut self, id: u32, dir: Direction) {
        let Some(sn) = &self.sniffer else {
            return;
        };
        let (filter, fixed, quirk, tag) =
            (sn.filter, sn.fixed_card, sn.rx_cut_quirk, sn.tag_direction);
        let p = &self.packets[id as usize];
        let info = self.ops[usize::from(p.opcode)];
        let own = info.cut;
        let flags = match dir {
            Direction::Rx if quirk => sn.last_tx_flags,
            _ => own,
        };
        let full_len = p.frame_len_bytes as usize;
        // Every simulated frame is Ethernet / IPv4 / UDP to port 4791, so
        // the card's decision depends only on the cut flags: made once per
        // flag pair from the first such frame's headers.
        let slot = usize::from(flags.aeth) | usize::from(flags.reth) << 1;
        let known = sn.decisions[slot];
        if known == Some(Capture::Ignore) {
            if dir == Direction::Tx
                && let Some(sn) = &mut self.sniffer
            {
                sn.last_tx_flags = own;
            }
            return;
        }
        // The usual case once the card has decided: header-only capture of
        // an opcode the template covers, written straight into the output.
        if info.simple
            && let Some(d) = known
            && d != Capture::Ignore
        {
            let hdr = 54 + usize::from(info.ext);
            let want = match d {
                Capture::Ignore | Capture::Whole => full_len,
                Capture::Cut(n) => n.min(full_len),
            };
            if want <= hdr {
                self.capture_headers(id, dir, own, tag, want);
                return;
            }
        }
        // Headers from the template writer (the builder only for opcodes
        // it does not cover); the builder again only when payload is wanted.
        let mut hdr_bytes = [0u8; template::MAX_HDR];
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let hdr = if info.simple {
            template::write_headers(&self.hdr_fields(p), &info, &mut hdr_bytes)
        } else {
            let b = self.builder(p);
            b.build_headers_into(p.payload_len_bytes as usize, &mut buf);
            b.header_len()
        };
        let headers: &[u8] = if info.simple { &hdr_bytes[..hdr] } else { &buf };
        let decision = match known {
            Some(d) => d,
            None => {
                let d = sniffer::decide(headers, filter, fixed, flags);
                if let Some(sn) = &mut self.sniffer {
                    sn.decisions[slot] = Some(d);
                }
                d
            }
        };
        let want = match decision {
            Capture::Ignore => {
                self.buf = buf;
                if dir == Direction::Tx
                    && let Some(sn) = &mut self.sniffer
                {
                    sn.last_tx_flags = own;
                }
                return;
            }
            Capture::Whole => full_len,
            Capture::Cut(n) => n.min(full_len),
        };
        // The record's bytes: straight from the header template when that
        // is all the capture keeps (the usual header-only case).
        let direct = want <= hdr && info.simple;
        if want <= hdr {
            if !direct {
                buf.truncate(want);
            }
        } else {
            if info.simple {
                buf.extend_from_slice(&hdr_bytes[..hdr]);
            }
            let b = self.builder(p);
            let mut pay = std::mem::take(&mut self.payload_buf);
            let need = p.payload_len_bytes as usize;
            if want >= hdr + need {
                self.wire_payload_into(p, need, &mut pay);
                b.build_into(&pay, &mut buf);
            } else {
                self.wire_payload_into(p, want - hdr, &mut pay);
                buf.extend_from_slice(&pay);
            }
            buf.truncate(want);
            self.payload_buf = pay;
        }
        if p.corrupt && buf.len() > hdr {
            buf[hdr] ^= 0xFF;
        }
        let cap_len = if direct { want } else { buf.len() };
        let now = self.now_ps;
        let (qpn, psn_w) = (p.dest_qp, p.psn);
        // A cut past the headers of plaintext, while the period detector
        // runs: its fields, for the check to shift (`PayloadCut`).
        let cut = if info.simple && cap_len > hdr && self.period.as_ref().is_some_and(|d| d.logging)
        {
            self.payload_cut(id, info, hdr, cap_len, tag.then_some(dir))
        } else {
            None
        };
        if !self.sniffer_admit(dir, own, cap_len, qpn, psn_w) {
            self.buf = buf;
            return;
        }
        let start = self.out_bytes.len() as u32;
        self.out_bytes
            .extend_from_slice(if direct { &hdr_bytes[..want] } else { &buf });
        let cut = match cut {
            Some(c) => {
                self.payload_cuts.push(c);
                self.payload_cuts.len() as u32
            }
            None => 0,
        };
        self.out.push(Out::Frame {
            ts_ns: now / NS,
            direction: tag.then_some(dir),
            orig_len: full_len as u32,
            start,
            len: cap_len as u32,
            cut,
        });
        self.buf = buf;
    }

    /// A capture of `cap_len` bytes of packet `id`, past its `hdr` bytes of
    /// headers, as its fields, when they give its bytes: a plaintext
    /// payload's first bytes and no ICRC.
    #[cold]
    #[inline(never)]
    fn payload_cut(
        &self,
        id: u32,
        info: template::OpInfo,
        hdr: usize,
        cap_len: usize,
        direction: Option<Direction>,
    ) -> Option<PayloadCut> {
        let p = &self.packets[id as usize];
        (cap_len < hdr + p.payload_len_bytes as usize && !p.corrupt && self.plain_payload(p)).then(
            || PayloadCut {
                ts_ns: self.now_ps / NS,
                direction,
                orig_len: p.frame_len_bytes,
                len: cap_len as u32,
                info,
                fields: self.hdr_fields(p),
                seed: self.conns[p.conn as usize].seed,
                abs_psn: p.abs_psn,
            },
        )
    }

    /// A frame that is no QP's packet (a switch's PFC frame), whole, as the
    /// sniffer's filter and dump buffer let it through.
    pub(super) fn capture_raw(&mut self, dir: Direction, frame: &[u8]) {
        let Some(sn) = &self.sniffer else {
            return;
        };
        let (filter, fixed, tag) = (sn.filter, sn.fixed_card, sn.tag_direction);
        let want = match sniffer::decide(frame, filter, fixed, CutFlags::default()) {
            Capture::Ignore => return,
            Capture::Whole => frame.len(),
            Capture::Cut(n) => n.min(frame.len()),
        };
        if !self.sniffer_admit(dir, CutFlags::default(), want, 0, 0) {
            return;
        }
        let start = self.out_bytes.len() as u32;
        self.out_bytes.extend_from_slice(&frame[..want]);
        self.out.push(Out::Frame {
            ts_ns: self.now_ps / NS,
            direction: tag.then_some(dir),
            orig_len: frame.len() as u32,
            start,
            len: want as u32,
            cut: 0,
        });
    }

    /// A capture of `want` bytes, all within the template's headers: the
    /// sniffer's accounting, then the headers' fields handed out for the
    /// sink to write (the same records, bytes and counters as the general
    /// path).
    fn capture_headers(&mut self, id: u32, dir: Direction, own: CutFlags, tag: bool, want: usize) {
        let now = self.now_ps;
        let p = &self.packets[id as usize];
        if !self.sniffer_admit(dir, own, want, p.dest_qp, p.psn) {
            return;
        }
        let p = &self.packets[id as usize];
        let info = self.ops[usize::from(p.opcode)];
        let fields = self.hdr_fields(p);
        self.out.push(Out::Header(HeaderFrame::new(
            now / NS,
            tag.then_some(dir),
            p.frame_len_bytes,
            want,
            info,
            fields,
        )));
    }

    /// The sniffer's dump buffer for a capture of `cap_len` bytes now:
    /// whether it fits. One that does not is counted and leaves its ground
    /// truth and a drop record; both capture paths account alike.
    #[inline]
    fn sniffer_admit(
        &mut self,
        dir: Direction,
        own: CutFlags,
        cap_len: usize,
        qpn: u32,
        psn: u32,
    ) -> bool {
        let now = self.now_ps;
        let (rate, cap) = (self.sniffer_bytes_per_ps, self.sniffer_cap_bytes);
        let Some(sn) = &mut self.sniffer else {
            return false;
        };
        if dir == Direction::Tx {
            sn.last_tx_flags = own;
        }
        sn.backlog = (sn.backlog - (now - sn.last_ps) as f64 * rate).max(0.0);
        sn.last_ps = now;
        let slots = sniffer::dump_slot_bytes(cap_len) as f64;
        if sn.backlog + slots > cap {
            sn.dropped += 1;
            let dropped = sn.dropped;
            self.stats.capture_drops += 1;
            self.truth(qpn, psn, TruthEvent::CaptureDrop);
            self.emit(Record::Drops(DropCount {
                ts_ns: now / NS,
                interface: 0,
                dropped,
                reason: DropReason::CaptureLoss,
            }));
            return false;
        }
        sn.backlog += slots;
        self.stats.frames_captured += 1;
        true
    }
}
