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

/// Probes from the store's records (definitions, then samples).
pub fn probes_from(recs: &[Record]) -> Vec<Probe> {
    let mut probes: Vec<Probe> = Vec::new();
    for r in recs {
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
