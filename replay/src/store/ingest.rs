//! Ingest: decode each frame once, classify it, run the analysis, and hand
//! rows to the store in batches.
//!
//! Two stages, so that a file is indexed on two cores: [`decode_onto`]
//! turns a frame into a [`PacketInfo`] of a [`Decoded`] batch (everything
//! the store and the RC analysis need, so the bytes need not travel;
//! `decoded.rs`), and [`Appender`] interns
//! conversations, runs the [`Analyzer`] and appends rows under the store's
//! lock. [`Ingest`] runs both on one thread for live sources.

use std::sync::{Arc, Mutex};

use rocescope_decoders::analysis::{AnalysisConfig, Class, FindingCause, Observation, RcAnalysis};
use rocescope_decoders::{
    DecodeConfig, IcrcStatus, LinkLayer, OpcodeKind, Packet, Syndrome, decode,
};

use super::StoreStats;
use super::columns::Columns;
use super::conv::ConvTable;
use super::decoded::{Decoded, PacketInfo, Wide};
use super::row::{Flags, Row};
use crate::record::Direction;

/// A flag change the analysis made after the fact, for an earlier row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LateFlags {
    pub index: u64,
    pub set: Flags,
    pub clear: Flags,
}

/// Stateful analysis that runs on every packet at ingest (the RC analysis).
/// It sees a batch at a time (so shared state is locked once per batch) and
/// may set the packets' flags, or earlier packets' flags through `late`.
pub trait Analyzer: Send {
    /// `first_index` is the row number of `batch[0]`; `wide` is the list
    /// the rows' wide parts are in (see [`PacketInfo::obs`]).
    fn batch(
        &mut self,
        first_index: u64,
        batch: &mut [PacketInfo],
        wide: &[Wide],
        late: &mut Vec<LateFlags>,
    );
    /// A non-frame record of the source (the diagnosis takes its
    /// evidence: a PFC pause, a DPI drop), in source order with the frames.
    fn record(&mut self, _r: &crate::record::Record) {}
    /// The source ended.
    fn finish(&mut self) {}
    /// Whether the analysis keeps the append thread busier than the
    /// reader: the file indexer's reader then decodes every frame itself
    /// instead of only when the append thread falls behind.
    fn is_costly(&self) -> bool {
        false
    }
    /// Whether the analysis has a state worth keeping beside a saved index
    /// (`--index-dir`), so that a second open need not read the frames
    /// again.
    fn keeps_state(&self) -> bool {
        false
    }
    /// Write the analysis' state once the source has ended (called only
    /// when [`keeps_state`](Self::keeps_state)).
    fn save_state(&self, _to: &mut dyn std::io::Write) -> std::io::Result<()> {
        Ok(())
    }
    /// Take back a state [`save_state`](Self::save_state) wrote;
    /// `Err(why)` when it does not fit (made with other settings or by
    /// another rocescope), and the frames are then read again.
    fn restore_state(&mut self, _from: &mut dyn std::io::Read) -> Result<(), String> {
        Err("this analysis keeps no state".into())
    }
}

/// The analyzer that does nothing (decode-only indexing).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAnalysis;

impl Analyzer for NoAnalysis {
    fn batch(&mut self, _: u64, _: &mut [PacketInfo], _: &[Wide], _: &mut Vec<LateFlags>) {}
}

/// The RC analysis, shared with whoever reads its results (the workbench,
/// `rocescope stats`), locked once per batch.
#[derive(Debug, Clone, Default)]
pub struct RcAnalyzer(pub Arc<Mutex<RcAnalysis>>);

fn class_flags(c: Class) -> Flags {
    let mut f = Flags::default();
    f.set(Flags::RETRANSMISSION, c.contains(Class::RETRANSMISSION));
    f.set(Flags::DUPLICATE, c.contains(Class::DUPLICATE));
    f.set(Flags::OUT_OF_SEQUENCE, c.contains(Class::OUT_OF_SEQUENCE));
    f.set(Flags::CAPTURE_LOSS, c.contains(Class::CAPTURE_LOSS));
    f
}

impl RcAnalyzer {
    /// An analysis with `config` (a link rate, a window given).
    pub fn with_config(config: rocescope_decoders::analysis::AnalysisConfig) -> RcAnalyzer {
        RcAnalyzer(Arc::new(Mutex::new(RcAnalysis::new(config))))
    }

