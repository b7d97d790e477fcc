//! Time series with a bounded number of bins: when a series would exceed
//! its bin budget, the bin width doubles and neighbours merge. Long
//! captures keep a coarse series and short ones a fine one, in the same
//! memory, without knowing the span in advance (live sources).

/// Most bins a series keeps.
pub const MAX_BINS: usize = 2048;
/// Starting bin width.
pub const FIRST_BIN_NS: u64 = 1_000;

/// Sums per time bin of a few quantities.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Series {
    /// Time of bin 0, aligned down to the bin width.
    pub start_ns: u64,
    pub bin_ns: u64,
    pub bins: Vec<Bin>,
}

/// What one bin sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Bin {
    pub packets: u64,
    /// On-wire frame bytes.
    pub wire_bytes: u64,
    /// Payload bytes of new (not re-sent, not duplicate) data.
    pub goodput_bytes: u64,
    pub retransmitted_packets: u64,
    /// Largest number of outstanding packets seen in the bin.
    pub max_outstanding: u32,
    /// Outstanding packets after the bin's last request or response, `None`
    /// if the bin saw neither: the last ACK of a burst brings it to 0, which
    /// `max_outstanding` cannot show.
    pub end_outstanding: Option<u32>,
    /// Packets with ECN CE.
    pub ecn_marked: u32,
    pub cnps: u32,
}

/// The bin a [`Series::bin_at`] lookup returned last and the times it
/// covers (`lo_ns..hi_ns`); empty at first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct BinCursor {
    lo_ns: u64,
    hi_ns: u64,
    index: usize,
}

impl Bin {
    fn merge(&mut self, o: &Bin) {
        self.packets += o.packets;
        self.wire_bytes += o.wire_bytes;
        self.goodput_bytes += o.goodput_bytes;
        self.retransmitted_packets += o.retransmitted_packets;
        self.max_outstanding = self.max_outstanding.max(o.max_outstanding);
        // `o` is the later bin: its last sample is the merged bin's last.
        self.end_outstanding = o.end_outstanding.or(self.end_outstanding);
        self.ecn_marked += o.ecn_marked;
        self.cnps += o.cnps;
    }
}

impl Series {
    /// A series of `s`'s start and bin width with no bins: what a flow keeps
    /// once its series moved into a report.
    pub(crate) fn empty_like(s: &Series) -> Series {
        Series {
            start_ns: s.start_ns,
            bin_ns: s.bin_ns,
            bins: Vec::new(),
        }
    }

    pub fn new(start_ns: u64) -> Series {
        Series {
            start_ns: start_ns - start_ns % FIRST_BIN_NS,
            bin_ns: FIRST_BIN_NS,
            bins: Vec::new(),
        }
    }

    /// The bin holding `ts_ns`, growing or coarsening the series as needed.
    /// Timestamps before the start land in bin 0.
    pub fn bin_mut(&mut self, ts_ns: u64) -> &mut Bin {
        let i = self.bin_index(ts_ns);
        &mut self.bins[i]
    }

    /// Like [`Series::bin_mut`], remembering in `cursor` which times the
    /// returned bin covers: a packet asks for its bin up to three times and
    /// the next packet mostly lands in the same one, so most lookups skip
    /// the division. `cursor` must only ever be used with this series.
    #[inline]
    pub(crate) fn bin_at(&mut self, cursor: &mut BinCursor, ts_ns: u64) -> &mut Bin {
        // The series changes its bins only in `bin_index` (growing never
        // moves a bin's range; coarsening happens only for a time outside
        // the cursor's range), so a hit is still the right bin.
        if ts_ns >= cursor.lo_ns && ts_ns < cursor.hi_ns && cursor.index < self.bins.len() {
            return &mut self.bins[cursor.index];
        }
        let i = self.bin_index(ts_ns);
        let lo = self
            .start_ns
            .saturating_add((i as u64).saturating_mul(self.bin_ns));
        *cursor = BinCursor {
            // Bin 0 also holds every time before the start.
            lo_ns: if i == 0 { 0 } else { lo },
            hi_ns: lo.saturating_add(self.bin_ns),
            index: i,
        };
        &mut self.bins[i]
    }

