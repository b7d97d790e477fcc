//! The BALBOA card's own sniffer dumps, read without the card's converter.
//!
//! The card's traffic sniffer writes each captured frame into whole 64-byte
//! slots, RX and TX merged in arrival order, with no length, timestamp or
//! direction. The host tool saves that as text (`capture.txt`: the filter
//! word in hex, then `%08x: ` + 8 hex bytes per line); the same bytes
//! without the text are a raw slot dump. [`SnifferReader`] reads both,
//! streaming, and finds where each frame ends from the frame's own headers,
//! checking every boundary against the data because the filter word cannot
//! be trusted (see `replay/FORMAT.md`, "BALBOA sniffer dumps"):
//!
//! - today's card never applies the RoCE bits 30/31 (its RoCE detection
//!   compares bytes 36-37 with `b7 12`), so RoCE frames are whole although
//!   bit 31 asks for header-only;
//! - a card with that fixed cuts RX frames to 54/58/70 bytes by the TX
//!   side's opcode flags, so an RX frame can be cut to the wrong length.
//!
//! Each place where the data disagrees with the filter word is counted in
//! [`SnifferStats::mismatches`] and reported once, with its count, as a
//! warning at the end of the dump. [`CaptureReader`](crate::CaptureReader)
//! detects both dump formats by content and reads them through this module.

mod direction;
mod filter;
mod report;
mod slots;
mod start;

use std::fmt;
use std::io::{self, Read};

use rocescope_decoders::{DecodeConfig, IcrcStatus, LinkLayer, decode};

use crate::capture::{CaptureError, CaptureFrame, CaptureWarning, LinkType, Warnings};

pub use direction::{LocalAddrs, infer_direction};
pub use filter::SnifferFilter;
pub use report::{Mismatch, MismatchKind, SnifferStats, Treatment};

use filter::{Card, RtlView, Rule};
use slots::{RawSource, SLOT_BYTES, Sink, Source, TextSource, Window, warn};
use start::{FrameStart, NotAFrame, parse_start};

/// Bytes [`CaptureReader`](crate::CaptureReader) looks at to recognise a
/// dump.
pub(crate) const DETECT_BYTES: usize = 512;

/// The two dump formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DumpKind {
    /// The host tool's text: a filter line, then `%08x: ` + 8 hex bytes.
    Text,
    /// The slots as bytes, nothing else.
    Raw,
}

impl fmt::Display for DumpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Text => "BALBOA sniffer text dump",
            Self::Raw => "BALBOA sniffer raw slot dump",
        })
    }
}

/// How to read a dump.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnifferOptions {
    /// The filter word the dump was taken with. A raw dump has none of its
    /// own; for a text dump this replaces the one on its first line.
    pub filter: Option<SnifferFilter>,
    /// The local card's addresses: frames then get
    /// [`CaptureFrame::direction`] (see [`infer_direction`]).
    pub local: LocalAddrs,
}

/// How much of a frame the dump holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extent {
    /// The whole frame.
    Whole,
    /// The first bytes, cut by a header-only rule of the sniffer.
    HeaderOnly,
    /// Cut by the end of the dump, or by data missing from it.
    DumpCut,
}

/// One frame of a dump, borrowed from the reader until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnifferFrame<'a> {
    /// The frame as any capture reader returns it: Ethernet, `ts_ns` = 0-based
    /// ordinal, `origlen` from the headers, `file_offset` = the frame's first
    /// byte in the dump (a text dump's own `%08x` offset), `direction` when
    /// [`SnifferOptions::local`] decides it.
    pub frame: CaptureFrame<'a>,
    /// Whole, cut by the sniffer, or cut by the dump.
    pub extent: Extent,
    /// 64-byte slots the frame occupies.
    pub slots: u32,
}

