//! The ingest and recorder threads: batches from the queue into the store,
//! and everything received into the recording.

use super::*;

/// How long a stopped client still stores what it had queued: a
/// `--duration` ends on time even when ingest (a debug build, a slow disk)
/// lags the link; what is left is counted as dropped at stop.
pub const STOP_DRAIN: Duration = Duration::from_secs(2);

#[allow(clippy::too_many_arguments)]
pub(super) fn ingest_loop(
    store: &Store,
    queue: &BatchQueue,
    stats: &LinkStats,
    analyzer: Box<dyn Analyzer>,
    notes: &RcAnalyzer,
    decode: DecodeConfig,
    max_pps: Option<u64>,
    pool: &BatchPool,
    stop: &AtomicBool,
) {
    let mut ingest = Ingest::new(decode, analyzer);
    let start = Instant::now();
    let mut frames = 0u64;
    let mut stopped_at: Option<Instant> = None;
    loop {
        if stopped_at.is_none() && stop.load(Ordering::Relaxed) {
            stopped_at = Some(Instant::now());
        }
        let past_drain = stopped_at.is_some_and(|t| t.elapsed() >= STOP_DRAIN);
        match queue.pop(Duration::from_millis(50)) {
            Pop::Batch(b) if past_drain => {
                b.count_into(
                    &stats.frames_dropped_at_stop,
                    &stats.records_dropped_at_stop,
                );
                pool.recycle(b);
            }
            Pop::Batch(mut b) => {
                let evidence = ingest_batch(store, &mut ingest, &mut b, Some(notes));
                stats
                    .evidence_received
                    .fetch_add(evidence, Ordering::Relaxed);
                frames += b.frames();
                if let Some(pps) = max_pps.filter(|&p| p > 0) {
                    let due = Duration::from_secs_f64(frames as f64 / pps as f64);
                    if let Some(wait) = due.checked_sub(start.elapsed()) {
                        std::thread::sleep(wait);
                    }
                }
                b.count_into(&stats.frames_received, &stats.records_received);
                pool.recycle(b);
            }
            Pop::Empty => {}
            Pop::Closed => break,
        }
    }
    store.finish_live(&mut ingest);
}

/// One batch into the store: its frame bytes in one copy, and the rows the
/// socket thread decoded appended in place when nobody else holds the
/// batch (else copied, frame by frame). Evidence records (a simulator's
/// PFC pauses, DPI drops) are noted in `notes`, as the in-process
/// simulator notes them; returns how many there were.
pub(super) fn ingest_batch(
    store: &Store,
    ingest: &mut Ingest,
    b: &mut Arc<Batch>,
    notes: Option<&RcAnalyzer>,
) -> u64 {
    let mut evidence = 0;
    for e in b.iter() {
        if let Entry::Record(r) = e {
            if notes.is_some_and(|n| n.note_record(r)) {
                evidence += 1;
            }
            store.push_record(r.clone());
        }
    }
    if let Some((bytes, infos)) = Arc::get_mut(b).and_then(Batch::decoded_mut) {
        store.ingest_decoded_block(ingest, bytes, infos, 1);
        return evidence;
    }
    if b.decoded().is_none() {
        let frames = b.iter().filter_map(|e| match e {
            Entry::Frame(f) => Some(IngestFrame {
                ts_ns: f.meta.ts_ns,
                data: f.data,
                origlen: f.meta.orig_len,
                linktype: 1,
                port: f.meta.port,
                dir: f.meta.direction,
                file_offset: f.meta.start() as u64,
            }),
            Entry::Record(_) => None,
        });
        store.ingest_block(ingest, b.bytes(), frames);
        return evidence;
    }
    // Decoded, and shared with the recorder.
    let Some(decoded) = b.decoded() else {
        return evidence;
    };
    let mut rows = decoded.rows.iter();
    for e in b.iter() {
        if let Entry::Frame(f) = e
            && let Some(info) = rows.next()
        {
            store.ingest_decoded(ingest, info, &decoded.wide, f.data, 1);
        }
    }
    store.flush_live(ingest);
    evidence
}

pub(super) fn record_loop(
    mut w: PcapngWriter<BufWriter<File>>,
    rx: &Receiver<Arc<Batch>>,
    flush_every: Duration,
    stats: &LinkStats,
    events: &std::sync::mpsc::Sender<LinkEvent>,
    pool: &BatchPool,
) {
    let mut last_flush = Instant::now();
    let mut failed = false;
    loop {
        let got = rx.recv_timeout(Duration::from_millis(100));
        let done = matches!(got, Err(std::sync::mpsc::RecvTimeoutError::Disconnected));
        if let Ok(b) = got
            && !failed
        {
            for e in b.iter() {
                let r = match e {
                    Entry::Frame(f) => w.write_frame(
                        f.meta.ts_ns,
                        f.meta.port,
                        f.meta.direction,
                        f.meta.orig_len,
                        f.data,
                    ),
                    Entry::Record(r) => w.write_record(r),
                };
                if let Err(e) = r {
                    failed = true;
                    let _ = events.send(LinkEvent::Fatal(format!("recording: {e}")));
                    break;
                }
            }
            stats
                .recorded_frames
                .fetch_add(b.frames(), Ordering::Relaxed);
            pool.recycle(b);
        }
        if !failed && (done || last_flush.elapsed() >= flush_every) {
            last_flush = Instant::now();
            if let Err(e) = w.flush() {
                failed = true;
                let _ = events.send(LinkEvent::Fatal(format!("recording: {e}")));
            }
        }
        if done {
            break;
        }
    }
    if !failed {
        let _ = w.finish();
    }
}
