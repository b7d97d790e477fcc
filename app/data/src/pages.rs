//! Parquet pages for the packets table's column shapes, encoded a byte (or
//! a value) at a time instead of a bit at a time.
//!
//! Arrow and Parquet pack booleans the same way (LSB first), so a boolean
//! column's values and a nullable column's definition levels are the Arrow
//! bitmap's bytes behind a run header; integers are their little-endian
//! bytes, or deltas (`DELTA_BINARY_PACKED`), or a dictionary of at most 256
//! values; string columns that arrive as dictionary keys become one
//! dictionary page and bit-packed keys. Anything else goes to polars'
//! encoder (see `parquet.rs`). One data page per column per row group.

use polars::prelude::{PolarsError, PolarsResult};
use polars_arrow::array::{
    Array, BooleanArray, DictionaryArray, DictionaryKey, PrimitiveArray, Utf8ViewArray,
};
use polars_arrow::bitmap::Bitmap;
use polars_parquet::parquet::CowBuffer;
use polars_parquet::parquet::page::{DataPage, DataPageHeader, DataPageHeaderV1, DictPage};
use polars_parquet::parquet::schema::Repetition;
use polars_parquet::parquet::schema::types::PrimitiveType;
use polars_parquet::parquet::statistics::{
    BinaryStatistics, BooleanStatistics, ParquetStatistics, PrimitiveStatistics,
};
use polars_parquet::write::{Descriptor, Encoding, Page, ParquetType};

/// The pages of one column chunk, or `None` for a shape handled elsewhere.
/// Integer columns asked for as `RleDictionary` are written with a
/// dictionary when they hold few distinct values (plain otherwise).
///
/// `scratch` is working memory kept by the caller across columns and row
/// groups (fresh memory costs a page fault a 4 KiB).
pub(crate) fn encode(
    array: &dyn Array,
    field: &ParquetType,
    encoding: Encoding,
    scratch: &mut Vec<u8>,
) -> PolarsResult<Option<Vec<Page>>> {
    let ParquetType::PrimitiveType(ty) = field else {
        return Ok(None);
    };
    let optional = ty.field_info.repetition != Repetition::Required;
    let any = array.as_any();
    if encoding == Encoding::RleDictionary {
        // Keyed by the INT32's bits.
        let small = if let Some(a) = any.downcast_ref::<PrimitiveArray<i16>>() {
            int_dictionary(a, ty, optional, |v| i32::from(*v) as u32, scratch)?
        } else if let Some(a) = any.downcast_ref::<PrimitiveArray<i32>>() {
            int_dictionary(a, ty, optional, |v| *v as u32, scratch)?
        } else {
            None
        };
        if let Some((dict, data)) = small {
            return Ok(Some(vec![Page::Dict(dict), Page::Data(data)]));
        }
    }
    let page = if let Some(a) = any.downcast_ref::<BooleanArray>() {
        boolean(a, ty, optional)?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<i16>>() {
        // INT(16, signed) is stored as INT32.
        plain_page(a, ty, optional, |v| i32::from(*v))?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<i32>>() {
        plain_page(a, ty, optional, |v| *v)?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<i64>>() {
        if encoding == Encoding::DeltaBinaryPacked && a.null_count() == 0 {
            int64_delta(a, ty, optional)?
        } else {
            plain_page(a, ty, optional, |v| *v)?
        }
    } else if let Some(a) = any.downcast_ref::<DictionaryArray<u32>>() {
        return string_dictionary(a, ty, optional);
    } else if let Some(a) = any.downcast_ref::<DictionaryArray<u8>>() {
        return string_dictionary(a, ty, optional);
    } else {
        return Ok(None);
    };
    Ok(Some(vec![Page::Data(page)]))
}

/// Call `f` with each value whose validity bit is set (all of them when
/// there is no validity), walking the validity a byte at a time.
#[inline]
fn for_each_valid<T: Copy>(values: &[T], validity: Option<&Bitmap>, mut f: impl FnMut(T)) {
    let Some(validity) = validity.filter(|v| v.unset_bits() > 0) else {
        values.iter().for_each(|v| f(*v));
        return;
    };
    let (bytes, offset, len) = validity.as_slice();
    if offset != 0 || len != values.len() {
        for (v, ok) in values.iter().zip(validity.iter()) {
            if ok {
                f(*v);
            }
        }
        return;
    }
    for (chunk, &byte) in values.chunks(8).zip(bytes) {
        match byte {
            0 => {}
            0xff => chunk.iter().for_each(|v| f(*v)),
            _ => {
                for (i, v) in chunk.iter().enumerate() {
                    if byte >> i & 1 == 1 {
                        f(*v);
                    }
                }
            }
        }
    }
}

/// Append `value` as ULEB128 (the run headers of the hybrid encoding).
fn uleb128(buffer: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            buffer.push(byte);
            return;
        }
        buffer.push(byte | 0x80);
    }
}

/// `bitmap`'s first `len` bits as whole bytes, LSB first, spare bits zero.
fn bitmap_bytes(bitmap: &Bitmap, out: &mut Vec<u8>) {
    let len = bitmap.len();
    let (bytes, offset, _) = bitmap.as_slice();
    let n_bytes = len.div_ceil(8);
    if offset == 0 {
        out.extend_from_slice(bytes.get(..n_bytes).unwrap_or(bytes));
    } else {
        let mut byte = 0u8;
        for (i, bit) in bitmap.iter().enumerate() {
            byte |= u8::from(bit) << (i % 8);
            if i % 8 == 7 {
                out.push(byte);
                byte = 0;
            }
        }
        if !len.is_multiple_of(8) {
            out.push(byte);
        }
    }
    if !len.is_multiple_of(8)
        && let Some(last) = out.last_mut()
    {
        *last &= (1u8 << (len % 8)) - 1;
    }
}

/// Definition levels of an optional flat column (bit width 1), V1 layout:
/// their byte length, then one run: repeated when every row is valid,
/// bit-packed (the validity bitmap's bytes) when not.
fn def_levels(validity: Option<&Bitmap>, len: usize, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    match validity.filter(|v| v.unset_bits() > 0) {
        None => {
            uleb128(out, (len as u64) << 1);
            out.push(1);
        }
        Some(v) => {
            uleb128(out, ((len.div_ceil(8) as u64) << 1) | 1);
            bitmap_bytes(v, out);
        }
    }
    let n = (out.len() - at - 4) as u32;
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&n.to_le_bytes());
    }
}