/// Streaming reader of BALBOA sniffer dumps (text or raw).
///
/// ```no_run
/// # use rocescope_replay::sniffer::{SnifferReader, SnifferOptions};
/// let file = std::fs::File::open("capture.txt")?;
/// let mut reader = SnifferReader::text(file, SnifferOptions::default())?;
/// if let Some(filter) = reader.filter() {
///     println!("filter {filter}");
/// }
/// while let Some(f) = reader.next_frame()? {
///     println!("{} {} of {} bytes", f.frame.index, f.frame.caplen, f.frame.origlen);
/// }
/// for w in reader.warnings() {
///     eprintln!("warning: {w}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SnifferReader<R: Read> {
    core: Core<R>,
    warnings: Warnings,
}

impl<R: Read> SnifferReader<R> {
    /// Reads a text dump; its first line must be the filter word (or a data
    /// line, with a warning). An empty input or another first line is an
    /// error.
    pub fn text(reader: R, options: SnifferOptions) -> Result<Self, CaptureError> {
        Self::open(DumpKind::Text, reader, "input".to_owned(), options)
    }

    /// Reads a raw slot dump (`options.filter`: the filter it was taken
    /// with, if known).
    pub fn raw(reader: R, options: SnifferOptions) -> Self {
        let source = Source::Raw(RawSource::new(reader, "input".to_owned()));
        Self {
            core: Core::new(DumpKind::Raw, source, options.filter, options),
            warnings: Warnings::default(),
        }
    }

    /// Reads a dump of the given kind; `name` names the input in I/O errors.
    pub(crate) fn open(
        kind: DumpKind,
        reader: R,
        name: String,
        options: SnifferOptions,
    ) -> Result<Self, CaptureError> {
        let mut warnings = Warnings::default();
        let (source, own_filter) = match kind {
            DumpKind::Raw => (Source::Raw(RawSource::new(reader, name)), None),
            DumpKind::Text => {
                let (text, filter) = TextSource::open(reader, name, &mut |w| warnings.push(w))?;
                (Source::Text(Box::new(text)), filter)
            }
        };
        let filter = options.filter.or(own_filter);
        Ok(Self {
            core: Core::new(kind, source, filter, options),
            warnings,
        })
    }

    /// Text or raw.
    pub fn kind(&self) -> DumpKind {
        self.core.kind
    }

    /// The filter word in effect: the caller's, else the text dump's own.
    pub fn filter(&self) -> Option<SnifferFilter> {
        self.core.filter
    }

    /// The next frame in dump order, `Ok(None)` at the end. Damage is a
    /// warning, never a stop; only I/O errors are errors.
    pub fn next_frame(&mut self) -> Result<Option<SnifferFrame<'_>>, CaptureError> {
        let warnings = &mut self.warnings;
        let mut sink = |w: CaptureWarning| warnings.push(w);
        let was_done = self.core.done;
        let found = self.core.next(&mut sink);
        if !was_done && self.core.done {
            self.warnings.close(self.core.end_offset);
        }
        Ok(found?.map(|info| self.core.frame(info)))
    }

    /// Like [`next_frame`](Self::next_frame), with warnings sent to `sink`.
    pub(crate) fn next_into(
        &mut self,
        sink: Sink<'_>,
    ) -> Result<Option<SnifferFrame<'_>>, CaptureError> {
        for w in self.warnings.drain() {
            sink(w);
        }
        Ok(self.core.next(sink)?.map(|info| self.core.frame(info)))
    }

    /// Warnings so far (at most [`MAX_WARNINGS`](crate::capture::MAX_WARNINGS), plus one saying how many
    /// more were dropped): damaged lines, skipped slots, cuts, and at the end
    /// one line per kind of disagreement with the filter word.
    pub fn warnings(&self) -> &[CaptureWarning] {
        self.warnings.as_slice()
    }

    /// Counts so far; complete once [`next_frame`](Self::next_frame) returned
    /// `Ok(None)`.
    pub fn stats(&self) -> SnifferStats {
        let mut s = self.core.stats.clone();
        s.skipped_bytes = self.core.source.skipped_bytes();
        s
    }

    /// Input bytes read so far (text bytes for a text dump), including the
    /// look-ahead of at most one frame.
    pub fn bytes_read(&self) -> u64 {
        self.core.source.bytes_read()
    }
}

