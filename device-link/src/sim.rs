//! The bundled simulator as an agent source (`rocescope agent --sim`): a
//! live run of the scenario ([`Simulator::live`]: a workload runs until the
//! agent stops) in steps of simulated time, paced to wall time or as fast
//! as the link takes it, copying each captured frame once, straight into
//! the batch's arena. While no client is attached the simulated card waits
//! (its time stands still, costing no CPU) and goes on when one attaches.

use std::time::{Duration, Instant};

use rocescope_replay::Record;
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

use crate::batch::Batch;
use crate::source::{BATCH_ITEMS, Publisher, Source, SourceError, SourceStatus};

/// Serves a simulator run.
#[derive(Debug)]
pub struct SimSource {
    scenario: Scenario,
    pace: Option<f64>,
}

impl SimSource {
    /// `pace`: simulated seconds per wall second (`None`: as fast as
    /// possible).
    pub fn new(scenario: Scenario, pace: Option<f64>) -> SimSource {
        SimSource { scenario, pace }
    }
}

/// Fills a batch and publishes it whenever it is full.
struct Feed<'a> {
    batch: &'a mut Batch,
    out: &'a Publisher,
}

impl Feed<'_> {
    #[inline]
    fn full(&mut self) {
        if self.batch.len() >= BATCH_ITEMS {
            self.out.publish_from(self.batch);
        }
    }
}

impl RecordSink for Feed<'_> {
    #[inline]
    fn frame(&mut self, f: FrameRef<'_>) {
        self.batch
            .push_frame(f.ts_ns, f.port, f.direction, f.orig_len, f.data);
        self.full();
    }
    fn record(&mut self, r: Record) {
        self.batch.push_record(r);
        self.full();
    }
}

impl Source for SimSource {
    fn describe(&self) -> String {
        format!("sim:{}", self.scenario.name)
    }

    fn run(&mut self, out: &Publisher) -> Result<SourceStatus, SourceError> {
        // A millisecond of simulated time a step unpaced (the simulator's
        // repeating periods, 22.8 us on `line-rate`, replay whole within
        // one: issue 51); paced, a millisecond of wall time at most, so a
        // paced run unfolds smoothly.
        let step_ns = match self.pace {
            None => 1_000_000,
            Some(pace) => ((pace * 1e6) as u64).clamp(100, 1_000_000),
        };
        let mut sim = Simulator::live(self.scenario.clone());
        sim.detect_periods(true);
        sim.replay_periods(true);
        let mut batch = Batch::with_capacity(BATCH_ITEMS, BATCH_ITEMS * 80);
        let start = Instant::now();
        let mut waited = Duration::ZERO;
        let mut t_ns = 0u64;
        loop {
            if out.stopped() {
                return Ok(SourceStatus::Stopped);
            }
            if out.audience() == Some(0) {
                // Nobody to serve: wait, and leave the wait out of the pace
                // (no burst to catch up when a client comes).
                let idle = Instant::now();
                while out.audience() == Some(0) && !out.stopped() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                waited += idle.elapsed();
                continue;
            }
            t_ns += step_ns;
            let more = sim.run_until_into(
                t_ns,
                &mut Feed {
                    batch: &mut batch,
                    out,
                },
            );
            if !more {
                out.publish_from(&mut batch);
                return Ok(SourceStatus::End);
            }
            if let Some(pace) = self.pace {
                let due = Duration::from_secs_f64(t_ns as f64 / 1e9 / pace.max(1e-9));
                if let Some(wait) = due.checked_sub(start.elapsed().saturating_sub(waited)) {
                    // Ahead of time: publish what there is, then wait. (Behind
                    // time, batches fill up as when unpaced.)
                    out.publish_from(&mut batch);
                    std::thread::sleep(wait.min(Duration::from_millis(50)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Entry;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};

    /// The batches carry the simulator's records, in order, frames intact.
    #[test]
    fn publishes_the_simulator_stream_in_order() {
        let mut sc = Scenario::builtin("default").expect("default");
        sc.bound_to_ns(200_000);
        let mut want = Vec::new();
        Simulator::new(sc.clone()).run(&mut |r| want.push(r));
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = Arc::clone(&got);
        let out = Publisher::new(Arc::new(AtomicBool::new(false)), move |b: Batch| {
            if let Ok(mut g) = g.lock() {
                g.extend(b.iter().map(|e| match e {
                    Entry::Frame(f) => Record::Frame {
                        ts_ns: f.meta.ts_ns,
                        port: f.meta.port,
                        direction: f.meta.direction,
                        orig_len: f.meta.orig_len,
                        data: f.data.to_vec(),
                    },
                    Entry::Record(r) => r.clone(),
                }));
            }
        });
        let status = SimSource::new(sc, None).run(&out).expect("run");
        assert_eq!(status, SourceStatus::End);
        let got = got.lock().expect("lock");
        assert!(want.len() > 100, "{}", want.len());
        assert_eq!(*got, want);
    }
}
