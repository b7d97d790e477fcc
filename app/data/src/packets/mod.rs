//! The packets table: one row per frame, in frame order, built in batches
//! from the store's rows and the frame bytes they point at.
//!
//! A batch is built straight into Arrow arrays: rows are staged in
//! fixed-size blocks with one presence mask each, validity bitmaps are cut
//! from the masks once per batch, and the string columns are dictionary
//! keys, so that the Parquet writer writes each batch's distinct strings
//! once instead of hashing them row by row. A batch becomes a polars frame (strings
//! spelled out) for SQL, CSV and JSON.

use std::ops::{ControlFlow, Range};
use std::sync::Mutex;

use polars::prelude::*;
use polars_arrow::array::{
    Array, BooleanArray, DictionaryArray, DictionaryKey, MutableBinaryViewArray, PrimitiveArray,
    Utf8ViewArray,
};
use polars_arrow::bitmap::Bitmap;
use polars_arrow::datatypes::{ArrowDataType, IntegerType};
use polars_arrow::types::NativeType;
use rocescope_decoders::{DecodeConfig, IpHeader, LinkLayer, Opcode, Syndrome, decode_headers};
use rocescope_replay::record::Direction;
use rocescope_replay::store::{Flags, NO_CONVERSATION, Row, Store};

use crate::parquet::ColumnLayout;
use crate::{DataError, Rows};

mod dict;
use dict::{DictColumn, Keys, dict, dictionary_array, spell};

/// The optional parts of a row. A nullable column is valid where its part
/// is present, so a row keeps one mask (not one validity bit per column)
/// and a batch builds one shared validity bitmap per part.
mod part {
    pub const CONV: u16 = 1;
    pub const DIR: u16 = 1 << 1;
    pub const ROCE: u16 = 1 << 2;
    pub const BTH: u16 = 1 << 3;
    pub const UDP: u16 = 1 << 4;
    pub const IP: u16 = 1 << 5;
    pub const RETH: u16 = 1 << 6;
    pub const AETH: u16 = 1 << 7;
    pub const IMMDT: u16 = 1 << 8;
    /// Not a part: the BTH's solicited-event bit, kept here to be packed
    /// with the parts.
    pub const SOLICITED: u16 = 1 << 15;
}

/// Transpose an 8x8 bit matrix: byte `i` bit `j` goes to byte `j` bit `i`
/// (Hacker's Delight, 7-3).
#[inline]
fn transpose8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x = x ^ t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x = x ^ t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// All 16 bit columns of `words` at once, each packed as Arrow packs
/// booleans (eight rows a byte, LSB first): two 8x8 transposes per eight
/// rows instead of a shift and mask per bit per row, gathered 64 rows per
/// plane word so that each plane is written eight bytes at a time, in
/// order. The 16 columns share one buffer.
fn bit_columns(words: &[u16]) -> [Bitmap; 16] {
    let plane_bytes = words.len().div_ceil(64) * 8;
    let mut planes = vec![0u8; 16 * plane_bytes];
    for (k, rows64) in words.chunks(64).enumerate() {
        let mut acc = [0u64; 16];
        for (g, chunk) in rows64.chunks(8).enumerate() {
            let mut w = [0u16; 8];
            if let Some(w) = w.get_mut(..chunk.len()) {
                w.copy_from_slice(chunk);
            }
            let lo = transpose8(u64::from_le_bytes(w.map(|w| w as u8)));
            let hi = transpose8(u64::from_le_bytes(w.map(|w| (w >> 8) as u8)));
            // Byte `bit` of a transpose is that bit's plane for these
            // eight rows: byte `g` of the plane's word.
            for bit in 0..8 {
                acc[bit] |= (lo >> (8 * bit) & 0xFF) << (8 * g);
                acc[8 + bit] |= (hi >> (8 * bit) & 0xFF) << (8 * g);
            }
        }
        for (bit, word) in acc.iter().enumerate() {
            let at = bit * plane_bytes + 8 * k;
            if let Some(slot) = planes.get_mut(at..at + 8) {
                slot.copy_from_slice(&word.to_le_bytes());
            }
        }
    }
    let all = Bitmap::from_u8_vec(planes, 16 * plane_bytes * 8);
    std::array::from_fn(|bit| all.clone().sliced(bit * plane_bytes * 8, words.len()))
}