impl<R: Read> fmt::Debug for SnifferReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnifferReader")
            .field("kind", &self.core.kind)
            .field("filter", &self.core.filter)
            .field("frames", &self.core.next_index)
            .field("warnings", &self.warnings.as_slice().len())
            .finish_non_exhaustive()
    }
}

/// A run of slots passed over, reported as one warning when it ends.
#[derive(Debug, Clone, Copy)]
struct Run {
    offset: u64,
    slots: u64,
    bytes: u64,
    /// The run ended at a slot too short to check (end of the dump).
    short: bool,
}

impl Run {
    /// One more slot of `len` bytes on `run`, which starts at `offset` if
    /// it is not under way.
    fn extend(run: &mut Option<Run>, offset: u64, len: usize) -> &mut Run {
        let run = run.get_or_insert(Run {
            offset,
            slots: 0,
            bytes: 0,
            short: false,
        });
        run.slots += 1;
        run.bytes += len as u64;
        run
    }
}

/// Frame classes whose boundary can be learnt from unambiguous frames.
const CLASSES: usize = 4;

/// How far a candidate boundary is supported by what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cont {
    /// A plausible frame starts right after: strong evidence.
    Frame,
    /// Consistent but weak: end of the dump, all-zero padding, a gap in the
    /// dump, or the dump ends inside the candidate.
    Weak,
    /// What follows is not a frame start.
    Bad,
}

struct Core<R: Read> {
    kind: DumpKind,
    source: Source<R>,
    window: Window,
    filter: Option<SnifferFilter>,
    local: LocalAddrs,
    cfg: DecodeConfig,
    next_index: u64,
    /// Slots of the frame last lent out, consumed on the next call.
    pending: usize,
    source_done: bool,
    done: bool,
    /// Dump offset just past the last slot consumed.
    end_offset: u64,
    /// Per class (RoCE, UDPv4, UDPv6, TCPv4): whether unambiguous frames
    /// were whole (`Some(true)`) or cut.
    learned: [Option<bool>; CLASSES],
    stats: SnifferStats,
    garbage: Option<Run>,
    padding: Option<Run>,
}

/// A frame found, to be lent out of the window by [`Core::frame`].
#[derive(Debug, Clone, Copy)]
struct FrameInfo {
    index: u64,
    captured: usize,
    full: u32,
    offset: u64,
    extent: Extent,
    slots: usize,
}

/// A candidate capture length and how far the data supports it.
#[derive(Debug, Clone, Copy)]
struct Cand {
    caplen: u32,
    slots: usize,
    cont: Cont,
}

fn slots_of(len: u32) -> usize {
    (len as usize).div_ceil(SLOT_BYTES).max(1)
}

fn class_of(view: &RtlView) -> Option<usize> {
    if view.roce() {
        Some(0)
    } else if view.udp4 {
        Some(1)
    } else if view.udp6 {
        Some(2)
    } else if view.tcp4 {
        Some(3)
    } else {
        None
    }
}

/// The capture length a rule gives a frame of `full` bytes.
fn rule_len(rule: Rule, full: u32) -> u32 {
    match rule {
        Rule::Cut(n) => n.min(full),
        Rule::Drop | Rule::Whole => full,
    }
}

impl<R: Read> Core<R> {
    fn new(
        kind: DumpKind,
        source: Source<R>,
        filter: Option<SnifferFilter>,
        options: SnifferOptions,
    ) -> Self {
        Self {
            kind,
            source,
            window: Window::default(),
            filter,
            local: options.local,
            cfg: DecodeConfig::default(),
            next_index: 0,
            pending: 0,
            source_done: false,
            done: false,
            end_offset: 0,
            learned: [None; CLASSES],
            stats: SnifferStats::default(),
            garbage: None,
            padding: None,
        }
    }

