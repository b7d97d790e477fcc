//! Conversation interning: (source address, destination address, DestQP);
//! native IB packets without a GRH by their LIDs.
//!
//! A RoCE flow is named by its IP pair and destination QP, never by the UDP
//! source port (load-balancing entropy). Both directions of an RC QP are
//! separate conversations here; the RC analysis pairs them.

use rocescope_decoders::Endpoint;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A one-direction RoCE flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvKey {
    /// Source address (IPv4 mapped into IPv6, or the RoCEv1 source GID).
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// 24-bit destination QP.
    pub dest_qp: u32,
}

impl ConvKey {
    /// The source as people write it (IPv4, IPv6 or GID, `LID 0x0001`).
    pub fn src_addr(&self) -> Endpoint {
        Endpoint(self.src)
    }
    pub fn dst_addr(&self) -> Endpoint {
        Endpoint(self.dst)
    }
}

/// What the store counts per conversation at ingest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conversation {
    pub key: ConvKey,
    pub first_row: u64,
    pub last_row: u64,
    pub packets: u64,
    /// Sum of on-wire frame lengths.
    pub wire_bytes: u64,
}

/// A word-at-a-time multiplicative hash (the rustc "Fx" mix): the keys are
/// short and trusted, and this sits on the per-packet path.
#[derive(Default)]
pub(crate) struct WordHash(u64);

impl WordHash {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for WordHash {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
}

/// Slots of the direct-mapped cache in front of the hash map: enough that
/// a few dozen busy flows rarely share one (with 64, the 48 flows of the
/// bench's `read-mix` sent 2% more work to the map).
const CACHE_SLOTS: usize = 256;
const _: () = assert!(CACHE_SLOTS.is_power_of_two());

/// A key as five words, so that a cache probe is five word compares.
type KeyWords = [u64; 5];

#[inline]
fn key_words(key: &ConvKey) -> KeyWords {
    let (s0, s1) = key.src.split_at(8);
    let (d0, d1) = key.dst.split_at(8);
    let w = |b: &[u8]| b.try_into().map_or(0, u64::from_ne_bytes);
    [w(s0), w(s1), w(d0), w(d1), u64::from(key.dest_qp)]
}

/// An empty cache slot: id `u32::MAX`, never a real one (ids are dense
/// from 0).
const EMPTY_SLOT: (KeyWords, u32) = ([0; 5], u32::MAX);

/// Whether two keys' words are equal, without branches or a `bcmp` call.
#[inline]
fn same_words(a: &KeyWords, b: &KeyWords) -> bool {
    a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) struct ConvTable {
    pub(crate) list: Vec<Conversation>,
    ids: HashMap<ConvKey, u32, BuildHasherDefault<WordHash>>,
    /// A capture interleaves a handful of busy flows: a small direct-mapped
    /// cache answers most packets with one compare instead of a hash.
    cache: [(KeyWords, u32); CACHE_SLOTS],
}

impl Default for ConvTable {
    fn default() -> Self {
        ConvTable {
            list: Vec::new(),
            ids: HashMap::default(),
            cache: [EMPTY_SLOT; CACHE_SLOTS],
        }
    }
}

/// The cache slot of a key: its DestQP and the low address bytes (the
/// words holding them), mixed. Only where a key is cached depends on it,
/// never its id.
#[inline]
fn cache_slot(w: &KeyWords) -> usize {
    let mix = w[4] ^ (w[1] >> 40) ^ (w[3] >> 29);
    // The product's top bits, as many as the slots need.
    (mix.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (u64::BITS - CACHE_SLOTS.trailing_zeros())) as usize
        % CACHE_SLOTS
}

impl ConvTable {
    /// The table that interned `list` in its order (a saved index's).
    pub(crate) fn from_list(list: Vec<Conversation>) -> ConvTable {
        let ids = list
            .iter()
            .enumerate()
            .map(|(id, c)| (c.key, id as u32))
            .collect();
        ConvTable {
            list,
            ids,
            cache: [EMPTY_SLOT; CACHE_SLOTS],
        }
    }

    /// Intern `key` for a packet at `row` and count it.
    #[inline]
    pub(crate) fn observe(&mut self, key: ConvKey, row: u64, wire_bytes: u32) -> u32 {
        let words = key_words(&key);
        let slot = cache_slot(&words);
        let cached = &self.cache[slot];
        let id = if cached.1 != u32::MAX && same_words(&cached.0, &words) {
            cached.1
        } else {
            let next = self.list.len() as u32;
            let id = *self.ids.entry(key).or_insert(next);
            if id == next {
                self.list.push(Conversation {
                    key,
                    first_row: row,
                    last_row: row,
                    packets: 0,
                    wire_bytes: 0,
                });
            }
            self.cache[slot] = (words, id);
            id
        };
        if let Some(c) = self.list.get_mut(id as usize) {
            c.last_row = row;
            c.packets += 1;
            c.wire_bytes += u64::from(wire_bytes);
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_across_cache_collisions() {
        let key = |i: u32| ConvKey {
            src: [
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0xFF,
                0xFF,
                10,
                0,
                (i >> 8) as u8,
                i as u8,
            ],
            dst: [9; 16],
            dest_qp: i % 7,
        };
        let mut t = ConvTable::default();
        let mut first = Vec::new();
        for i in 0..1000u32 {
            first.push(t.observe(key(i), u64::from(i), 100));
        }
        assert_eq!(first, (0..1000).collect::<Vec<_>>());
        for round in 0..3u64 {
            for i in (0..1000u32).rev() {
                assert_eq!(t.observe(key(i), 1000 + round, 10), i);
            }
        }
        assert_eq!(t.list.len(), 1000);
        assert!(t.list.iter().all(|c| c.packets == 4 && c.wire_bytes == 130));
        assert_eq!(t.list[5].first_row, 5);
        assert_eq!(t.list[5].last_row, 1002);
    }
}
