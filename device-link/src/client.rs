//! The client: attaches to an agent (`tcp://`), a pcap stream on stdin
//! (`-`) or a file (`file:PATH[?follow]`) and feeds a live [`Store`]
//! through the same ingest as files.
//!
//! Threads: *rx* reads the link, records everything it receives (if asked)
//! and offers batches to a bounded queue; *ingest* decodes them into the
//! store; *recorder* writes the recording. When ingest falls behind, whole
//! batches are dropped and counted; the agent's own drops for this client
//! arrive as `Drops` records and heartbeats. So, per connection,
//! `frames_received + frames_dropped` equals the frames the agent's source
//! produced while the client was attached.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocescope_decoders::DecodeConfig;
use rocescope_replay::record::{DropCount, DropReason, MarkerKind};
use rocescope_replay::store::{Ingest, IngestFrame, RcAnalyzer, SpillConfig, Store, StoreError};
use rocescope_replay::{CaptureItem, CaptureReader, PcapngWriter, Record, TimeBase};

use crate::AttachUrl;
use crate::batch::{Batch, BatchPool, Entry};
use crate::protocol::{
    AGENT_QUEUE_INTERFACE, CLIENT_QUEUE_INTERFACE, ErrorCode, LinkEvents, LinkReader,
    PROTOCOL_VERSION, ProbeSet, Reply, Request,
};
use crate::queue::{BatchQueue, Pop};
use crate::source::{BATCH_ITEMS, FollowFile};
use crate::stream::{Parsed, StreamParser};

/// How the client runs. [`ClientConfig::new`] has the defaults.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub url: AttachUrl,
    /// Sent as `AUTH` when set.
    pub token: Option<String>,
    /// Write everything received here (pcapng).
    pub record: Option<PathBuf>,
    /// Recording flush interval (a kill loses at most this much).
    pub record_flush: Duration,
    /// Queue between socket and ingest, bytes of batches.
    pub queue_bytes: usize,
    pub queue_batches: usize,
    pub probes: ProbeSet,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// No bytes from the agent for this long: the connection is dead.
    pub silence_timeout: Duration,
    /// Stop (no reconnect) when the agent says its source ended.
    pub exit_on_end: bool,
    /// Throttle ingest to this many frames per second (tests, demos).
    pub max_ingest_pps: Option<u64>,
    pub decode: DecodeConfig,
    /// Bound the store's memory: older frames and rows go to disk segments
    /// (None: everything stays in memory).
    pub spill: Option<SpillConfig>,
}

impl ClientConfig {
    pub fn new(url: AttachUrl) -> ClientConfig {
        ClientConfig {
            url,
            token: None,
            record: None,
            record_flush: Duration::from_secs(1),
            queue_bytes: 256 << 20,
            queue_batches: 16 * 1024,
            probes: ProbeSet::All,
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            silence_timeout: Duration::from_secs(3),
            exit_on_end: false,
            max_ingest_pps: None,
            decode: DecodeConfig::default(),
            spill: None,
        }
    }
}

/// Running counters of a client; read with [`LinkStats::snapshot`].
#[derive(Debug, Default)]
pub struct LinkStats {
    bytes_received: AtomicU64,
    frames_read: AtomicU64,
    records_read: AtomicU64,
    frames_received: AtomicU64,
    records_received: AtomicU64,
    frames_dropped_agent: AtomicU64,
    agent_dropped_base: AtomicU64,
    reconnects: AtomicU64,
    connections: AtomicU64,
    connected: AtomicBool,
    /// The source ended (agent `END` / `BYE end`, end of a file or stdin)
    /// and no stream has started since.
    source_ended: AtomicBool,
    /// [`Client::stop`] was called.
    stopped: AtomicBool,
    evidence_received: AtomicU64,
    recorded_frames: AtomicU64,
    /// Queued when the client stopped and not stored within the drain's
    /// bound (counted with the client's drops).
    frames_dropped_at_stop: AtomicU64,
    records_dropped_at_stop: AtomicU64,
    queue: Mutex<Option<Arc<BatchQueue>>>,
}

