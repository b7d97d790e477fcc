//! The display filter's scan: the rows matching a filter, found on a
//! background thread that follows a growing store.

use std::sync::Arc;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rocescope_decoders::{DecodeConfig, FieldValue, LinkLayer, decode};
use rocescope_replay::store::{Flags, Row, Store};

use crate::filter::{FieldLookup, Filter, RowField, Value};

/// Matches kept, the newest: 8 bytes each, so a filter that matches most
/// of a live session's frames stays within 32 MiB for hours.
pub(crate) const MAX_MATCHES: usize = 1 << 22;

/// Rows matching the display filter, found by a background scan.
#[derive(Debug, Default)]
pub(crate) struct Matches {
    pub(crate) rows: RwLock<Vec<u64>>,
    /// Rows of the store examined so far.
    pub(crate) scanned: AtomicU64,
    pub(crate) cancel: AtomicBool,
    /// Matches let go past [`MAX_MATCHES`], the oldest first.
    pub(crate) let_go: AtomicU64,
    /// Why the scan stopped before its end (its thread failed): the
    /// matches are those before `scanned`, and the status line says so.
    pub(crate) failed: std::sync::Mutex<Option<String>>,
    /// The tests' failing scan.
    #[cfg(test)]
    pub(crate) panics_for_test: AtomicBool,
}