/// The validity of a part's columns: none when every row has it.
fn validity(bits: &[Bitmap; 16], part: u16) -> Option<Bitmap> {
    let bitmap = bits.get(part.trailing_zeros() as usize)?;
    (bitmap.unset_bits() > 0).then(|| bitmap.clone())
}

fn array<T: NativeType>(values: Vec<T>, validity: Option<Bitmap>) -> Col {
    Col::Array(Box::new(PrimitiveArray::new(
        T::PRIMITIVE.into(),
        values.into(),
        validity,
    )))
}

/// Column memory handed back once a batch is written, for the batches
/// after it: a batch's columns are megabytes, and fresh memory costs a page
/// fault every 4 KiB (most of the export's system time). Holds at most
/// [`RECYCLED_MAX`] vectors per element type.
#[derive(Debug, Default)]
pub(crate) struct Recycler {
    u64s: Mutex<Vec<Vec<u64>>>,
    u32s: Mutex<Vec<Vec<u32>>>,
    u16s: Mutex<Vec<Vec<u16>>>,
    u8s: Mutex<Vec<Vec<u8>>>,
}

/// Unsigned values as the signed type of the same width, in the same
/// memory (Spark has no unsigned types; the values fit: times before
/// 2262, 24-bit numbers, lengths).
fn signed<U: Copy, S: NativeType>(values: Vec<U>, validity: Option<Bitmap>, f: fn(U) -> S) -> Col {
    // Same size and alignment: `collect` reuses the allocation.
    array(values.into_iter().map(f).collect::<Vec<S>>(), validity)
}

/// Narrow unsigned values widened to a signed type `S` (of width `W`,
/// whose pool lends the memory); `values` go back to their pool.
fn widened<U: Pooled, W: Pooled, S: NativeType>(
    values: Vec<U>,
    validity: Option<Bitmap>,
    r: Option<&Recycler>,
    widen: fn(U) -> W,
    sign: fn(W) -> S,
) -> Col {
    let mut wide: Vec<W> = Recycler::take(r, values.len());
    wide.extend(values.iter().map(|&v| widen(v)));
    Recycler::give(r, values);
    signed(wide, validity, sign)
}

/// Vectors a [`Recycler`] keeps per element type (a few batches' worth).
const RECYCLED_MAX: usize = 128;

/// The element types a [`Recycler`] keeps.
trait Pooled: NativeType {
    fn pool(r: &Recycler) -> &Mutex<Vec<Vec<Self>>>;
}

macro_rules! pooled {
    ($($t:ty => $field:ident),*) => {
        $(impl Pooled for $t {
            fn pool(r: &Recycler) -> &Mutex<Vec<Vec<$t>>> {
                &r.$field
            }
        })*
    };
}
pooled!(u64 => u64s, u32 => u32s, u16 => u16s, u8 => u8s);

impl Recycler {
    /// An empty vector of at least `capacity`, recycled when there is one.
    fn take<T: Pooled>(r: Option<&Recycler>, capacity: usize) -> Vec<T> {
        let recycled = r.and_then(|r| T::pool(r).lock().unwrap_or_else(|e| e.into_inner()).pop());
        match recycled {
            Some(mut v) => {
                v.clear();
                v.reserve(capacity);
                v
            }
            None => Vec::with_capacity(capacity),
        }
    }

    fn give<T: Pooled>(r: Option<&Recycler>, v: Vec<T>) {
        if let Some(r) = r {
            let mut pool = T::pool(r).lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < RECYCLED_MAX {
                pool.push(v);
            }
        }
    }

