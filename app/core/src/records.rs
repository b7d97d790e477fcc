//! Non-frame records the views show, kept up to date at each report
//! refresh and cached in the model: the service slots' decisions and the
//! profiler's probes. The TUI and the GUI read the same derivation;
//! neither rescans the store per frame, and a refresh takes only what is
//! new.

use rocescope_replay::Record;
use rocescope_replay::record::SlotDecision;
use rocescope_replay::store::Store;

/// One profiler sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub ts_ns: u64,
    pub cycle: u64,
    pub value: i64,
}

/// One probe's samples, sorted by time.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    pub id: u16,
    pub name: String,
    pub unit: String,
    samples: Trimmed<Sample>,
    pub min: i64,
    pub max: i64,
    /// Clock period derived from the samples (ns per cycle).
    pub ns_per_cycle: Option<f64>,
}

impl Probe {
    /// Its samples, sorted by time.
    pub fn samples(&self) -> &[Sample] {
        self.samples.live()
    }
}

/// A vector whose oldest items go from the front: the room they took is
/// taken back once they are half of it, so that each item is moved at most
/// once on average (a front drain would move them all at every refresh).
#[derive(Debug, Clone)]
struct Trimmed<T> {
    items: Vec<T>,
    start: usize,
}

impl<T> Default for Trimmed<T> {
    fn default() -> Self {
        Trimmed {
            items: Vec::new(),
            start: 0,
        }
    }
}

impl<T> Trimmed<T> {
    fn live(&self) -> &[T] {
        &self.items[self.start..]
    }

    fn push(&mut self, item: T) {
        self.items.push(item);
    }

    /// Lets the `n` oldest go.
    fn drop_front(&mut self, n: usize) {
        self.start = (self.start + n).min(self.items.len());
        if self.start * 2 > self.items.len() {
            self.items.drain(..self.start);
            self.start = 0;
        }
    }

    /// Its live items, to rearrange or filter as a whole.
    fn take(&mut self) -> Vec<T> {
        self.items.drain(..self.start);
        self.start = 0;
        std::mem::take(&mut self.items)
    }

    fn set(&mut self, items: Vec<T>) {
        (self.items, self.start) = (items, 0);
    }
}

/// The time `probes`' samples span: the earliest first sample's and the
/// latest last sample's, 0 for either where there are no samples.
pub fn samples_span_ns(probes: &[Probe]) -> (u64, u64) {
    let times = |pick: fn(&[Sample]) -> Option<&Sample>| {
        probes
            .iter()
            .filter_map(move |p| pick(p.samples()))
            .map(|s| s.ts_ns)
    };
    (
        times(<[Sample]>::first).min().unwrap_or(0),
        times(<[Sample]>::last).max().unwrap_or(0),
    )
}

/// The module the card's counter source gives its probes' definitions.
pub const COUNTER_MODULE: &str = "counters";

/// A counter's rate probe has the counter's id with this bit set.
pub const RATE_PROBE_BIT: u16 = 0x4000;

/// The slots and probes of a store, kept up to date with what is new:
/// each refresh takes only the records the store was given since the last
/// (and drops those a bounded store let go), so that a live session's
/// views cost the same in its first minute and its tenth hour.
///
/// Probes stand in the order they first appear (a definition or a
/// sample), each of the card's counters (running totals, 32-bit wraps
/// already undone by the source) followed by its rate: `NAME /s`, the
/// change per second between two readings. A definition is kept once
/// seen, even after the store lets its record go.
#[derive(Debug, Default, Clone)]
pub struct Derived {
    /// The store's sequence numbers of its oldest record and of the next,
    /// at the last refresh.
    first_seq: u64,
    next_seq: u64,
    slots: Trimmed<SlotDecision>,
    slot_seqs: Trimmed<u64>,
    probes: Vec<Probe>,
    /// Beside each probe (same index).
    kept: Vec<Kept>,
}