/// A copy of the counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStatsSnapshot {
    /// Frames that reached the store.
    pub frames_received: u64,
    /// Frames lost: dropped by the agent for this client plus dropped by
    /// this client's queue.
    pub frames_dropped: u64,
    pub frames_dropped_agent: u64,
    pub frames_dropped_client: u64,
    /// Of the client's drops: frames still queued when the client stopped
    /// and left unstored past [`STOP_DRAIN`] (a slow ingest's backlog).
    pub frames_dropped_at_stop: u64,
    /// Frames read from the link (= received + dropped by the client).
    pub frames_read: u64,
    /// Non-frame records that reached the store.
    pub records_received: u64,
    pub records_dropped_client: u64,
    pub bytes_received: u64,
    pub reconnects: u64,
    pub connections: u64,
    pub connected: bool,
    /// The source ended: nothing more will come (unless an agent serves a
    /// new source on the same address, which the client attaches to).
    pub source_ended: bool,
    /// The client was stopped ([`Client::stop`]: a duration, the user).
    pub stopped: bool,
    /// Records carrying evidence for the diagnosis (PFC pauses, DPI drops)
    /// that reached the store and were noted in [`Client::analysis`].
    pub evidence_received: u64,
    pub frames_recorded: u64,
}

/// The state of the link as a user should see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Not attached yet.
    Connecting,
    /// A stream is flowing.
    Live,
    /// The source ended; not a failure.
    Ended,
    /// The link broke; retrying.
    Disconnected,
    /// The client left (its duration, the user) while the source went on.
    Stopped,
}

impl LinkState {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Connecting => "connecting",
            LinkState::Live => "live",
            LinkState::Ended => "ended",
            LinkState::Disconnected => "disconnected",
            LinkState::Stopped => "stopped",
        }
    }
}

impl LinkStatsSnapshot {
    pub fn state(&self) -> LinkState {
        if self.source_ended {
            LinkState::Ended
        } else if self.stopped {
            LinkState::Stopped
        } else if self.connected {
            LinkState::Live
        } else if self.connections == 0 {
            LinkState::Connecting
        } else {
            LinkState::Disconnected
        }
    }
}

impl LinkStats {
    pub fn snapshot(&self) -> LinkStatsSnapshot {
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (dc, drc) = q.map_or((0, 0), |q| (q.drops.frames(), q.drops.records()));
        let at_stop = self.frames_dropped_at_stop.load(Ordering::Relaxed);
        let (dc, drc) = (
            dc + at_stop,
            drc + self.records_dropped_at_stop.load(Ordering::Relaxed),
        );
        let da = self.frames_dropped_agent.load(Ordering::Relaxed);
        LinkStatsSnapshot {
            frames_received: self.frames_received.load(Ordering::Relaxed),
            frames_dropped: da + dc,
            frames_dropped_agent: da,
            frames_dropped_client: dc,
            frames_dropped_at_stop: at_stop,
            frames_read: self.frames_read.load(Ordering::Relaxed),
            records_received: self.records_received.load(Ordering::Relaxed),
            records_dropped_client: drc,
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
            connected: self.connected.load(Ordering::Relaxed),
            source_ended: self.source_ended.load(Ordering::Relaxed),
            stopped: self.stopped.load(Ordering::Relaxed),
            evidence_received: self.evidence_received.load(Ordering::Relaxed),
            frames_recorded: self.recorded_frames.load(Ordering::Relaxed),
        }
    }
}

/// Something the user should see at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    Connected {
        to: String,
        agent: String,
    },
    /// The link broke; `retry_in` is the backoff before the next try.
    Disconnected {
        reason: String,
        retry_in: Option<Duration>,
    },
    /// An `ERR` from the agent.
    AgentError {
        code: String,
        text: String,
    },
    /// The source ended (agent `END` / `BYE end`, or the end of a file /
    /// stdin).
    End(SourceEnd),
    /// Cannot go on (wrong token, incompatible version).
    Fatal(String),
}

/// How a source ended, as far as the client knows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceEnd {
    /// The agent's source (`stdin`, `follow:PATH`, `sim:NAME`), the file
    /// or `stdin`.
    pub source: String,
    /// Frames the agent's source published in all (from its `END`).
    pub frames: Option<u64>,
    /// Other records it published.
    pub records: Option<u64>,
}

impl std::fmt::Display for SourceEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.source.is_empty() {
            "the source"
        } else {
            &self.source
        })?;
        match (self.frames, self.records) {
            (Some(fr), Some(r)) => write!(f, " ended after {fr} frames and {r} records"),
            (Some(fr), None) => write!(f, " ended after {fr} frames"),
            _ => f.write_str(" ended"),
        }
    }
}

