// Copyright 2023-2024 The Regents of the University of California
// Copyright 2024-2026 Cornell University
// released under BSD 3-Clause License
// author: Kevin Laeufer <laeufer@cornell.edu>
//
// Fast and compact wave-form representation inspired by the FST on disk format.

use crate::Compression;
use crate::fst::{get_bytes_per_entry, get_len_and_meta, push_zeros};
use crate::hierarchy::{Hierarchy, SignalRef};
use crate::signal::{
    Bit, BitVecRef, ChangeVisitor, FixedWidthEncoding, Real, Signal, SignalSource,
    SignalSourceImplementation, States, Time, TimeTableIdx, bit_char_to_num,
};
use crate::vcd::{VcdBitVecChange, decode_vcd_bit_vec_change};
use crate::{SignalEncoding, SignalValueRef, TimeTable};
use num_enum::TryFromPrimitive;
use rayon::prelude::*;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::io::Read;
use std::num::NonZeroU32;

/// Holds queryable waveform data. Use the `Encoder` to generate.
pub struct Reader {
    blocks: Vec<Block>,
}

impl SignalSourceImplementation for Reader {
    fn load_signals(
        &mut self,
        ids: &[SignalRef],
        types: &[SignalEncoding],
        multi_threaded: bool,
    ) -> Vec<Signal> {
        if multi_threaded {
            ids.par_iter()
                .zip(types.par_iter())
                .map(|(id, len)| self.load_signal(*id, *len))
                .collect::<Vec<_>>()
        } else {
            ids.iter()
                .zip(types.iter())
                .map(|(id, len)| self.load_signal(*id, *len))
                .collect::<Vec<_>>()
        }
    }

    /// (rocescope: see `Reader::visit_signal_prefix`.)
    fn visit_signal_prefixes(
        &mut self,
        ids: &[SignalRef],
        types: &[SignalEncoding],
        visitors: &mut [ChangeVisitor<'_>],
        multi_threaded: bool,
    ) -> Option<Vec<u64>> {
        let this = &*self;
        Some(if multi_threaded {
            ids.par_iter()
                .zip(types.par_iter())
                .zip(visitors.par_iter_mut())
                .map(|((id, tpe), visit)| this.visit_signal_prefix(*id, *tpe, visit))
                .collect()
        } else {
            ids.iter()
                .zip(types.iter())
                .zip(visitors.iter_mut())
                .map(|((id, tpe), visit)| this.visit_signal_prefix(*id, *tpe, visit))
                .collect()
        })
    }

    fn print_statistics(&self) {
        println!("[wavemem] size in memory: {} bytes", self.size_in_memory());
        self.print_statistics();
    }
}

impl Reader {
    pub fn size_in_memory(&self) -> usize {
        let base = std::mem::size_of::<Self>();
        let blocks = self
            .blocks
            .iter()
            .map(|b| b.size_in_memory())
            .sum::<usize>();
        base + blocks
    }

    pub fn print_statistics(&self) {
        println!("[wavemem] there are {} blocks.", self.blocks.len());
        let max_time_table_size = self
            .blocks
            .iter()
            .map(|b| b.time_table.len())
            .max()
            .unwrap();
        println!("[wavemem] the maximum time table size is {max_time_table_size}.");
        let total_data_size = self
            .blocks
            .iter()
            .map(|b| b.data.len() * std::mem::size_of::<u8>())
            .sum::<usize>();
        let total_offset_size = self
            .blocks
            .iter()
            .map(|b| b.offsets.len() * std::mem::size_of::<SignalDataOffset>())
            .sum::<usize>();
        let total_time_table_size = self
            .blocks
            .iter()
            .map(|b| b.time_table.len() * std::mem::size_of::<Time>())
            .sum::<usize>();
        println!("[wavemem] data across all blocks takes up {total_data_size} bytes.");
        println!("[wavemem] offsets across all blocks take up {total_offset_size} bytes.");
        println!(
            "[wavemem] time table data across all blocks takes up {total_time_table_size} bytes."
        );
    }

    fn collect_signal_meta_data(&self, id: SignalRef) -> SignalMetaData<'_> {
        // collect meta data for all blocks
        let mut time_idx_offset = 0;
        let mut block_meta_data = Vec::with_capacity(self.blocks.len());
        let mut prev_end_time = None;
        for block in &self.blocks {
            // adjust time index offset to take overlapping blocks into account
            let end_time = *block.time_table.last().unwrap();
            debug_assert_eq!(*block.time_table.first().unwrap(), block.start_time);
            if let Some(prev_end_time) = prev_end_time
                && block.start_time == prev_end_time
            {
                time_idx_offset -= 1;
            }
            prev_end_time = Some(end_time);

            // add block meta data
            if let Some((start_ii, data_len)) = block.get_offset_and_length(id) {
                let end_ii = start_ii + data_len;
                // uncompress if necessary
                let mut reader = std::io::Cursor::new(&block.data[start_ii..end_ii]);
                let meta_data_raw = leb128::read::unsigned(&mut reader).unwrap();
                let meta_data = SignalEncodingMetaData::decode(meta_data_raw);
                let data_block = &block.data[start_ii + reader.position() as usize..end_ii];
                block_meta_data.push((time_idx_offset, data_block, meta_data));
            }

            // increment offset for next block
            time_idx_offset += block.time_table.len() as u32;
        }

        // summarize max states accress all blocks
        let max_states = block_meta_data
            .iter()
            .map(|b| b.2.max_states)
            .reduce(States::join)
            .unwrap_or(States::Nine);
        SignalMetaData {
            max_states,
            blocks: block_meta_data,
        }
    }

    fn load_signal(&self, id: SignalRef, tpe: SignalEncoding) -> Signal {
        let meta = self.collect_signal_meta_data(id);
        load_compressed_signal(meta, id, tpe)
    }

