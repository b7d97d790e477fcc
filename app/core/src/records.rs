//! Non-frame records the views show, derived once per report refresh and
//! cached in the model: the service slots' decisions and the profiler's
//! probes (definitions, then samples). The TUI and the GUI read the same
//! derivation; neither rescans the store per frame.

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
    pub samples: Vec<Sample>,
    pub min: i64,
    pub max: i64,
    /// Clock period derived from the samples (ns per cycle).
    pub ns_per_cycle: Option<f64>,
}

/// The time `probes`' samples span: the earliest first sample's and the
/// latest last sample's, 0 for either where there are no samples.
pub fn samples_span_ns(probes: &[Probe]) -> (u64, u64) {
    let times = |pick: fn(&[Sample]) -> Option<&Sample>| {
        probes
            .iter()
            .filter_map(move |p| pick(&p.samples))
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

/// Probes from the store's records (definitions, then samples). Each of
/// the card's counters (running totals, 32-bit wraps already undone by the
/// source) is followed by its rate: `NAME /s`, the change per second
/// between two readings.
pub fn probes_from(recs: &[Record]) -> Vec<Probe> {
    let mut probes: Vec<Probe> = Vec::new();
    let mut counters: Vec<u16> = Vec::new();
    for r in recs {
        if let Record::ProbeDef(d) = r
            && d.module == COUNTER_MODULE
            && !counters.contains(&d.probe)
        {
            counters.push(d.probe);
        }
        if let Record::ProbeDef(d) = r
            && !probes.iter().any(|p| p.id == d.probe)
        {
            probes.push(Probe {
                id: d.probe,
                name: d.name.clone(),
                unit: d.unit.clone(),
                ..Probe::default()
            });
        }
    }
    for r in recs {
        if let Record::Profiler(s) = r {
            let i = match probes.iter().position(|p| p.id == s.probe) {
                Some(i) => i,
                None => {
                    probes.push(Probe {
                        id: s.probe,
                        name: format!("probe {}", s.probe),
                        ..Probe::default()
                    });
                    probes.len() - 1
                }
            };
            probes[i].samples.push(Sample {
                ts_ns: s.ts_ns,
                cycle: s.cycle,
                value: s.value,
            });
        }
    }
    for p in &mut probes {
        p.samples.sort_by_key(|s| s.ts_ns);
    }
    let mut with_rates = Vec::with_capacity(probes.len() + counters.len());
    for p in probes {
        let rate = counters.contains(&p.id).then(|| rate_probe(&p));
        with_rates.push(p);
        with_rates.extend(rate);
    }
    let mut probes = with_rates;
    for p in &mut probes {
        p.min = p.samples.iter().map(|s| s.value).min().unwrap_or(0);
        p.max = p.samples.iter().map(|s| s.value).max().unwrap_or(0);
        p.ns_per_cycle = p.samples.windows(2).find_map(|w| {
            (w[1].cycle > w[0].cycle && w[1].ts_ns > w[0].ts_ns)
                .then(|| (w[1].ts_ns - w[0].ts_ns) as f64 / (w[1].cycle - w[0].cycle) as f64)
        });
    }
    probes
}

/// The slots and probes of a store, rebuilt only when it holds more records.
#[derive(Debug, Default, Clone)]
pub struct Derived {
    /// Store records seen at the last rebuild.
    count: usize,
    pub slots: Vec<SlotDecision>,
    pub probes: Vec<Probe>,
}

impl Derived {
    /// Rebuild from `store` if it has records this one has not seen.
    pub fn refresh(&mut self, store: &Store) {
        let n = store.record_count();
        if n == self.count {
            return;
        }
        self.count = n;
        let recs = store.records_where(|r| {
            matches!(
                r,
                Record::Profiler(_) | Record::ProbeDef(_) | Record::Slot(_)
            )
        });
        self.slots = recs
            .iter()
            .filter_map(|r| match r {
                Record::Slot(s) => Some(*s),
                _ => None,
            })
            .collect();
        self.probes = probes_from(&recs);
    }
}

/// The change per second of counter probe `p` between readings; a reading
/// below the one before (the driver reloaded) starts over without a rate.
fn rate_probe(p: &Probe) -> Probe {
    let samples = p
        .samples
        .windows(2)
        .filter_map(|w| {
            let dt_ns = w[1].ts_ns.checked_sub(w[0].ts_ns).filter(|d| *d > 0)?;
            let delta = w[1].value.checked_sub(w[0].value).filter(|d| *d >= 0)?;
            let per_s = (delta as i128 * 1_000_000_000 / i128::from(dt_ns)) as i64;
            Some(Sample {
                ts_ns: w[1].ts_ns,
                cycle: w[1].cycle,
                value: per_s,
            })
        })
        .collect();
    Probe {
        id: p.id | RATE_PROBE_BIT,
        name: format!("{} /s", p.name),
        unit: "/s".into(),
        samples,
        ..Probe::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_replay::record::{ProbeDef, ProfilerSample};

    #[test]
    fn counters_get_a_rate_probe_and_other_probes_do_not() {
        let def = |probe, module: &str| {
            Record::ProbeDef(ProbeDef {
                probe,
                name: format!("p{probe}"),
                unit: String::new(),
                module: module.into(),
            })
        };
        let sample = |probe, ts_ns, value| {
            Record::Profiler(ProfilerSample {
                cycle: ts_ns / 4,
                ts_ns,
                probe,
                value,
            })
        };
        let recs = vec![
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
        ];
        let probes = probes_from(&recs);
        let names: Vec<&str> = probes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["p32768", "p32768 /s", "p7"]);
        let rate = &probes[1];
        assert_eq!(rate.id, 0x8000 | RATE_PROBE_BIT);
        let values: Vec<(u64, i64)> = rate.samples.iter().map(|s| (s.ts_ns, s.value)).collect();
        assert_eq!(
            values,
            [
                (1_500_000_000, 2000),
                (2_500_000_000, 500),
                (4_500_000_000, 30)
            ]
        );
        assert_eq!((rate.min, rate.max), (30, 2000));
    }
}