    /// Reads until the window holds `n` slots or the dump ends.
    fn fill(&mut self, n: usize, sink: Sink<'_>) -> Result<(), CaptureError> {
        while self.window.len() < n && !self.source_done {
            match self.source.next_slot(sink)? {
                Some(slot) => self.window.push(slot),
                None => self.source_done = true,
            }
        }
        Ok(())
    }

    fn consume(&mut self, n: usize) {
        if let Some(m) = n.checked_sub(1).and_then(|last| self.window.meta(last)) {
            self.end_offset = m.offset + m.len as u64;
        }
        self.window.consume(n);
    }

    fn next(&mut self, sink: Sink<'_>) -> Result<Option<FrameInfo>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let pending = std::mem::take(&mut self.pending);
        self.consume(pending);
        let result = self.find_frame(sink);
        if result.is_err() {
            self.done = true;
        }
        match result? {
            Some(start) => self.decide(start, sink).map(Some),
            None => {
                self.finish(sink);
                Ok(None)
            }
        }
    }

    /// Skips padding and garbage up to the next plausible frame start.
    fn find_frame(&mut self, sink: Sink<'_>) -> Result<Option<FrameStart>, CaptureError> {
        loop {
            self.fill(2, sink)?;
            let Some(meta) = self.window.meta(0) else {
                return Ok(None);
            };
            let slot = self.window.slot(0);
            if slot.iter().all(|&b| b == 0) {
                self.flush_garbage(sink);
                Run::extend(&mut self.padding, meta.offset, meta.len);
                self.stats.padding_slots += 1;
                self.consume(1);
                continue;
            }
            match parse_start(self.window.bytes(0, 2 * SLOT_BYTES)) {
                Ok(start) => {
                    self.flush_garbage(sink);
                    self.flush_padding(sink);
                    return Ok(Some(start));
                }
                Err(why) => {
                    self.flush_padding(sink);
                    Run::extend(&mut self.garbage, meta.offset, meta.len).short |=
                        why == NotAFrame::Short;
                    self.stats.skipped_slots += 1;
                    self.consume(1);
                }
            }
        }
    }

    fn flush_garbage(&mut self, sink: Sink<'_>) {
        if let Some(run) = self.garbage.take() {
            let why = if run.short {
                "end before a frame's headers could be checked (dump cut?)"
            } else {
                "do not start a plausible Ethernet frame"
            };
            warn(
                sink,
                run.offset,
                format!(
                    "{} slot(s) at byte {} ({} bytes) {why}; skipped",
                    run.slots, run.offset, run.bytes
                ),
            );
        }
    }

    /// Zero slots followed by a frame are worth a word; at the end of the
    /// dump they are just the unused buffer.
    fn flush_padding(&mut self, sink: Sink<'_>) {
        if let Some(run) = self.padding.take() {
            warn(
                sink,
                run.offset,
                format!(
                    "{} all-zero slot(s) at byte {} between frames; skipped as padding",
                    run.slots, run.offset
                ),
            );
        }
    }

    fn finish(&mut self, sink: Sink<'_>) {
        self.flush_garbage(sink);
        self.padding = None;
        for m in &self.stats.mismatches {
            warn(sink, m.first_offset, m.to_string());
        }
        self.done = true;
    }

    /// How well the data supports a capture of `caplen` bytes; `avail` =
    /// contiguous bytes from the frame start.
    fn cont(&self, caplen: u32, slots: usize, avail: usize) -> Cont {
        if caplen as usize > avail {
            return Cont::Weak;
        }
        let Some(next) = self.window.meta(slots) else {
            return Cont::Weak;
        };
        if next.gap_before || self.window.slot(slots).iter().all(|&b| b == 0) {
            return Cont::Weak;
        }
        match parse_start(self.window.bytes(slots, 2 * SLOT_BYTES)) {
            Ok(_) => Cont::Frame,
            Err(NotAFrame::Short) => Cont::Weak,
            Err(NotAFrame::Invalid) => Cont::Bad,
        }
    }