    /// (rocescope) The changes `load_signal` gives, handed to `visit` in
    /// time order until it refuses one; returns how many it was not given.
    /// The blocks are in time order: each is decoded alone into a reused
    /// buffer beside the last change before it (a value that repeats the
    /// one before is no change, as in a whole load), the next one decoded
    /// while this one is visited; after the refused change the blocks are
    /// only counted.
    fn visit_signal_prefix(
        &self,
        id: SignalRef,
        tpe: SignalEncoding,
        visit: &mut ChangeVisitor<'_>,
    ) -> u64 {
        let meta = self.collect_signal_meta_data(id);
        let max_states = meta.max_states;
        let mut blocks = meta.blocks.into_iter();
        let mut buf = Vec::new();
        let mut current = Decoded::default();
        let mut next = Decoded::default();
        match blocks.next() {
            Some(first) => {
                let none = Decoded::default();
                decode_after(first, &none, tpe, max_states, id, &mut current, &mut buf);
            }
            None => return 0,
        }
        // Changes at the front of `current` already visited: the last one
        // of the block before, which the block's first must differ from.
        let mut carried = 0;
        loop {
            let last = current.last_only(tpe, max_states);
            let next_carried = last.len();
            let signal = std::mem::take(&mut current).into_signal(id, tpe, max_states);
            let (has_next, given) = rayon::join(
                || match blocks.next() {
                    Some(b) => {
                        decode_after(b, &last, tpe, max_states, id, &mut next, &mut buf);
                        true
                    }
                    None => false,
                },
                || {
                    carried
                        + signal
                            .iter_changes()
                            .skip(carried)
                            .take_while(|(idx, value)| visit(*idx, *value))
                            .count()
                },
            );
            let total = signal.time_indices().len();
            current = Decoded::from_signal(signal);
            if given < total {
                let mut rest = (total - given) as u64;
                if has_next {
                    rest += (next.len() - next_carried) as u64;
                    let last = next.last_only(tpe, max_states);
                    rest += count_blocks(blocks.collect(), tpe, max_states, id, &last);
                }
                return rest;
            }
            if !has_next {
                return 0;
            }
            std::mem::swap(&mut current, &mut next);
            carried = next_carried;
        }
    }
}

pub(crate) fn load_compressed_signal(
    meta: SignalMetaData,
    id: SignalRef,
    tpe: SignalEncoding,
) -> Signal {
    // rocescope: the loop's body and the signal's making moved into
    // `decode_block` and `Decoded::into_signal`, shared with
    // `Reader::visit_signal_prefix`; unchanged.
    let mut out = Decoded::default();
    for (time_idx_offset, data_block, meta_data) in meta.blocks {
        let data = match meta_data.compression {
            Compression::Lz4(uncompressed_len) => {
                let data = lz4_flex::decompress(data_block, uncompressed_len).unwrap();
                Cow::Owned(data)
            }
            Compression::None => Cow::Borrowed(data_block),
        };
        decode_block(&data, time_idx_offset, tpe, meta.max_states, id, &mut out);
    }
    out.into_signal(id, tpe, meta.max_states)
}

/// (rocescope) The changes in `blocks` after the change `last` holds (if
/// any), counted. Each block is counted alone, in turn on this thread: its
/// changes, its first and its last; its first is no change where it repeats
/// the last before it, as in a whole load.
fn count_blocks(
    blocks: Vec<(u32, &[u8], SignalEncodingMetaData)>,
    tpe: SignalEncoding,
    max_states: States,
    id: SignalRef,
    last: &Decoded,
) -> u64 {
    if tpe == SignalEncoding::BitVector(1) {
        // One byte a change, as `load_fixed_len_signal` stores it.
        let parts: Vec<Option<(u64, u8, u8)>> = blocks
            .iter()
            .scan(Vec::new(), |buf, (_, data_block, meta_data)| {
                Some({
                    let mut data = decompress_block(data_block, meta_data, buf);
                    let mut part: Option<(u64, u8, u8)> = None;
                    while let Ok(raw) = leb128::read::unsigned(&mut data) {
                        let value = Bit::new(((raw as u32) & 0xf) as u8);
                        let byte = u8::from(value) | ((States::from_bit(value) as u8) << 6);
                        match &mut part {
                            None => part = Some((1, byte, byte)),
                            Some((n, _, prev)) => {
                                if *prev != byte {
                                    *n += 1;
                                    *prev = byte;
                                }
                            }
                        }
                    }
                    part
                })
            })
            .collect();
        let mut prev = last.data_bytes.last().copied();
        let mut count = 0u64;
        for (n, first, last) in parts.into_iter().flatten() {
            count += n - u64::from(prev == Some(first));
            prev = Some(last);
        }
        return count;
    }
    let parts: Vec<(u64, Decoded, Decoded)> = blocks
        .iter()
        .scan(
            (Vec::new(), Decoded::default()),
            |(buf, decoded), (time_idx_offset, data_block, meta_data)| {
                decoded.clear();
                let data = decompress_block(data_block, meta_data, buf);
                decode_block(data, *time_idx_offset, tpe, max_states, id, decoded);
                Some((
                    decoded.len() as u64,
                    decoded.first_only(tpe, max_states),
                    decoded.last_only(tpe, max_states),
                ))
            },
        )
        .collect();
    let mut prev = last.last_only(tpe, max_states);
    let mut count = 0u64;
    for (n, first, last) in parts {
        if n > 0 {
            count += n - u64::from(prev.repeated_by(&first, tpe));
            prev = last;
        }
    }
    count
}

/// (rocescope) `block` decoded into `into` beside the last change of
/// `last` (if any), which a change must differ from to be one.
fn decode_after(
    block: (u32, &[u8], SignalEncodingMetaData),
    last: &Decoded,
    tpe: SignalEncoding,
    max_states: States,
    id: SignalRef,
    into: &mut Decoded,
    buf: &mut Vec<u8>,
) {
    let (time_idx_offset, data_block, meta_data) = block;
    into.clear();
    into.time_indices.extend_from_slice(&last.time_indices);
    into.data_bytes.extend_from_slice(&last.data_bytes);
    into.strings.extend_from_slice(&last.strings);
    let data = decompress_block(data_block, &meta_data, buf);
    decode_block(data, time_idx_offset, tpe, max_states, id, into);
}

/// (rocescope) A block's data, decompressed into `buf` when it is
/// compressed.
fn decompress_block<'a>(
    data_block: &'a [u8],
    meta_data: &SignalEncodingMetaData,
    buf: &'a mut Vec<u8>,
) -> &'a [u8] {
    match meta_data.compression {
        Compression::Lz4(uncompressed_len) => {
            buf.resize(uncompressed_len, 0);
            let n = lz4_flex::block::decompress_into(data_block, buf).unwrap();
            &buf[..n]
        }
        Compression::None => data_block,
    }
}