    /// Take back the memory of written arrays (the integer columns and the
    /// dictionary keys; arrays still shared elsewhere are just dropped).
    pub(crate) fn reclaim(&self, arrays: Vec<Box<dyn Array>>) {
        for mut array in arrays {
            let a = array.as_mut();
            let _ = self.reclaim_signed::<i64, u64>(a, |v| v as u64)
                || self.reclaim_signed::<i32, u32>(a, |v| v as u32)
                || self.reclaim_signed::<i16, u16>(a, |v| v as u16)
                || self.reclaim_values::<u64>(a)
                || self.reclaim_values::<u32>(a)
                || self.reclaim_values::<u16>(a)
                || self.reclaim_values::<u8>(a)
                || self.reclaim_keys::<u32>(a)
                || self.reclaim_keys::<u8>(a);
        }
    }

    fn reclaim_values<T: Pooled>(&self, a: &mut dyn Array) -> bool {
        let Some(p) = a.as_any_mut().downcast_mut::<PrimitiveArray<T>>() else {
            return false;
        };
        let p = std::mem::replace(p, PrimitiveArray::new_empty(T::PRIMITIVE.into()));
        self.reclaim_buffer(p);
        true
    }

    /// A signed column's memory, back to the pool of its unsigned twin.
    fn reclaim_signed<S: NativeType, U: Pooled>(&self, a: &mut dyn Array, f: fn(S) -> U) -> bool {
        let Some(p) = a.as_any_mut().downcast_mut::<PrimitiveArray<S>>() else {
            return false;
        };
        let p = std::mem::replace(p, PrimitiveArray::new_empty(S::PRIMITIVE.into()));
        if let Some(v) = p.into_inner().1.into_mut().right() {
            Recycler::give(Some(self), v.into_iter().map(f).collect::<Vec<U>>());
        }
        true
    }

    fn reclaim_keys<K: Pooled + DictionaryKey>(&self, a: &mut dyn Array) -> bool {
        let Some(d) = a.as_any_mut().downcast_mut::<DictionaryArray<K>>() else {
            return false;
        };
        let dtype = d.dtype().clone();
        let (_, keys, _) = std::mem::replace(d, DictionaryArray::new_empty(dtype)).take();
        self.reclaim_buffer(keys);
        true
    }

    fn reclaim_buffer<T: Pooled>(&self, p: PrimitiveArray<T>) {
        if let Some(v) = p.into_inner().1.into_mut().right() {
            Recycler::give(Some(self), v);
        }
    }
}

/// One column of a batch.
#[derive(Debug, Clone)]
enum Col {
    Array(Box<dyn Array>),
    /// A string column as dictionary keys and the distinct strings.
    /// (Boxed: the keys and strings are much larger than a boxed array.)
    Dict(Box<(Keys, Utf8ViewArray)>),
}

/// One batch of the packets table, as Arrow arrays.
#[derive(Debug, Clone)]
pub struct PacketBatch {
    len: usize,
    columns: Vec<(&'static str, Col)>,
}

impl PacketBatch {
    /// Rows in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How the Parquet writer lays the columns out: the frame counter and
    /// the clock as deltas, low-cardinality integers as dictionaries, the
    /// columns that are never null as required.
    pub(crate) fn parquet_layout() -> Vec<ColumnLayout> {
        use polars_parquet::write::Encoding::{DeltaBinaryPacked, RleDictionary};
        let col = |name, required, encoding| ColumnLayout {
            name,
            required,
            encoding,
        };
        let mut layout = vec![
            col("frame", true, Some(DeltaBinaryPacked)),
            col("ts_ns", true, Some(DeltaBinaryPacked)),
            col("caplen_bytes", true, Some(RleDictionary)),
            col("len_bytes", true, Some(RleDictionary)),
            col("port", true, Some(RleDictionary)),
        ];
        for name in [
            "conversation",
            "dest_qp",
            "opcode",
            "udp_src_port",
            "pkey",
            "dscp",
            "reth_rkey",
            "reth_dma_len_bytes",
            "payload_bytes",
        ] {
            layout.push(col(name, false, Some(RleDictionary)));
        }
        layout.extend(Flags::NAMES.iter().map(|name| col(name, true, None)));
        layout
    }