/// Why the client could not start.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("recording {path}: {source}")]
    Record {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Spawn(io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A running client. Dropping it without [`Client::stop`] leaves its
/// threads to end on their own when the link ends.
#[derive(Debug)]
pub struct Client {
    store: Arc<Store>,
    analysis: RcAnalyzer,
    stats: Arc<LinkStats>,
    stop: Arc<AtomicBool>,
    events: Receiver<LinkEvent>,
    threads: Vec<JoinHandle<()>>,
    rx_done: Arc<AtomicBool>,
    control: Control,
}

/// Sends control lines (`FILTER`, `START`, `STOP`) to the agent the client
/// is attached to; the agent's `OK`/`ERR` come back as link events.
#[derive(Debug, Clone, Default)]
pub struct Control(Arc<Mutex<Option<TcpStream>>>);

impl Control {
    /// Send `req` on the current connection.
    pub fn send(&self, req: &Request) -> io::Result<()> {
        let mut conn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match conn.as_mut() {
            Some(s) => s.write_all(format!("{req}\n").as_bytes()),
            None => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "not attached to an agent",
            )),
        }
    }

    fn set(&self, s: Option<TcpStream>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Client {
    pub fn start(cfg: ClientConfig) -> Result<Client, ClientError> {
        let store = match &cfg.spill {
            Some(spill) => Store::live_bounded(TimeBase::Nanoseconds, spill.clone())?,
            None => Store::live(TimeBase::Nanoseconds),
        };
        let analysis = RcAnalyzer::default();
        let stats = Arc::new(LinkStats::default());
        let queue = Arc::new(BatchQueue::new(cfg.queue_bytes, cfg.queue_batches));
        let pool = BatchPool::default();
        *stats.queue.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&queue));
        let stop = Arc::new(AtomicBool::new(false));
        let rx_done = Arc::new(AtomicBool::new(false));
        let control = Control::default();
        let (ev_tx, events) = std::sync::mpsc::channel();
        let mut threads = Vec::new();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(ClientError::Spawn)
        };
        let recorder = match &cfg.record {
            Some(path) => {
                let file = File::create(path).map_err(|source| ClientError::Record {
                    path: path.clone(),
                    source,
                })?;
                let w = PcapngWriter::with_capacity(1 << 20, BufWriter::new(file)).map_err(
                    |source| ClientError::Record {
                        path: path.clone(),
                        source,
                    },
                )?;
                let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<Batch>>(64);
                let flush = cfg.record_flush;
                let st = Arc::clone(&stats);
                let ev = ev_tx.clone();
                let pool = pool.clone();
                threads.push(spawn(
                    "attach-record",
                    Box::new(move || record_loop(w, &rx, flush, &st, &ev, &pool)),
                )?);
                Some(tx)
            }
            None => None,
        };
        {
            let store = Arc::clone(&store);
            let queue = Arc::clone(&queue);
            let stats = Arc::clone(&stats);
            let analyzer = analysis.clone();
            let decode = cfg.decode.clone();
            let pps = cfg.max_ingest_pps;
            let pool = pool.clone();
            let stop = Arc::clone(&stop);
            threads.push(spawn(
                "attach-ingest",
                Box::new(move || {
                    ingest_loop(&store, &queue, &stats, analyzer, decode, pps, &pool, &stop);
                }),
            )?);
        }
        {
            let rx = Rx {
                cfg,
                control: control.clone(),
                queue,
                pool,
                recorder,
                stats: Arc::clone(&stats),
                stop: Arc::clone(&stop),
                events: ev_tx,
            };
            let done = Arc::clone(&rx_done);
            threads.push(spawn(
                "attach-rx",
                Box::new(move || {
                    rx.run();
                    done.store(true, Ordering::Release);
                }),
            )?);
        }
        Ok(Client {
            store,
            analysis,
            stats,
            stop,
            events,
            threads,
            rx_done,
            control,
        })
    }

    /// The live store the link feeds.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The RC analysis run at ingest.
    pub fn analysis(&self) -> &RcAnalyzer {
        &self.analysis
    }

    pub fn stats(&self) -> LinkStatsSnapshot {
        self.stats.snapshot()
    }

    /// Sends control lines to the agent (the sniffer filter, start, stop).
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// Status changes, to show at once.
    pub fn events(&self) -> &Receiver<LinkEvent> {
        &self.events
    }

    /// Whether the link has ended for good (source end with
    /// `exit_on_end`, end of a file, a fatal error).
    pub fn is_finished(&self) -> bool {
        self.rx_done.load(Ordering::Acquire)
    }

    /// Stops reading, drains the queue into the store, closes the
    /// recording, and returns the final counters.
    pub fn stop(mut self) -> LinkStatsSnapshot {
        self.stats.stopped.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..).rev() {
            let _ = t.join();
        }
        self.stats.snapshot()
    }
}