/// A page of numbers with their statistics: `rows` values of which `nulls`
/// are null, the least and greatest of the physical type `P`.
fn number_page<P: polars_parquet::parquet::types::NativeType>(
    buffer: Vec<u8>,
    (rows, nulls): (usize, usize),
    ty: &PrimitiveType,
    optional: bool,
    encoding: Encoding,
    min_max: Option<(P, P)>,
) -> DataPage {
    let stats = PrimitiveStatistics::<P> {
        primitive_type: ty.clone(),
        null_count: Some(nulls as i64),
        distinct_count: None,
        min_value: min_max.map(|m| m.0),
        max_value: min_max.map(|m| m.1),
    };
    data_page(buffer, rows, ty, optional, encoding, stats.serialize())
}

fn data_page(
    buffer: Vec<u8>,
    rows: usize,
    ty: &PrimitiveType,
    optional: bool,
    encoding: Encoding,
    statistics: ParquetStatistics,
) -> DataPage {
    DataPage::new(
        DataPageHeader::V1(DataPageHeaderV1 {
            num_values: rows as i32,
            encoding: encoding.into(),
            definition_level_encoding: Encoding::Rle.into(),
            repetition_level_encoding: Encoding::Rle.into(),
            statistics: Some(statistics),
        }),
        CowBuffer::Owned(buffer),
        Descriptor {
            primitive_type: ty.clone(),
            max_def_level: i16::from(optional),
            max_rep_level: 0,
        },
        rows,
    )
}

fn check_required(optional: bool, nulls: usize, ty: &PrimitiveType) -> PolarsResult<()> {
    if !optional && nulls > 0 {
        return Err(PolarsError::ComputeError(
            format!(
                "column {} holds nulls but is written as required",
                ty.field_info.name
            )
            .into(),
        ));
    }
    Ok(())
}