/// What a probe's upkeep needs beside it.
#[derive(Debug, Default, Clone)]
struct Kept {
    /// The sequence number of each sample's record (a rate probe: none).
    seqs: Trimmed<u64>,
    /// Named by a definition (else "probe N" until one comes).
    defined: bool,
    /// A counter, its rate probe right after it; or that rate probe.
    counter: bool,
    rate: bool,
    /// No sample was ever sorted before an earlier record's: `seqs` rise.
    in_order: bool,
    /// This refresh: samples held before the new ones, and whether the
    /// samples were rearranged (everything derived worked out again).
    old_len: usize,
    changed: bool,
    unsorted: bool,
}

impl Derived {
    /// The service slots' decisions.
    pub fn slots(&self) -> &[SlotDecision] {
        self.slots.live()
    }

    /// The profiler's probes.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// Takes what the store was given since the last refresh.
    pub fn refresh(&mut self, store: &Store) {
        let after = store.records_after(self.next_seq, |r| {
            matches!(
                r,
                Record::Profiler(_) | Record::ProbeDef(_) | Record::Slot(_)
            )
        });
        if (after.first_seq, after.next_seq) == (self.first_seq, self.next_seq) {
            return;
        }
        if after.next_seq < self.next_seq {
            // Not the store seen before: start over.
            *self = Derived::default();
            return self.refresh(store);
        }
        (self.first_seq, self.next_seq) = (after.first_seq, after.next_seq);
        self.drop_before(after.first_seq);
        for (seq, r) in after.records {
            match r {
                Record::ProbeDef(d) => self.define(&d),
                Record::Profiler(s) => {
                    let i = self.probe_index(s.probe);
                    let (p, k) = (&mut self.probes[i], &mut self.kept[i]);
                    k.unsorted |= p.samples().last().is_some_and(|l| l.ts_ns > s.ts_ns);
                    p.samples.push(Sample {
                        ts_ns: s.ts_ns,
                        cycle: s.cycle,
                        value: s.value,
                    });
                    k.seqs.push(seq);
                }
                Record::Slot(s) => {
                    self.slots.push(s);
                    self.slot_seqs.push(seq);
                }
                _ => {}
            }
        }
        for i in 0..self.probes.len() {
            if !self.kept[i].rate {
                self.settle(i);
            }
        }
    }

    /// Drops what the store no longer holds (before `first`).
    fn drop_before(&mut self, first: u64) {
        let cut = self.slot_seqs.live().partition_point(|&s| s < first);
        self.slots.drop_front(cut);
        self.slot_seqs.drop_front(cut);
        for i in 0..self.probes.len() {
            let k = &mut self.kept[i];
            // A rate probe is its counter's to keep.
            if k.rate {
                continue;
            }
            let p = &mut self.probes[i];
            if k.in_order {
                let cut = k.seqs.live().partition_point(|&s| s < first);
                drop_front(p, cut);
                k.seqs.drop_front(cut);
                k.old_len = p.samples().len();
                if cut > 0 && k.counter {
                    // A rate goes with the reading before it.
                    let from_ns = p.samples().first().map_or(u64::MAX, |s| s.ts_ns);
                    let rate = &mut self.probes[i + 1];
                    let cut = rate.samples().partition_point(|s| s.ts_ns <= from_ns);
                    drop_front(rate, cut);
                }
            } else {
                let seqs = k.seqs.take();
                let samples = p.samples.take();
                let before = samples.len();
                let (samples, seqs): (Vec<Sample>, Vec<u64>) = samples
                    .into_iter()
                    .zip(seqs)
                    .filter(|(_, seq)| *seq >= first)
                    .unzip();
                k.changed = samples.len() != before;
                k.old_len = samples.len();
                p.samples.set(samples);
                k.seqs.set(seqs);
            }
            k.unsorted = false;
        }
    }

