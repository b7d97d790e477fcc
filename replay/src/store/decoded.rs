//! The rows the file indexer's reader hands the append thread, and the
//! live sources' batches: [`PacketInfo`], one cache line a frame, the few
//! frames' [`Wide`] parts beside them in a [`Decoded`] batch, and
//! [`RowObs`], a row read as the RC analysis reads a packet.

use rocescope_decoders::analysis::{CmMessage, Observation, Observed};
use rocescope_decoders::{Opcode, v4_mapped};

use super::conv::ConvKey;
use super::row::Row;

/// What ingest keeps of a decoded frame: its row plus, for RoCE frames,
/// what the RC analysis needs beyond the row, in 64 bytes (one cache
/// line). The reader thread writes a batch of these and the append thread
/// reads them back from the other core: at 128 bytes (the row and a whole
/// [`Observation`]) that traffic cost 6-7% of the indexing time
/// (BENCHMARKS.md, "A row of one cache line"). The observation's time,
/// PSN, opcode and wire length are the row's own; IPv4 ends fit here, and
/// the rest (IPv6 and GID ends, LIDs, a CM message) goes to the batch's
/// [`Wide`] list, which [`PacketInfo::obs`] reads it back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketInfo {
    pub row: Row,
    roce: RoceFields,
}

const _: () = assert!(std::mem::size_of::<PacketInfo>() == 64);

/// The observation's fields the row does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct RoceFields {
    /// DestQP (24 bits) | `HAS_*` (the high 8).
    qp_and_has: u32,
    /// AETH MSN (24 bits) | syndrome (the high 8).
    msn_and_syndrome: u32,
    dma_len: u32,
    payload_len: u32,
    /// Source and destination IPv4 addresses; with `WIDE`, the first is
    /// the index of the frame's [`Wide`] in its batch.
    ends: [[u8; 4]; 2],
}

/// The frame is RoCE (its observation is present).
const HAS_OBS: u32 = 1 << 24;
const HAS_SYNDROME: u32 = 1 << 25;
const HAS_DMA_LEN: u32 = 1 << 26;
const ECN_CE: u32 = 1 << 27;
/// The ends (and a CM message) are in the batch's [`Wide`] list.
const WIDE: u32 = 1 << 28;
/// Not RoCE: a PAUSE or PFC frame, its quanta in `dma_len`.
const HAS_PAUSE: u32 = 1 << 29;
const LOW_24: u32 = 0x00FF_FFFF;

/// What a [`PacketInfo`] has no room for: the ends of a frame that are
/// not both IPv4 (IPv6, GIDs, LIDs) and a CM message. Kept beside the
/// batch's rows, in a list of its own ([`Decoded::wide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide {
    src: [u8; 16],
    dst: [u8; 16],
    cm: Option<CmMessage>,
}

/// The IPv4 address `a` maps, if it is one.
#[inline]
fn v4_of(a: &[u8; 16]) -> Option<[u8; 4]> {
    (a[..10] == [0; 10] && a[10] == 0xFF && a[11] == 0xFF).then(|| [a[12], a[13], a[14], a[15]])
}

impl PacketInfo {
    /// Whether the frame is RoCE (it has an observation).
    #[inline]
    pub fn is_roce(&self) -> bool {
        self.roce.qp_and_has & HAS_OBS != 0
    }

    /// A PAUSE or PFC frame's hold on its link, in quanta (0: released).
    #[inline]
    pub fn pause_quanta(&self) -> Option<u16> {
        (self.roce.qp_and_has & (HAS_PAUSE | HAS_OBS) == HAS_PAUSE)
            .then_some(self.roce.dma_len as u16)
    }

    /// The frame is a PAUSE or PFC frame holding its link `quanta`.
    pub(crate) fn set_pause(&mut self, quanta: u16) {
        self.roce.qp_and_has = HAS_PAUSE;
        self.roce.dma_len = u32::from(quanta);
    }

    /// The RC analysis' view of a RoCE frame, read in place; `wide` is
    /// the list of the batch the row came in.
    #[inline(always)]
    pub fn observed<'a>(&'a self, wide: &'a [Wide]) -> Option<RowObs<'a>> {
        self.is_roce().then_some(RowObs { info: self, wide })
    }