    /// The report of an analysis whose source has ended (its store
    /// waited on): the analysis moves into it, its series uncopied
    /// ([`RcAnalysis::into_report`]), and a fresh one takes its place.
    pub fn finish_report(&self) -> rocescope_decoders::analysis::Report {
        let done = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        done.into_report()
    }

    /// Feeds the diagnosis the evidence a record carries that frames cannot
    /// show (a simulator's PFC pause or DPI drop, frames the capture or a
    /// queue before the analysis dropped); other records are ignored. Every source calls it the same way (the in-process
    /// simulator, the live link, a recording), so one scenario gives the
    /// same findings however it was opened. Returns whether it was evidence.
    pub fn note_record(&self, r: &crate::record::Record) -> bool {
        use crate::record::{Record, TruthEvent};
        let mut an = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match r {
            // The card's counter file (a live link's `counters` probes): the
            // diagnosis holds it against the capture.
            Record::ProbeDef(d) if d.module == "counters" => {
                an.card_counter_probe(d.probe, &d.name);
                false
            }
            Record::Profiler(s) => {
                an.card_counter_sample(s.ts_ns, s.probe, s.value);
                false
            }
            // What the source knows of its links and windows (a
            // simulator's scenario): the time by state reckons with them
            // (facts, not evidence the diagnosis cites).
            Record::Truth(t) if matches!(t.event, TruthEvent::LinkRate { .. }) => {
                if let TruthEvent::LinkRate { mbps } = t.event {
                    an.set_link_gbps(mbps as f64 / 1000.0);
                }
                false
            }
            Record::Truth(t) if matches!(t.event, TruthEvent::QpWindow { .. }) => {
                if let TruthEvent::QpWindow { packets } = t.event {
                    an.qp_window(t.qpn, t.psn, packets);
                }
                false
            }
            Record::Truth(t) if matches!(t.event, TruthEvent::QpCongestionControl { .. }) => {
                if let TruthEvent::QpCongestionControl { reacts } = t.event {
                    an.qp_congestion_control(t.qpn, t.psn, reacts);
                }
                false
            }
            Record::Truth(t) if matches!(t.event, TruthEvent::QpResponseTime { .. }) => {
                if let TruthEvent::QpResponseTime {
                    latency_ns,
                    each_ns,
                } = t.event
                {
                    an.qp_response_time(t.qpn, t.psn, latency_ns.into(), each_ns.into());
                }
                false
            }
            // A running count per interface and reason: what it grew by is
            // capture loss, which a fall in the rate then is (evidence
            // when it grew).
            Record::Drops(d) => {
                let source = u64::from(d.interface)
                    | u64::from(crate::record::drop_reason_code(d.reason)) << 32;
                an.capture_drop_total(source, d.dropped, d.ts_ns)
            }
            _ => match evidence(r) {
                Some((ts_ns, what)) => {
                    an.note(ts_ns, what);
                    true
                }
                None => false,
            },
        }
    }
}

/// Whether the analysis reads `r`: the diagnosis' evidence, or the card's
/// counters.
pub fn for_analysis(r: &crate::record::Record) -> bool {
    use crate::record::Record;
    match r {
        Record::ProbeDef(d) => d.module == "counters",
        Record::Profiler(_) | Record::Drops(_) => true,
        Record::Truth(t) => {
            matches!(
                t.event,
                crate::record::TruthEvent::LinkRate { .. }
                    | crate::record::TruthEvent::QpWindow { .. }
                    | crate::record::TruthEvent::QpResponseTime { .. }
                    | crate::record::TruthEvent::QpCongestionControl { .. }
            ) || evidence(r).is_some()
        }
        _ => evidence(r).is_some(),
    }
}

/// The diagnosis' evidence in a record, if any.
pub fn evidence(r: &crate::record::Record) -> Option<(u64, FindingCause)> {
    use crate::record::{Record, TruthEvent};
    let Record::Truth(t) = r else { return None };
    let what = match t.event {
        TruthEvent::PfcPause { .. } => FindingCause::PfcPause,
        TruthEvent::DpiDrop => FindingCause::DpiDrop,
        _ => return None,
    };
    Some((t.ts_ns, what))
}