    /// A probe's definition: its name and unit, and a rate probe after a
    /// counter.
    fn define(&mut self, d: &rocescope_replay::record::ProbeDef) {
        let i = self.probe_index(d.probe);
        if !self.kept[i].defined {
            self.kept[i].defined = true;
            self.probes[i].name = d.name.clone();
            self.probes[i].unit = d.unit.clone();
        }
        if d.module == COUNTER_MODULE && !self.kept[i].counter {
            self.kept[i].counter = true;
            self.kept[i].changed = true;
            self.probes.insert(i + 1, Probe::default());
            self.kept.insert(
                i + 1,
                Kept {
                    rate: true,
                    ..Kept::default()
                },
            );
        }
    }

    /// The index of probe `id` (a new one named "probe N" at the end).
    fn probe_index(&mut self, id: u16) -> usize {
        if let Some(i) = self
            .probes
            .iter()
            .zip(&self.kept)
            .position(|(p, k)| p.id == id && !k.rate)
        {
            return i;
        }
        self.probes.push(Probe {
            id,
            name: format!("probe {id}"),
            ..Probe::default()
        });
        self.kept.push(Kept {
            in_order: true,
            ..Kept::default()
        });
        self.probes.len() - 1
    }

    /// Probe `i` after this refresh's samples: sorted by time (records
    /// of the same time in their order), its range and clock, its rate.
    fn settle(&mut self, i: usize) {
        let (p, k) = (&mut self.probes[i], &mut self.kept[i]);
        if k.unsorted {
            let mut both: Vec<(Sample, u64)> =
                p.samples.take().into_iter().zip(k.seqs.take()).collect();
            both.sort_by_key(|(s, seq)| (s.ts_ns, *seq));
            let (samples, seqs): (Vec<Sample>, Vec<u64>) = both.into_iter().unzip();
            k.in_order = seqs.is_sorted();
            p.samples.set(samples);
            k.seqs.set(seqs);
            k.changed = true;
        }
        let from = if k.changed { 0 } else { k.old_len };
        extend_range(p, from);
        if k.counter {
            let (counter, rate) = self.probes.split_at_mut(i + 1);
            let (counter, rate) = (&counter[i], &mut rate[0]);
            rate.id = counter.id | RATE_PROBE_BIT;
            rate.name = format!("{} /s", counter.name);
            rate.unit = "/s".into();
            if k.changed {
                rate.samples.set(Vec::new());
            }
            let rate_from = rate.samples().len();
            // Each reading after the first, from the one that ended the
            // last refresh's rates.
            let pairs_from = if k.changed {
                0
            } else {
                k.old_len.saturating_sub(1)
            };
            for w in counter.samples()[pairs_from..].windows(2) {
                if let Some(r) = rate_of(w) {
                    rate.samples.push(r);
                }
            }
            extend_range(rate, if k.changed { 0 } else { rate_from });
        }
        self.kept[i].changed = false;
    }
}

/// Lets probe `p`'s `n` oldest samples go, its range and clock kept true.
fn drop_front(p: &mut Probe, n: usize) {
    if n == 0 {
        return;
    }
    let gone = &p.samples()[..n];
    let extreme = gone.iter().any(|s| s.value == p.min || s.value == p.max);
    p.samples.drop_front(n);
    if extreme {
        extend_range(p, 0);
    } else {
        p.ns_per_cycle = clock(p.samples());
    }
}

/// A probe's range and clock period brought up to date with its samples
/// from index `from` on (0: worked out again).
fn extend_range(p: &mut Probe, from: usize) {
    let samples = p.samples.live();
    let new = &samples[from.min(samples.len())..];
    let (lo, hi) = new.iter().fold((i64::MAX, i64::MIN), |(lo, hi), s| {
        (lo.min(s.value), hi.max(s.value))
    });
    let clock_from = (from == 0 || p.ns_per_cycle.is_none())
        // From the last pair looked at.
        .then(|| clock(&samples[from.saturating_sub(1).min(samples.len())..]));
    if from == 0 {
        (p.min, p.max) = if new.is_empty() { (0, 0) } else { (lo, hi) };
    } else if !new.is_empty() {
        (p.min, p.max) = (p.min.min(lo), p.max.max(hi));
    }
    if let Some(c) = clock_from {
        p.ns_per_cycle = c;
    }
}