fn boolean(a: &BooleanArray, ty: &PrimitiveType, optional: bool) -> PolarsResult<DataPage> {
    let nulls = a.null_count();
    check_required(optional, nulls, ty)?;
    let mut buffer = Vec::with_capacity(a.len() / 8 + 16);
    if optional {
        def_levels(a.validity(), a.len(), &mut buffer);
    }
    let (mut trues, mut valid) = (0usize, a.len() - nulls);
    if nulls == 0 {
        bitmap_bytes(a.values(), &mut buffer);
        trues = a.values().set_bits();
    } else {
        // Only the valid rows' values are stored.
        let mut byte = 0u8;
        let mut i = 0usize;
        for v in a.iter().flatten() {
            byte |= u8::from(v) << (i % 8);
            trues += usize::from(v);
            i += 1;
            if i.is_multiple_of(8) {
                buffer.push(byte);
                byte = 0;
            }
        }
        if !i.is_multiple_of(8) {
            buffer.push(byte);
        }
        valid = i;
    }
    let stats = BooleanStatistics {
        null_count: Some(nulls as i64),
        distinct_count: None,
        max_value: (valid > 0).then_some(trues > 0),
        min_value: (valid > 0).then_some(trues == valid),
    };
    Ok(data_page(
        buffer,
        a.len(),
        ty,
        optional,
        Encoding::Plain,
        stats.serialize(),
    ))
}

/// Plain-encoded values of the valid rows, and their min and max (in the
/// array's own order, stored as the physical type `P` of the same bits).
/// The bytes are written in place (no capacity check a value).
fn plain<T, P>(
    a: &PrimitiveArray<T>,
    to_physical: impl Fn(&T) -> P,
    buffer: &mut Vec<u8>,
) -> Option<(P, P)>
where
    T: polars_arrow::types::NativeType + Ord,
    P: polars_parquet::parquet::types::NativeType,
{
    let valid = a.len() - a.null_count();
    let start = buffer.len();
    buffer.resize(start + valid * size_of::<P>(), 0);
    let mut slots = buffer
        .get_mut(start..)
        .unwrap_or_default()
        .chunks_exact_mut(size_of::<P>());
    let mut extremes: Option<(T, T)> = None;
    for_each_valid(a.values(), a.validity(), |v| {
        if let Some(slot) = slots.next() {
            slot.copy_from_slice(to_physical(&v).to_le_bytes().as_ref());
        }
        extremes = Some(extremes.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
    });
    extremes.map(|(lo, hi)| (to_physical(&lo), to_physical(&hi)))
}

/// A `PLAIN` page of integers stored as the physical type `P` (INT32 for
/// i16 and i32, INT64 for i64), with signed statistics.
fn plain_page<T, P>(
    a: &PrimitiveArray<T>,
    ty: &PrimitiveType,
    optional: bool,
    to_physical: impl Fn(&T) -> P,
) -> PolarsResult<DataPage>
where
    T: polars_arrow::types::NativeType + Ord,
    P: polars_parquet::parquet::types::NativeType,
{
    let nulls = a.null_count();
    check_required(optional, nulls, ty)?;
    let mut buffer = Vec::with_capacity(a.len() * size_of::<P>() + a.len() / 8 + 16);
    if optional {
        def_levels(a.validity(), a.len(), &mut buffer);
    }
    let min_max = plain(a, to_physical, &mut buffer);
    Ok(number_page(
        buffer,
        (a.len(), nulls),
        ty,
        optional,
        Encoding::Plain,
        min_max,
    ))
}

/// An i64 column as `DELTA_BINARY_PACKED` (for counters and clocks: their
/// deltas pack into a few bits, often none).
fn int64_delta(
    a: &PrimitiveArray<i64>,
    ty: &PrimitiveType,
    optional: bool,
) -> PolarsResult<DataPage> {
    let mut buffer = Vec::with_capacity(a.len() / 4 + 64);
    if optional {
        def_levels(None, a.len(), &mut buffer);
    }
    let extremes = delta_binary_packed(a.values(), &mut buffer);
    Ok(number_page(
        buffer,
        (a.len(), 0),
        ty,
        optional,
        Encoding::DeltaBinaryPacked,
        extremes,
    ))
}

const DELTA_BLOCK: usize = 128;
const DELTA_MINIBLOCKS: usize = 4;
const DELTA_MINIBLOCK: usize = DELTA_BLOCK / DELTA_MINIBLOCKS;

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Parquet's `DELTA_BINARY_PACKED`: a header, then per block of 128 values
/// the smallest delta and four miniblocks of 32 deltas above it, each
/// bit-packed at its own width. Returns the smallest and largest value.
fn delta_binary_packed(values: &[i64], out: &mut Vec<u8>) -> Option<(i64, i64)> {
    uleb128(out, DELTA_BLOCK as u64);
    uleb128(out, DELTA_MINIBLOCKS as u64);
    uleb128(out, values.len() as u64);
    let Some(&first) = values.first() else {
        uleb128(out, 0);
        return None;
    };
    uleb128(out, zigzag(first));
    let (mut lo, mut hi) = (first, first);
    let mut prev = first;
    // A block's deltas on the stack: no allocation a column.
    let mut deltas = [0i64; DELTA_BLOCK];
    for block in values.get(1..).unwrap_or_default().chunks(DELTA_BLOCK) {
        let mut min = i64::MAX;
        for (d, &v) in deltas.iter_mut().zip(block) {
            *d = v.wrapping_sub(prev);
            min = min.min(*d);
            (lo, hi) = (lo.min(v), hi.max(v));
            prev = v;
        }
        let block = deltas.get(..block.len()).unwrap_or_default();
        uleb128(out, zigzag(min));
        let widths_at = out.len();
        out.extend_from_slice(&[0; DELTA_MINIBLOCKS]);
        for (m, mini) in block.chunks(DELTA_MINIBLOCK).enumerate() {
            // The width of the largest is that of all of them or-ed.
            let bits = mini
                .iter()
                .fold(0u64, |acc, d| acc | d.wrapping_sub(min) as u64);
            let width = u64::BITS - bits.leading_zeros();
            if let Some(w) = out.get_mut(widths_at + m) {
                *w = width as u8;
            }
            if width == 0 {
                continue;
            }
            // A miniblock is always 32 values wide; the last one is padded.
            let start = out.len();
            pack_bits(mini.iter().map(|d| d.wrapping_sub(min) as u64), width, out);
            out.resize(start + DELTA_MINIBLOCK * width as usize / 8, 0);
        }
    }
    Some((lo, hi))
}

/// Bits needed for keys below `n`, at least 1.
fn key_bits(n: usize) -> u32 {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1)
}