/// (rocescope) One block's changes decoded onto `out`: the body of
/// `load_compressed_signal`'s loop, unchanged.
fn decode_block(
    data: &[u8],
    time_idx_offset: u32,
    tpe: SignalEncoding,
    max_states: States,
    id: SignalRef,
    out: &mut Decoded,
) {
    let mut data = data;
    match tpe {
        SignalEncoding::String => {
            load_signal_strings(
                &mut data,
                time_idx_offset,
                &mut out.time_indices,
                &mut out.strings,
            );
        }
        SignalEncoding::BitVector(0) => {
            load_events(&mut data, time_idx_offset, &mut out.time_indices);
        }
        SignalEncoding::BitVector(signal_len) => {
            load_fixed_len_signal(
                &mut data,
                time_idx_offset,
                signal_len,
                max_states,
                &mut out.time_indices,
                &mut out.data_bytes,
                id,
            );
        }
        SignalEncoding::Real => {
            load_reals(
                &mut data,
                time_idx_offset,
                &mut out.time_indices,
                &mut out.data_bytes,
            );
        }
    }
}

/// (rocescope) A signal's changes while a load decodes them.
#[derive(Default)]
struct Decoded {
    time_indices: Vec<TimeTableIdx>,
    data_bytes: Vec<u8>,
    strings: Vec<String>,
}

impl Decoded {
    fn len(&self) -> usize {
        self.time_indices.len()
    }

    /// Bytes of `data_bytes` per change.
    fn bytes_per_entry(tpe: SignalEncoding, max_states: States) -> usize {
        match tpe {
            SignalEncoding::String | SignalEncoding::BitVector(0) => 0,
            SignalEncoding::BitVector(width) => {
                let (len, has_meta) = get_len_and_meta(max_states, width);
                get_bytes_per_entry(len, has_meta)
            }
            SignalEncoding::Real => 8,
        }
    }

    fn from_signal(signal: Signal) -> Self {
        let (time_indices, data_bytes, strings) = signal.into_vecs();
        Decoded {
            time_indices,
            data_bytes,
            strings,
        }
    }

    fn clear(&mut self) {
        self.time_indices.clear();
        self.data_bytes.clear();
        self.strings.clear();
    }

    /// The changes from `i` on, alone (none if there is none).
    fn from_index(&self, i: usize, tpe: SignalEncoding, max_states: States) -> Self {
        let i = i.min(self.len());
        let bytes = Self::bytes_per_entry(tpe, max_states);
        Decoded {
            time_indices: self.time_indices[i..].to_vec(),
            data_bytes: self.data_bytes[(i * bytes).min(self.data_bytes.len())..].to_vec(),
            strings: self.strings[i.min(self.strings.len())..].to_vec(),
        }
    }

    /// The first change alone (none if there is none).
    fn first_only(&self, tpe: SignalEncoding, max_states: States) -> Self {
        let mut first = Decoded::default();
        if self.len() > 0 {
            let bytes = Self::bytes_per_entry(tpe, max_states);
            first.time_indices.push(self.time_indices[0]);
            first.data_bytes = self.data_bytes[..bytes.min(self.data_bytes.len())].to_vec();
            first.strings = self.strings.iter().take(1).cloned().collect();
        }
        first
    }

    /// The last change alone (none if there is none).
    fn last_only(&self, tpe: SignalEncoding, max_states: States) -> Self {
        self.from_index(self.len().saturating_sub(1), tpe, max_states)
    }

    /// Whether `next`'s one change repeats this one's value, so that a load
    /// would not count it (events always count).
    fn repeated_by(&self, next: &Decoded, tpe: SignalEncoding) -> bool {
        self.len() == 1
            && next.len() == 1
            && tpe != SignalEncoding::BitVector(0)
            && self.data_bytes == next.data_bytes
            && self.strings == next.strings
    }

    fn into_signal(self, id: SignalRef, tpe: SignalEncoding, max_states: States) -> Signal {
        let Decoded {
            time_indices,
            data_bytes,
            strings,
        } = self;
        match tpe {
            SignalEncoding::String => {
                debug_assert!(data_bytes.is_empty());
                Signal::new_var_len(id, time_indices, strings)
            }
            SignalEncoding::BitVector(0) => {
                debug_assert!(data_bytes.is_empty());
                debug_assert!(strings.is_empty());
                Signal::new_fixed_len(id, time_indices, FixedWidthEncoding::Event, 0, data_bytes)
            }
            SignalEncoding::BitVector(width) => {
                debug_assert!(strings.is_empty());
                let (bytes, meta_byte) = get_len_and_meta(max_states, width);
                let encoding = FixedWidthEncoding::BitVector {
                    max_states,
                    width,
                    meta_byte,
                };
                Signal::new_fixed_len(
                    id,
                    time_indices,
                    encoding,
                    get_bytes_per_entry(bytes, meta_byte) as u32,
                    data_bytes,
                )
            }
            SignalEncoding::Real => {
                assert!(strings.is_empty());
                Signal::new_fixed_len(id, time_indices, FixedWidthEncoding::Real, 8, data_bytes)
            }
        }
    }
}

/// Data about a single signal inside a Reader.
/// Only used internally by `collect_signal_meta_data`
pub(crate) struct SignalMetaData<'a> {
    pub(crate) max_states: States,
    /// For every block that contains the signal: time_idx_offset, data and meta-data
    pub(crate) blocks: Vec<(u32, &'a [u8], SignalEncodingMetaData)>,
}

/// Events do not have data, only leb128 encoded time idx deltas.
#[inline]
fn load_events(data: &mut impl Read, time_idx_offset: u32, time_indices: &mut Vec<TimeTableIdx>) {
    let mut last_time_idx = time_idx_offset;
    while let Ok(value) = leb128::read::unsigned(data) {
        let time_idx_delta = value as u32;
        last_time_idx += time_idx_delta;
        time_indices.push(last_time_idx)
    }
}

#[inline]
fn load_reals(
    data: &mut impl Read,
    time_idx_offset: u32,
    time_indices: &mut Vec<TimeTableIdx>,
    out: &mut Vec<u8>,
) {
    let mut last_time_idx = time_idx_offset;

    while let Ok(value) = leb128::read::unsigned(data) {
        let time_idx_delta = value as u32;
        last_time_idx += time_idx_delta;

        // read 8 bytes of reald
        let mut buf = vec![0u8; 8];
        data.read_exact(buf.as_mut()).unwrap();

        // check to see if the value actually changed
        let changed = if out.is_empty() {
            true
        } else {
            out[out.len() - 8..] != buf
        };
        if changed {
            out.append(&mut buf);
            time_indices.push(last_time_idx)
        }
    }
}

