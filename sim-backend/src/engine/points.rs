//! The capture points' view of frames (`crate::points`): each point's
//! clock, its capture loss, the headers it keeps, and the truth of every
//! drop. Nothing here touches the run's own random choices: a run with
//! points is the same run as without them.

use super::*;
use crate::points::{CaptureDropTruth, DropPlace, DropTruth, DropWhy, PointSpec, PointsTruth, Tap};

/// The points of a run and what they saw.
#[derive(Debug)]
pub(super) struct PointsState {
    specs: Vec<PointSpec>,
    /// Each point's own generator, for its capture loss.
    rngs: Vec<Rng>,
    /// The points at each node.
    by_node: Vec<Vec<u8>>,
    /// The points at the switch.
    at_switch: Vec<u8>,
    /// Nodes whose traffic the switch's points mirror (all when no node
    /// has a point).
    mirrored: Vec<bool>,
    truth: PointsTruth,
}

impl PointsState {
    pub(super) fn new(specs: &[PointSpec], nodes: usize, seed: u64) -> Option<Box<PointsState>> {
        if specs.is_empty() {
            return None;
        }
        let mut by_node = vec![Vec::new(); nodes];
        let mut at_switch = Vec::new();
        for (i, p) in specs.iter().enumerate() {
            match p.tap {
                Tap::Node(n) => {
                    if let Some(v) = by_node.get_mut(n) {
                        v.push(i as u8);
                    }
                }
                Tap::Switch => at_switch.push(i as u8),
            }
        }
        let any_node = by_node.iter().any(|v| !v.is_empty());
        let mirrored = by_node.iter().map(|v| !any_node || !v.is_empty()).collect();
        Some(Box::new(PointsState {
            rngs: (0..specs.len())
                .map(|i| Rng::new(mix64(mix64(seed ^ 0x6361_7074) ^ i as u64)))
                .collect(),
            specs: specs.to_vec(),
            by_node,
            at_switch,
            mirrored,
            truth: PointsTruth {
                frames: vec![0; specs.len()],
                ..PointsTruth::default()
            },
        }))
    }
}

/// Where on its way a point sees a frame.
#[derive(Debug, Clone, Copy)]
pub(super) enum Seen {
    /// Leaving its sender.
    Sent(usize),
    /// Reaching the switch.
    Switch,
    /// Reaching its receiver.
    Received(usize),
}

impl Simulator {
    /// The truth of a run with capture points (`None` without).
    pub fn points_truth(&self) -> Option<&PointsTruth> {
        self.points.as_ref().map(|p| &p.truth)
    }

    /// The capture points' view of frame `id` at `seen`.
    #[inline]
    pub(super) fn tap_points(&mut self, id: u32, seen: Seen) {
        if self.points.is_none() {
            return;
        }
        self.tap_points_slow(id, seen);
    }

    #[cold]
    #[inline(never)]
    fn tap_points_slow(&mut self, id: u32, seen: Seen) {
        let Some(mut pts) = self.points.take() else {
            return;
        };
        let (src, dst) = {
            let p = &self.packets[id as usize];
            (p.src_node as usize, p.dst_node as usize)
        };
        let list: Vec<u8> = match seen {
            Seen::Sent(n) | Seen::Received(n) => pts.by_node.get(n).cloned().unwrap_or_default(),
            Seen::Switch => {
                let mirrored = |n: usize| pts.mirrored.get(n).copied().unwrap_or(false);
                if mirrored(src) || mirrored(dst) {
                    pts.at_switch.clone()
                } else {
                    Vec::new()
                }
            }
        };
        for point in list {
            let i = usize::from(point);
            let spec = &pts.specs[i];
            let (loss, clock) = (spec.capture_loss, spec.clock_ns(self.now_ps / NS));
            if loss > 0.0 && pts.rngs[i].chance(loss) {
                let p = &self.packets[id as usize];
                pts.truth.capture_drops.push(CaptureDropTruth {
                    point: i,
                    ts_ns: self.now_ps / NS,
                    dest_qp: p.dest_qp,
                    psn: p.psn,
                    opcode: p.opcode,
                });
                continue;
            }
            pts.truth.frames[i] += 1;
            self.point_headers(id, point, clock);
        }
        self.points = Some(pts);
    }

    /// The frame's headers (Ethernet to the extended headers, as a
    /// header-only sniffer keeps them) as point `point`'s frame.
    fn point_headers(&mut self, id: u32, point: u8, ts_ns: u64) {
        let p = &self.packets[id as usize];
        let info = self.ops[usize::from(p.opcode)];
        let orig_len = p.frame_len_bytes;
        let start = self.out_bytes.len();
        if info.simple {
            let fields = self.hdr_fields(p);
            self.out_bytes.resize(start + template::MAX_HDR, 0);
            let len = match self
                .out_bytes
                .get_mut(start..start + template::MAX_HDR)
                .and_then(|s| <&mut [u8; template::MAX_HDR]>::try_from(s).ok())
            {
                Some(dst) => template::write_headers(&fields, &info, dst),
                None => 0,
            };
            self.out_bytes.truncate(start + len);
        } else {
            let b = self.builder(p);
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            b.build_headers_into(p.payload_len_bytes as usize, &mut buf);
            buf.truncate(b.header_len());
            self.out_bytes.extend_from_slice(&buf);
            self.buf = buf;
        }
        let len = (self.out_bytes.len() - start) as u32;
        self.out.push(Out::PointFrame {
            point,
            ts_ns,
            orig_len,
            start: start as u32,
            len,
        });
    }

    /// Notes where frame `id` was lost (with points only).
    #[inline]
    pub(super) fn point_drop(&mut self, id: u32, place: DropPlace, why: DropWhy) {
        let Some(pts) = &mut self.points else {
            return;
        };
        let p = &self.packets[id as usize];
        // In a stack, a request out of sequence would have been discarded
        // anyway.
        let behind_loss = matches!(place, DropPlace::Stack { .. })
            && is_request(p.opcode)
            && self
                .conns
                .get(p.conn as usize)
                .is_some_and(|c| Self::abs_psn_of(c.expected_psn, p.psn) != c.expected_psn);
        pts.truth.drops.push(DropTruth {
            ts_ns: self.now_ps / NS,
            src_node: p.src_node as usize,
            dst_node: p.dst_node as usize,
            dest_qp: p.dest_qp,
            psn: p.psn,
            opcode: p.opcode,
            place,
            why,
            behind_loss,
        });
    }
}