/// How long a stopped client still stores what it had queued: a
/// `--duration` ends on time even when ingest (a debug build, a slow disk)
/// lags the link; what is left is counted as dropped at stop.
pub const STOP_DRAIN: Duration = Duration::from_secs(2);

#[allow(clippy::too_many_arguments)]
fn ingest_loop(
    store: &Store,
    queue: &BatchQueue,
    stats: &LinkStats,
    analyzer: RcAnalyzer,
    decode: DecodeConfig,
    max_pps: Option<u64>,
    pool: &BatchPool,
    stop: &AtomicBool,
) {
    let notes = analyzer.clone();
    let mut ingest = Ingest::new(decode, Box::new(analyzer));
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
                stats
                    .frames_dropped_at_stop
                    .fetch_add(b.frames(), Ordering::Relaxed);
                stats
                    .records_dropped_at_stop
                    .fetch_add(b.records(), Ordering::Relaxed);
                pool.recycle(b);
            }
            Pop::Batch(mut b) => {
                let evidence = ingest_batch(store, &mut ingest, &mut b, Some(&notes));
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
                stats
                    .frames_received
                    .fetch_add(b.frames(), Ordering::Relaxed);
                stats
                    .records_received
                    .fetch_add(b.records(), Ordering::Relaxed);
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
fn ingest_batch(
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
    let mut decoded = b.decoded().unwrap_or_default().iter();
    for e in b.iter() {
        if let Entry::Frame(f) = e
            && let Some(info) = decoded.next()
        {
            store.ingest_decoded(ingest, info, f.data, 1);
        }
    }
    store.flush_live(ingest);
    evidence
}

fn record_loop(
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

/// State of one connection, shared by the rx loop and the link reader's
/// events (same thread).
struct Conn {
    pending: Batch,
    last_rx: Instant,
    agent_dropped: u64,
    bye: Option<String>,
    /// The agent's `END`.
    end: Option<SourceEnd>,
    fatal: Option<String>,
    hello: Option<String>,
    told_client_drops: (u64, u64),
    last_drop_check: Instant,
}

struct Shared {
    conn: RefCell<Conn>,
    queue: Arc<BatchQueue>,
    pool: BatchPool,
    /// Set when this thread may decode frames for ingest (agent streams:
    /// Ethernet only).
    decode: Option<DecodeConfig>,
    recorder: Option<SyncSender<Arc<Batch>>>,
    stats: Arc<LinkStats>,
    stop: Arc<AtomicBool>,
    silence: Option<Duration>,
    events: std::sync::mpsc::Sender<LinkEvent>,
}

impl Shared {
    /// Hands the pending batch to the recorder and the ingest queue.
    fn publish(&self, conn: &mut Conn) {
        if conn.pending.is_empty() {
            return;
        }
        let mut b = self.pool.take(&mut conn.pending);
        // Ingest is behind: decode here, as the file indexer's reader does.
        if let Some(cfg) = &self.decode
            && self.queue.queued_batches() >= 2
        {
            b.decode(cfg);
        }
        let b = Arc::new(b);
        self.stats
            .frames_read
            .fetch_add(b.frames(), Ordering::Relaxed);
        self.stats
            .records_read
            .fetch_add(b.records(), Ordering::Relaxed);
        if let Some(r) = &self.recorder {
            let _ = r.send(Arc::clone(&b));
        }
        self.queue.push(b);
        self.report_client_drops(conn, false);
    }

    /// Records and stores the client queue's drop count when it changed
    /// (at most every 100 ms unless `now`).
    fn report_client_drops(&self, conn: &mut Conn, now: bool) {
        if !now && conn.last_drop_check.elapsed() < Duration::from_millis(100) {
            return;
        }
        conn.last_drop_check = Instant::now();
        let d = (self.queue.drops.frames(), self.queue.drops.records());
        if d == conn.told_client_drops {
            return;
        }
        conn.told_client_drops = d;
        self.send_forced(Record::Drops(DropCount {
            ts_ns: now_ns(),
            interface: CLIENT_QUEUE_INTERFACE,
            dropped: d.0,
            reason: DropReason::QueueFull,
        }));
    }

    /// A record that must reach both the recording and the store.
    fn send_forced(&self, r: Record) {
        let mut b = Batch::default();
        b.push_record(r);
        let b = Arc::new(b);
        if let Some(rec) = &self.recorder {
            let _ = rec.send(Arc::clone(&b));
        }
        self.queue.push_force(b);
    }
}

struct Events(Rc<Shared>);

impl LinkEvents for Events {
    fn before_read(&mut self) {
        if let Ok(mut c) = self.0.conn.try_borrow_mut() {
            self.0.publish(&mut c);
        }
    }
    fn received(&mut self, bytes: usize) {
        self.0
            .stats
            .bytes_received
            .fetch_add(bytes as u64, Ordering::Relaxed);
        if let Ok(mut c) = self.0.conn.try_borrow_mut() {
            c.last_rx = Instant::now();
        }
    }
    fn message(&mut self, text: &str) {
        let Ok(mut c) = self.0.conn.try_borrow_mut() else {
            return;
        };
        match Reply::parse(text) {
            Some(Reply::Hello { version, agent, .. }) => {
                if version != PROTOCOL_VERSION {
                    c.fatal = Some(format!(
                        "agent speaks protocol version {version}, this client {PROTOCOL_VERSION}"
                    ));
                }
                c.hello = Some(agent);
            }
            Some(Reply::Heartbeat { dropped_frames, .. }) => {
                c.agent_dropped = c.agent_dropped.max(dropped_frames);
                let total =
                    self.0.stats.agent_dropped_base.load(Ordering::Relaxed) + c.agent_dropped;
                self.0
                    .stats
                    .frames_dropped_agent
                    .store(total, Ordering::Relaxed);
            }
            Some(Reply::Err { code, text }) => {
                if matches!(
                    code,
                    ErrorCode::Auth | ErrorCode::Version | ErrorCode::Timeout
                ) {
                    c.fatal = Some(format!("agent: ERR {} {text}", code.as_str()));
                }
                let _ = self.0.events.send(LinkEvent::AgentError {
                    code: code.as_str().into(),
                    text,
                });
            }
            Some(Reply::End {
                source,
                frames,
                records,
            }) => {
                c.end = Some(SourceEnd {
                    source,
                    frames: Some(frames),
                    records: Some(records),
                });
            }
            Some(Reply::Bye { reason, .. }) => c.bye = Some(reason),
            _ => {}
        }
    }
    fn idle(&mut self) -> io::Result<()> {
        if self.0.stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("stopped"));
        }
        if let Ok(mut c) = self.0.conn.try_borrow_mut() {
            self.0.publish(&mut c);
            self.0.report_client_drops(&mut c, false);
            if let Some(limit) = self.0.silence
                && c.last_rx.elapsed() > limit
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no data or heartbeat for {:.1} s", limit.as_secs_f64()),
                ));
            }
        }
        Ok(())
    }
}