#[inline]
fn load_fixed_len_signal(
    data: &mut impl Read,
    time_idx_offset: u32,
    bits: u32,
    signal_states: States,
    time_indices: &mut Vec<TimeTableIdx>,
    out: &mut Vec<u8>,
    _signal_id: SignalRef, // for debugging
) {
    let mut last_time_idx = time_idx_offset;
    let (len, has_meta) = get_len_and_meta(signal_states, bits);
    let bytes_per_entry = get_bytes_per_entry(len, has_meta);

    while let Ok(value) = leb128::read::unsigned(data) {
        let time_idx_delta_raw = value as u32;
        // now the decoding depends on the size and whether it is two state
        let time_idx_delta = match bits {
            1 => {
                let value = Bit::new((time_idx_delta_raw & 0xf) as u8);
                // unwrap cannot fail because of prior masking
                let states = States::from_bit(value);
                let meta_data = (states as u8) << 6;
                out.push(u8::from(value) | meta_data);
                // time delta is encoded together with the value
                time_idx_delta_raw >> 4
            }
            other_len => {
                // the lower 2 bits of the time idx delta encode how many state bits are encoded in the local signal
                let local_encoding =
                    States::try_from_primitive((time_idx_delta_raw & 0x3) as u8).unwrap();
                let num_bytes = local_encoding.bytes_required(other_len);
                let (local_len, local_has_meta) = get_len_and_meta(local_encoding, bits);

                // append data (rocescope: read straight onto `out`, not into
                // a buffer allocated for each change and copied)
                let meta_data = (local_encoding as u8) << 6;
                if local_len == len && local_has_meta == has_meta {
                    // same meta-data location and length as the maximum
                    if has_meta {
                        out.push(meta_data);
                        read_onto(data, num_bytes, out);
                    } else {
                        let first = out.len();
                        read_onto(data, num_bytes, out);
                        if meta_data > 0 {
                            debug_assert_eq!(
                                out[first] & 0x3f,
                                out[first],
                                "unexpected data in upper 2-bits of buf[0]={:x} {_signal_id:?} {len} {signal_states:?}",
                                out[first]
                            );
                        }
                        out[first] |= meta_data;
                    }
                } else {
                    // smaller encoding than the maximum
                    out.push(meta_data);
                    if has_meta {
                        push_zeros(out, len - local_len);
                    } else {
                        push_zeros(out, len - local_len - 1);
                    }
                    read_onto(data, num_bytes, out);
                }
                //
                time_idx_delta_raw >> 2
            }
        };
        // see if there actually was a change and revert if there was not
        last_time_idx += time_idx_delta;
        if check_if_changed_and_truncate(bytes_per_entry, out) {
            time_indices.push(last_time_idx);
        }
    }

    debug_assert_eq!(out.len(), time_indices.len() * bytes_per_entry);
}

/// (rocescope) `n` bytes of `data` appended to `out`.
#[inline]
fn read_onto(data: &mut impl Read, n: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + n, 0);
    data.read_exact(&mut out[start..]).unwrap();
}

/// (rocescope) Whether two entries of one length differ: the first 8
/// bytes compared as one word before the rest, and short ones in place (a
/// call to `memcmp` for each change: a one-bit signal loads with 14-19 %
/// less CPU).
#[inline]
fn entries_differ(a: &[u8], b: &[u8]) -> bool {
    if a.len() >= 8 {
        let word = |s: &[u8]| u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
        word(a) != word(b) || a[8..] != b[8..]
    } else {
        a.iter().zip(b).any(|(x, y)| x != y)
    }
}

pub fn check_if_changed_and_truncate(bytes_per_entry: usize, out: &mut Vec<u8>) -> bool {
    let changed = if out.len() < 2 * bytes_per_entry {
        true
    } else {
        let prev_start = out.len() - 2 * bytes_per_entry;
        let new_start = out.len() - bytes_per_entry;
        entries_differ(&out[prev_start..new_start], &out[new_start..])
    };

    if !changed {
        // remove new value
        out.truncate(out.len() - bytes_per_entry);
    }

    changed
}

#[inline]
fn load_signal_strings(
    data: &mut impl Read,
    time_idx_offset: u32,
    time_indices: &mut Vec<TimeTableIdx>,
    out: &mut Vec<String>,
) {
    let mut last_time_idx = time_idx_offset;

    while let Ok(value) = leb128::read::unsigned(data) {
        let time_idx_delta = value as u32;
        last_time_idx += time_idx_delta;

        // read variable length string
        let len = leb128::read::unsigned(data).unwrap() as usize;
        let mut buf = vec![0u8; len];
        data.read_exact(&mut buf).unwrap();
        let str_value = String::from_utf8_lossy(&buf).to_string();

        // check to see if the value actually changed
        let changed = out.last() != Some(&str_value);
        if changed {
            out.push(str_value);
            time_indices.push(last_time_idx);
        }
    }
}

/// A block that contains all value changes in a certain time segment.
/// Note that while in FST blocks can be skipped, here we only use blocks
/// in order to combine data from different threads and to compress partial data.
#[derive(Clone)]
struct Block {
    start_time: Time,
    time_table: Vec<Time>,
    /// Offsets of (potentially compressed) signal data.
    offsets: Vec<Option<SignalDataOffset>>,
    /// Data for all signals in block
    data: Vec<u8>,
}

impl Block {
    fn size_in_memory(&self) -> usize {
        let base = std::mem::size_of::<Self>();
        let time = self.time_table.len() * std::mem::size_of::<Time>();
        let offsets = self.offsets.len() * std::mem::size_of::<SignalDataOffset>();
        let data = self.data.len() * std::mem::size_of::<u8>();
        base + time + offsets + data
    }

    fn end_time(&self) -> Time {
        *self.time_table.last().unwrap()
    }

    fn get_offset_and_length(&self, id: SignalRef) -> Option<(usize, usize)> {
        let offset = {
            let offset = self.offsets[id.index()]?;
            offset.get_index()
        };
        // find the next offset or take the data len
        let next_offset = self
            .offsets
            .iter()
            .skip(id.index() + 1)
            .find(|o| o.is_some())
            .map_or(self.data.len(), |o| o.unwrap().get_index());
        Some((offset, next_offset - offset))
    }
}

/// Position of first byte of a signal in the block data.
#[derive(Debug, Clone, Copy)]
struct SignalDataOffset(NonZeroU32);

impl SignalDataOffset {
    fn new(index: usize) -> Self {
        SignalDataOffset(NonZeroU32::new((index as u32) + 1).unwrap())
    }
    fn get_index(self) -> usize {
        (self.0.get() - 1) as usize
    }
}

