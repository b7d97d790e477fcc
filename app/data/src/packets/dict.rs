//! The packets table's string columns as dictionaries: batch-local keys
//! for global ids, and the strings spelled out where a reader needs them.

use super::*;

/// Keys string columns: the strings are named by a "global" id (an
/// opcode, a conversation, ...) and get a batch-local key the first time a
/// batch's row has them, so that a batch's dictionary holds only its own
/// strings.
#[derive(Debug, Default)]
pub(super) struct DictColumn {
    /// Global id to local key; `u32::MAX` when not yet in this batch.
    local: Vec<u32>,
    /// Local key to global id.
    globals: Vec<u32>,
}

impl DictColumn {
    /// The keys of a batch's rows: those with `part` present are keyed by
    /// their id, the others get 0 (their validity says so). Keys are `K`
    /// wide: a byte where the ids are bytes (at most 256 distinct).
    pub(super) fn keys<T, K>(
        &mut self,
        ids: &[T],
        present: &[u16],
        part: u16,
        recycler: Option<&Recycler>,
    ) -> PrimitiveArray<K>
    where
        T: Copy + Into<u32>,
        K: Pooled + TryFrom<u32>,
    {
        let mut keys: Vec<K> = Recycler::take(recycler, ids.len());
        keys.resize(ids.len(), K::default());
        // The last id and its key: runs of one id need no lookup.
        let mut last: Option<(u32, K)> = None;
        for ((key, &id), &p) in keys.iter_mut().zip(ids).zip(present) {
            if p & part == 0 {
                continue;
            }
            let id: u32 = id.into();
            if let Some((last_id, last_key)) = last
                && last_id == id
            {
                *key = last_key;
                continue;
            }
            let slot = id as usize;
            if slot >= self.local.len() {
                self.local.resize(slot + 1, u32::MAX);
            }
            if self.local[slot] == u32::MAX {
                self.local[slot] = self.globals.len() as u32;
                self.globals.push(id);
            }
            *key = K::try_from(self.local[slot]).unwrap_or_default();
            last = Some((id, *key));
        }
        PrimitiveArray::new(K::PRIMITIVE.into(), keys.into(), None)
    }

    /// The batch's strings, in key order.
    pub(super) fn values(&self, name: impl Fn(u32) -> String) -> Utf8ViewArray {
        let mut values = MutableBinaryViewArray::<str>::with_capacity(self.globals.len().max(1));
        for &g in &self.globals {
            values.push_value(name(g));
        }
        if self.globals.is_empty() {
            // Keys of rows without a value are 0: keep them in range.
            values.push_value("");
        }
        values.freeze()
    }

    /// Ready for the next batch.
    pub(super) fn reset(&mut self) {
        for &g in &self.globals {
            if let Some(l) = self.local.get_mut(g as usize) {
                *l = u32::MAX;
            }
        }
        self.globals.clear();
    }
}

/// Keys of a dictionary column.
#[derive(Debug, Clone)]
pub(super) enum Keys {
    U8(PrimitiveArray<u8>),
    U32(PrimitiveArray<u32>),
}

impl Keys {
    pub(super) fn sliced_empty(&self) -> Keys {
        match self {
            Keys::U8(k) => Keys::U8(k.clone().sliced(0, 0)),
            Keys::U32(k) => Keys::U32(k.clone().sliced(0, 0)),
        }
    }
}

/// A dictionary column from its keys and strings.
pub(super) fn dict(keys: Keys, values: Utf8ViewArray) -> Col {
    Col::Dict(Box::new((keys, values)))
}

/// The strings of a dictionary column, row by row.
pub(super) fn spell<K: NativeType + Into<u32>>(
    keys: &PrimitiveArray<K>,
    values: &Utf8ViewArray,
) -> Utf8ViewArray {
    let mut out = MutableBinaryViewArray::<str>::with_capacity(keys.len());
    for key in keys.iter() {
        match key.and_then(|&k| values.get(k.into() as usize)) {
            Some(v) => out.push_value(v),
            None => out.push_null(),
        }
    }
    out.freeze()
}

pub(super) fn dictionary_array<K: DictionaryKey>(
    key_type: IntegerType,
    keys: PrimitiveArray<K>,
    values: Utf8ViewArray,
) -> Result<Box<dyn Array>, DataError> {
    let dtype = ArrowDataType::Dictionary(key_type, Box::new(values.dtype().clone()), false);
    Ok(Box::new(DictionaryArray::<K>::try_new(
        dtype,
        keys,
        values.boxed(),
    )?))
}