/// Keys of a column chunk (those of the valid rows): one repeated run when
/// the dictionary has a single value, else one bit-packed run.
fn write_keys<K: Copy + Into<u32>>(keys: &[K], n_values: usize, out: &mut Vec<u8>) {
    let bits = key_bits(n_values);
    out.push(bits as u8);
    if keys.is_empty() {
        return;
    }
    if n_values <= 1 {
        // Every key is 0: a repeated run (its value in ceil(bits / 8) bytes).
        uleb128(out, (keys.len() as u64) << 1);
        out.push(0);
        return;
    }
    // One bit-packed run in groups of 8, the last padded with zero keys.
    let groups = keys.len().div_ceil(8);
    uleb128(out, ((groups as u64) << 1) | 1);
    let start = out.len();
    out.reserve(groups * bits as usize + 8);
    if bits <= 8 {
        // A group of eight keys is one word of `bits` bytes.
        let group = |keys: &[K], out: &mut Vec<u8>| {
            let mut word = 0u64;
            for (i, &k) in keys.iter().enumerate() {
                word |= u64::from(k.into()) << (i as u32 * bits);
            }
            let bytes = word.to_le_bytes();
            out.extend_from_slice(bytes.get(..bits as usize).unwrap_or(&bytes));
        };
        let mut eights = keys.chunks_exact(8);
        for keys in &mut eights {
            group(keys, out);
        }
        if !eights.remainder().is_empty() {
            group(eights.remainder(), out);
        }
    } else {
        pack_bits(keys.iter().map(|&k| u64::from(k.into())), bits, out);
    }
    out.resize(start + groups * bits as usize, 0);
}