    /// The observation of a RoCE frame, as the decoder gives it.
    pub fn obs(&self, wide: &[Wide]) -> Option<Observation> {
        let v = self.observed(wide)?;
        let (src, dst) = v.ends();
        Some(Observation {
            ts_ns: v.ts_ns(),
            src,
            dst,
            dest_qp: v.dest_qp(),
            opcode: v.opcode(),
            psn: v.psn(),
            syndrome: v.syndrome(),
            msn: v.msn(),
            dma_len: v.dma_len(),
            payload_len: v.payload_len(),
            wire_len: v.wire_len(),
            ecn_ce: v.ecn_ce(),
            cm: v.cm(),
        })
    }

    #[inline(always)]
    fn ends(&self, wide: &[Wide]) -> ([u8; 16], [u8; 16], Option<CmMessage>) {
        let [src, dst] = self.roce.ends;
        if self.roce.qp_and_has & WIDE == 0 {
            return (v4_mapped(src), v4_mapped(dst), None);
        }
        // Rows only meet the list they were decoded with; a wrong one
        // gives no ends rather than a panic.
        match wide.get(u32::from_ne_bytes(src) as usize) {
            Some(w) => (w.src, w.dst, w.cm),
            None => ([0; 16], [0; 16], None),
        }
    }

    /// The one-direction flow of a RoCE frame.
    #[inline(always)]
    pub fn key(&self, wide: &[Wide]) -> Option<ConvKey> {
        if !self.is_roce() {
            return None;
        }
        let (src, dst, _) = self.ends(wide);
        Some(ConvKey {
            src,
            dst,
            dest_qp: self.roce.qp_and_has & LOW_24,
        })
    }

    /// The RoCE fields of a frame with IPv4 ends (the fast path's),
    /// written in place. A DestQP and an MSN are 24 bits on the wire.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn set_v4(
        &mut self,
        src: [u8; 4],
        dst: [u8; 4],
        dest_qp: u32,
        syndrome_msn: Option<(u8, u32)>,
        dma_len: Option<u32>,
        payload_len: u32,
        ecn_ce: bool,
    ) {
        let mut has = HAS_OBS | (dest_qp & LOW_24);
        has |= HAS_SYNDROME & 0u32.wrapping_sub(u32::from(syndrome_msn.is_some()));
        has |= HAS_DMA_LEN & 0u32.wrapping_sub(u32::from(dma_len.is_some()));
        has |= ECN_CE & 0u32.wrapping_sub(u32::from(ecn_ce));
        let (syndrome, msn) = syndrome_msn.unwrap_or((0, 0));
        self.roce = RoceFields {
            qp_and_has: has,
            msn_and_syndrome: (msn & LOW_24) | (u32::from(syndrome) << 24),
            dma_len: dma_len.unwrap_or(0),
            payload_len,
            ends: [src, dst],
        };
    }

    /// The RoCE fields from a whole observation (the generic decoder's),
    /// what does not fit pushed onto `wide`. The row's time, PSN, opcode
    /// and wire length must already be the observation's, and a frame
    /// without an AETH has MSN 0 (as the decoder gives it).
    pub(crate) fn set_obs(&mut self, o: &Observation, wide: &mut Vec<Wide>) {
        debug_assert_eq!(
            (
                self.row.ts_ns,
                self.row.psn,
                self.row.opcode,
                self.row.origlen
            ),
            (o.ts_ns, o.psn, o.opcode.0, o.wire_len)
        );
        debug_assert!(o.syndrome.is_some() || o.msn == 0);
        let inline = match (v4_of(&o.src), v4_of(&o.dst), o.cm) {
            (Some(s), Some(d), None) => Some([s, d]),
            _ => None,
        };
        let [src, dst] = inline.unwrap_or([(wide.len() as u32).to_ne_bytes(), [0; 4]]);
        let syndrome_msn = o.syndrome.map(|s| (s, o.msn));
        self.set_v4(
            src,
            dst,
            o.dest_qp,
            syndrome_msn,
            o.dma_len,
            o.payload_len,
            o.ecn_ce,
        );
        if inline.is_none() {
            self.roce.qp_and_has |= WIDE;
            wide.push(Wide {
                src: o.src,
                dst: o.dst,
                cm: o.cm,
            });
        }
    }
}