struct Rx {
    cfg: ClientConfig,
    /// The agent connection's write half, while connected.
    control: Control,
    queue: Arc<BatchQueue>,
    pool: BatchPool,
    recorder: Option<SyncSender<Arc<Batch>>>,
    stats: Arc<LinkStats>,
    stop: Arc<AtomicBool>,
    events: std::sync::mpsc::Sender<LinkEvent>,
}

/// Read buffer of an agent connection: large, so that one read takes in
/// thousands of frames.
const STREAM_BUFFER_BYTES: usize = 1 << 20;

/// How one connection ended.
enum Ended {
    /// The source ended (END / BYE end, end of file).
    End(SourceEnd),
    /// Cannot continue.
    Fatal(String),
    /// The link broke: retry.
    Broken(String),
    Stopped,
}

impl Rx {
    fn run(self) {
        let mut backoff = self.cfg.backoff_initial;
        loop {
            let ended = match &self.cfg.url {
                AttachUrl::Tcp { host, port } => match self.connect(host, *port) {
                    Ok(s) => {
                        backoff = self.cfg.backoff_initial;
                        let to = format!("{host}:{port}");
                        self.control.set(s.try_clone().ok());
                        let ended = self.serve_agent(s, &to);
                        self.control.set(None);
                        ended
                    }
                    Err(e) => Ended::Broken(format!("connect to {host}:{port}: {e}")),
                },
                AttachUrl::Stdin => self.serve(Box::new(io::stdin()), false, "stdin"),
                AttachUrl::File { path, follow } => {
                    let input: io::Result<Box<dyn Read>> = if *follow {
                        FollowFile::open(path).map(|f| Box::new(f) as Box<dyn Read>)
                    } else {
                        File::open(path).map(|f| Box::new(f) as Box<dyn Read>)
                    };
                    match input {
                        Ok(r) => self.serve(r, false, &path.display().to_string()),
                        Err(e) => Ended::Fatal(format!("{}: {e}", path.display())),
                    }
                }
            };
            self.stats.connected.store(false, Ordering::Relaxed);
            match ended {
                Ended::Stopped => break,
                Ended::End(end) => {
                    self.stats.source_ended.store(true, Ordering::Relaxed);
                    let _ = self.events.send(LinkEvent::End(end));
                    if self.cfg.exit_on_end || !matches!(self.cfg.url, AttachUrl::Tcp { .. }) {
                        break;
                    }
                    self.sleep(backoff);
                }
                Ended::Fatal(why) => {
                    let _ = self.events.send(LinkEvent::Fatal(why));
                    break;
                }
                Ended::Broken(reason) => {
                    if !matches!(self.cfg.url, AttachUrl::Tcp { .. }) {
                        let _ = self.events.send(LinkEvent::Fatal(reason));
                        break;
                    }
                    // After the source ended, the agent is expected to be
                    // gone: look for a new one quietly.
                    if !self.stats.source_ended.load(Ordering::Relaxed) {
                        let _ = self.events.send(LinkEvent::Disconnected {
                            reason,
                            retry_in: Some(backoff),
                        });
                    }
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(self.cfg.backoff_max);
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        self.queue.close();
    }

    fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
        }
    }

    fn connect(&self, host: &str, port: u16) -> io::Result<TcpStream> {
        let addrs: Vec<_> = (host, port).to_socket_addrs()?.collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                Ok(s) => {
                    s.set_read_timeout(Some(Duration::from_millis(100)))?;
                    s.set_nodelay(true)?;
                    let mut hello = format!("HELLO {PROTOCOL_VERSION} rocescope-attach\n");
                    if let Some(t) = &self.cfg.token {
                        hello.push_str(&format!("{}\n", Request::Auth { token: t.clone() }));
                    }
                    if self.cfg.probes != ProbeSet::All {
                        hello.push_str(&format!(
                            "{}\n",
                            Request::Subscribe(self.cfg.probes.clone())
                        ));
                    }
                    (&s).write_all(hello.as_bytes())?;
                    return Ok(s);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn shared(&self, tcp: bool) -> Rc<Shared> {
        Rc::new(Shared {
            conn: RefCell::new(Conn {
                pending: Batch::with_capacity(BATCH_ITEMS, 1 << 18),
                last_rx: Instant::now(),
                agent_dropped: 0,
                bye: None,
                end: None,
                fatal: None,
                hello: None,
                told_client_drops: (0, 0),
                last_drop_check: Instant::now(),
            }),
            queue: Arc::clone(&self.queue),
            pool: self.pool.clone(),
            decode: tcp.then(|| self.cfg.decode.clone()),
            recorder: self.recorder.clone(),
            stats: Arc::clone(&self.stats),
            stop: Arc::clone(&self.stop),
            silence: tcp.then_some(self.cfg.silence_timeout),
            events: self.events.clone(),
        })
    }

    /// The stream has started: count the connection and say so.
    fn attached(&self, shared: &Shared, to: &str) {
        self.stats.connected.store(true, Ordering::Relaxed);
        self.stats.source_ended.store(false, Ordering::Relaxed);
        let n = self.stats.connections.fetch_add(1, Ordering::Relaxed);
        if n > 0 {
            self.stats.reconnects.fetch_add(1, Ordering::Relaxed);
            shared.send_forced(Record::Marker {
                ts_ns: now_ns(),
                kind: MarkerKind::Reconnect,
                text: format!("reconnected to {to}"),
            });
        }
        let agent = shared.conn.borrow().hello.clone().unwrap_or_default();
        let _ = self.events.send(LinkEvent::Connected {
            to: to.to_owned(),
            agent,
        });
    }

    /// What the client does with a record of the stream.
    fn on_record(&self, c: &mut Conn, r: Record) {
        if let Record::Drops(d) = &r
            && d.interface == AGENT_QUEUE_INTERFACE
        {
            c.agent_dropped = c.agent_dropped.max(d.dropped);
            let total = self.stats.agent_dropped_base.load(Ordering::Relaxed) + c.agent_dropped;
            self.stats
                .frames_dropped_agent
                .store(total, Ordering::Relaxed);
        }
        c.pending.push_record(r);
    }

    /// Reads an agent's stream to its end: blocks are parsed straight out
    /// of the socket's read buffer ([`StreamParser`]).
    fn serve_agent(&self, mut input: TcpStream, to: &str) -> Ended {
        let shared = self.shared(true);
        let mut events = Events(Rc::clone(&shared));
        let mut parser = StreamParser::new();
        let mut buf = vec![0u8; STREAM_BUFFER_BYTES];
        let (mut start, mut end) = (0usize, 0usize);
        let mut attached = false;
        let error = loop {
            let parsed = parser.parse(&buf[start..end], &mut |item| match item {
                Parsed::Frame {
                    ts_ns,
                    port,
                    direction,
                    orig_len,
                    data,
                } => {
                    let mut c = shared.conn.borrow_mut();
                    c.pending.push_frame(ts_ns, port, direction, orig_len, data);
                    if c.pending.len() >= BATCH_ITEMS {
                        shared.publish(&mut c);
                    }
                }
                Parsed::Record(r) => {
                    let mut c = shared.conn.borrow_mut();
                    self.on_record(&mut c, r);
                    if c.pending.len() >= BATCH_ITEMS {
                        shared.publish(&mut c);
                    }
                }
                Parsed::Message(text) => events.message(&String::from_utf8_lossy(text)),
            });
            match parsed {
                Ok(n) => start += n,
                Err(e) => break Some(e.to_string()),
            }
            if !attached && start > 0 {
                attached = true;
                self.attached(&shared, to);
            }
            if start == end {
                (start, end) = (0, 0);
            } else if end == buf.len() || start + parser.need() > buf.len() {
                buf.copy_within(start..end, 0);
                (start, end) = (0, end - start);
                if parser.need() > buf.len() {
                    buf.resize(parser.need(), 0);
                }
            }
            // Seen here too, not only when the link is idle: a busy link
            // would otherwise never let the client stop.
            if self.stop.load(Ordering::Relaxed) {
                break None;
            }
            events.before_read();
            // A stream that never pauses never reaches `idle`: see stop here.
            if self.stop.load(Ordering::Relaxed) {
                break None;
            }
            match input.read(&mut buf[end..]) {
                Ok(0) if attached => break None,
                Ok(0) => break Some("the agent closed before its stream began".into()),
                Ok(k) => {
                    end += k;
                    events.received(k);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if let Err(e) = events.idle() {
                        break Some(e.to_string());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e.to_string()),
            }
        };
        if !attached && self.stop.load(Ordering::Relaxed) {
            return Ended::Stopped;
        }
        self.finish(&shared, error, to)
    }

    /// Reads a capture stream (stdin, a file) to its end.
    fn serve(&self, input: Box<dyn Read>, tcp: bool, to: &str) -> Ended {
        let shared = self.shared(tcp);
        let reader = LinkReader::new(input, Events(Rc::clone(&shared)), tcp);
        let mut cr = match CaptureReader::new(reader) {
            Ok(cr) => cr,
            Err(e) => {
                if self.stop.load(Ordering::Relaxed) {
                    return Ended::Stopped;
                }
                return self.finish(&shared, Some(e.to_string()), to);
            }
        };
        self.attached(&shared, to);
        let error = loop {
            if self.stop.load(Ordering::Relaxed) {
                break None;
            }
            match cr.next_item() {
                Ok(Some(item)) => {
                    let mut c = shared.conn.borrow_mut();
                    match item {
                        CaptureItem::Frame(f) => c.pending.push_capture_frame(&f),
                        CaptureItem::Record(r) => self.on_record(&mut c, r),
                    }
                    if c.pending.len() >= BATCH_ITEMS {
                        shared.publish(&mut c);
                    }
                }
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        drop(cr);
        self.finish(&shared, error, to)
    }

    fn finish(&self, shared: &Rc<Shared>, error: Option<String>, source_name: &str) -> Ended {
        let mut c = shared.conn.borrow_mut();
        shared.publish(&mut c);
        shared.report_client_drops(&mut c, true);
        // Carry this connection's agent drops into the total.
        let base = self
            .stats
            .agent_dropped_base
            .fetch_add(c.agent_dropped, Ordering::Relaxed)
            + c.agent_dropped;
        self.stats
            .frames_dropped_agent
            .store(base, Ordering::Relaxed);
        if let Some(f) = c.fatal.take() {
            return Ended::Fatal(f);
        }
        if self.stop.load(Ordering::Relaxed) {
            return Ended::Stopped;
        }
        let end = c.end.take().unwrap_or_else(|| SourceEnd {
            source: source_name.to_owned(),
            ..SourceEnd::default()
        });
        match (c.bye.as_deref(), error) {
            (Some("end"), _) => Ended::End(end),
            (Some(reason), _) => Ended::Broken(format!("agent closed the connection ({reason})")),
            (None, Some(e)) => Ended::Broken(e),
            (None, None) if matches!(self.cfg.url, AttachUrl::Tcp { .. }) => {
                Ended::Broken("connection closed by the agent".into())
            }
            (None, None) => Ended::End(end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Agent, AgentConfig};
    use crate::sim::SimSource;
    use rocescope_sim::{Scenario, Simulator};

    /// `ingest_batch` on every path (raw, decoded and taken in place,
    /// decoded and shared with the recorder), records between frames.
    #[test]
    fn ingest_batch_keeps_rows_and_bytes_on_every_path() {
        use rocescope_decoders::{Opcode, PacketBuilder};
        use rocescope_replay::store::NoAnalysis;
        let frames: Vec<Vec<u8>> = (0..50u32)
            .map(|i| {
                let mut f = Vec::new();
                PacketBuilder::rocev2_ipv4(
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    Opcode::RC_WRITE_ONLY,
                    9,
                    i,
                )
                .build_into(&vec![7; i as usize % 5], &mut f);
                f
            })
            .collect();
        let batch = || {
            let mut b = Batch::default();
            for (i, f) in frames.iter().enumerate() {
                if i % 7 == 3 {
                    b.push_record(Record::Annotation {
                        ts_ns: i as u64,
                        text: format!("note {i}"),
                    });
                }
                b.push_frame(i as u64 * 10, 0, None, f.len() as u32, f);
            }
            b
        };
        for (decode, shared) in [(false, false), (true, false), (true, true)] {
            let store = Store::live(TimeBase::Nanoseconds);
            let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(NoAnalysis));
            // Twice, so that the second batch lands after the first's bytes.
            for _ in 0..2 {
                let mut b = batch();
                if decode {
                    b.decode(&DecodeConfig::default());
                }
                let mut b = Arc::new(b);
                let recorder = shared.then(|| Arc::clone(&b));
                ingest_batch(&store, &mut ingest, &mut b, None);
                drop(recorder);
            }
            store.finish_live(&mut ingest);
            assert_eq!(store.len(), 2 * frames.len() as u64);
            assert_eq!(store.record_count(), 2 * 7);
            for i in 0..store.len() {
                let k = i as usize % frames.len();
                let row = store.row(i).expect("row");
                assert_eq!(row.psn, k as u32, "{decode} {shared} row {i}");
                assert_eq!(store.frame_bytes(i).expect("bytes"), frames[k], "row {i}");
            }
        }
    }

    /// Every frame reaches the store with its own bytes, whether ingest
    /// decodes it or the socket thread did (a slow ingest makes it decode).
    #[test]
    fn stores_every_frame_with_its_bytes() {
        let mut sc = Scenario::builtin("default").expect("default");
        sc.bound_to_ns(3_000_000);
        let mut want = Vec::new();
        Simulator::new(sc.clone()).run(&mut |r| {
            if let Record::Frame { data, .. } = r {
                want.push(data);
            }
        });
        assert!(want.len() > 1000, "{}", want.len());
        // Slow ingest; and with a recording, which shares the batches
        // (ingest then copies the decoded rows instead of taking them).
        let rec =
            std::env::temp_dir().join(format!("rocescope-client-{}.pcapng", std::process::id()));
        for (slow, record) in [
            (None, None),
            (Some(1_000_000), None),
            (Some(1_000_000), Some(rec.clone())),
        ] {
            let mut cfg = AgentConfig::new("127.0.0.1:0".parse().expect("addr"));
            cfg.wait_for_client = true;
            let agent = Agent::bind(cfg).expect("bind");
            let port = agent.local_addr().expect("addr").port();
            let source = Box::new(SimSource::new(sc.clone(), None));
            let t = std::thread::spawn(move || agent.run(source, Vec::new()));
            let mut ccfg = ClientConfig::new(AttachUrl::Tcp {
                host: "127.0.0.1".into(),
                port,
            });
            ccfg.exit_on_end = true;
            ccfg.max_ingest_pps = slow;
            ccfg.record = record;
            let client = Client::start(ccfg).expect("client");
            while !client.is_finished() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let store = Arc::clone(client.store());
            let s = client.stop();
            let _ = t.join();
            assert_eq!(s.frames_dropped, 0);
            assert_eq!(store.len(), want.len() as u64);
            for (i, w) in want.iter().enumerate() {
                assert_eq!(&store.frame_bytes(i as u64).expect("bytes"), w, "row {i}");
            }
        }
        let _ = std::fs::remove_file(&rec);
    }
}