/// The clock period of the first two samples a clock apart.
fn clock(samples: &[Sample]) -> Option<f64> {
    samples.windows(2).find_map(|w| {
        (w[1].cycle > w[0].cycle && w[1].ts_ns > w[0].ts_ns)
            .then(|| (w[1].ts_ns - w[0].ts_ns) as f64 / (w[1].cycle - w[0].cycle) as f64)
    })
}

/// The change per second of a counter between two readings; none across
/// a reading below the one before (the driver reloaded).
fn rate_of(w: &[Sample]) -> Option<Sample> {
    let dt_ns = w[1].ts_ns.checked_sub(w[0].ts_ns).filter(|d| *d > 0)?;
    let delta = w[1].value.checked_sub(w[0].value).filter(|d| *d >= 0)?;
    let per_s = (delta as i128 * 1_000_000_000 / i128::from(dt_ns)) as i64;
    Some(Sample {
        ts_ns: w[1].ts_ns,
        cycle: w[1].cycle,
        value: per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_replay::TimeBase;
    use rocescope_replay::record::{ProbeDef, ProfilerSample};
    use rocescope_replay::store::SpillConfig;

    fn def(probe: u16, module: &str) -> Record {
        Record::ProbeDef(ProbeDef {
            probe,
            name: format!("p{probe}"),
            unit: String::new(),
            module: module.into(),
        })
    }

    fn sample(probe: u16, ts_ns: u64, value: i64) -> Record {
        Record::Profiler(ProfilerSample {
            cycle: ts_ns / 4,
            ts_ns,
            probe,
            value,
        })
    }

    /// A fresh view of what `store` holds now.
    fn fresh(store: &Store) -> Derived {
        let mut d = Derived::default();
        d.refresh(store);
        d
    }

    #[test]
    fn counters_get_a_rate_probe_and_other_probes_do_not() {
        let store = Store::live(TimeBase::Nanoseconds);
        for r in [
            def(0x8000, COUNTER_MODULE),
            def(7, "sim"),
            sample(0x8000, 1_000_000_000, 4_294_967_000),
            // 32-bit wrap undone by the source: the total keeps growing.
            sample(0x8000, 1_500_000_000, 4_294_968_000),
            sample(0x8000, 2_500_000_000, 4_294_968_500),
            // The driver reloaded: no rate across the reset.
            sample(0x8000, 3_500_000_000, 10),
            sample(0x8000, 4_500_000_000, 40),
            sample(7, 1_000, 3),
        ] {
            store.push_record(r);
        }
        let probes = fresh(&store).probes().to_vec();
        let names: Vec<&str> = probes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["p32768", "p32768 /s", "p7"]);
        let rate = &probes[1];
        assert_eq!(rate.id, 0x8000 | RATE_PROBE_BIT);
        let values: Vec<(u64, i64)> = rate.samples().iter().map(|s| (s.ts_ns, s.value)).collect();
        assert_eq!(
            values,
            [
                (1_500_000_000, 2000),
                (2_500_000_000, 500),
                (4_500_000_000, 30)
            ]
        );
        assert_eq!((rate.min, rate.max), (30, 2000));
        assert_eq!(probes[0].ns_per_cycle, Some(4.0));
    }

    /// A probe as shown: its id, samples, range and clock.
    type Shown = (u16, Vec<Sample>, i64, i64, Option<f64>);

    /// The probes by id, without their names (a view kept up to date keeps
    /// a definition the store let go; a fresh one never saw it).
    fn by_id(d: &Derived) -> Vec<Shown> {
        let mut v: Vec<_> = d
            .probes
            .iter()
            .map(|p| (p.id, p.samples().to_vec(), p.min, p.max, p.ns_per_cycle))
            .collect();
        v.sort_by_key(|p| p.0);
        v
    }

    /// `kept` shows every probe of the fresh view `now` the same, and
    /// where the store let a definition go (which `now` never saw), still
    /// the counter's rate and the probe's name.
    fn assert_fresh(kept: &Derived, now: &Derived, step: u32) {
        let kept_by = by_id(kept);
        for p in by_id(now) {
            assert!(kept_by.contains(&p), "step {step}: probe {:#x}", p.0);
        }
        let counter = kept.probes.iter().position(|p| p.id == 0x8000);
        let counter = &kept.probes[counter.expect("the counter")..];
        let want: Vec<Sample> = counter[0]
            .samples()
            .windows(2)
            .filter_map(rate_of)
            .collect();
        assert_eq!(counter[1].id, 0x8000 | RATE_PROBE_BIT);
        assert_eq!(counter[1].samples(), want, "step {step}");
        let (lo, hi) = want.iter().fold((i64::MAX, i64::MIN), |(l, h), s| {
            (l.min(s.value), h.max(s.value))
        });
        assert_eq!((counter[1].min, counter[1].max), (lo, hi), "step {step}");
        assert_eq!(kept.slots(), now.slots(), "step {step}");
    }

    /// Refreshed now and then while a bounded store takes records and lets
    /// the oldest go, the view is what a fresh one of the store's records
    /// is: the same samples, slots, ranges, clocks and rates. Before, a
    /// view rebuilt only when the store held more records, so once a
    /// bounded store's records were at their share it never changed again.
    #[test]
    fn a_view_kept_up_to_date_is_a_fresh_one_of_what_the_store_holds() {
        let folder = rocescope_testkit::temp_dir("derived");
        let store = Store::live_bounded(
            TimeBase::Nanoseconds,
            SpillConfig {
                dir: folder.path().to_path_buf(),
                // 1,024 records at most (the records' least share).
                max_memory_bytes: 1 << 20,
                max_disk_bytes: None,
                remove_on_drop: true,
            },
        )
        .expect("a bounded store");
        let mut rng = rocescope_testkit::Rng(0x5eed);
        let mut kept = Derived::default();
        let mut ts_ns = 1_000u64;
        let mut counter = 0i64;
        store.push_record(def(0x8000, COUNTER_MODULE));
        store.push_record(def(3, "sim"));
        for step in 0..20_000u32 {
            ts_ns += 1 + rng.below(40) as u64;
            let r = match rng.below(10) {
                0..=3 => sample(3, ts_ns, rng.below(1000) as i64 - 500),
                4..=5 => {
                    // Now and then the driver reloads.
                    counter = if rng.below(50) == 0 {
                        0
                    } else {
                        counter + rng.below(100) as i64
                    };
                    sample(0x8000, ts_ns, counter)
                }
                // A probe whose samples come out of time order.
                6 => sample(9, ts_ns - rng.below(200) as u64, step as i64),
                7 => def(11, "late"),
                _ => Record::Slot(SlotDecision {
                    ts_ns,
                    slot: rocescope_replay::record::SlotKind::Aes,
                    qpn: 1,
                    psn: step,
                    verdict: rocescope_replay::record::Verdict::Pass,
                    latency_ns: 0,
                    detail: 0,
                }),
            };
            store.push_record(r);
            if rng.below(300) == 0 {
                kept.refresh(&store);
                assert_fresh(&kept, &fresh(&store), step);
            }
        }
        kept.refresh(&store);
        assert!(
            store
                .spill_stats()
                .is_some_and(|s| s.records_deleted > 15_000)
        );
        // The newest sample is there: the view did not stop.
        let newest = kept
            .probes
            .iter()
            .flat_map(|p| p.samples())
            .map(|s| s.ts_ns)
            .max();
        assert!(
            newest.is_some_and(|t| t + 200 >= ts_ns),
            "{newest:?} {ts_ns}"
        );
        // Definitions seen are kept, though their records went long ago.
        assert_eq!(kept.probes[0].name, "p32768");
        assert_eq!(kept.probes[1].name, "p32768 /s");
    }
}