/// A RoCE row as the RC analysis reads a packet: in place, the row's own
/// time, PSN, opcode and wire length, the rest unpacked as read.
#[derive(Debug, Clone, Copy)]
pub struct RowObs<'a> {
    info: &'a PacketInfo,
    wide: &'a [Wide],
}

impl Observed for RowObs<'_> {
    #[inline(always)]
    fn ts_ns(&self) -> u64 {
        self.info.row.ts_ns
    }
    #[inline]
    fn ends(&self) -> ([u8; 16], [u8; 16]) {
        let (src, dst, _) = self.info.ends(self.wide);
        (src, dst)
    }
    #[inline(always)]
    fn dest_qp(&self) -> u32 {
        self.info.roce.qp_and_has & LOW_24
    }
    #[inline(always)]
    fn opcode(&self) -> Opcode {
        Opcode(self.info.row.opcode)
    }
    #[inline(always)]
    fn psn(&self) -> u32 {
        self.info.row.psn
    }
    #[inline(always)]
    fn syndrome(&self) -> Option<u8> {
        let r = &self.info.roce;
        (r.qp_and_has & HAS_SYNDROME != 0).then_some((r.msn_and_syndrome >> 24) as u8)
    }
    #[inline(always)]
    fn msn(&self) -> u32 {
        self.info.roce.msn_and_syndrome & LOW_24
    }
    #[inline(always)]
    fn dma_len(&self) -> Option<u32> {
        let r = &self.info.roce;
        (r.qp_and_has & HAS_DMA_LEN != 0).then_some(r.dma_len)
    }
    #[inline(always)]
    fn payload_len(&self) -> u32 {
        self.info.roce.payload_len
    }
    #[inline(always)]
    fn wire_len(&self) -> u32 {
        self.info.row.origlen
    }
    #[inline(always)]
    fn ecn_ce(&self) -> bool {
        self.info.roce.qp_and_has & ECN_CE != 0
    }
    #[inline(always)]
    fn cm(&self) -> Option<CmMessage> {
        if self.info.roce.qp_and_has & WIDE == 0 {
            return None;
        }
        self.info.ends(self.wide).2
    }
    #[inline]
    fn tx_port(&self) -> Option<u8> {
        (self.info.row.dir == Some(crate::record::Direction::Tx)).then_some(self.info.row.port)
    }
}

impl super::row::AsRow for PacketInfo {
    #[inline]
    fn row(&self) -> &Row {
        &self.row
    }
}

/// Decoded frames on their way to the store: a row each, and the [`Wide`]
/// parts of the few that have one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decoded {
    pub rows: Vec<PacketInfo>,
    pub wide: Vec<Wide>,
}