impl Analyzer for RcAnalyzer {
    fn record(&mut self, r: &crate::record::Record) {
        self.note_record(r);
    }

    fn is_costly(&self) -> bool {
        true
    }

    fn keeps_state(&self) -> bool {
        true
    }

    fn save_state(&self, to: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write;
        let an = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Buffered here, so that bincode's many small writes are not each
        // a call through `dyn Write`.
        let mut w = std::io::BufWriter::with_capacity(1 << 16, to);
        bincode::serde::encode_into_std_write(&*an, &mut w, bincode::config::standard())
            .map_err(std::io::Error::other)?;
        w.flush()
    }

    fn restore_state(&mut self, from: &mut dyn std::io::Read) -> Result<(), String> {
        use std::io::BufRead;
        // The bytes passed their checksum: damage is caught before this.
        let mut r = std::io::BufReader::with_capacity(1 << 16, from);
        let saved: RcAnalysis =
            bincode::serde::decode_from_reader(&mut r, bincode::config::standard())
                .map_err(|e| format!("its analysis cannot be read ({e})"))?;
        if !r.fill_buf().map_err(|e| e.to_string())?.is_empty() {
            return Err("its analysis is damaged (trailing bytes)".into());
        }
        let mut an = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if saved.config() != an.config() {
            return Err(format!(
                "its analysis was made with other settings ({})",
                settings_changed(&saved.config(), &an.config())
            ));
        }
        *an = saved;
        Ok(())
    }

    fn batch(
        &mut self,
        first_index: u64,
        batch: &mut [PacketInfo],
        wide: &[Wide],
        late: &mut Vec<LateFlags>,
    ) {
        let mut an = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (i, info) in batch.iter_mut().enumerate() {
            if let Some(o) = info.observed(wide) {
                let index = first_index + i as u64;
                let class = if info.row.conversation == super::NO_CONVERSATION {
                    an.observe(index, &o)
                } else {
                    an.observe_keyed(index, info.row.conversation, &o)
                };
                info.row.flags.0 |= class_flags(class).0;
            } else if let Some(quanta) = info.pause_quanta() {
                // A pause received on a port holds what is sent there; one
                // the capture's own host sent holds the switch, not it.
                match info.row.dir {
                    Some(Direction::Tx) => {}
                    Some(Direction::Rx) => an.pause(info.row.ts_ns, Some(info.row.port), quanta),
                    None => an.pause(info.row.ts_ns, None, quanta),
                }
            }
        }
        late.extend(an.drain_late().map(|l| LateFlags {
            index: l.index,
            set: class_flags(l.set),
            clear: class_flags(l.clear),
        }));
    }
}

/// The settings that differ, as "link_gbps 100 -> 25" (0, taken from
/// the source or the capture, as "the capture's").
fn settings_changed(was: &AnalysisConfig, now: &AnalysisConfig) -> String {
    let own = |v: String| {
        if v == "0" {
            "the capture's".to_string()
        } else {
            v
        }
    };
    type Field = (&'static str, fn(&AnalysisConfig) -> String);
    let fields: [Field; 5] = [
        ("timeout_silence_ns", |c| c.timeout_silence_ns.to_string()),
        ("window_packets", |c| c.window_packets.to_string()),
        ("retry_limit", |c| c.retry_limit.to_string()),
        ("link_gbps", |c| c.link_gbps.to_string()),
        ("time_by_state", |c| c.time_by_state.to_string()),
    ];
    let changed: Vec<String> = fields
        .iter()
        .map(|(name, f)| (name, f(was), f(now)))
        .filter(|(_, a, b)| a != b)
        .map(|(name, a, b)| format!("{name} {} -> {}", own(a), own(b)))
        .collect();
    changed.join(", ")
}

/// One frame offered to ingest.
#[derive(Debug, Clone, Copy)]
pub struct IngestFrame<'a> {
    pub ts_ns: u64,
    pub data: &'a [u8],
    pub origlen: u32,
    /// pcap LINKTYPE_ value.
    pub linktype: u32,
    pub port: u8,
    pub dir: Option<Direction>,
    /// Where `data` lives in the store's backing.
    pub file_offset: u64,
}

