//! The packets table: one row per frame, in frame order, built in batches
//! from the store's rows and the frame bytes they point at.

use std::ops::{ControlFlow, Range};

use polars::prelude::*;
use rocescope_decoders::{DecodeConfig, Opcode, decode};
use rocescope_replay::record::Direction;
use rocescope_replay::store::{Flags, NO_CONVERSATION, Row, Store};

use crate::DataError;

/// A conversation as the packets table names it.
#[derive(Debug, Clone)]
struct Conv {
    src_ip: String,
    dst_ip: String,
    dest_qp: u32,
}

/// Column buffers for one batch of the packets table.
#[derive(Debug, Default)]
struct Columns {
    frame: Vec<u64>,
    ts_ns: Vec<u64>,
    caplen_bytes: Vec<u32>,
    len_bytes: Vec<u32>,
    port: Vec<u8>,
    direction: Vec<Option<&'static str>>,
    conversation: Vec<Option<u32>>,
    src_ip: Vec<Option<u32>>,
    dest_qp: Vec<Option<u32>>,
    opcode: Vec<Option<u8>>,
    psn: Vec<Option<u32>>,
    udp_src_port: Vec<Option<u16>>,
    pkey: Vec<Option<u16>>,
    solicited: Vec<Option<bool>>,
    dscp: Vec<Option<u8>>,
    reth_va: Vec<Option<u64>>,
    reth_rkey: Vec<Option<u32>>,
    reth_dma_len_bytes: Vec<Option<u32>>,
    aeth_kind: Vec<Option<&'static str>>,
    aeth_msn: Vec<Option<u32>>,
    immdt: Vec<Option<u32>>,
    payload_bytes: Vec<Option<u32>>,
    flags: Vec<u16>,
}

/// Builds the packets table batch by batch. Memory is one batch of columns
/// plus the conversation names, whatever the capture's size.
#[derive(Debug)]
pub struct PacketBatches<'a> {
    store: &'a Store,
    batch_rows: usize,
    cfg: DecodeConfig,
    convs: Vec<Option<Conv>>,
    opcode_names: Vec<String>,
    cols: Columns,
}

/// The packets table's schema (what an empty capture exports).
pub fn packets_schema(store: &Store) -> Result<Schema, DataError> {
    let mut b = PacketBatches::new(store, 1);
    Ok(b.finish_batch()?.schema().as_ref().clone())
}