/// Encodes value and time changes into a compressed in-memory representation.
#[derive(Clone)]
pub struct Encoder {
    /// Time table under construction
    time_table: Vec<Time>,
    /// Signals under construction
    signals: Vec<Option<SignalEncoder>>,
    /// Tracks if there has been any new data that would require us to create another block.
    has_new_data: bool,
    /// Tracks if we are skipping a timestep because it came with an invalid time.
    skipping_time_step: bool,
    /// Finished blocks
    blocks: Vec<Block>,
    /// rocescope: the bytes the finished blocks take, and those the open
    /// block's buffers (the signals' and the time table, at their capacity)
    /// take, kept as they change, so that a body pass can be held to a
    /// budget (`held_bytes`).
    blocks_bytes: u64,
    open_bytes: u64,
    /// rocescope: the first time step that went back (from, to), which the
    /// caller makes an error of. (It was a `println!` to the process's
    /// stdout from the body pass's thread, which deadlocked a caller holding
    /// stdout's lock while it waited for the pass.)
    time_went_back: Option<(u64, u64)>,
}

/// Indexes the time table inside a block.
type BlockTimeIdx = u16;

impl Encoder {
    pub fn new(hierarchy: &Hierarchy) -> Self {
        let signals = hierarchy
            .ground_signal_encodings()
            .enumerate()
            .map(|(pos, maybe_enc)| maybe_enc.map(|enc| SignalEncoder::new(enc, pos)))
            .collect();

        Encoder {
            time_table: Vec::default(),
            signals,
            has_new_data: false,
            skipping_time_step: false,
            blocks: Vec::default(),
            blocks_bytes: 0,
            open_bytes: 0,
            time_went_back: None,
        }
    }

    /// rocescope: see `time_went_back`.
    #[inline]
    pub fn time_went_back(&self) -> Option<(u64, u64)> {
        self.time_went_back
    }

    /// rocescope: what this encoder holds: its finished blocks and its open
    /// block's buffers.
    #[inline]
    pub fn held_bytes(&self) -> u64 {
        self.blocks_bytes + self.open_bytes
    }

    pub fn time_change(&mut self, time: u64) {
        // sanity check to make sure that time is increasing
        if let Some(prev_time) = self.time_table.last() {
            match prev_time.cmp(&time) {
                Ordering::Equal => {
                    return; // ignore calls to time_change that do not actually change anything
                }
                Ordering::Greater => {
                    self.time_went_back.get_or_insert((*prev_time, time));
                    self.skipping_time_step = true;
                    return;
                }
                Ordering::Less => {
                    // this is the normal situation where we actually increment the time
                }
            }
        }
        // if we run out of time indices => start a new block
        if self.time_table.len() >= BlockTimeIdx::MAX as usize {
            self.finish_block();
        }
        let capacity = self.time_table.capacity();
        self.time_table.push(time);
        self.open_bytes +=
            ((self.time_table.capacity() - capacity) * std::mem::size_of::<Time>()) as u64;
        self.has_new_data = true;
        self.skipping_time_step = false;
    }

    /// Call with an unaltered VCD value.
    pub fn vcd_value_change(&mut self, id: u64, value: &[u8]) {
        debug_assert!(
            !self.time_table.is_empty(),
            "We need a call to time_change first!"
        );
        if !self.skipping_time_step {
            let time_idx = (self.time_table.len() - 1) as TimeTableIdx;
            let signal = self.signals[id as usize].as_mut().unwrap();
            let capacity = signal.data.capacity();
            signal.add_vcd_change(time_idx, value);
            self.open_bytes += (signal.data.capacity() - capacity) as u64;
            self.has_new_data = true;
        }
    }

    /// Call with a value that is already encoded in our internal format.
    /// This is mostly used by the GHW backend.
    pub fn raw_value_change(&mut self, id: SignalRef, value: &[u8], states: States) {
        debug_assert!(
            !self.time_table.is_empty(),
            "We need a call to time_change first!"
        );
        if !self.skipping_time_step {
            let time_idx = (self.time_table.len() - 1) as TimeTableIdx;
            let signal = &mut self.signals[id.index()].as_mut().unwrap();
            if let SignalEncoding::BitVector(width) = signal.tpe {
                // sometimes we might include some leading bytes that are not necessary
                let required_bytes = states.bytes_required(width);
                debug_assert!(value.len() >= required_bytes);
                let value = &value[(value.len() - required_bytes)..];

                signal.add_n_bit_change(time_idx, BitVecRef::new(states, width, value));
                self.has_new_data = true;
            }
        }
    }

    pub fn real_change(&mut self, id: SignalRef, value: f64) {
        assert!(
            !self.time_table.is_empty(),
            "We need a call to time_change first!"
        );
        if !self.skipping_time_step {
            let time_idx = (self.time_table.len() - 1) as TimeTableIdx;
            self.signals[id.index()]
                .as_mut()
                .unwrap()
                .add_real_change(time_idx, value);
            self.has_new_data = true;
        }
    }

    pub fn finish(mut self) -> (SignalSource, TimeTable) {
        // ensure that we have no open blocks
        self.finish_block();
        // create a new reader with the blocks that we have
        let reader = Reader {
            blocks: self.blocks,
        };
        let time_table = Self::combine_time_tables(&reader.blocks);
        (SignalSource::new(Box::new(reader)), time_table)
    }
    fn combine_time_tables(blocks: &[Block]) -> TimeTable {
        // create a combined time table from all blocks
        let max_len = blocks.iter().map(|b| b.time_table.len()).sum::<usize>();
        let mut table = Vec::with_capacity(max_len);
        let mut prev_end_time = None;
        for block in blocks {
            if let Some(prev_end_time) = prev_end_time {
                let start_time = block.time_table[0];
                debug_assert!(prev_end_time <= start_time);
                if prev_end_time == start_time {
                    // avoid duplicate entries for overlapping time tables
                    table.extend_from_slice(&block.time_table[1..]);
                } else {
                    table.extend_from_slice(&block.time_table);
                }
            } else {
                table.extend_from_slice(&block.time_table);
            }
            prev_end_time = Some(*block.time_table.last().unwrap());
        }
        table
    }

