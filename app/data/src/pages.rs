//! Parquet pages for the packets table's column shapes, encoded a byte (or
//! a value) at a time instead of a bit at a time.
//!
//! Arrow and Parquet pack booleans the same way (LSB first), so a boolean
//! column's values and a nullable column's definition levels are the Arrow
//! bitmap's bytes behind a run header; integers are their little-endian
//! bytes; string columns that arrive as dictionary keys become one
//! dictionary page and bit-packed keys. Anything else goes to polars'
//! encoder (see `parquet.rs`). One data page per column per row group.

use polars::prelude::{PolarsError, PolarsResult};
use polars_arrow::array::{Array, BooleanArray, DictionaryArray, PrimitiveArray, Utf8ViewArray};
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
pub(crate) fn encode(
    array: &dyn Array,
    field: &ParquetType,
    encoding: Encoding,
) -> PolarsResult<Option<Vec<Page>>> {
    let ParquetType::PrimitiveType(ty) = field else {
        return Ok(None);
    };
    let optional = ty.field_info.repetition != Repetition::Required;
    let any = array.as_any();
    if encoding == Encoding::RleDictionary {
        let small = if let Some(a) = any.downcast_ref::<PrimitiveArray<u8>>() {
            int_dictionary(a, ty, optional, |v| u32::from(*v))?
        } else if let Some(a) = any.downcast_ref::<PrimitiveArray<u16>>() {
            int_dictionary(a, ty, optional, |v| u32::from(*v))?
        } else if let Some(a) = any.downcast_ref::<PrimitiveArray<u32>>() {
            int_dictionary(a, ty, optional, |v| *v)?
        } else {
            None
        };
        if let Some((dict, data)) = small {
            return Ok(Some(vec![Page::Dict(dict), Page::Data(data)]));
        }
    }
    let page = if let Some(a) = any.downcast_ref::<BooleanArray>() {
        boolean(a, ty, optional)?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<u8>>() {
        int32(a, ty, optional, |v| i32::from(*v))?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<u16>>() {
        int32(a, ty, optional, |v| i32::from(*v))?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<u32>>() {
        // UINT_32 is stored as the INT32 of the same bits.
        int32(a, ty, optional, |v| *v as i32)?
    } else if let Some(a) = any.downcast_ref::<PrimitiveArray<u64>>() {
        int64(a, ty, optional)?
    } else if let Some(a) = any.downcast_ref::<DictionaryArray<u32>>() {
        let Some(values) = a.values().as_any().downcast_ref::<Utf8ViewArray>() else {
            return Ok(None);
        };
        let (dict, data) = dictionary(a.keys(), values, ty, optional)?;
        return Ok(Some(vec![Page::Dict(dict), Page::Data(data)]));
    } else {
        return Ok(None);
    };
    Ok(Some(vec![Page::Data(page)]))
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
        if len % 8 != 0 {
            out.push(byte);
        }
    }
    if len % 8 != 0
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
            if i % 8 == 0 {
                buffer.push(byte);
                byte = 0;
            }
        }
        if i % 8 != 0 {
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
fn plain<T, P>(
    a: &PrimitiveArray<T>,
    to_physical: impl Fn(&T) -> P,
    le_bytes: impl Fn(P, &mut Vec<u8>),
    buffer: &mut Vec<u8>,
) -> Option<(P, P)>
where
    T: polars_arrow::types::NativeType + Ord,
    P: Copy,
{
    let mut min_max: Option<(T, T)> = None;
    let mut visit = |v: &T, buffer: &mut Vec<u8>| {
        le_bytes(to_physical(v), buffer);
        min_max = Some(match min_max {
            None => (*v, *v),
            Some((lo, hi)) => (lo.min(*v), hi.max(*v)),
        });
    };
    match a.validity().filter(|v| v.unset_bits() > 0) {
        None => a.values().iter().for_each(|v| visit(v, buffer)),
        Some(validity) => a
            .values()
            .iter()
            .zip(validity.iter())
            .filter(|(_, ok)| *ok)
            .for_each(|(v, _)| visit(v, buffer)),
    }
    min_max.map(|(lo, hi)| (to_physical(&lo), to_physical(&hi)))
}

fn int32<T>(
    a: &PrimitiveArray<T>,
    ty: &PrimitiveType,
    optional: bool,
    to_i32: impl Fn(&T) -> i32,
) -> PolarsResult<DataPage>
where
    T: polars_arrow::types::NativeType + Ord,
{
    let nulls = a.null_count();
    check_required(optional, nulls, ty)?;
    let mut buffer = Vec::with_capacity(a.len() * 4 + a.len() / 8 + 16);
    if optional {
        def_levels(a.validity(), a.len(), &mut buffer);
    }
    let min_max = plain(
        a,
        to_i32,
        |v, b| b.extend_from_slice(&v.to_le_bytes()),
        &mut buffer,
    );
    let stats = PrimitiveStatistics::<i32> {
        primitive_type: ty.clone(),
        null_count: Some(nulls as i64),
        distinct_count: None,
        min_value: min_max.map(|m| m.0),
        max_value: min_max.map(|m| m.1),
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

fn int64(a: &PrimitiveArray<u64>, ty: &PrimitiveType, optional: bool) -> PolarsResult<DataPage> {
    let nulls = a.null_count();
    check_required(optional, nulls, ty)?;
    let mut buffer = Vec::with_capacity(a.len() * 8 + a.len() / 8 + 16);
    if optional {
        def_levels(a.validity(), a.len(), &mut buffer);
    }
    // UINT_64 is stored as the INT64 of the same bits.
    let min_max = plain(
        a,
        |v| *v as i64,
        |v, b| b.extend_from_slice(&v.to_le_bytes()),
        &mut buffer,
    );
    let stats = PrimitiveStatistics::<i64> {
        primitive_type: ty.clone(),
        null_count: Some(nulls as i64),
        distinct_count: None,
        min_value: min_max.map(|m| m.0),
        max_value: min_max.map(|m| m.1),
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

/// Bits needed for keys below `n`, at least 1.
fn key_bits(n: usize) -> u32 {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1)
}

/// One bit-packed run of `keys` at `bits` bits each, in groups of 8.
fn bitpack(keys: impl Iterator<Item = u32>, count: usize, bits: u32, out: &mut Vec<u8>) {
    let groups = count.div_ceil(8);
    uleb128(out, ((groups as u64) << 1) | 1);
    let start = out.len();
    let mut acc = 0u64;
    let mut filled = 0u32;
    for key in keys {
        acc |= u64::from(key) << filled;
        filled += bits;
        while filled >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            filled -= 8;
        }
    }
    if filled > 0 {
        out.push(acc as u8);
    }
    // The last group is padded with zero keys.
    out.resize(start + groups * bits as usize, 0);
}

/// Most distinct values an integer column's dictionary takes.
const MAX_INT_DICT: usize = 256;

/// Distinct values of a column, by open addressing (a table four times
/// the largest dictionary, so probes stay short).
struct IntDict {
    slot_value: Vec<u32>,
    slot_key: Vec<u16>,
    values: Vec<u32>,
}

impl IntDict {
    const SLOTS: usize = MAX_INT_DICT * 4;
    const EMPTY: u16 = u16::MAX;

    fn new() -> Self {
        IntDict {
            slot_value: vec![0; Self::SLOTS],
            slot_key: vec![Self::EMPTY; Self::SLOTS],
            values: Vec::new(),
        }
    }

    /// The key of `v`; `None` once the column has too many values.
    #[inline]
    fn key(&mut self, v: u32) -> Option<u32> {
        let mut h = (v.wrapping_mul(0x9E37_79B1) >> 22) as usize & (Self::SLOTS - 1);
        loop {
            let key = *self.slot_key.get(h)?;
            if key == Self::EMPTY {
                if self.values.len() >= MAX_INT_DICT {
                    return None;
                }
                let key = self.values.len() as u16;
                self.values.push(v);
                self.slot_value[h] = v;
                self.slot_key[h] = key;
                return Some(u32::from(key));
            }
            if self.slot_value[h] == v {
                return Some(u32::from(key));
            }
            h = (h + 1) & (Self::SLOTS - 1);
        }
    }
}

/// An integer column as a dictionary of its distinct values (plain INT32)
/// and bit-packed keys, or `None` when it has more than [`MAX_INT_DICT`].
fn int_dictionary<T: polars_arrow::types::NativeType>(
    a: &PrimitiveArray<T>,
    ty: &PrimitiveType,
    optional: bool,
    to_u32: impl Fn(&T) -> u32,
) -> PolarsResult<Option<(DictPage, DataPage)>> {
    let nulls = a.null_count();
    check_required(optional, nulls, ty)?;
    let mut dict = IntDict::new();
    let mut keys = Vec::with_capacity(a.len() - nulls);
    let mut add = |v: &T| dict.key(to_u32(v)).map(|k| keys.push(k));
    let complete = match a.validity().filter(|v| v.unset_bits() > 0) {
        None => a.values().iter().all(|v| add(v).is_some()),
        Some(validity) => a
            .values()
            .iter()
            .zip(validity.iter())
            .filter(|(_, ok)| *ok)
            .all(|(v, _)| add(v).is_some()),
    };
    if !complete {
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
    let bits = key_bits(values.len());
    data.push(bits as u8);
    bitpack(keys.iter().copied(), keys.len(), bits, &mut data);
    // Unsigned order, stored as the INT32 of the same bits.
    let stats = PrimitiveStatistics::<i32> {
        primitive_type: ty.clone(),
        null_count: Some(nulls as i64),
        distinct_count: None,
        min_value: values.iter().min().map(|&v| v as i32),
        max_value: values.iter().max().map(|&v| v as i32),
    };
    Ok(Some((
        DictPage::new(CowBuffer::Owned(dict_bytes), values.len(), false),
        data_page(
            data,
            a.len(),
            ty,
            optional,
            Encoding::RleDictionary,
            stats.serialize(),
        ),
    )))
}

fn dictionary(
    keys: &PrimitiveArray<u32>,
    values: &Utf8ViewArray,
    ty: &PrimitiveType,
    optional: bool,
) -> PolarsResult<(DictPage, DataPage)> {
    let nulls = keys.null_count();
    check_required(optional, nulls, ty)?;
    let n_values = values.len();
    if let Some(bad) = keys.iter().flatten().find(|&&k| k as usize >= n_values) {
        return Err(PolarsError::OutOfBounds(
            format!("dictionary key {bad} of {}", ty.field_info.name).into(),
        ));
    }
    // The dictionary: plain BYTE_ARRAY values (length, bytes).
    let mut dict = Vec::new();
    let (mut lo, mut hi): (Option<&str>, Option<&str>) = (None, None);
    let mut used = vec![false; n_values];
    for k in keys.iter().flatten() {
        if let Some(u) = used.get_mut(*k as usize) {
            *u = true;
        }
    }
    for (v, used) in values.values_iter().zip(&used) {
        dict.extend_from_slice(&(v.len() as u32).to_le_bytes());
        dict.extend_from_slice(v.as_bytes());
        if *used {
            lo = Some(lo.map_or(v, |lo| lo.min(v)));
            hi = Some(hi.map_or(v, |hi| hi.max(v)));
        }
    }
    let mut data = Vec::with_capacity(keys.len() / 2 + 16);
    if optional {
        def_levels(keys.validity(), keys.len(), &mut data);
    }
    let bits = key_bits(n_values);
    data.push(bits as u8);
    let valid = keys.len() - nulls;
    if nulls == 0 {
        bitpack(keys.values().iter().copied(), valid, bits, &mut data);
    } else {
        bitpack(keys.iter().flatten().copied(), valid, bits, &mut data);
    }
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
    fn bitpack_packs_lsb_first_and_pads_the_group() {
        // The spec's example: 0..8 at 3 bits.
        let mut b = Vec::new();
        bitpack(0..8u32, 8, 3, &mut b);
        assert_eq!(b, [0b11, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
        // A partial group is padded to a whole one.
        b.clear();
        bitpack([1u32, 1].into_iter(), 2, 1, &mut b);
        assert_eq!(b, [0b11, 0b11]);
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