    /// The polars schema of the batch's frame.
    pub fn schema(&self) -> Result<Schema, DataError> {
        let empty = PacketBatch {
            len: 0,
            columns: self
                .columns
                .iter()
                .map(|(name, col)| {
                    let col = match col {
                        Col::Array(a) => Col::Array(a.sliced(0, 0)),
                        Col::Dict(d) => dict(d.0.sliced_empty(), d.1.clone()),
                    };
                    (*name, col)
                })
                .collect(),
        };
        Ok(empty.into_frame()?.schema().as_ref().clone())
    }

    /// The batch as a polars frame, strings spelled out row by row.
    pub fn into_frame(self) -> Result<DataFrame, DataError> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for (name, col) in self.columns {
            let array: Box<dyn Array> = match col {
                Col::Array(a) => a,
                Col::Dict(d) => Box::new(match &d.0 {
                    Keys::U8(k) => spell(k, &d.1),
                    Keys::U32(k) => spell(k, &d.1),
                }),
            };
            columns.push(Column::from(Series::from_arrow(name.into(), array)?));
        }
        Ok(DataFrame::new(self.len, columns)?)
    }

    /// The arrays as the Parquet writer takes them: string columns as
    /// dictionary arrays, written as dictionary pages.
    pub(crate) fn into_parquet_arrays(self) -> Result<Vec<Box<dyn Array>>, DataError> {
        self.columns
            .into_iter()
            .map(|(_, col)| match col {
                Col::Array(a) => Ok(a),
                Col::Dict(d) => match *d {
                    (Keys::U8(k), values) => dictionary_array(IntegerType::UInt8, k, values),
                    (Keys::U32(k), values) => dictionary_array(IntegerType::UInt32, k, values),
                },
            })
            .collect()
    }
}

/// A conversation as the packets table names it.
#[derive(Debug, Clone)]
struct Conv {
    src_ip: String,
    dst_ip: String,
    dest_qp: u32,
}

/// Rows per block: a block's arrays stay in the core's cache.
const BLOCK: usize = 1024;

/// The numeric columns of a batch, and the block of rows being pushed.
macro_rules! columns {
    ($($field:ident: $ty:ty),* $(,)?) => {
        /// A batch's numeric columns. Fields a row does not have are 0,
        /// and its `present` bits say so.
        #[derive(Debug, Default)]
        struct Columns {
            $($field: Vec<$ty>,)*
        }

        impl Columns {
            /// Empty columns for `n` rows, in recycled memory where there is some.
            fn take(r: Option<&Recycler>, n: usize) -> Self {
                Columns { $($field: Recycler::take(r, n),)* }
            }

            fn len(&self) -> usize {
                self.frame.len()
            }

            /// Move a block's rows in (one copy per column) and empty it.
            fn append(&mut self, block: &mut Block) {
                let n = block.n.min(BLOCK);
                $(self.$field.extend_from_slice(&block.$field[..n]);)*
                block.n = 0;
            }
        }

        /// Rows being pushed, in fixed-size arrays: a row is one store per
        /// column, with no capacity check (pushing to 20 growing vectors
        /// per row cost a tenth of the export).
        struct Block {
            n: usize,
            $($field: Box<[$ty; BLOCK]>,)*
        }

        impl Block {
            fn new() -> Self {
                Block { n: 0, $($field: Box::new([0; BLOCK]),)* }
            }
        }
    };
}

columns!(
    frame: u64,
    ts_ns: u64,
    reth_va: u64,
    caplen_bytes: u32,
    len_bytes: u32,
    conversation: u32,
    dest_qp: u32,
    psn: u32,
    reth_rkey: u32,
    reth_dma_len_bytes: u32,
    aeth_msn: u32,
    immdt: u32,
    payload_bytes: u32,
    udp_src_port: u16,
    pkey: u16,
    flags: u16,
    present: u16,
    port: u8,
    opcode: u8,
    dscp: u8,
    // 0 rx, 1 tx.
    direction: u8,
    aeth_kind: u8,
);

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block").field("rows", &self.n).finish()
    }
}