    /// The bin the last [`Series::bin_at`] through `cursor` returned, for a
    /// packet's later updates of its own bin without the time checks: only
    /// right after that call, for the same time (nothing between changes
    /// the series). An index outside the series looks the bin up instead.
    #[inline]
    pub(crate) fn bin_again(&mut self, cursor: &mut BinCursor, ts_ns: u64) -> &mut Bin {
        if cursor.index < self.bins.len() {
            return &mut self.bins[cursor.index];
        }
        self.bin_at(cursor, ts_ns)
    }

    fn bin_index(&mut self, ts_ns: u64) -> usize {
        let mut i = (ts_ns.saturating_sub(self.start_ns) / self.bin_ns) as usize;
        while i >= MAX_BINS {
            self.coarsen();
            i = (ts_ns.saturating_sub(self.start_ns) / self.bin_ns) as usize;
        }
        if i == self.bins.len() {
            // The common case: time moved into the next bin.
            self.bins.push(Bin::default());
        } else if i > self.bins.len() {
            self.bins.resize(i + 1, Bin::default());
        }
        i
    }

    /// Doubles the bin width, in place: new bin `t` sums old bins
    /// `2t - shift` and `2t + 1 - shift` (`shift` 1 when the old start is
    /// not on the new width), both at or after `t`, so going up from 0
    /// reads every old bin before it is overwritten. No new allocation:
    /// a series with many flows coarsens each of them several times.
    fn coarsen(&mut self) {
        let width = self.bin_ns * 2;
        let start = self.start_ns - self.start_ns % width;
        let shift = ((self.start_ns - start) / self.bin_ns) as usize;
        let len = match self.bins.len() {
            0 => 0,
            n => (n + shift).div_ceil(2),
        };
        // Old bin `j` goes to new bin `(j + shift) / 2`, in order: new bin
        // `t` is written only after every old bin below `2t + 2 - shift`
        // was read (each loop below reads ahead of where it writes).
        if shift == 1 {
            // The old bin 0 alone makes the new bin 0.
            for t in 1..len {
                let mut b = self.bins[2 * t - 1];
                if let Some(later) = self.bins.get(2 * t) {
                    b.merge(later);
                }
                self.bins[t] = b;
            }
        } else {
            for t in 0..len {
                let mut b = self.bins[2 * t];
                if let Some(later) = self.bins.get(2 * t + 1) {
                    b.merge(later);
                }
                self.bins[t] = b;
            }
        }
        self.bins.truncate(len);
        while self.bins.last().is_some_and(|b| *b == Bin::default()) {
            self.bins.pop();
        }
        self.start_ns = start;
        self.bin_ns = width;
    }

    /// Start time of bin `i`.
    pub fn bin_start_ns(&self, i: usize) -> u64 {
        self.start_ns + i as u64 * self.bin_ns
    }

    /// Wire throughput of bin `i` in GB/s (10^9 bytes per second).
    pub fn rate_gbytes_s(&self, i: usize) -> f64 {
        self.bins
            .get(i)
            .map_or(0.0, |b| b.wire_bytes as f64 / self.bin_ns as f64)
    }

    /// The bin holding `ts_ns`, if the series reaches that far.
    pub fn index_at(&self, ts_ns: u64) -> Option<usize> {
        let i = (ts_ns.checked_sub(self.start_ns)? / self.bin_ns) as usize;
        (i < self.bins.len()).then_some(i)
    }

    /// Outstanding packets at the end of bin `i`: the last sample at or
    /// before it (bins without requests or responses carry it on).
    pub fn outstanding_at_end(&self, i: usize) -> u32 {
        self.bins[..(i + 1).min(self.bins.len())]
            .iter()
            .rev()
            .find_map(|b| b.end_outstanding)
            .unwrap_or(0)
    }

