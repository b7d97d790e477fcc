//! [`BatchQueue`]: a bounded queue of batches that never blocks the
//! producer. When it is full the whole batch is dropped and its frames and
//! records are counted, so `delivered + dropped = offered`, exactly.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::batch::Batch;

/// Drop counters of one queue (running totals).
#[derive(Debug, Default)]
pub struct DropCounters {
    pub frames: AtomicU64,
    pub records: AtomicU64,
    pub batches: AtomicU64,
}

impl DropCounters {
    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::Relaxed)
    }
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
struct State {
    q: VecDeque<Arc<Batch>>,
    bytes: usize,
    closed: bool,
}

/// Bounded by bytes (see [`Batch::cost_bytes`]) and by batch count.
#[derive(Debug)]
pub struct BatchQueue {
    state: Mutex<State>,
    cv: Condvar,
    max_bytes: usize,
    max_batches: usize,
    pub drops: DropCounters,
}

/// What [`BatchQueue::pop`] returns.
#[derive(Debug)]
pub enum Pop {
    Batch(Arc<Batch>),
    /// Nothing within the timeout.
    Empty,
    /// Closed and drained.
    Closed,
}

impl BatchQueue {
    pub fn new(max_bytes: usize, max_batches: usize) -> BatchQueue {
        BatchQueue {
            state: Mutex::new(State {
                q: VecDeque::new(),
                bytes: 0,
                closed: false,
            }),
            cv: Condvar::new(),
            max_bytes: max_bytes.max(1),
            max_batches: max_batches.max(1),
            drops: DropCounters::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues the batch, or drops it whole (counted) when the queue is full
    /// or closed. Never blocks beyond the lock. Returns whether it was
    /// queued. An empty queue always takes one batch, however large.
    pub fn push(&self, batch: Arc<Batch>) -> bool {
        let cost = batch.cost_bytes();
        let mut s = self.lock();
        let full =
            !s.q.is_empty() && (s.bytes + cost > self.max_bytes || s.q.len() >= self.max_batches);
        if s.closed || full {
            drop(s);
            batch.count_into(&self.drops.frames, &self.drops.records);
            self.drops.batches.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        s.bytes += cost;
        s.q.push_back(batch);
        drop(s);
        self.cv.notify_one();
        true
    }

    /// Queues a small batch that must not be lost (markers, drop counts),
    /// whatever the limits; only a closed queue refuses it.
    pub fn push_force(&self, batch: Arc<Batch>) -> bool {
        let mut s = self.lock();
        if s.closed {
            return false;
        }
        s.bytes += batch.cost_bytes();
        s.q.push_back(batch);
        drop(s);
        self.cv.notify_one();
        true
    }

    /// Takes the oldest batch, waiting at most `timeout`.
    pub fn pop(&self, timeout: Duration) -> Pop {
        let mut s = self.lock();
        loop {
            if let Some(b) = s.q.pop_front() {
                s.bytes -= b.cost_bytes();
                return Pop::Batch(b);
            }
            if s.closed {
                return Pop::Closed;
            }
            let (g, t) = self
                .cv
                .wait_timeout(s, timeout)
                .unwrap_or_else(|e| e.into_inner());
            s = g;
            if t.timed_out() && s.q.is_empty() {
                return if s.closed { Pop::Closed } else { Pop::Empty };
            }
        }
    }

    /// No more pushes; pops drain what is queued, then see `Closed`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.cv.notify_all();
    }

    /// Bytes queued now.
    pub fn queued_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Batches queued now.
    pub fn queued_batches(&self) -> usize {
        self.lock().q.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(frames: usize) -> Arc<Batch> {
        let mut b = Batch::default();
        for i in 0..frames {
            b.push_frame(i as u64, 0, None, 60, &[0; 60]);
        }
        Arc::new(b)
    }

    #[test]
    fn full_queue_drops_whole_batches_and_counts_them() {
        let q = BatchQueue::new(usize::MAX, 2);
        assert!(q.push(batch(3)));
        assert!(q.push(batch(4)));
        assert!(!q.push(batch(5)));
        assert_eq!(q.drops.frames(), 5);
        let mut got = 0;
        while let Pop::Batch(b) = q.pop(Duration::ZERO) {
            got += b.frames();
        }
        assert_eq!(got + q.drops.frames(), 12);
        q.close();
        assert!(matches!(q.pop(Duration::ZERO), Pop::Closed));
        assert!(!q.push(batch(1)));
        assert_eq!(q.drops.frames(), 6);
    }

    #[test]
    fn byte_limit_holds_but_one_batch_always_fits() {
        let q = BatchQueue::new(10, 100);
        assert!(q.push(batch(2)));
        assert!(!q.push(batch(1)));
        assert!(q.queued_bytes() > 10);
    }
}