/// A frame's header fields as the packets table has them.
#[derive(Debug, Default)]
struct HeaderFields {
    reth_va: u64,
    reth_rkey: u32,
    reth_dma_len: u32,
    aeth_msn: u32,
    immdt: u32,
    payload_bytes: u32,
    udp_src_port: u16,
    pkey: u16,
    dscp: u8,
    aeth_kind: u8,
}

/// Builds the packets table batch by batch. Memory is one batch of columns
/// plus the conversation names, whatever the capture's size.
#[derive(Debug)]
pub struct PacketBatches<'a> {
    store: &'a Store,
    batch_rows: usize,
    cfg: DecodeConfig,
    convs: Vec<Option<Conv>>,
    /// Each port's link type (ports seen so far; frames of a port decode
    /// alike).
    links: Vec<Option<Option<LinkLayer>>>,
    cols: Columns,
    block: Block,
    /// Where column memory comes from and goes back to (the export's).
    recycler: Option<&'a Recycler>,
    /// String columns' dictionaries, kept across batches (they reset).
    dicts: Dicts,
}

#[derive(Debug)]
struct Dicts {
    direction: DictColumn,
    /// Keys of `src_ip` and `dst_ip` (both named by the conversation).
    conversation: DictColumn,
    opcode_name: DictColumn,
    aeth_kind: DictColumn,
}

/// The packets table's schema (what an empty capture exports).
pub fn packets_schema(store: &Store) -> Result<Schema, DataError> {
    let mut b = PacketBatches::new(store, 1);
    Ok(b.finish_batch().into_frame()?.schema().as_ref().clone())
}