    /// Goodput of bin `i` in GB/s.
    pub fn goodput_gbytes_s(&self, i: usize) -> f64 {
        self.bins
            .get(i)
            .map_or(0.0, |b| b.goodput_bytes as f64 / self.bin_ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Right after `bin_at`, `bin_again` is the same bin, also when the
    /// lookup grew or coarsened the series.
    #[test]
    fn the_bin_again_is_the_bin_just_looked_up() {
        let mut s = Series::new(1_000);
        let mut cursor = BinCursor::default();
        for k in 0..50_000u64 {
            let t = 1_000 + k * k * 13;
            s.bin_at(&mut cursor, t).packets += 1;
            s.bin_again(&mut cursor, t).wire_bytes += 1;
            let i = s.bin_index(t);
            assert_eq!(s.bins[i].packets, s.bins[i].wire_bytes, "time {t}");
        }
        assert!(s.bin_ns > FIRST_BIN_NS, "the series coarsened on the way");
    }

    #[test]
    fn coarsens_without_losing_a_byte() {
        let mut s = Series::new(5_500);
        let mut total = 0;
        for k in 0..100_000u64 {
            let t = 5_500 + k * 777;
            s.bin_mut(t).wire_bytes += k;
            total += k;
        }
        assert!(s.bins.len() <= MAX_BINS);
        assert!(s.bin_ns > FIRST_BIN_NS);
        assert_eq!(s.bins.iter().map(|b| b.wire_bytes).sum::<u64>(), total);
        // Every sample lies inside the bin it was counted in.
        let last_t = 5_500 + 99_999 * 777;
        let i = ((last_t - s.start_ns) / s.bin_ns) as usize;
        assert_eq!(i, s.bins.len() - 1);
    }

    #[test]
    fn the_cursor_finds_the_same_bins() {
        let mut plain = Series::new(5_500);
        let mut cached = Series::new(5_500);
        let mut cursor = BinCursor::default();
        // Times before the start, repeats, small steps and long jumps that
        // coarsen the series.
        let mut t = 4_000u64;
        for k in 0..200_000u64 {
            t = match k % 7 {
                0 => t + 13,
                3 => t.saturating_sub(900),
                5 if k % 1_000 == 5 => t + 3_000_000,
                _ => t + 250,
            };
            plain.bin_mut(t).packets += k;
            cached.bin_at(&mut cursor, t).packets += k;
            if k % 97 == 0 {
                assert_eq!(plain, cached, "after t = {t}");
            }
        }
        assert_eq!(plain, cached);
        assert!(plain.bin_ns > FIRST_BIN_NS);
    }

    /// Coarsening in place gives what merging into a new series gives,
    /// with the old start on the new width and off it, with empty bins
    /// inside and at the end, and with the later bin's last outstanding
    /// count winning.
    #[test]
    fn coarsening_in_place_matches_a_fresh_merge() {
        fn by_new_series(s: &Series) -> Series {
            let width = s.bin_ns * 2;
            let start = s.start_ns - s.start_ns % width;
            let mut merged = vec![Bin::default(); s.bins.len() / 2 + 2];
            for (i, b) in s.bins.iter().enumerate() {
                let t = s.start_ns + i as u64 * s.bin_ns;
                merged[((t - start) / width) as usize].merge(b);
            }
            while merged.last().is_some_and(|b| *b == Bin::default()) {
                merged.pop();
            }
            Series {
                start_ns: start,
                bin_ns: width,
                bins: merged,
            }
        }
        let mut rng = rocescope_testkit::Rng(0x2545_f491_4f6c_dd1du64);
        let mut next = move || rng.next_u64();
        for case in 0..400u64 {
            // Empty too: a first time far past the start coarsens an
            // empty series.
            let len = (next() % 40) as usize;
            let bins: Vec<Bin> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 4 == 0 {
                        return Bin::default();
                    }
                    Bin {
                        packets: r % 7,
                        wire_bytes: r % 1_000,
                        goodput_bytes: r % 500,
                        retransmitted_packets: r % 3,
                        max_outstanding: (r >> 8) as u32 % 50,
                        end_outstanding: (r % 3 != 0).then_some((r >> 16) as u32 % 50),
                        ecn_marked: (r >> 24) as u32 % 2,
                        cnps: (r >> 28) as u32 % 2,
                    }
                })
                .collect();
            // Bin 0 on the doubled width (even multiple) or off it (odd).
            let bin_ns = FIRST_BIN_NS << (case % 4);
            let s = Series {
                start_ns: (1_000 + case) * bin_ns,
                bin_ns,
                bins,
            };
            let mut in_place = s.clone();
            in_place.coarsen();
            assert_eq!(in_place, by_new_series(&s), "case {case}");
        }
    }
}
