//! Beats out of value changes: the AXI4-Stream sampler.
//!
//! Fed the changes of the watched signals in time order, it samples each
//! interface on its clock's rising edges as a flip-flop would: with the
//! values just before the edge, because simulators dump the changes that the
//! edge itself causes at the edge's own timestamp. A beat transfers when
//! `tvalid` and `tready` (absent: 1) are high; `tlast` ends the frame and
//! its `tkeep` (absent: all ones) marks the valid bytes of that last beat.
//! Frames come out in order of their first beat's edge across interfaces
//! (ties: interface order), held back only while an earlier frame on another
//! interface is still open. Knows nothing of wellen: signals are slots.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Longest frame accepted, 64 KiB (a jumbo frame is 9,000 bytes): beats
/// without a `tlast` beyond it are a broken stream, dropped and counted, so a
/// stuck `tlast` cannot grow memory without bound.
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

/// Whole frames held back behind an open frame on another interface, at
/// most: past it the oldest is released out of order (and counted), so an
/// interface stalled mid-frame cannot make memory grow without bound.
pub const MAX_HELD_FRAMES: usize = 65_536;

/// One watched signal's value: little-endian bytes (byte 0 = bits 7:0),
/// X and Z read as 0 with `known` false.
#[derive(Debug, Default, Clone)]
pub(crate) struct Slot {
    cur: Vec<u8>,
    known: bool,
    next: Vec<u8>,
    next_known: bool,
    has_next: bool,
}

impl Slot {
    fn high(&self) -> bool {
        self.known && self.cur.first().is_some_and(|b| b & 1 == 1)
    }
}

/// The slots of one interface's signals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortSlots {
    pub tdata: usize,
    pub tvalid: usize,
    pub tlast: usize,
    pub tkeep: Option<usize>,
    pub tready: Option<usize>,
    pub clock: usize,
    pub width_bits: u32,
}

#[derive(Debug)]
struct Port {
    slots: PortSlots,
    frame: Vec<u8>,
    /// The first beat's edge time of the open frame; `None` between frames.
    start: Option<u64>,
    /// The open frame grew past [`MAX_FRAME_BYTES`]: its beats are skipped
    /// until its `tlast`.
    oversized: bool,
    /// A capture window began: the beats up to the next `tlast` may be the
    /// end of a frame whose start was not captured. That frame is kept only
    /// when its bytes prove it whole ([`provably_whole`]).
    unsure: bool,
}

/// A whole frame: its first beat's edge (in the file's time units), its
/// interface and its bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaveFrame {
    /// Time of the edge its first beat transferred on, in the file's units.
    pub time: u64,
    /// Index of its interface.
    pub port: u8,
    /// The frame's bytes, byte 0 from `tdata[7:0]` of its first beat.
    pub data: Vec<u8>,
}

/// Something odd in the stream, at a time in the file's units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeatWarning {
    /// When, in the file's time units.
    pub time: u64,
    /// The interface concerned.
    pub port: u8,
    /// What was seen.
    pub message: String,
}

/// The sampler; see the module documentation.
#[derive(Debug)]
pub(crate) struct Sampler {
    slots: Vec<Slot>,
    ports: Vec<Port>,
    /// Slots that changed at `time`, to commit after the edge.
    changed: Vec<usize>,
    time: Option<u64>,
    done: BinaryHeap<Reverse<WaveFrame>>,
    rose: Vec<bool>,
    pub warnings: Vec<BeatWarning>,
    pub beats: u64,
    pub oversized_frames: u64,
    /// Frames released before an earlier open frame (see [`MAX_HELD_FRAMES`]).
    pub out_of_order: u64,
    /// Frames not kept because a capture window began inside them (their
    /// first beats were not captured, or their bytes could not prove
    /// otherwise).
    pub cut_at_start: u64,
    /// Frames not kept because their capture window ended inside them.
    pub cut_at_end: u64,
    held_limit: usize,
}

impl Sampler {
    pub fn new(slot_count: usize, ports: &[PortSlots]) -> Self {
        Self {
            slots: vec![Slot::default(); slot_count],
            ports: ports
                .iter()
                .map(|&slots| Port {
                    slots,
                    frame: Vec::new(),
                    start: None,
                    oversized: false,
                    unsure: false,
                })
                .collect(),
            changed: Vec::new(),
            time: None,
            done: BinaryHeap::new(),
            rose: vec![false; slot_count],
            warnings: Vec::new(),
            beats: 0,
            oversized_frames: 0,
            out_of_order: 0,
            cut_at_start: 0,
            cut_at_end: 0,
            held_limit: MAX_HELD_FRAMES,
        }
    }