    /// Orders candidates when the data alone does not decide: what earlier
    /// unambiguous frames of the class did, then the filter word (a card
    /// with the RoCE comparison fixed, then today's card), then whole, then
    /// shorter.
    fn preference(&self, c: u32, full: u32, view: &RtlView) -> (bool, bool, bool, bool, u32) {
        let whole = c == full;
        let learned = class_of(view)
            .and_then(|k| self.learned[k])
            .is_some_and(|w| w != whole);
        let (fixed, today) = match self.filter {
            Some(f) => (
                rule_len(view.rule(f, Card::Fixed), full),
                rule_len(view.rule(f, Card::Today), full),
            ),
            None => (full, full),
        };
        (learned, fixed != c, today != c, !whole, c)
    }

    /// Picks the frame's extent and lends it out.
    fn decide(&mut self, start: FrameStart, sink: Sink<'_>) -> Result<FrameInfo, CaptureError> {
        let full = start.full;
        let view = start.view;
        let mut lens = [0u32; 6];
        let mut n_lens = 1;
        lens[0] = full;
        for c in [42, 54, 58, 62, 70] {
            if c < full && view.may_cut_to(c) {
                lens[n_lens] = c;
                n_lens += 1;
            }
        }
        let lens = &lens[..n_lens];
        let whole_slots = slots_of(full);
        self.fill(whole_slots + 1, sink)?;
        let avail = self.window.contiguous_len(0, whole_slots);
        let mut cands = [Cand {
            caplen: 0,
            slots: 0,
            cont: Cont::Bad,
        }; 6];
        for (cand, &c) in cands.iter_mut().zip(lens) {
            let slots = slots_of(c);
            *cand = Cand {
                caplen: c,
                slots,
                cont: self.cont(c, slots, avail),
            };
        }
        let cands = &cands[..n_lens];
        // A whole RoCE frame with a valid ICRC settles it.
        let icrc_whole = n_lens > 1
            && full as usize <= avail
            && decode(
                self.window.bytes(0, full as usize),
                LinkLayer::Ethernet,
                &self.cfg,
            )
            .icrc()
                == IcrcStatus::Ok;
        let strong: Vec<usize> = {
            let mut s: Vec<usize> = cands
                .iter()
                .filter(|c| c.cont == Cont::Frame)
                .map(|c| c.slots)
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        };
        let distinct_slots = {
            let mut s: Vec<usize> = cands.iter().map(|c| c.slots).collect();
            s.sort_unstable();
            s.dedup();
            s.len()
        };
        let chosen_slots = if icrc_whole {
            whole_slots
        } else if let Some(&n) = strong.first() {
            // Smallest: a frame start is never swallowed by a longer guess.
            n
        } else {
            let best_cont = cands.iter().map(|c| c.cont).min().unwrap_or(Cont::Bad);
            cands
                .iter()
                .filter(|c| c.cont == best_cont)
                .min_by_key(|c| self.preference(c.caplen, full, &view))
                .map_or(whole_slots, |c| c.slots)
        };
        let group: Vec<u32> = cands
            .iter()
            .filter(|c| c.slots == chosen_slots)
            .map(|c| c.caplen)
            .collect();
        let chosen = self.pick_in_slot(&group, full, &view, icrc_whole, avail);
        if let Some(k) = class_of(&view) {
            // A whole frame no longer than some cut teaches nothing: the
            // cut would have left it whole too.
            let longest_cut = lens.iter().skip(1).copied().max().unwrap_or(0);
            if icrc_whole && full > longest_cut.max(70) {
                self.learned[k] = Some(true);
            } else if strong.len() == 1 && distinct_slots > 1 && group.len() == 1 {
                self.learned[k] = Some(chosen == full);
            }
        }
        self.account(chosen, full, &view);

        let Some(meta) = self.window.meta(0) else {
            // Unreachable: decide() runs on a slot in the window.
            return Err(CaptureError::Malformed {
                what: "sniffer dump",
                offset: self.end_offset,
                detail: "internal error: no slot to read a frame from".to_owned(),
            });
        };
        let captured = (chosen as usize).min(avail);
        let extent = if captured < chosen as usize {
            self.stats.dump_cut += 1;
            warn(
                sink,
                meta.offset,
                format!(
                    "frame {} at byte {}: the dump ends or has a gap after {captured} of its \
                     {chosen} bytes",
                    self.next_index, meta.offset
                ),
            );
            Extent::DumpCut
        } else if chosen < full {
            self.stats.header_only += 1;
            Extent::HeaderOnly
        } else {
            self.stats.whole += 1;
            Extent::Whole
        };
        let slots = slots_of(captured as u32);
        self.pending = slots;
        self.stats.frames += 1;
        self.stats.frame_slots += slots as u64;
        let index = self.next_index;
        self.next_index += 1;
        Ok(FrameInfo {
            index,
            captured,
            full,
            offset: meta.offset,
            extent,
            slots,
        })
    }