impl<'a> IngestFrame<'a> {
    /// A whole Ethernet frame with no file behind it, no port and no
    /// direction: a live or built frame.
    pub fn ethernet(ts_ns: u64, data: &'a [u8]) -> IngestFrame<'a> {
        IngestFrame {
            ts_ns,
            data,
            origlen: data.len() as u32,
            linktype: 1,
            port: 0,
            dir: None,
            file_offset: 0,
        }
    }
}

/// Stage one: decode and classify a frame (a header-only RoCE frame of the
/// commonest shape through the fast path, the same result with less work).
pub fn decode_frame(cfg: &DecodeConfig, f: &IngestFrame<'_>) -> Decoded {
    let mut d = Decoded::with_capacity(1);
    decode_onto(&mut d, cfg, f);
    d
}

/// Decodes `f` onto the end of `d`, the row written in place, where it
/// stays (see `fast::decode_header_only`).
#[inline(always)]
pub fn decode_onto(d: &mut Decoded, cfg: &DecodeConfig, f: &IngestFrame<'_>) {
    d.rows.push(PacketInfo::default());
    let Decoded { rows, wide } = d;
    if let Some(slot) = rows.last_mut()
        && !super::fast::decode_header_only(cfg, f, slot)
    {
        // The out-of-line call takes a copy: `f`'s own address is then
        // never taken, and the caller's frame stays in registers on the
        // fast path instead of being stored for this call first.
        let copy = *f;
        decode_generic_into(cfg, &copy, slot, wide);
    }
}

/// Stage one through the generic decoder, for every frame (the reference
/// the fast path is tested against).
#[cfg(test)]
pub(crate) fn decode_frame_generic(cfg: &DecodeConfig, f: &IngestFrame<'_>) -> Decoded {
    let mut d = Decoded::with_capacity(1);
    d.rows.push(PacketInfo::default());
    let Decoded { rows, wide } = &mut d;
    if let Some(slot) = rows.last_mut() {
        decode_generic_into(cfg, f, slot, wide);
    }
    d
}

/// The generic decoder into a row slot. Out of line: the per-packet loops
/// inline the fast path and call this for the rest.
#[inline(never)]
fn decode_generic_into(
    cfg: &DecodeConfig,
    f: &IngestFrame<'_>,
    out: &mut PacketInfo,
    wide: &mut Vec<Wide>,
) {
    *out = PacketInfo::default();
    out.row = Row {
        ts_ns: f.ts_ns,
        file_offset: f.file_offset,
        caplen: f.data.len() as u32,
        origlen: f.origlen.max(f.data.len() as u32),
        port: f.port,
        dir: f.dir,
        ..Row::default()
    };
    match LinkLayer::from_linktype(f.linktype) {
        Some(link) => {
            let p = decode(f.data, link, cfg);
            let obs = Observation::from_packet(&p, f.ts_ns, out.row.origlen);
            classify(&p, obs.as_ref(), &mut out.row);
            if let Some(o) = &obs {
                out.set_obs(o, wide);
            } else if let Some(q) = p.pause_quanta() {
                out.set_pause(q);
            }
        }
        None => out.row.flags = Flags::UNDECODED,
    }
}

/// Fill the row's RoCE fields and flags from the decoded packet and its
/// observation (which already holds the BTH and AETH values: no second walk).
#[inline]
fn classify(p: &Packet<'_>, obs: Option<&Observation>, row: &mut Row) {
    let mut flags = Flags::default();
    match p.icrc() {
        IcrcStatus::Bad { .. } => flags.set(Flags::ICRC_BAD, true),
        IcrcStatus::Truncated => flags.set(Flags::CUT, true),
        IcrcStatus::Ok | IcrcStatus::Unchecked | IcrcStatus::None => {}
    }
    if let Some(stop) = p.stop() {
        let f = if stop.is_truncation() {
            Flags::CUT
        } else {
            Flags::MALFORMED
        };
        flags.set(f, true);
    }
    // `obs` is Some exactly when the BTH was decoded.
    match (obs, p.bth()) {
        (Some(o), Some(bth)) => {
            flags.set(Flags::ECN_CE, o.ecn_ce);
            flags.set(Flags::ROCE, true);
            row.opcode = o.opcode.0;
            row.psn = o.psn;
            flags.set(Flags::ACK_REQ, bth.ack_req());
            flags.set(Flags::BECN, bth.becn());
            flags.set(Flags::FECN, bth.fecn());
            let kind = o.opcode.kind();
            flags.set(Flags::CNP, matches!(kind, OpcodeKind::Cnp));
            flags.set(
                Flags::RESPONSE,
                o.opcode.operation().is_some_and(|op| op.is_response()),
            );
            if let Some(s) = o.syndrome {
                flags.set(Flags::NAK, Syndrome::from_u8(s).is_nak());
            }
        }
        _ => {
            if p.ip().is_some_and(|ip| ip.ecn() == 3) {
                flags.set(Flags::ECN_CE, true);
            }
        }
    }
    row.flags = flags;
}

/// Stage two: conversations, analysis, counters, columns.
pub struct Appender {
    analyzer: Box<dyn Analyzer>,
    late: Vec<LateFlags>,
}

impl Appender {
    /// Hand a non-frame record to the analyzer.
    pub fn record(&mut self, r: &crate::record::Record) {
        self.analyzer.record(r);
    }
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender").finish_non_exhaustive()
    }
}