    /// A smaller [`MAX_HELD_FRAMES`], for tests.
    #[cfg(test)]
    fn with_held_limit(mut self, n: usize) -> Self {
        self.held_limit = n;
        self
    }

    /// The time of the last change seen, in the file's units.
    pub fn time(&self) -> Option<u64> {
        self.time
    }

    /// A change of `slot` at `time` (never earlier than the last one):
    /// `write` fills the new little-endian value and says whether every bit
    /// was 0 or 1.
    pub fn change(&mut self, time: u64, slot: usize, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        if self.time.is_some_and(|t| t != time) {
            self.step();
        }
        self.time = Some(time);
        let Some(s) = self.slots.get_mut(slot) else {
            return;
        };
        s.next.clear();
        s.next_known = write(&mut s.next);
        if !s.has_next {
            s.has_next = true;
            self.changed.push(slot);
        }
    }

    /// The end of the changes: the last time step is taken.
    pub fn finish(&mut self) {
        if self.time.is_some() {
            self.step();
        }
    }

    /// A capture window begins (an ILA's windows are separate stretches of
    /// time): frames still open are cut at the old window's end, dropped and
    /// counted; in the new one, the beats up to each interface's first
    /// `tlast` are kept only if their bytes prove them a whole frame.
    pub fn new_window(&mut self) {
        for p in &mut self.ports {
            if p.start.take().is_some() && !p.oversized {
                self.cut_at_end += 1;
            }
            p.frame.clear();
            p.oversized = false;
            p.unsure = true;
        }
    }

    /// Frames open at the end, as (port, first beat time, bytes so far).
    pub fn open_frames(&self) -> impl Iterator<Item = (u8, u64, usize)> + '_ {
        self.ports.iter().enumerate().filter_map(|(i, p)| {
            p.start
                .map(|t| (u8::try_from(i).unwrap_or(u8::MAX), t, p.frame.len()))
        })
    }

    /// The next frame that no open frame can precede; with `all`, every
    /// remaining whole frame (at the end).
    pub fn pop_ready(&mut self, all: bool) -> Option<WaveFrame> {
        let head = self.done.peek()?;
        if !all {
            let first_open = self
                .ports
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.start.map(|t| (t, i)))
                .min();
            if let Some((open_time, open_port)) = first_open
                && (head.0.time, usize::from(head.0.port)) > (open_time, open_port)
            {
                if self.done.len() <= self.held_limit {
                    return None;
                }
                self.out_of_order += 1;
                if self.out_of_order == 1 {
                    self.warnings.push(BeatWarning {
                        time: open_time,
                        port: u8::try_from(open_port).unwrap_or(u8::MAX),
                        message: format!(
                            "a frame open since here holds back more than {} whole frames of other interfaces; they are released out of time order from now on",
                            self.held_limit
                        ),
                    });
                }
            }
        }
        self.done.pop().map(|r| r.0)
    }

    /// Takes the time step at `self.time`: the beats of the interfaces whose
    /// clock rises here, sampled before this step's changes, then the
    /// changes committed.
    fn step(&mut self) {
        let Some(time) = self.time else {
            return;
        };
        let mut any = false;
        for &i in &self.changed {
            let s = &self.slots[i];
            let rises = s.known
                && s.cur.first().is_some_and(|b| b & 1 == 0)
                && s.next_known
                && s.next.first().is_some_and(|b| b & 1 == 1);
            self.rose[i] = rises;
            any |= rises;
        }
        if any {
            for p in 0..self.ports.len() {
                if self.rose[self.ports[p].slots.clock] {
                    self.sample(p, time);
                }
            }
        }
        for i in self.changed.drain(..) {
            let s = &mut self.slots[i];
            std::mem::swap(&mut s.cur, &mut s.next);
            s.known = s.next_known;
            s.has_next = false;
            self.rose[i] = false;
        }
    }

    fn sample(&mut self, p: usize, time: u64) {
        let slots = self.ports[p].slots;
        let high = |i: usize| self.slots[i].high();
        if !high(slots.tvalid) || !slots.tready.is_none_or(high) {
            return;
        }
        self.beats += 1;
        let last = high(slots.tlast);
        let data = &self.slots[slots.tdata].cur;
        let keep = slots.tkeep.map(|k| &self.slots[k].cur);
        let port_id = u8::try_from(p).unwrap_or(u8::MAX);
        let port = &mut self.ports[p];
        port.start.get_or_insert(time);
        let width_bytes = slots.width_bits.div_ceil(8) as usize;
        if !port.oversized {
            for i in 0..width_bytes {
                let kept = !last
                    || keep.is_none_or(|k| k.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1));
                if kept {
                    port.frame.push(data.get(i).copied().unwrap_or(0));
                }
            }
            if port.frame.len() > MAX_FRAME_BYTES {
                port.oversized = true;
                self.oversized_frames += 1;
                self.warnings.push(BeatWarning {
                    time: port.start.unwrap_or(time),
                    port: port_id,
                    message: format!(
                        "a frame grew past {MAX_FRAME_BYTES} bytes without tlast; dropped up to its tlast"
                    ),
                });
                port.frame = Vec::new();
            }
        }
        if last {
            let start = port.start.take().unwrap_or(time);
            let data = std::mem::take(&mut port.frame);
            let oversized = std::mem::replace(&mut port.oversized, false);
            if std::mem::replace(&mut port.unsure, false) && !oversized && !provably_whole(&data) {
                self.cut_at_start += 1;
            } else if !oversized {
                self.done.push(Reverse(WaveFrame {
                    time: start,
                    port: port_id,
                    data,
                }));
            }
        }
    }
}