impl Matches {
    fn fail(&self, why: String) {
        *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

/// Keep the newest `max` of `rows` once they pass it by an eighth (so the
/// front is cut now and then, not at every batch); count what went.
fn keep_newest(rows: &mut Vec<u64>, let_go: &AtomicU64, max: usize) {
    if rows.len() > max + max / 8 {
        let excess = rows.len() - max;
        rows.drain(..excess);
        let_go.fetch_add(excess as u64, Ordering::Relaxed);
    }
}

/// Scan the store for rows matching `filter` on a background thread,
/// following the store as it grows, until cancelled.
pub(crate) fn spawn_scan(store: Arc<Store>, filter: Filter, out: Arc<Matches>) {
    let told = Arc::clone(&out);
    let spawned = std::thread::Builder::new()
        .name("rocescope-filter".into())
        .spawn(move || {
            // A panic here is told (the status line), never a filter
            // "scanning" for good with the matches it found so far.
            let ran = rocescope_replay::contain::contain(|| scan(&store, &filter, &out));
            if let Err(why) = ran {
                out.fail(format!(
                    "the filter's scan failed at row {} ({why}; a rocescope bug: please report it): the rows after it are not filtered",
                    out.scanned.load(Ordering::Relaxed)
                ));
            }
        });
    if let Err(e) = spawned {
        told.fail(format!(
            "the filter's scan did not start: cannot make its thread: {e}"
        ));
    }
}

/// The scan of [`spawn_scan`], on its thread.
fn scan(store: &Store, filter: &Filter, out: &Matches) {
    #[cfg(test)]
    if out.panics_for_test.load(Ordering::Relaxed) {
        panic!("a filter scan's failure, for the test");
    }
    let mut needs_packet = filter.needs_packet();
    let mut buf = Vec::with_capacity(8192);
    let mut found = Vec::with_capacity(8192);
    let mut next = 0u64;
    loop {
        if out.cancel.load(Ordering::Relaxed) {
            return;
        }
        let len = store.len();
        // Per pass: a live store learns its settings at its first flush.
        let decode_cfg = store.decode_config();
        if next >= len {
            if store.progress().complete {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        // Rows a live session's disk ring deleted are not scanned.
        next = next.max(store.first_row());
        let end = (next + 8192).min(len);
        found.clear();
        if needs_packet {
            // Bytes in bulk: one read per span of frames, not per row.
            let read = store.for_each_frame(next..end, |index, row, bytes| {
                let ctx = RowCtx {
                    store,
                    decode: &decode_cfg,
                    index,
                    row,
                    bytes: Some(bytes),
                };
                if filter.eval(&ctx) {
                    found.push(index);
                }
                std::ops::ControlFlow::Continue(())
            });
            if read.is_err() {
                // The backing cannot be read: filter on what the rows hold.
                needs_packet = false;
                continue;
            }
        } else {
            buf.clear();
            store.rows(next..end, &mut buf);
            for (k, row) in buf.iter().enumerate() {
                let ctx = RowCtx {
                    store,
                    decode: &decode_cfg,
                    index: next + k as u64,
                    row,
                    bytes: None,
                };
                if filter.eval(&ctx) {
                    found.push(next + k as u64);
                }
            }
        }
        {
            let mut rows = out.rows.write().unwrap_or_else(|e| e.into_inner());
            rows.extend_from_slice(&found);
            keep_newest(&mut rows, &out.let_go, MAX_MATCHES);
        }
        next = end;
        out.scanned.store(next, Ordering::Relaxed);
    }
}

/// Field values of one row for the filter.
struct RowCtx<'a> {
    store: &'a Store,
    /// The store's decode settings, read once per scan.
    decode: &'a DecodeConfig,
    index: u64,
    row: &'a Row,
    bytes: Option<&'a [u8]>,
}

impl FieldLookup for RowCtx<'_> {
    fn row(&self, f: RowField) -> Option<u64> {
        let r = self.row;
        let roce = r.flags.contains(Flags::ROCE);
        match f {
            RowField::Psn => roce.then_some(u64::from(r.psn)),
            RowField::Opcode => roce.then_some(u64::from(r.opcode)),
            RowField::DestQp => self
                .store
                .conversation(r.conversation)
                .map(|c| u64::from(c.key.dest_qp)),
            RowField::FrameLen => Some(u64::from(r.origlen)),
            RowField::CapLen => Some(u64::from(r.caplen)),
            RowField::FrameNumber => Some(self.index + 1),
            RowField::Port => Some(u64::from(r.port)),
            RowField::Flag(bit) => Some(u64::from(r.flags.0 >> bit & 1)),
            RowField::Conversation => Some(u64::from(r.conversation)),
        }
    }

    fn packet(&self, name: &str) -> Vec<Value> {
        let Some(bytes) = self.bytes else {
            return Vec::new();
        };
        let link = self
            .store
            .link_layer(self.row.port)
            .unwrap_or(LinkLayer::Ethernet);
        let p = decode(bytes, link, self.decode);
        let mut out = Vec::new();
        p.for_each_field(&mut |f| {
            if f.name == name {
                out.push(match f.value {
                    FieldValue::U64(v) => Value::Int(v),
                    FieldValue::Bool(b) => Value::Int(u64::from(b)),
                    FieldValue::Ipv4(a) => Value::Addr(a.into()),
                    FieldValue::Ipv6(a) => Value::Addr(a.into()),
                    // A header or bytes field: present.
                    FieldValue::Bytes(_) | FieldValue::Mac(_) => Value::Int(1),
                });
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan that panics says so on the status line (with its words),
    /// never a filter "scanning" for good with the matches found so far.
    #[test]
    fn a_scan_that_fails_is_told_on_the_status_line() {
        let store = Store::live(rocescope_replay::TimeBase::Nanoseconds);
        let out = Arc::new(Matches {
            panics_for_test: AtomicBool::new(true),
            ..Matches::default()
        });
        let filter = Filter::parse("bth.psn >= 100")
            .expect("a filter")
            .expect("not empty");
        spawn_scan(Arc::clone(&store), filter, Arc::clone(&out));
        let t0 = std::time::Instant::now();
        while out
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            assert!(t0.elapsed() < Duration::from_secs(30), "never told");
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut m = crate::Model::new(
            store,
            rocescope_replay::store::RcAnalyzer::default(),
            crate::source::SourceHandle::file("scan".into()),
        );
        m.set_matches(out);
        let e = crate::status_line(&m)
            .error
            .expect("told on the status line");
        assert!(e.starts_with("the filter's scan failed at row 0 ("), "{e}");
        assert!(e.contains("a filter scan's failure, for the test"), "{e}");
    }

    #[test]
    fn the_match_list_keeps_the_newest_and_counts_the_rest() {
        let let_go = AtomicU64::new(0);
        let mut rows: Vec<u64> = Vec::new();
        for batch in 0..100u64 {
            rows.extend(batch * 10..batch * 10 + 10);
            keep_newest(&mut rows, &let_go, 64);
            assert!(rows.len() <= 64 + 8, "{}", rows.len());
        }
        let total = 1000;
        assert_eq!(rows.len() as u64 + let_go.load(Ordering::Relaxed), total);
        assert_eq!(rows.last(), Some(&999), "the newest are kept");
        assert!(rows.windows(2).all(|w| w[0] < w[1]), "in row order");
    }
}