impl Appender {
    pub fn new(analyzer: Box<dyn Analyzer>) -> Appender {
        Appender {
            analyzer,
            late: Vec::new(),
        }
    }

    pub(crate) fn append(
        &mut self,
        infos: &mut [PacketInfo],
        wide: &[Wide],
        cols: &mut Columns,
        convs: &mut ConvTable,
        stats: &mut StoreStats,
    ) {
        self.append_counted(infos, wide, None, cols, convs, stats);
    }

    /// [`Appender::append`] for rows whose counters `counted` already holds
    /// (the reader counts the rows it decodes, which takes that work off
    /// this thread, the indexer's busier one).
    pub(crate) fn append_counted(
        &mut self,
        infos: &mut [PacketInfo],
        wide: &[Wide],
        counted: Option<&StoreStats>,
        cols: &mut Columns,
        convs: &mut ConvTable,
        stats: &mut StoreStats,
    ) {
        let first_index = cols.len();
        self.analyse(first_index, infos, wide, convs);
        match counted {
            Some(c) => stats.merge(c),
            None => stats.merge(&count_rows(infos)),
        }
        cols.extend(infos);
        for l in &self.late {
            cols.update_flags(l.index, l.set, l.clear);
        }
    }

    /// The rows' conversations interned into `convs` and the analysis over
    /// them, the verdicts for rows already appended left in `self.late`.
    /// Alone, over rows a saved index already holds: their conversations
    /// interned as the store interned them (the same ids, in the same
    /// order), the verdicts dropped (the saved rows carry them).
    pub(crate) fn analyse(
        &mut self,
        first_index: u64,
        infos: &mut [PacketInfo],
        wide: &[Wide],
        convs: &mut ConvTable,
    ) {
        // The first pass over rows another thread decoded: their cache
        // lines come from the other core, so ask for them ahead (about a
        // twentieth of the indexing time, BENCHMARKS.md "Why the indexer is
        // built so": the hand-over).
        for i in 0..infos.len() {
            if let Some(ahead) = infos.get(i + PREFETCH_ROWS) {
                rocescope_decoders::hint::prefetch(ahead);
            }
            let Some(info) = infos.get_mut(i) else { break };
            if let Some(key) = info.key(wide) {
                info.row.conversation =
                    convs.observe(key, first_index + i as u64, info.row.origlen);
            }
        }
        self.late.clear();
        self.analyzer
            .batch(first_index, infos, wide, &mut self.late);
    }

    pub(crate) fn finish(&mut self) {
        self.analyzer.finish();
    }

    /// The analyzer, once the source has ended.
    pub(crate) fn into_analyzer(self) -> Box<dyn Analyzer> {
        self.analyzer
    }
}

/// Both stages on one thread, for live sources.
pub struct Ingest {
    cfg: DecodeConfig,
    pending: Decoded,
    /// Bytes of the pending live frames (see `Store::ingest`).
    bytes: Vec<u8>,
    appender: Appender,
    /// Ports whose link type the store has noted.
    pub(crate) noted: super::frames::NotedPorts,
}