/// Whether a frame's bytes show it whole from its first byte: an Ethernet
/// frame (802.1Q/802.1ad tags allowed) carrying IPv4 with a valid header
/// checksum, or IPv6, whose IP length is what the frame holds (plus the
/// padding to 60 bytes, or a 4-byte FCS). Anything else cannot be told
/// from a frame's tail, so it is not kept where that is the question.
pub fn provably_whole(frame: &[u8]) -> bool {
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let mut l2 = 12;
    while matches!(be16(l2), Some(0x8100 | 0x88a8)) {
        l2 += 4;
    }
    let Some(ethertype) = be16(l2) else {
        return false;
    };
    let l3 = l2 + 2;
    let ip_len = match ethertype {
        0x0800 => {
            let Some(&vihl) = frame.get(l3) else {
                return false;
            };
            let ihl = usize::from(vihl & 0x0f) * 4;
            let Some(header) = frame.get(l3..l3 + ihl) else {
                return false;
            };
            if vihl >> 4 != 4 || ihl < 20 || rocescope_decoders::ipv4_checksum(header) != 0 {
                return false;
            }
            be16(l3 + 2)
        }
        0x86dd => be16(l3 + 4).map(|payload| payload + 40),
        _ => None,
    };
    let Some(ip_len) = ip_len else {
        return false;
    };
    let carried = l3 + ip_len;
    let n = frame.len();
    n == carried || n == carried + 4 || (carried < 60 && (n == 60 || n == 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLK: usize = 0;
    const DATA: usize = 1;
    const VALID: usize = 2;
    const LAST: usize = 3;
    const KEEP: usize = 4;

    fn set(s: &mut Sampler, t: u64, slot: usize, bytes: &[u8]) {
        s.change(t, slot, |v| {
            v.extend_from_slice(bytes);
            true
        });
    }

    fn port() -> PortSlots {
        PortSlots {
            tdata: DATA,
            tvalid: VALID,
            tlast: LAST,
            tkeep: Some(KEEP),
            tready: None,
            clock: CLK,
            width_bits: 16,
        }
    }

    /// Another port on slots 5 to 7, without TKEEP, on the same clock.
    fn second_port() -> PortSlots {
        PortSlots {
            tdata: 5,
            tvalid: 6,
            tlast: 7,
            tkeep: None,
            ..port()
        }
    }

    #[test]
    fn samples_before_the_edge_and_applies_tkeep_on_the_last_beat() {
        let mut s = Sampler::new(5, &[port()]);
        set(&mut s, 0, CLK, &[0]);
        set(&mut s, 0, VALID, &[0]);
        set(&mut s, 0, LAST, &[0]);
        set(&mut s, 0, KEEP, &[3]);
        set(&mut s, 0, DATA, &[0, 0]);
        // Driven after the falling edge, sampled at the rising edge at 10.
        set(&mut s, 5, CLK, &[0]);
        set(&mut s, 6, VALID, &[1]);
        set(&mut s, 6, DATA, &[0xaa, 0xbb]);
        set(&mut s, 10, CLK, &[1]);
        // Changed at the edge itself: not seen by this edge.
        set(&mut s, 10, DATA, &[0xcc, 0xdd]);
        set(&mut s, 10, LAST, &[1]);
        set(&mut s, 10, KEEP, &[1]);
        set(&mut s, 15, CLK, &[0]);
        set(&mut s, 20, CLK, &[1]);
        set(&mut s, 20, VALID, &[0]);
        set(&mut s, 25, CLK, &[0]);
        s.finish();
        let f = s.pop_ready(false).expect("one frame");
        assert_eq!(f.time, 10);
        assert_eq!(f.data, vec![0xaa, 0xbb, 0xcc]);
        assert_eq!(s.beats, 2);
        assert!(s.pop_ready(true).is_none());
    }

    #[test]
    fn frames_wait_for_an_earlier_open_frame_on_another_port() {
        let b = second_port();
        let mut s = Sampler::new(8, &[port(), b]);
        for slot in 0..8 {
            set(&mut s, 0, slot, &[0, 0]);
        }
        // Port 0 opens at 10 and closes at 30; port 1 opens and closes at 20.
        set(&mut s, 9, VALID, &[1]);
        set(&mut s, 10, CLK, &[1]);
        set(&mut s, 15, CLK, &[0]);
        set(&mut s, 19, 6, &[1]);
        set(&mut s, 19, 7, &[1]);
        set(&mut s, 20, CLK, &[1]);
        set(&mut s, 21, 6, &[0]);
        set(&mut s, 25, CLK, &[0]);
        assert!(s.pop_ready(false).is_none(), "port 0's frame is open");
        set(&mut s, 29, LAST, &[1]);
        set(&mut s, 29, KEEP, &[1]);
        set(&mut s, 30, CLK, &[1]);
        set(&mut s, 31, VALID, &[0]);
        s.finish();
        let first = s.pop_ready(false).expect("port 0");
        assert_eq!((first.time, first.port, first.data.len()), (10, 0, 5));
        let second = s.pop_ready(false).expect("port 1");
        assert_eq!((second.time, second.port), (20, 1));
    }

    #[test]
    fn a_stalled_frame_holds_back_a_bounded_number() {
        let b = second_port();
        let mut s = Sampler::new(8, &[port(), b]).with_held_limit(3);
        for slot in 0..8 {
            set(&mut s, 0, slot, &[0, 0]);
        }
        // Port 0 sends one beat without tlast, then stalls; port 1 sends a
        // one-beat frame on every edge.
        set(&mut s, 9, VALID, &[1]);
        set(&mut s, 9, 6, &[1]);
        set(&mut s, 9, 7, &[1]);
        set(&mut s, 10, CLK, &[1]);
        set(&mut s, 11, VALID, &[0]);
        let mut released = 0;
        for k in 1..10u64 {
            set(&mut s, 10 * k + 5, CLK, &[0]);
            set(&mut s, 10 * k + 10, CLK, &[1]);
            while s.pop_ready(false).is_some() {
                released += 1;
            }
        }
        s.finish();
        assert_eq!(
            released,
            10 - 1 - 3,
            "all but the held 3 (and the last edge's)"
        );
        assert_eq!(s.out_of_order, released);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert_eq!(s.open_frames().count(), 1);
    }

    /// An ILA's windows: a frame open at a window's end is cut and counted;
    /// in the next window the beats up to the first `tlast` are kept only
    /// when they prove a whole frame.
    #[test]
    fn a_new_window_cuts_open_frames_and_doubts_its_first() {
        let frame = rocescope_decoders::PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            rocescope_decoders::Opcode::RC_SEND_ONLY,
            7,
            1,
        )
        .build(&[1, 2, 3, 4, 5, 6]);
        assert!(provably_whole(&frame));
        assert!(!provably_whole(&frame[2..]), "a tail is not whole");
        assert!(
            !provably_whole(&frame[..frame.len() - 8]),
            "a head is not whole"
        );
        let mut s = Sampler::new(5, &[port()]);
        let mut t = 0;
        let mut beat = |s: &mut Sampler, bytes: &[u8], last: bool| {
            t += 10;
            set(s, t, VALID, &[1]);
            set(s, t, DATA, &[bytes[0], bytes.get(1).copied().unwrap_or(0)]);
            set(s, t, LAST, &[u8::from(last)]);
            set(s, t, KEEP, &[if bytes.len() == 2 { 3 } else { 1 }]);
            set(s, t + 5, CLK, &[1]);
            set(s, t + 6, CLK, &[0]);
        };
        for slot in 0..5 {
            set(&mut s, 0, slot, &[0, 0]);
        }
        // An open frame when the window ends.
        beat(&mut s, &[1, 2], false);
        s.new_window();
        // The new window begins inside a frame: its tail is not kept...
        beat(&mut s, &[3, 4], true);
        // ...and a whole frame after it is.
        let n = frame.chunks(2).count();
        for (k, c) in frame.chunks(2).enumerate() {
            beat(&mut s, c, k + 1 == n);
        }
        s.new_window();
        // A whole frame first in a window proves itself.
        for (k, c) in frame.chunks(2).enumerate() {
            beat(&mut s, c, k + 1 == n);
        }
        s.finish();
        let mut kept = Vec::new();
        while let Some(f) = s.pop_ready(true) {
            kept.push(f.data);
        }
        assert_eq!(kept, vec![frame.clone(), frame]);
        assert_eq!((s.cut_at_start, s.cut_at_end), (1, 1));
    }
}