/// Packs values of `width` bits (up to 64) LSB first, as Parquet packs
/// bits, a 64-bit word at a time.
struct BitPacker {
    acc: u64,
    filled: u32,
    width: u32,
}

impl BitPacker {
    fn new(width: u32) -> Self {
        BitPacker {
            acc: 0,
            filled: 0,
            width,
        }
    }

    /// Append `v`, which must fit in `width` bits.
    #[inline]
    fn put(&mut self, v: u64, out: &mut Vec<u8>) {
        // `filled` stays below 64.
        self.acc |= v << self.filled;
        let end = self.filled + self.width;
        if end >= 64 {
            out.extend_from_slice(&self.acc.to_le_bytes());
            // The bits of `v` that did not fit (none when it started the word).
            self.acc = v.checked_shr(64 - self.filled).unwrap_or(0);
            self.filled = end - 64;
        } else {
            self.filled = end;
        }
    }

    /// Write the bits still waiting; the last byte is padded with zeros.
    fn finish(self, out: &mut Vec<u8>) {
        let bytes = self.acc.to_le_bytes();
        out.extend_from_slice(
            bytes
                .get(..self.filled.div_ceil(8) as usize)
                .unwrap_or(&bytes),
        );
    }
}

/// `values` at `width` bits each (up to 64), LSB first; the last byte is
/// padded with zeros.
fn pack_bits(values: impl Iterator<Item = u64>, width: u32, out: &mut Vec<u8>) {
    let mut packer = BitPacker::new(width);
    for v in values {
        packer.put(v, out);
    }
    packer.finish(out);
}

/// Most distinct values an integer column's dictionary takes.
const MAX_INT_DICT: usize = 256;

/// Distinct values of a column, by open addressing (a table four times
/// the largest dictionary, so probes stay short).
struct IntDict {
    /// A value in the low 32 bits, its key + 1 above (0: empty slot).
    slots: Box<[u64; IntDict::SLOTS]>,
    values: Vec<u32>,
}

impl IntDict {
    const SLOTS: usize = MAX_INT_DICT * 4;

    fn new() -> Self {
        IntDict {
            slots: Box::new([0; IntDict::SLOTS]),
            values: Vec::new(),
        }
    }

    /// The key of `v`; `None` once the column has too many values.
    #[inline]
    fn key(&mut self, v: u32) -> Option<u32> {
        let mut h = (v.wrapping_mul(0x9E37_79B1) >> 22) as usize;
        loop {
            let at = h & (Self::SLOTS - 1);
            let slot = self.slots[at];
            if slot == 0 {
                if self.values.len() >= MAX_INT_DICT {
                    return None;
                }
                let key = self.values.len() as u32;
                self.values.push(v);
                self.slots[at] = u64::from(v) | (u64::from(key + 1) << 32);
                return Some(key);
            }
            if slot as u32 == v {
                return Some((slot >> 32) as u32 - 1);
            }
            h += 1;
        }
    }
}

/// The key of each of `values` (`first` the first of them) in `keys` (one
/// slot each), adding values to `dict`; true when `dict` filled up before
/// the end. The last two values and their keys are kept at hand: runs of
/// one value (a port, a length) and two alternating ones (a request and its
/// ACK) need no lookup.
#[inline]
fn dict_keys(
    first: u32,
    values: impl Iterator<Item = u32>,
    keys: &mut [u8],
    dict: &mut IntDict,
) -> bool {
    let mut last = (first, dict.key(first).unwrap_or_default() as u8);
    let mut prev = last;
    for (slot, v) in keys.iter_mut().zip(values) {
        if v != last.0 {
            if v == prev.0 {
                std::mem::swap(&mut last, &mut prev);
            } else {
                let Some(k) = dict.key(v) else {
                    return true;
                };
                prev = last;
                last = (v, k as u8);
            }
        }
        *slot = last.1;
    }
    false
}