    // appends the contents of the other encoder to this one
    pub fn append(&mut self, mut other: Encoder) {
        // ensure that we have no open blocks
        self.finish_block();
        debug_assert!(!self.blocks.is_empty(), "cannot append to an empty encoder");
        debug_assert_eq!(
            self.time_table.len(),
            1,
            "should have started a new time table"
        );
        // ensure that the other encoder is also done
        other.finish_block();

        // if the other encoder has no blocks, there is nothing for us to do
        if let Some(other_first_block) = other.blocks.first() {
            // make sure the timeline fits
            let us_end_time = self.blocks.last().unwrap().end_time();
            let other_start = other_first_block.start_time;
            debug_assert_eq!(
                other_first_block.start_time,
                other_first_block.time_table[0]
            );
            debug_assert!(
                us_end_time <= other_start,
                "Can only append encoders in chronological order!"
            );
            // append all blocks from the other encoder
            self.blocks.append(&mut other.blocks);
            self.blocks_bytes += other.blocks_bytes;
        }
    }

    fn finish_block(&mut self) {
        if !self.has_new_data {
            return; // nothing to do!
        }
        let signal_count = self.signals.len();
        let mut offsets = Vec::with_capacity(signal_count);
        let mut data: Vec<u8> = Vec::with_capacity(128);
        for signal in &mut self.signals {
            if let Some(signal) = signal {
                if let Some((mut signal_data, is_compressed)) = signal.finish() {
                    let offset = SignalDataOffset::new(data.len());
                    offsets.push(Some(offset));
                    let meta_data = is_compressed.encode();
                    leb128::write::unsigned(&mut data, meta_data).unwrap();
                    data.append(&mut signal_data);
                } else {
                    offsets.push(None);
                }
            } else {
                offsets.push(None)
            }
        }
        let start_time = *self.time_table.first().unwrap();
        // the next block might continue the time step
        let end_time = *self.time_table.last().unwrap();
        let new_time_table = vec![end_time];
        let mut time_table = std::mem::replace(&mut self.time_table, new_time_table);
        time_table.shrink_to_fit();
        offsets.shrink_to_fit();
        data.shrink_to_fit();
        let block = Block {
            start_time,
            time_table,
            offsets,
            data,
        };
        // The signals' buffers were taken into the block, compressed.
        self.blocks_bytes += block.size_in_memory() as u64;
        self.open_bytes = (self.time_table.capacity() * std::mem::size_of::<Time>()) as u64;
        self.blocks.push(block);
        self.has_new_data = false;
    }
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde1", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct SignalEncodingMetaData {
    pub(crate) compression: Compression,
    pub(crate) max_states: States,
}

/// We divide the decompressed size by this number and round up.
/// This is OK, since it will just make us allocate a slightly too larger buffer.
const SIGNAL_DECOMPRESSED_LEN_DIV: u32 = 32;

impl SignalEncodingMetaData {
    fn uncompressed(max_states: States) -> Self {
        SignalEncodingMetaData {
            compression: Compression::None,
            max_states,
        }
    }

    fn compressed(max_states: States, uncompressed_len: usize) -> Self {
        // turn the length into a value that we can actually encode
        let uncompressed_len_approx = (uncompressed_len as u32)
            .div_ceil(SIGNAL_DECOMPRESSED_LEN_DIV)
            * SIGNAL_DECOMPRESSED_LEN_DIV;
        SignalEncodingMetaData {
            compression: Compression::Lz4(uncompressed_len_approx as usize),
            max_states,
        }
    }

    fn decode(data: u64) -> Self {
        let max_states = States::try_from_primitive((data & 3) as u8).unwrap();
        let is_compressed = (data >> 2) & 1 == 1;
        let compression = if is_compressed {
            let decompressed_len_bits = ((data >> 3) & u64::from(u32::MAX)) as u32;
            let decompressed_len = decompressed_len_bits * SIGNAL_DECOMPRESSED_LEN_DIV;
            Compression::Lz4(decompressed_len as usize)
        } else {
            Compression::None
        };
        SignalEncodingMetaData {
            compression,
            max_states,
        }
    }
    fn encode(&self) -> u64 {
        match &self.compression {
            Compression::Lz4(decompressed_len) => {
                let decompressed_len_bits =
                    ((*decompressed_len) as u32).div_ceil(SIGNAL_DECOMPRESSED_LEN_DIV);

                (u64::from(decompressed_len_bits) << 3) | (1 << 2) | (self.max_states as u64)
            }
            Compression::None => self.max_states as u64,
        }
    }
}

/// Encodes changes for a single signal.
#[derive(Debug, Clone)]
struct SignalEncoder {
    data: Vec<u8>,
    tpe: SignalEncoding,
    prev_time_idx: TimeTableIdx,
    max_states: States,
    /// Same as the index of this encoder in a Vec<_>. Used for debugging purposes.
    #[allow(unused)]
    signal_idx: u32,
}

impl SignalEncoder {
    fn new(tpe: SignalEncoding, pos: usize) -> Self {
        SignalEncoder {
            data: Vec::default(),
            tpe,
            prev_time_idx: 0,
            max_states: States::Two, // we start out assuming we are dealing with a two state signal
            signal_idx: pos as u32,
        }
    }
}

/// Minimum number of bytes for a signal to warrant an attempt at LZ4 compression.
const MIN_SIZE_TO_COMPRESS: usize = 32;
/// Flag to turn off compression.
const SKIP_COMPRESSION: bool = false;

impl SignalEncoder {
    /// Adds a 2, 4 or 9-value change that has already been converted into our internal format.
    fn add_n_bit_change(&mut self, time_index: TimeTableIdx, value: BitVecRef<'_>) {
        let time_idx_delta = time_index - self.prev_time_idx;
        self.max_states = States::join(self.max_states, value.states());
        if let SignalEncoding::BitVector(len) = self.tpe {
            debug_assert_eq!(len, value.width());
        } else {
            unreachable!(
                "Cannot call add_n_bit_change on signal of type: {:?}",
                self.tpe
            );
        }

        if value.width() == 1 {
            let write_value = (u64::from(time_idx_delta) << 4) + u64::from(value.get_bit(0));
            leb128::write::unsigned(&mut self.data, write_value).unwrap();
        } else {
            // we automatically compress the signal to its minimum states encoding
            let min_states = value.find_min_states();

            // write time and meta data
            let time_and_meta = u64::from(time_idx_delta) << 2 | (min_states as u64);
            leb128::write::unsigned(&mut self.data, time_and_meta).unwrap();
            let data_start_index = self.data.len();
            if min_states == value.states() {
                // values are already minimal
                value.append_to_vec(&mut self.data);
            } else {
                // we need to compress the representation
                compress_state_representation(value, min_states, &mut self.data);
            }

            // when debugging: make sure the leading bits are 0
            if cfg!(debug_assertions) {
                debug_assert!(
                    self.data.len() > data_start_index,
                    "No data was added! (value.width={})",
                    value.width()
                );
                let first_byte = self.data[data_start_index];
                let first_byte_mask = min_states.first_byte_mask(value.width());
                debug_assert_eq!(
                    first_byte & first_byte_mask,
                    first_byte,
                    "{first_byte:x} & {first_byte_mask:x} {} {min_states:?}\n{value:?}",
                    value.width()
                );
            }
        }

        // update time index to calculate next delta
        self.prev_time_idx = time_index;
    }