impl<'a> PacketBatches<'a> {
    /// Batches of at most `batch_rows` rows.
    pub fn new(store: &'a Store, batch_rows: usize) -> PacketBatches<'a> {
        let batch_rows = batch_rows.max(1);
        PacketBatches {
            store,
            batch_rows,
            cfg: store.decode_config(),
            convs: Vec::new(),
            links: vec![None; 256],
            cols: Columns::default(),
            block: Block::new(),
            recycler: None,
            dicts: Dicts {
                direction: DictColumn::default(),
                conversation: DictColumn::default(),
                opcode_name: DictColumn::default(),
                aeth_kind: DictColumn::default(),
            },
        }
    }

    /// Take column memory from `recycler` and give spent columns back.
    pub(crate) fn with_recycler(mut self, recycler: &'a Recycler) -> Self {
        self.recycler = Some(recycler);
        self
    }

    /// Decode with other settings than the store's own (which are the
    /// default).
    pub fn with_decode_config(mut self, cfg: DecodeConfig) -> Self {
        self.cfg = cfg;
        self
    }

    /// Walk `rows`, handing each full batch (and the last, partial one) to
    /// `sink`. Returns the number of rows produced.
    pub fn for_each_arrow_batch(
        &mut self,
        rows: &Rows,
        mut sink: impl FnMut(PacketBatch) -> Result<(), DataError>,
    ) -> Result<u64, DataError> {
        let mut produced = 0u64;
        let mut failed = None;
        let store = self.store;
        let mut visit_run = |this: &mut Self, run: Range<u64>| -> Result<bool, DataError> {
            store.for_each_frame(run, |index, row, bytes| {
                this.push(index, row, bytes);
                if this.cols.len() + this.block.n >= this.batch_rows {
                    let batch = this.finish_batch();
                    produced += batch.len() as u64;
                    if let Err(e) = sink(batch) {
                        failed = Some(e);
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            })?;
            Ok(failed.is_none())
        };
        match rows {
            Rows::All => {
                visit_run(self, 0..store.len())?;
            }
            Rows::Range(r) => {
                visit_run(self, r.clone())?;
            }
            Rows::Indices(ix) => {
                // Runs of consecutive rows read in one go.
                let mut i = 0;
                while i < ix.len() {
                    let mut j = i + 1;
                    while j < ix.len() && ix[j] == ix[j - 1].wrapping_add(1) {
                        j += 1;
                    }
                    if !visit_run(self, ix[i]..ix[j - 1].saturating_add(1))? {
                        break;
                    }
                    i = j;
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if self.cols.len() + self.block.n > 0 {
            let batch = self.finish_batch();
            produced += batch.len() as u64;
            sink(batch)?;
        }
        Ok(produced)
    }

    /// As [`PacketBatches::for_each_arrow_batch`], as polars frames.
    pub fn for_each_batch(
        &mut self,
        rows: Range<u64>,
        mut sink: impl FnMut(DataFrame) -> Result<(), DataError>,
    ) -> Result<u64, DataError> {
        self.for_each_arrow_batch(&Rows::Range(rows), |b| sink(b.into_frame()?))
    }

    /// The rows as one frame (for small ranges: a selection, a view).
    pub fn collect(&mut self, rows: Range<u64>) -> Result<DataFrame, DataError> {
        self.collect_rows(&Rows::Range(rows))
    }

    /// The selected rows (e.g. those a display filter matched), in order.
    pub fn collect_indices(&mut self, indices: &[u64]) -> Result<DataFrame, DataError> {
        self.collect_rows(&Rows::Indices(indices.to_vec()))
    }

    fn collect_rows(&mut self, rows: &Rows) -> Result<DataFrame, DataError> {
        let mut out: Option<DataFrame> = None;
        self.for_each_arrow_batch(rows, |b| {
            let df = b.into_frame()?;
            match &mut out {
                Some(o) => {
                    o.vstack_mut(&df)?;
                }
                None => out = Some(df),
            }
            Ok(())
        })?;
        let mut out = match out {
            Some(o) => o,
            None => self.finish_batch().into_frame()?,
        };
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

    fn link(&mut self, port: u8) -> Option<LinkLayer> {
        let slot = &mut self.links[usize::from(port)];
        *slot.get_or_insert_with(|| self.store.link_layer(port))
    }

    fn push(&mut self, index: u64, row: &Row, bytes: &[u8]) {
        let conv = self.conv(row.conversation);
        let dest_qp = conv.and_then(|id| self.convs[id as usize].as_ref().map(|c| c.dest_qp));
        let decoded = match self.link(row.port) {
            Some(link) if !row.flags.contains(Flags::UNDECODED) => {
                Some(decode_headers(bytes, link, &self.cfg))
            }
            _ => None,
        };
        let has = |yes: bool, bit: u16| if yes { bit } else { 0 };
        let mut present = has(conv.is_some(), part::CONV)
            | has(row.dir.is_some(), part::DIR)
            | has(row.flags.contains(Flags::ROCE), part::ROCE);
        // The header fields, 0 where the frame has no such header (its
        // `present` bit says so). One test per header, then plain reads.
        let mut h = HeaderFields::default();
        if let Some(p) = &decoded {
            if let Some(ip) = p.ip() {
                present |= part::IP;
                h.dscp = match ip {
                    IpHeader::V4(ip) => ip.dscp(),
                    IpHeader::V6(ip) => ip.dscp(),
                };
            }
            if let Some(udp) = p.udp() {
                present |= part::UDP;
                h.udp_src_port = udp.src_port();
            }
            if let Some(bth) = p.bth() {
                present |= part::BTH | has(bth.solicited(), part::SOLICITED);
                h.pkey = bth.pkey();
                h.payload_bytes = p.payload_len() as u32;
                let ext = p.ext();
                if let Some(r) = ext.reth() {
                    present |= part::RETH;
                    (h.reth_va, h.reth_rkey, h.reth_dma_len) = (r.va(), r.rkey(), r.dma_len());
                }
                if let Some(a) = ext.aeth() {
                    present |= part::AETH;
                    (h.aeth_msn, h.aeth_kind) = (a.msn(), a.syndrome().kind_index());
                }
                if let Some(i) = ext.immdt() {
                    present |= part::IMMDT;
                    h.immdt = i.value();
                }
            }
        }
        let b = &mut self.block;
        let i = b.n & (BLOCK - 1);
        b.frame[i] = index + 1;
        b.ts_ns[i] = row.ts_ns;
        b.reth_va[i] = h.reth_va;
        b.caplen_bytes[i] = row.caplen;
        b.len_bytes[i] = row.origlen;
        b.conversation[i] = conv.unwrap_or(0);
        b.dest_qp[i] = dest_qp.unwrap_or(0);
        b.psn[i] = row.psn;
        b.reth_rkey[i] = h.reth_rkey;
        b.reth_dma_len_bytes[i] = h.reth_dma_len;
        b.aeth_msn[i] = h.aeth_msn;
        b.immdt[i] = h.immdt;
        b.payload_bytes[i] = h.payload_bytes;
        b.udp_src_port[i] = h.udp_src_port;
        b.pkey[i] = h.pkey;
        b.flags[i] = row.flags.0;
        b.present[i] = present;
        b.port[i] = row.port;
        b.opcode[i] = row.opcode;
        b.dscp[i] = h.dscp;
        b.direction[i] = u8::from(row.dir == Some(Direction::Tx));
        b.aeth_kind[i] = h.aeth_kind;
        b.n += 1;
        if b.n == BLOCK {
            self.flush_block();
        }
    }

    /// Move the block's rows to the batch's columns.
    fn flush_block(&mut self) {
        if self.cols.frame.capacity() == 0 {
            // A batch's first rows: its columns, whole.
            self.cols = Columns::take(self.recycler, reserve_rows(self.batch_rows));
        }
        self.cols.append(&mut self.block);
    }

    /// Turn the buffered rows into a batch and start the next one.
    fn finish_batch(&mut self) -> PacketBatch {
        self.flush_block();
        let r = self.recycler;
        // The next batch's columns are taken when its first block is full.
        let c = std::mem::take(&mut self.cols);
        let n = c.len();
        let parts = bit_columns(&c.present);
        let valid = |part: u16| validity(&parts, part);
        let (conv, roce, bth, reth, aeth) = (
            valid(part::CONV),
            valid(part::ROCE),
            valid(part::BTH),
            valid(part::RETH),
            valid(part::AETH),
        );
        let d = &mut self.dicts;
        let direction_keys = Keys::U8(
            d.direction
                .keys(&c.direction, &c.present, part::DIR, r)
                .with_validity(valid(part::DIR)),
        );
        let conv_keys = Keys::U32(
            d.conversation
                .keys(&c.conversation, &c.present, part::CONV, r)
                .with_validity(conv.clone()),
        );
        let opcode_keys = Keys::U8(
            d.opcode_name
                .keys(&c.opcode, &c.present, part::ROCE, r)
                .with_validity(roce.clone()),
        );
        let aeth_keys = Keys::U8(
            d.aeth_kind
                .keys(&c.aeth_kind, &c.present, part::AETH, r)
                .with_validity(aeth.clone()),
        );
        let convs = &self.convs;
        let conv_name = |pick: fn(&Conv) -> &str| {
            move |id: u32| {
                convs
                    .get(id as usize)
                    .and_then(|c| c.as_ref())
                    .map_or_else(String::new, |c| pick(c).to_owned())
            }
        };
        let src_ip = dict(
            conv_keys.clone(),
            d.conversation.values(conv_name(|c| &c.src_ip)),
        );
        let dst_names = d.conversation.values(conv_name(|c| &c.dst_ip));
        let solicited = BooleanArray::new(
            ArrowDataType::Boolean,
            parts[part::SOLICITED.trailing_zeros() as usize].clone(),
            bth.clone(),
        );
        let mut columns: Vec<(&'static str, Col)> = vec![
            ("frame", signed(c.frame, None, |v| v as i64)),
            ("ts_ns", signed(c.ts_ns, None, |v| v as i64)),
            ("caplen_bytes", signed(c.caplen_bytes, None, |v| v as i32)),
            ("len_bytes", signed(c.len_bytes, None, |v| v as i32)),
            ("port", widened(c.port, None, r, u16::from, |v| v as i16)),
            (
                "direction",
                dict(
                    direction_keys,
                    d.direction
                        .values(|d| if d == 0 { "rx" } else { "tx" }.to_owned()),
                ),
            ),
            (
                "conversation",
                signed(c.conversation, conv.clone(), |v| v as i32),
            ),
            ("src_ip", src_ip),
            ("dst_ip", dict(conv_keys, dst_names)),
            ("dest_qp", signed(c.dest_qp, conv, |v| v as i32)),
            (
                "opcode",
                widened(c.opcode, roce.clone(), r, u16::from, |v| v as i16),
            ),
            (
                "opcode_name",
                dict(
                    opcode_keys,
                    d.opcode_name
                        .values(|op| Opcode(op as u8).name().to_string()),
                ),
            ),
            ("psn", signed(c.psn, roce, |v| v as i32)),
            (
                "udp_src_port",
                widened(c.udp_src_port, valid(part::UDP), r, u32::from, |v| v as i32),
            ),
            (
                "pkey",
                widened(c.pkey, bth.clone(), r, u32::from, |v| v as i32),
            ),
            ("solicited", Col::Array(Box::new(solicited))),
            (
                "dscp",
                widened(c.dscp, valid(part::IP), r, u16::from, |v| v as i16),
            ),
            ("reth_va", signed(c.reth_va, reth.clone(), |v| v as i64)),
            (
                "reth_rkey",
                widened(c.reth_rkey, reth.clone(), r, u64::from, |v| v as i64),
            ),
            (
                "reth_dma_len_bytes",
                widened(c.reth_dma_len_bytes, reth, r, u64::from, |v| v as i64),
            ),
            (
                "aeth_kind",
                dict(
                    aeth_keys,
                    d.aeth_kind.values(|k| {
                        Syndrome::KIND_NAMES
                            .get(k as usize)
                            .copied()
                            .unwrap_or("reserved")
                            .to_owned()
                    }),
                ),
            ),
            ("aeth_msn", signed(c.aeth_msn, aeth, |v| v as i32)),
            (
                "immdt",
                widened(c.immdt, valid(part::IMMDT), r, u64::from, |v| v as i64),
            ),
            ("payload_bytes", signed(c.payload_bytes, bth, |v| v as i32)),
        ];
        let flag_bits = bit_columns(&c.flags);
        // The columns that went into bitmaps and keys.
        Recycler::give(r, c.flags);
        Recycler::give(r, c.present);
        Recycler::give(r, c.direction);
        Recycler::give(r, c.aeth_kind);
        for (name, bits) in Flags::NAMES.iter().zip(flag_bits) {
            columns.push((
                name,
                Col::Array(Box::new(BooleanArray::new(
                    ArrowDataType::Boolean,
                    bits,
                    None,
                ))),
            ));
        }
        for dict in [
            &mut d.direction,
            &mut d.conversation,
            &mut d.opcode_name,
            &mut d.aeth_kind,
        ] {
            dict.reset();
        }
        PacketBatch { len: n, columns }
    }
}

/// Rows to reserve per batch: a full batch when batches are bounded, else
/// a start that grows.
fn reserve_rows(batch_rows: usize) -> usize {
    if batch_rows <= 1 << 20 {
        batch_rows
    } else {
        1 << 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_columns_match_bit_by_bit_packing() {
        // Odd lengths cover the last, partial byte.
        for len in [0usize, 1, 7, 8, 9, 63, 64, 100, 128, 129, 1000] {
            let words: Vec<u16> = (0..len as u32)
                .map(|i| (i.wrapping_mul(0x9E37_79B1) >> 7) as u16)
                .collect();
            let cols = bit_columns(&words);
            for (bit, col) in cols.iter().enumerate() {
                assert_eq!(col.len(), len);
                for (row, w) in words.iter().enumerate() {
                    assert_eq!(col.get_bit(row), w >> bit & 1 == 1, "bit {bit} row {row}");
                }
            }
        }
    }
}