impl<'a> PacketBatches<'a> {
    /// Batches of at most `batch_rows` rows.
    pub fn new(store: &'a Store, batch_rows: usize) -> PacketBatches<'a> {
        PacketBatches {
            store,
            batch_rows: batch_rows.max(1),
            cfg: DecodeConfig::default(),
            convs: Vec::new(),
            opcode_names: (0..=255u8)
                .map(|op| Opcode(op).name().to_string())
                .collect(),
            cols: Columns::default(),
        }
    }

    /// Decode with the user's extra RoCE ports, as the store was indexed.
    pub fn with_decode_config(mut self, cfg: DecodeConfig) -> Self {
        self.cfg = cfg;
        self
    }

    /// Walk `rows`, handing each full batch (and the last, partial one) to
    /// `sink`. Returns the number of rows produced.
    pub fn for_each_batch(
        &mut self,
        rows: Range<u64>,
        mut sink: impl FnMut(DataFrame) -> Result<(), DataError>,
    ) -> Result<u64, DataError> {
        let mut produced = 0u64;
        let mut failed = None;
        let store = self.store;
        store.for_each_frame(rows, |index, row, bytes| {
            self.push(index, row, bytes);
            if self.cols.frame.len() >= self.batch_rows {
                let res = self.finish_batch().and_then(|df| {
                    produced += df.height() as u64;
                    sink(df)
                });
                if let Err(e) = res {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !self.cols.frame.is_empty() {
            let df = self.finish_batch()?;
            produced += df.height() as u64;
            sink(df)?;
        }
        Ok(produced)
    }

    /// The rows as one frame (for small ranges: a selection, a view).
    pub fn collect(&mut self, rows: Range<u64>) -> Result<DataFrame, DataError> {
        let mut parts = Vec::new();
        self.for_each_batch(rows, |df| {
            parts.push(df);
            Ok(())
        })?;
        match parts.len() {
            0 => self.finish_batch(),
            1 => Ok(parts.pop().unwrap_or_default()),
            _ => {
                let mut out = parts.remove(0);
                for p in &parts {
                    out.vstack_mut(p)?;
                }
                out.rechunk_mut();
                Ok(out)
            }
        }
    }

    /// The selected rows (e.g. those a display filter matched), in order.
    pub fn collect_indices(&mut self, indices: &[u64]) -> Result<DataFrame, DataError> {
        let store = self.store;
        let mut parts = Vec::new();
        // Runs of consecutive rows read in one go.
        let mut i = 0;
        while i < indices.len() {
            let mut j = i + 1;
            while j < indices.len() && indices[j] == indices[j - 1] + 1 {
                j += 1;
            }
            store.for_each_frame(indices[i]..indices[j - 1] + 1, |index, row, bytes| {
                self.push(index, row, bytes);
                ControlFlow::Continue(())
            })?;
            if self.cols.frame.len() >= self.batch_rows {
                parts.push(self.finish_batch()?);
            }
            i = j;
        }
        let mut out = self.finish_batch()?;
        for p in parts.iter().rev() {
            let mut p = p.clone();
            p.vstack_mut(&out)?;
            out = p;
        }
        out.rechunk_mut();
        Ok(out)
    }

    fn conv(&mut self, id: u32) -> Option<u32> {
        if id == NO_CONVERSATION {
            return None;
        }
        let slot = id as usize;
        if slot >= self.convs.len() {
            self.convs.resize(slot + 1, None);
        }
        if self.convs[slot].is_none() {
            let c = self.store.conversation(id)?;
            self.convs[slot] = Some(Conv {
                src_ip: c.key.src_addr().to_string(),
                dst_ip: c.key.dst_addr().to_string(),
                dest_qp: c.key.dest_qp,
            });
        }
        Some(id)
    }

    fn push(&mut self, index: u64, row: &Row, bytes: &[u8]) {
        let conv = self.conv(row.conversation);
        let c = &mut self.cols;
        c.frame.push(index + 1);
        c.ts_ns.push(row.ts_ns);
        c.caplen_bytes.push(row.caplen);
        c.len_bytes.push(row.origlen);
        c.port.push(row.port);
        c.direction.push(row.dir.map(|d| match d {
            Direction::Rx => "rx",
            Direction::Tx => "tx",
        }));
        c.conversation.push(conv);
        c.src_ip.push(conv);
        c.dest_qp
            .push(conv.and_then(|id| self.convs[id as usize].as_ref().map(|c| c.dest_qp)));
        c.flags.push(row.flags.0);
        let roce = row.flags.contains(Flags::ROCE);
        c.opcode.push(roce.then_some(row.opcode));
        c.psn.push(roce.then_some(row.psn));

        let link = self.store.link_layer(row.port);
        let decoded = match link {
            Some(link) if !row.flags.contains(Flags::UNDECODED) => {
                Some(decode(bytes, link, &self.cfg))
            }
            _ => None,
        };
        let p = decoded.as_ref();
        let bth = p.and_then(|p| p.bth());
        let ext = p.map(|p| p.ext());
        let reth = ext.and_then(|e| e.reth());
        let aeth = ext.and_then(|e| e.aeth());
        c.udp_src_port
            .push(p.and_then(|p| p.udp()).map(|u| u.src_port()));
        c.pkey.push(bth.map(|b| b.pkey()));
        c.solicited.push(bth.map(|b| b.solicited()));
        c.dscp.push(p.and_then(|p| p.ip()).map(|ip| match ip {
            rocescope_decoders::IpHeader::V4(h) => h.dscp(),
            rocescope_decoders::IpHeader::V6(h) => h.dscp(),
        }));
        c.reth_va.push(reth.map(|r| r.va()));
        c.reth_rkey.push(reth.map(|r| r.rkey()));
        c.reth_dma_len_bytes.push(reth.map(|r| r.dma_len()));
        c.aeth_kind.push(aeth.map(|a| a.syndrome().kind_name()));
        c.aeth_msn.push(aeth.map(|a| a.msn()));
        c.immdt.push(ext.and_then(|e| e.immdt()).map(|i| i.value()));
        c.payload_bytes
            .push(bth.and(p).map(|p| p.payload_len() as u32));
    }

    /// Turn the buffered rows into a frame and start the next batch.
    fn finish_batch(&mut self) -> Result<DataFrame, DataError> {
        let c = std::mem::take(&mut self.cols);
        let n = c.frame.len();
        let names = |ids: &[Option<u32>], pick: fn(&Conv) -> &str| -> Vec<Option<&str>> {
            ids.iter()
                .map(|id| {
                    id.and_then(|id| self.convs.get(id as usize))
                        .and_then(|c| c.as_ref())
                        .map(pick)
                })
                .collect()
        };
        let opcode_name: Vec<Option<&str>> = c
            .opcode
            .iter()
            .map(|op| op.map(|op| self.opcode_names[usize::from(op)].as_str()))
            .collect();
        let mut columns = vec![
            Column::new("frame".into(), c.frame),
            Column::new("ts_ns".into(), c.ts_ns),
            Column::new("caplen_bytes".into(), c.caplen_bytes),
            Column::new("len_bytes".into(), c.len_bytes),
            Column::new("port".into(), c.port),
            Column::new("direction".into(), c.direction),
            Column::new("conversation".into(), c.conversation),
            Column::new("src_ip".into(), names(&c.src_ip, |c| &c.src_ip)),
            Column::new("dst_ip".into(), names(&c.src_ip, |c| &c.dst_ip)),
            Column::new("dest_qp".into(), c.dest_qp),
            Column::new("opcode".into(), c.opcode),
            Column::new("opcode_name".into(), opcode_name),
            Column::new("psn".into(), c.psn),
            Column::new("udp_src_port".into(), c.udp_src_port),
            Column::new("pkey".into(), c.pkey),
            Column::new("solicited".into(), c.solicited),
            Column::new("dscp".into(), c.dscp),
            Column::new("reth_va".into(), c.reth_va),
            Column::new("reth_rkey".into(), c.reth_rkey),
            Column::new("reth_dma_len_bytes".into(), c.reth_dma_len_bytes),
            Column::new("aeth_kind".into(), c.aeth_kind),
            Column::new("aeth_msn".into(), c.aeth_msn),
            Column::new("immdt".into(), c.immdt),
            Column::new("payload_bytes".into(), c.payload_bytes),
        ];
        for (bit, name) in Flags::NAMES.iter().enumerate() {
            let values: Vec<bool> = c.flags.iter().map(|f| f >> bit & 1 == 1).collect();
            columns.push(Column::new((*name).into(), values));
        }
        Ok(DataFrame::new(n, columns)?)
    }
}