    /// Lends out the frame found last.
    fn frame(&self, info: FrameInfo) -> SnifferFrame<'_> {
        let data = self.window.bytes(0, info.captured);
        let direction = if self.local.is_empty() {
            None
        } else {
            infer_direction(data, &self.local)
        };
        SnifferFrame {
            frame: CaptureFrame {
                index: info.index,
                ts_ns: info.index,
                caplen: data.len() as u32,
                origlen: info.full,
                linktype: LinkType::ETHERNET,
                interface: 0,
                file_offset: info.offset,
                port: None,
                direction,
                data,
            },
            extent: info.extent,
            slots: info.slots as u32,
        }
    }

    /// Chooses among capture lengths that occupy the same slots (42, 54
    /// and 58 bytes all take one slot, 70 and a short whole frame two).
    ///
    /// The host zeroes its buffer before a capture, so bytes past a cut are
    /// zero: a length shorter than the last non-zero byte of the slots is
    /// ruled out. Among the rest: the whole frame if its ICRC is valid, then
    /// what earlier frames of the class showed, then the filter word's
    /// length (a card with the RoCE comparison fixed, then today's card),
    /// then whole, then the shortest.
    fn pick_in_slot(
        &self,
        group: &[u32],
        full: u32,
        view: &RtlView,
        icrc_whole: bool,
        avail: usize,
    ) -> u32 {
        let has_whole = group.contains(&full);
        if group.len() <= 1 || (icrc_whole && has_whole) {
            return group.first().copied().unwrap_or(full);
        }
        let learned = class_of(view).and_then(|k| self.learned[k]);
        if has_whole && learned == Some(true) {
            return full;
        }
        // A RoCE frame whose bytes are all there but whose ICRC fails is
        // more likely cut (the rest of the slot is not the frame's) than
        // damaged, unless its class is known to be captured whole.
        let whole_ok = has_whole
            && learned != Some(false)
            && !(view.roce() && full as usize <= avail && !icrc_whole);
        let slots = group.iter().map(|&c| slots_of(c)).max().unwrap_or(1);
        let bytes = self.window.bytes(0, slots * SLOT_BYTES);
        let last_nonzero = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let allowed = |c: u32| c != full || whole_ok;
        let mut pool: Vec<u32> = group
            .iter()
            .copied()
            .filter(|&c| allowed(c) && c as usize >= last_nonzero)
            .collect();
        if pool.is_empty() {
            // Not zero-filled (or damaged): every length is as good.
            pool = group.iter().copied().filter(|&c| allowed(c)).collect();
        }
        if pool.is_empty() {
            pool = group.to_vec();
        }
        if let Some(f) = self.filter {
            for card in [Card::Fixed, Card::Today] {
                let c = rule_len(view.rule(f, card), full);
                if pool.contains(&c) {
                    return c;
                }
            }
        }
        if pool.contains(&full) {
            return full;
        }
        pool.iter().copied().min().unwrap_or(full)
    }

    /// Compares what the dump holds with what the filter word asks for.
    fn account(&mut self, chosen: u32, full: u32, view: &RtlView) {
        let Some(f) = self.filter else {
            return;
        };
        let Some(offset) = self.window.meta(0).map(|m| m.offset) else {
            return;
        };
        let actual = if chosen < full {
            Treatment::Cut(chosen)
        } else {
            Treatment::Whole
        };
        let fixed = Treatment::from_rule(view.rule(f, Card::Fixed), full);
        let today = Treatment::from_rule(view.rule(f, Card::Today), full);
        if actual == fixed {
            return;
        }
        let kind = if actual == today && view.roce_wire {
            if fixed == Treatment::Dropped {
                MismatchKind::RoceNotIgnored
            } else {
                MismatchKind::RoceWhole
            }
        } else if actual == today {
            // Today's card's `b7 12` match on a frame that is not RoCE.
            return;
        } else if view.roce_wire
            && f.has(SnifferFilter::ROCEV4_HEADER_ONLY)
            && matches!(actual, Treatment::Cut(54 | 58 | 70))
        {
            MismatchKind::RoceWrongCut
        } else if fixed == Treatment::Dropped {
            MismatchKind::NotIgnored {
                class: view.class_name(),
            }
        } else {
            MismatchKind::Unexpected {
                class: view.class_name(),
                expected: fixed,
                actual,
            }
        };
        self.stats.mismatch(kind, offset);
    }
}