    fn add_real_change(&mut self, time_index: TimeTableIdx, value: f64) {
        let time_idx_delta = time_index - self.prev_time_idx;
        // write var-length time index + fixed little endian float bytes
        leb128::write::unsigned(&mut self.data, u64::from(time_idx_delta)).unwrap();
        self.data.extend_from_slice(&value.to_le_bytes());
        // update time index to calculate next delta
        self.prev_time_idx = time_index;
    }

    fn add_str_change(&mut self, time_index: TimeTableIdx, value: &str) {
        let time_idx_delta = time_index - self.prev_time_idx;

        // string: var-length time index + var-len length + content
        leb128::write::unsigned(&mut self.data, u64::from(time_idx_delta)).unwrap();
        leb128::write::unsigned(&mut self.data, value.len() as u64).unwrap();
        self.data.extend_from_slice(value.as_bytes());

        // update time index to calculate next delta
        self.prev_time_idx = time_index;
    }

    fn add_event(&mut self, time_index: TimeTableIdx) {
        // just write down the time idx delta
        let time_idx_delta = time_index - self.prev_time_idx;
        leb128::write::unsigned(&mut self.data, u64::from(time_idx_delta)).unwrap();

        // update time index to calculate next delta
        self.prev_time_idx = time_index;
    }

    /// Adds a change from a VCD string.
    fn add_vcd_change(&mut self, time_index: TimeTableIdx, value: &[u8]) {
        let time_idx_delta = time_index - self.prev_time_idx;
        match self.tpe {
            SignalEncoding::BitVector(0) => {
                debug_assert!(
                    value.len() <= 1,
                    "event changes carry no value, or a 1-bit value"
                );
                // just write down the time idx delta
                leb128::write::unsigned(&mut self.data, u64::from(time_idx_delta)).unwrap();
            }
            SignalEncoding::BitVector(len) => {
                let (data, states) = decode_vcd_bit_vec_change(len, value);
                self.max_states = States::join(self.max_states, states);

                match data {
                    VcdBitVecChange::SingleBit(bit_value) => {
                        let write_value = (u64::from(time_idx_delta) << 4) + u64::from(bit_value);
                        leb128::write::unsigned(&mut self.data, write_value).unwrap();
                    }
                    VcdBitVecChange::MultiBit(data_to_write) => {
                        // write time delta + num-states meta-data
                        let time_and_meta = u64::from(time_idx_delta) << 2 | (states as u64);
                        leb128::write::unsigned(&mut self.data, time_and_meta).unwrap();
                        write_n_state_from_ascii(
                            states,
                            &data_to_write,
                            |data| self.data.push(data),
                            None,
                        );
                    }
                }
            }
            SignalEncoding::String => {
                assert!(
                    matches!(value[0], b's' | b'S'),
                    "expected a string, not {}",
                    String::from_utf8_lossy(value)
                );
                // string: var-length time index + var-len length + content
                leb128::write::unsigned(&mut self.data, u64::from(time_idx_delta)).unwrap();
                leb128::write::unsigned(&mut self.data, (value.len() - 1) as u64).unwrap();
                self.data.extend_from_slice(&value[1..]);
            }
            SignalEncoding::Real => {
                assert!(
                    matches!(value[0], b'r' | b'R'),
                    "expected a real, not {}",
                    String::from_utf8_lossy(value)
                );
                // parse float
                let float_value: Real = std::str::from_utf8(&value[1..])
                    .unwrap()
                    .parse::<Real>()
                    .unwrap();
                // write var-length time index + fixed little endian float bytes
                leb128::write::unsigned(&mut self.data, u64::from(time_idx_delta)).unwrap();
                self.data.extend_from_slice(&float_value.to_le_bytes());
            }
        }
        self.prev_time_idx = time_index;
    }

    /// generic value change
    fn add_value_change(&mut self, time_index: TimeTableIdx, value: SignalValueRef) {
        match value {
            SignalValueRef::Event => self.add_event(time_index),
            SignalValueRef::BitVec(data) => self.add_n_bit_change(time_index, data),
            SignalValueRef::String(data) => self.add_str_change(time_index, data),
            SignalValueRef::Real(data) => self.add_real_change(time_index, data),
        }
    }

    /// returns a compressed signal representation
    fn finish(&mut self) -> Option<(Vec<u8>, SignalEncodingMetaData)> {
        // reset time index for the next block
        self.prev_time_idx = 0;

        // no updates
        if self.data.is_empty() {
            return None;
        }
        // replace data, the actual meta data stays the same
        let data = std::mem::take(&mut self.data);

        // is there so little data that compression does not make sense?
        if data.len() < MIN_SIZE_TO_COMPRESS || SKIP_COMPRESSION {
            return Some((data, SignalEncodingMetaData::uncompressed(self.max_states)));
        }
        // attempt a compression
        let compressed = lz4_flex::compress(&data);
        if (compressed.len() + 1) >= data.len() {
            Some((data, SignalEncodingMetaData::uncompressed(self.max_states)))
        } else {
            Some((
                compressed,
                SignalEncodingMetaData::compressed(self.max_states, data.len()),
            ))
        }
    }
}

/// Compress a Signal by replaying all changes on our SignalEncoder.
pub(crate) fn compress_signal(signal: &Signal) -> Option<(Vec<u8>, SignalEncodingMetaData)> {
    let mut enc = SignalEncoder::new(signal.signal_encoding(), signal.signal_ref().index());
    for (time, value) in signal.iter_changes() {
        enc.add_value_change(time, value);
    }
    enc.finish()
}

/// Compresses a 4-state value into a 2-state value or a 9-state into a 4- or 2-state value.
/// This is only possible, if each bit fits into the smaller state representation.
fn compress_state_representation(value: BitVecRef, out_states: States, out: &mut Vec<u8>) {
    debug_assert!(value.states().bits_in_a_byte() < out_states.bits_in_a_byte());
    let mut working_byte = 0u8;
    for (bit, bit_pos) in value.iter_msb_to_lsb().zip((0..value.width()).rev()) {
        debug_assert!(
            u8::from(bit) <= out_states.mask(),
            "{bit:?} does not fit into {out_states:?}"
        );
        working_byte = (working_byte << out_states.bits()) + u8::from(bit);
        if bit_pos % out_states.bits_in_a_byte() == 0 {
            out.push(working_byte);
            working_byte = 0;
        }
    }
}