impl Decoded {
    pub fn with_capacity(rows: usize) -> Decoded {
        Decoded {
            rows: Vec::with_capacity(rows),
            wide: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn clear(&mut self) {
        self.rows.clear();
        self.wide.clear();
    }

    /// Appends a row decoded into another batch (`wide` is that batch's
    /// list), its wide part copied over.
    pub fn push_from(&mut self, info: &PacketInfo, wide: &[Wide]) {
        let mut info = *info;
        if info.roce.qp_and_has & WIDE != 0 {
            let (src, dst, cm) = info.ends(wide);
            info.roce.ends[0] = (self.wide.len() as u32).to_ne_bytes();
            self.wide.push(Wide { src, dst, cm });
        }
        self.rows.push(info);
    }

    /// Bytes its rows and wide parts take (not the room kept for more).
    pub fn bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<PacketInfo>()
            + self.wide.len() * std::mem::size_of::<Wide>()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use rocescope_decoders::{
        DecodeConfig, LinkLayer, Lnh, NetHeader, Opcode, PacketBuilder, RoceVersion, decode,
    };

    use super::*;
    use crate::store::ingest::{IngestFrame, decode_onto};

    /// Frames of every kind of ends: IPv4 (cut and whole), IPv6, native
    /// IB by LID and with a GRH, CM messages, and frames that are not RoCE;
    /// with their link types.
    pub(crate) fn mixed() -> Vec<(Vec<u8>, u32)> {
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let v6 = |x: u8| {
            let mut g = [0u8; 16];
            g[0] = 0xFE;
            g[1] = 0x80;
            g[15] = x;
            g
        };
        let mut out = vec![
            (PacketBuilder::cm_frame(a, b, false, 0x111, 0, 0x30), 1),
            (PacketBuilder::cm_frame(b, a, true, 0x222, 0x111, 0x20), 1),
        ];
        for psn in 0..40u32 {
            let mut w = PacketBuilder::rocev2_ipv4(a, b, Opcode::RC_WRITE_ONLY, 0x20, psn);
            w.ext.reth.dma_len = 64;
            let mut d = Vec::new();
            w.build_headers_into(64, &mut d);
            out.push((d, 1));
            let mut ack = PacketBuilder::rocev2_ipv4(b, a, Opcode::RC_ACK, 0x30, psn);
            ack.ext.aeth.msn = psn + 1;
            out.push((ack.build(&[]), 1));
            let mut w6 = w.clone();
            w6.net = NetHeader::Ipv6 {
                src: v6(1),
                dst: v6(2),
                traffic_class: 3,
                flow_label: 0,
                hop_limit: 64,
            };
            out.push((w6.build(&[0; 64]), 1));
            let ib = PacketBuilder::ib(1, 2, Opcode::RC_WRITE_ONLY, 0x44, psn);
            out.push((ib.build(&[0; 64]), 247));
            let mut grh = ib.clone();
            grh.lrh.lnh = Lnh::IbaGlobal;
            grh.net = NetHeader::Ipv6 {
                src: v6(3),
                dst: v6(4),
                traffic_class: 0,
                flow_label: 0,
                hop_limit: 64,
            };
            assert_eq!(grh.version, RoceVersion::Ib);
            out.push((grh.build(&[0; 64]), 247));
            out.push((vec![0u8; 60], 1));
            out.push((vec![0u8; 60], 9999));
        }
        // A resend over PSNs already sent and acknowledged, and one past a
        // gap: the analysis has verdicts to give.
        for psn in [12, 13, 50] {
            let mut d = Vec::new();
            PacketBuilder::rocev2_ipv4(a, b, Opcode::RC_WRITE_ONLY, 0x20, psn)
                .build_headers_into(64, &mut d);
            out.push((d, 1));
        }
        out
    }

    fn ingest_frame(data: &[u8], linktype: u32, i: usize) -> IngestFrame<'_> {
        IngestFrame {
            ts_ns: 1_000 * i as u64,
            data,
            origlen: data.len() as u32 + 4,
            linktype,
            port: 0,
            dir: None,
            file_offset: 0,
        }
    }

    pub(crate) fn decoded(cfg: &DecodeConfig, frames: &[(Vec<u8>, u32)]) -> Decoded {
        let mut d = Decoded::default();
        for (i, (data, lt)) in frames.iter().enumerate() {
            decode_onto(&mut d, cfg, &ingest_frame(data, *lt, i));
        }
        d
    }

    #[test]
    fn a_rows_observation_is_the_decoders_whatever_its_ends() {
        let cfg = DecodeConfig::default();
        let frames = mixed();
        let d = decoded(&cfg, &frames);
        // Only the IPv4 frames without a CM message keep their ends inline.
        assert_eq!(d.wide.len(), 2 + 3 * 40);
        let want: Vec<Option<Observation>> = frames
            .iter()
            .enumerate()
            .map(|(i, (data, lt))| {
                let f = ingest_frame(data, *lt, i);
                LinkLayer::from_linktype(*lt).and_then(|l| {
                    let origlen = f.origlen.max(data.len() as u32);
                    Observation::from_packet(&decode(data, l, &cfg), f.ts_ns, origlen)
                })
            })
            .collect();
        assert_eq!(want.iter().filter(|o| o.is_some()).count(), 2 + 5 * 40 + 3);
        for (i, info) in d.rows.iter().enumerate() {
            assert_eq!(info.obs(&d.wide), want[i], "frame {i}");
            assert_eq!(info.is_roce(), want[i].is_some());
        }
        // Moved into another batch in another order, the wide parts follow.
        let mut moved = Decoded::default();
        for info in d.rows.iter().rev() {
            moved.push_from(info, &d.wide);
        }
        for (i, info) in moved.rows.iter().rev().enumerate() {
            assert_eq!(info.obs(&moved.wide), want[i], "frame {i}");
        }
    }
}