/// Recognises a dump from its first bytes (`at_end`: the input has no
/// more). A text dump: a hex filter word on line 1 and a data line (or
/// nothing) after it. A raw dump: the first slot starts a plausible
/// Ethernet frame.
pub(crate) fn detect(prefix: &[u8], at_end: bool) -> Option<DumpKind> {
    let mut lines = prefix.split(|&c| c == b'\n');
    let first = lines.next().unwrap_or(&[]);
    let complete = prefix.contains(&b'\n') || at_end;
    if complete && filter::parse_hex_word(first).is_some() {
        let second = lines.find(|l| !l.trim_ascii().is_empty());
        let ok = match second {
            None => at_end,
            Some(l) => looks_like_data_line(l) || (at_end && looks_like_cut_data_line(l)),
        };
        if ok {
            return Some(DumpKind::Text);
        }
    }
    match parse_start(prefix.get(..2 * SLOT_BYTES).unwrap_or(prefix)) {
        Ok(_) => Some(DumpKind::Raw),
        Err(_) => None,
    }
}

/// `%08x: ` (any 1-16 hex digits) and at least one hex byte.
fn looks_like_data_line(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    let Some(colon) = t.iter().position(|&c| c == b':') else {
        return false;
    };
    let off = &t[..colon];
    let hex = |s: &[u8]| s.iter().all(|&c| filter::hex_digit(c).is_some());
    if off.is_empty() || off.len() > 16 || !hex(off) {
        return false;
    }
    let mut tokens = t[colon + 1..]
        .split(|c| c.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    tokens.next().is_some_and(|tok| tok.len() == 2 && hex(tok))
}

/// The start of a data line, cut by the end of the dump.
fn looks_like_cut_data_line(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.first().is_some_and(|&c| filter::hex_digit(c).is_some())
        && t.iter()
            .all(|&c| filter::hex_digit(c).is_some() || c == b':' || c.is_ascii_whitespace())
}

/// A reader that first replays the bytes read to detect the format.
pub(crate) type Prefixed<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

/// Opens a detected dump behind the bytes already read for detection.
pub(crate) fn open_detected<R: Read>(
    kind: DumpKind,
    prefix: Vec<u8>,
    reader: R,
    name: String,
) -> Result<SnifferReader<Prefixed<R>>, CaptureError> {
    SnifferReader::open(
        kind,
        io::Cursor::new(prefix).chain(reader),
        name,
        SnifferOptions::default(),
    )
}