/// An integer column as a dictionary of its distinct values (plain INT32)
/// and bit-packed keys, or `None` when it has more than [`MAX_INT_DICT`].
fn int_dictionary<T: polars_arrow::types::NativeType>(
    a: &PrimitiveArray<T>,
    ty: &PrimitiveType,
    optional: bool,
    to_u32: impl Fn(&T) -> u32,
    scratch: &mut Vec<u8>,
) -> PolarsResult<Option<(DictPage, DataPage)>> {
    let nulls = a.null_count();
    check_required(optional, nulls, ty)?;
    let mut dict = IntDict::new();
    // At most 256 values: a key is a byte, in the caller's scratch.
    let keys = scratch;
    keys.clear();
    keys.resize(a.len() - nulls, 0);
    let full = match a.iter().flatten().next().map(&to_u32) {
        None => false,
        Some(first) if nulls == 0 => {
            dict_keys(first, a.values().iter().map(&to_u32), keys, &mut dict)
        }
        Some(first) => dict_keys(first, a.iter().flatten().map(&to_u32), keys, &mut dict),
    };
    if full {
        return Ok(None);
    }
    let values = dict.values;
    let mut dict_bytes = Vec::with_capacity(values.len() * 4);
    for v in &values {
        dict_bytes.extend_from_slice(&v.to_le_bytes());
    }
    let mut data = Vec::with_capacity(keys.len() / 2 + a.len() / 8 + 16);
    if optional {
        def_levels(a.validity(), a.len(), &mut data);
    }
    write_keys(keys, values.len(), &mut data);
    // Signed order (the keys are the INT32's bits).
    let min = values.iter().map(|&v| v as i32).min();
    let max = values.iter().map(|&v| v as i32).max();
    Ok(Some((
        DictPage::new(CowBuffer::Owned(dict_bytes), values.len(), false),
        number_page(
            data,
            (a.len(), nulls),
            ty,
            optional,
            Encoding::RleDictionary,
            min.zip(max),
        ),
    )))
}

/// A dictionary array of strings as a dictionary page and a keys page.
fn string_dictionary<K: DictionaryKey + Into<u32>>(
    a: &DictionaryArray<K>,
    ty: &PrimitiveType,
    optional: bool,
) -> PolarsResult<Option<Vec<Page>>> {
    let Some(values) = a.values().as_any().downcast_ref::<Utf8ViewArray>() else {
        return Ok(None);
    };
    let (dict, data) = dictionary(a.keys(), values, ty, optional)?;
    Ok(Some(vec![Page::Dict(dict), Page::Data(data)]))
}