impl std::fmt::Debug for Ingest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingest")
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl Ingest {
    pub fn new(cfg: DecodeConfig, analyzer: Box<dyn Analyzer>) -> Ingest {
        Ingest {
            cfg,
            pending: Decoded::with_capacity(super::BATCH_ROWS),
            bytes: Vec::new(),
            appender: Appender::new(analyzer),
            noted: Default::default(),
        }
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The settings frames are decoded with.
    pub fn config(&self) -> &DecodeConfig {
        &self.cfg
    }

    /// Decode and classify one frame; it is appended at the next flush.
    #[inline]
    pub fn push(&mut self, f: &IngestFrame<'_>) {
        decode_onto(&mut self.pending, &self.cfg, f);
    }

    /// A frame decoded elsewhere (`wide` the list of its batch), its
    /// bytes at `file_offset` of this batch's; appended at the next flush.
    pub(crate) fn push_decoded(&mut self, info: &PacketInfo, wide: &[Wide], file_offset: u64) {
        self.pending.push_from(info, wide);
        if let Some(last) = self.pending.rows.last_mut() {
            last.row.file_offset = file_offset;
        }
    }

    /// Keep a live frame's bytes until the next flush; returns their offset
    /// in this batch (rebased when the batch reaches the store).
    pub(crate) fn keep_bytes(&mut self, data: &[u8]) -> u64 {
        let at = self.bytes.len() as u64;
        self.bytes.extend_from_slice(data);
        at
    }

    pub(crate) fn kept_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The batch's bytes now start at `base` in the store's memory.
    pub(crate) fn rebase_pending(&mut self, base: u64) {
        for p in &mut self.pending.rows {
            p.row.file_offset += base;
        }
        self.bytes.clear();
    }

    pub(crate) fn drain_into(
        &mut self,
        cols: &mut Columns,
        convs: &mut ConvTable,
        stats: &mut StoreStats,
    ) {
        let Decoded { rows, wide } = &mut self.pending;
        self.appender.append(rows, wide, cols, convs, stats);
        self.pending.clear();
    }

    /// Appends rows decoded or staged elsewhere (`wide` their batch's
    /// list) straight from the caller's slice.
    pub(crate) fn append_in_place(
        &mut self,
        rows: &mut [PacketInfo],
        wide: &[Wide],
        cols: &mut Columns,
        convs: &mut ConvTable,
        stats: &mut StoreStats,
    ) {
        self.appender.append(rows, wide, cols, convs, stats);
    }

    pub(crate) fn finish(&mut self) {
        self.appender.finish();
    }
}

/// One row's counts, the plain way: what [`count_rows`] must agree with.
#[cfg(test)]
pub(crate) fn count(stats: &mut StoreStats, row: &Row) {
    stats.packets += 1;
    let f = row.flags;
    stats.roce_packets += u64::from(f.contains(Flags::ROCE));
    stats.icrc_errors += u64::from(f.contains(Flags::ICRC_BAD));
    stats.truncated += u64::from(f.contains(Flags::CUT));
    stats.malformed += u64::from(f.contains(Flags::MALFORMED));
    stats.undecoded += u64::from(f.contains(Flags::UNDECODED));
    stats.captured_bytes += u64::from(row.caplen);
    stats.wire_bytes += u64::from(row.origlen);
    stats.first_ts_ns = Some(stats.first_ts_ns.map_or(row.ts_ns, |t| t.min(row.ts_ns)));
    stats.last_ts_ns = Some(stats.last_ts_ns.map_or(row.ts_ns, |t| t.max(row.ts_ns)));
}

/// The store's counters of many rows at once, into fresh counters. The five flags
/// counted (bits 0-3 and 15) pick one of 32 words that add one to each
/// set flag's 12-bit lane of a single sum, one add a row in place of five
/// tests and adds; the times are kept without the `Option`s. The reader
/// counts every row it decodes this way.
pub(crate) fn count_rows<T: super::row::AsRow>(rows: &[T]) -> StoreStats {
    const COUNTED: u16 = Flags::ROCE.0 | Flags::ICRC_BAD.0 | Flags::CUT.0 | Flags::MALFORMED.0;
    // The lanes' order: ROCE, ICRC_BAD, CUT, MALFORMED (the flags' own bits
    // 0-3), then UNDECODED.
    const _: () = assert!(COUNTED == 0xF && Flags::ROCE.0 == 1 && Flags::CUT.0 == 4);
    const _: () = assert!(Flags::ICRC_BAD.0 == 2 && Flags::MALFORMED.0 == 8);
    const _: () = assert!(Flags::UNDECODED.0 == 1 << 15);
    const LANE_BITS: u32 = 12;
    /// Rows a lane can count before it would carry into the next.
    const LANE_ROWS: usize = (1 << LANE_BITS) - 1;
    static SPREAD: [u64; 32] = {
        let mut t = [0u64; 32];
        let mut slot = 0;
        while slot < 32 {
            let mut bit = 0;
            while bit < 5 {
                if slot >> bit & 1 == 1 {
                    t[slot] |= 1 << (bit as u32 * LANE_BITS);
                }
                bit += 1;
            }
            slot += 1;
        }
        t
    };
    let mut per_flag = [0u64; 5];
    let (mut captured, mut wire) = (0u64, 0u64);
    let (mut first, mut last) = (u64::MAX, 0u64);
    for block in rows.chunks(LANE_ROWS) {
        let mut lanes = 0u64;
        for r in block {
            let r = r.row();
            let f = r.flags.0;
            lanes += SPREAD[usize::from((f & COUNTED) | ((f >> 11) & 0x10))];
            captured += u64::from(r.caplen);
            wire += u64::from(r.origlen);
            first = first.min(r.ts_ns);
            last = last.max(r.ts_ns);
        }
        for (lane, sum) in per_flag.iter_mut().enumerate() {
            *sum += (lanes >> (lane as u32 * LANE_BITS)) & LANE_ROWS as u64;
        }
    }
    let [roce, icrc_bad, cut, malformed, undecoded] = per_flag;
    let any = !rows.is_empty();
    StoreStats {
        packets: rows.len() as u64,
        roce_packets: roce,
        icrc_errors: icrc_bad,
        truncated: cut,
        malformed,
        undecoded,
        captured_bytes: captured,
        wire_bytes: wire,
        first_ts_ns: any.then_some(first),
        last_ts_ns: any.then_some(last),
    }
}

/// How far ahead of the row it reads the append thread asks for rows.
const PREFETCH_ROWS: usize = 16;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rocescope_decoders::analysis::AnalysisConfig;

    use super::super::decoded::tests::{decoded, mixed};
    use super::*;

    /// The store's analysis (rows keyed by conversation, read in place)
    /// classifies as the analysis fed whole observations does, CM pairing
    /// included.
    #[test]
    fn the_batch_analysis_matches_whole_observations() {
        let cfg = DecodeConfig::default();
        let frames = mixed();
        let mut d = decoded(&cfg, &frames);
        let mut whole = RcAnalysis::new(AnalysisConfig::default());
        let want: Vec<Class> = d
            .rows
            .iter()
            .enumerate()
            .map(|(i, info)| {
                info.obs(&d.wide)
                    .map_or(Class::default(), |o| whole.observe(i as u64, &o))
            })
            .collect();
        let mut convs = ConvTable::default();
        for (i, info) in d.rows.iter_mut().enumerate() {
            info.row.conversation = match info.key(&d.wide) {
                // Every third RoCE row unkeyed, as a store without
                // conversations would hand it.
                Some(_) if i % 3 == 0 => super::super::NO_CONVERSATION,
                Some(k) => convs.observe(k, i as u64, info.row.origlen),
                None => super::super::NO_CONVERSATION,
            };
        }
        let shared = RcAnalyzer::default();
        let mut an = shared.clone();
        let mut late = Vec::new();
        let (first, second) = d.rows.split_at_mut(101);
        an.batch(0, first, &d.wide, &mut late);
        an.batch(101, second, &d.wide, &mut late);
        let verdicts = class_flags(Class(u8::MAX));
        for (i, info) in d.rows.iter().enumerate() {
            assert_eq!(
                info.row.flags.0 & verdicts.0,
                class_flags(want[i]).0,
                "row {i}"
            );
        }
        assert!(
            want.iter().filter(|c| class_flags(**c).0 != 0).count() >= 3,
            "{want:?}"
        );
        assert_eq!(shared.0.lock().unwrap().report(), whole.report());
    }
}