#[inline]
pub fn write_n_state_from_ascii(
    states: States,
    value: &[u8],
    mut data_push: impl FnMut(u8),
    meta_data: Option<u8>,
) {
    let states_bits = states.bits();
    debug_assert!(states_bits == 1 || states_bits == 2 || states_bits == 4);
    let bits = value.len() as u32 * states_bits;
    let bit_values = value.iter().map(|b| bit_char_to_num(*b).unwrap());
    let mut working_byte = 0u8;
    let mut first_push = true;
    for (ii, value) in bit_values.enumerate() {
        let bit_id = bits - (ii as u32 * states_bits) - states_bits;
        working_byte = (working_byte << states_bits) + u8::from(value);
        // Is there old data to push?
        // we use the bit_id here instead of just testing ii % bits_in_a_byte == 0
        // because for e.g. a 7-bit signal, the push needs to happen after 3 iterations!
        if bit_id.is_multiple_of(8) {
            // this allows us to add some meta-data to the first byte.
            if let Some(meta_data) = meta_data {
                debug_assert_eq!(meta_data & (0b11 << 6), meta_data);
                if first_push {
                    first_push = false;
                    working_byte |= meta_data;
                }
            }
            data_push(working_byte);
            working_byte = 0;
        }
    }
}

/// Allows construction of a [[SignalSource]]
/// Note: this struct wraps a more powerful internal version in order to provide a simpler API.
pub struct PublicEncoder {
    e: Encoder,
}

impl PublicEncoder {
    pub fn new(h: &Hierarchy) -> Self {
        let e = Encoder::new(h);
        Self { e }
    }

    pub fn time_change(&mut self, time: u64) {
        self.e.time_change(time);
    }

    pub fn vcd_value_change(&mut self, signal: SignalRef, value: &[u8]) {
        self.e.vcd_value_change(signal.index() as u64, value);
    }

    pub fn snapshot(&self) -> (SignalSource, TimeTable) {
        let snapshot = self.e.clone();
        snapshot.finish()
    }

    pub fn finish(self) -> (SignalSource, TimeTable) {
        self.e.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_meta_data_encoding() {
        do_test_meta_data_round_trip(SignalEncodingMetaData::uncompressed(States::Two));
        do_test_meta_data_round_trip(SignalEncodingMetaData::uncompressed(States::Four));
        do_test_meta_data_round_trip(SignalEncodingMetaData::uncompressed(States::Nine));
        do_test_meta_data_round_trip(SignalEncodingMetaData::compressed(States::Two, 12345));
        do_test_meta_data_round_trip(SignalEncodingMetaData::compressed(States::Four, 12345));
        do_test_meta_data_round_trip(SignalEncodingMetaData::compressed(States::Nine, 12345));
    }

    fn do_test_meta_data_round_trip(data: SignalEncodingMetaData) {
        let encoded = data.encode();
        let decoded = SignalEncodingMetaData::decode(encoded);
        assert_eq!(data, decoded);
        assert_eq!(encoded, decoded.encode())
    }

    #[test]
    fn test_try_write_4_state() {
        // write all ones
        do_test_try_write_4_state(b"1111".as_slice(), Some([0b01010101].as_slice()), true);
        do_test_try_write_4_state(
            b"11111".as_slice(),
            Some([0b01, 0b01010101].as_slice()),
            true,
        );
        do_test_try_write_4_state(
            b"111111".as_slice(),
            Some([0b0101, 0b01010101].as_slice()),
            true,
        );
        do_test_try_write_4_state(
            b"111111".as_slice(),
            Some([0b0101, 0b01010101].as_slice()),
            true,
        );
        do_test_try_write_4_state(
            b"1111111".as_slice(),
            Some([0b010101, 0b01010101].as_slice()),
            true,
        );
        do_test_try_write_4_state(
            b"11111111".as_slice(),
            Some([0b01010101, 0b01010101].as_slice()),
            true,
        );
        // write some zeros, including leading zeros
        do_test_try_write_4_state(
            b"011111111".as_slice(),
            Some([0, 0b01010101, 0b01010101].as_slice()),
            true,
        );
        do_test_try_write_4_state(
            b"1011001".as_slice(),
            Some([0b010001, 0b01000001].as_slice()),
            true,
        );
        // write some X/Z
        do_test_try_write_4_state(b"xz01".as_slice(), Some([0b10110001].as_slice()), false);

        // write a long value
        do_test_try_write_4_state(
            b"000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001100010000001110110011".as_slice(),
           Some([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0b0101, 0b01, 0, 0b0101, 0b01000101, 0b0101].as_slice()),
           true,
        );
    }

    fn do_test_try_write_4_state(value: &[u8], expected: Option<&[u8]>, is_two_state: bool) {
        let mut out = vec![5u8, 7u8];
        let out_starting_len = out.len();
        let identified_state = States::from_ascii(value).unwrap();
        if is_two_state {
            assert_eq!(identified_state, States::Two);
        }
        write_n_state_from_ascii(States::Four, value, |data| out.push(data), None);
        match expected {
            None => {}
            Some(expect) => {
                assert_eq!(&out[out_starting_len..], expect);
            }
        }
    }

    use proptest::prelude::*;

    fn convert_to_bits(states: States, chars: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_n_state_from_ascii(states, chars.as_bytes(), |data| out.push(data), None);
        out
    }

    fn do_test_compress(value: String, max_states: States) {
        let min_states = States::from_ascii(value.as_bytes()).unwrap();
        let bits = value.len() as u32;
        // convert string to bit vector
        let max_value_bytes = convert_to_bits(max_states, &value);
        let max_value = BitVecRef::new(max_states, bits, &max_value_bytes);
        // compress
        let mut out = Vec::new();
        compress_state_representation(max_value, min_states, &mut out);
        // check
        let direct_conversion = convert_to_bits(min_states, &value);
        assert_eq!(
            direct_conversion, out,
            "{value} - write_n_states -> {max_value:?} - compress -> {out:?} != {direct_conversion:?}"
        );
    }

    proptest! {
        #[test]
        fn compress_from_nine_state(value in "[01xz]{0,127}") {
            do_test_compress(value, States::Nine);
        }

        #[test]
        fn compress_from_four_state(value in "[01]{0,127}") {
            do_test_compress(value, States::Four);
        }
    }
}