fn dictionary<K: DictionaryKey + Into<u32>>(
    keys: &PrimitiveArray<K>,
    values: &Utf8ViewArray,
    ty: &PrimitiveType,
    optional: bool,
) -> PolarsResult<(DictPage, DataPage)> {
    let nulls = keys.null_count();
    check_required(optional, nulls, ty)?;
    let n_values = values.len();
    // The dictionary: plain BYTE_ARRAY values (length, bytes). The keys
    // were checked against it when the array was made, and a packets batch
    // holds only the strings its rows use, so the dictionary's extremes
    // are the column's.
    let mut dict = Vec::new();
    let (mut lo, mut hi): (Option<&str>, Option<&str>) = (None, None);
    for v in values.values_iter() {
        dict.extend_from_slice(&(v.len() as u32).to_le_bytes());
        dict.extend_from_slice(v.as_bytes());
        lo = Some(lo.map_or(v, |lo| lo.min(v)));
        hi = Some(hi.map_or(v, |hi| hi.max(v)));
    }
    let mut data = Vec::with_capacity(keys.len() / 2 + 16);
    if optional {
        def_levels(keys.validity(), keys.len(), &mut data);
    }
    let valid = keys.len() - nulls;
    match keys.validity().filter(|_| nulls > 0) {
        None => write_keys(keys.values(), n_values, &mut data),
        Some(validity) => {
            let mut gathered: Vec<u32> = Vec::with_capacity(valid);
            for_each_valid(keys.values(), Some(validity), |k| gathered.push(k.into()));
            write_keys(&gathered, n_values, &mut data);
        }
    }
    let (lo, hi) = if valid > 0 { (lo, hi) } else { (None, None) };
    let stats = BinaryStatistics {
        primitive_type: ty.clone(),
        null_count: Some(nulls as i64),
        distinct_count: None,
        max_value: hi.map(|s| s.as_bytes().to_vec()),
        min_value: lo.map(|s| s.as_bytes().to_vec()),
    };
    Ok((
        DictPage::new(CowBuffer::Owned(dict), n_values, false),
        data_page(
            data,
            keys.len(),
            ty,
            optional,
            Encoding::RleDictionary,
            stats.serialize(),
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uleb128_matches_the_spec_examples() {
        let mut b = Vec::new();
        uleb128(&mut b, 624_485);
        assert_eq!(b, [0xe5, 0x8e, 0x26]);
        b.clear();
        uleb128(&mut b, 0);
        assert_eq!(b, [0]);
    }

    #[test]
    fn keys_pack_lsb_first_and_pad_the_group() {
        // The spec's example: 0..8 at 3 bits (bit width byte, run header,
        // packed keys).
        let mut b = Vec::new();
        let keys: Vec<u32> = (0..8).collect();
        write_keys(&keys, 8, &mut b);
        assert_eq!(b, [3, 0b11, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
        // A partial group is padded to a whole one.
        b.clear();
        write_keys(&[1u32, 1], 2, &mut b);
        assert_eq!(b, [1, 0b11, 0b11]);
        // Wider keys go through the general packer, padded the same way.
        b.clear();
        write_keys(&[0x1FFu32, 1, 2], 512, &mut b);
        assert_eq!(b.len(), 1 + 1 + 9);
        assert_eq!(b[..5], [9, 0b11, 0xFF, 0b11, 0b1000]);
        assert!(b[5..].iter().all(|&x| x == 0));
    }

    #[test]
    fn delta_binary_packed_matches_the_spec_example() {
        // The spec's example 1: 1..=5, block 128 and 4 miniblocks here.
        let mut b = Vec::new();
        delta_binary_packed(&[1, 2, 3, 4, 5], &mut b);
        // Header: block 128, 4 miniblocks, 5 values, first 1 (zigzag 2);
        // one block: min delta 1 (zigzag 2), widths 0 0 0 0, no bits.
        assert_eq!(b, [0x80, 0x01, 4, 5, 2, 2, 0, 0, 0, 0]);
        // Deltas 1, -3, 7: min -3, above it 4, 0, 10 at 4 bits, padded to
        // 32 values (16 bytes).
        b.clear();
        delta_binary_packed(&[10, 11, 8, 15], &mut b);
        assert_eq!(&b[..7], [0x80, 0x01, 4, 4, 20, 5, 4]);
        assert_eq!(b[7..10], [0, 0, 0]);
        assert_eq!(b[10], 0x04);
        assert_eq!(b[11], 0x0a);
        assert_eq!(b.len(), 10 + 16);
    }

    #[test]
    fn pack_bits_handles_every_width() {
        // Values at 64, 57 and 3 bits, packed and read back bit by bit.
        for (width, values) in [
            (64u32, vec![u64::MAX, 1, 1 << 63]),
            (57, vec![(1 << 57) - 1, 5, 1 << 56]),
            (3, vec![7, 0, 5, 2]),
        ] {
            let mut b = Vec::new();
            pack_bits(values.iter().copied(), width, &mut b);
            assert_eq!(b.len(), (values.len() * width as usize).div_ceil(8));
            for (i, v) in values.iter().enumerate() {
                let mut got = 0u64;
                for bit in 0..width as usize {
                    let at = i * width as usize + bit;
                    got |= u64::from(b[at / 8] >> (at % 8) & 1) << bit;
                }
                assert_eq!(got, *v, "width {width} value {i}");
            }
        }
    }

    #[test]
    fn key_bits_covers_the_largest_key() {
        assert_eq!(key_bits(0), 1);
        assert_eq!(key_bits(1), 1);
        assert_eq!(key_bits(2), 1);
        assert_eq!(key_bits(3), 2);
        assert_eq!(key_bits(256), 8);
        assert_eq!(key_bits(257), 9);
    }

    #[test]
    fn bitmap_bytes_zeroes_the_spare_bits() {
        let bm = Bitmap::from_iter([true; 10]);
        let mut b = Vec::new();
        bitmap_bytes(&bm, &mut b);
        assert_eq!(b, [0xff, 0b11]);
        let sliced = bm.sliced(3, 6);
        b.clear();
        bitmap_bytes(&sliced, &mut b);
        assert_eq!(b, [0b11_1111]);
    }
}
