//! The agent: serves one [`Source`] (plus side sources such as counters) to
//! any number of clients over TCP, as PROTOCOL.md describes.
//!
//! Threads: one per source, one accepting, and two per client (control
//! lines in; pcapng out). Each client has its own bounded [`BatchQueue`]:
//! a client that reads slowly or not at all loses whole batches, counted
//! and reported to it, and never slows the sources or other clients. A
//! failure (a panic) of the accepting thread stops the agent with it as
//! the error; of a client's line reader, closes that client with BYE.

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocescope_replay::record::{DropCount, DropReason, MarkerKind};
use rocescope_replay::{PcapngWriter, Record};

use crate::batch::{Batch, BatchPool, Entry};
use crate::protocol::{
    AGENT_QUEUE_INTERFACE, CAPS, ErrorCode, Line, LineReader, MAX_TOKEN_BYTES, MIN_TOKEN_BYTES,
    PROTOCOL_VERSION, ProbeSet, Reply, Request, token_matches,
};
use crate::queue::{BatchQueue, Pop};
use crate::source::{Publisher, Source, SourceStatus};

/// How the agent runs. [`AgentConfig::new`] has the defaults.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub listen: SocketAddr,
    /// Required from every client (`AUTH`) when set; required to be set
    /// when `listen` is not a loopback address.
    pub token: Option<Vec<u8>>,
    /// Per-client queue limit, bytes of batches.
    pub client_queue_bytes: usize,
    /// Per-client queue limit, batches.
    pub client_queue_batches: usize,
    pub heartbeat: Duration,
    /// Time a client has to authenticate.
    pub auth_timeout: Duration,
    /// A write to a client blocked this long ends its connection.
    pub write_timeout: Duration,
    /// Start the source only once a client is attached (and authenticated).
    pub wait_for_client: bool,
    pub max_clients: usize,
    /// The card's control program for FILTER / START / STOP.
    pub control: Option<CardControl>,
    /// A thread made to fail, for the tests of what a failure tells.
    #[cfg(test)]
    pub(crate) fails: Option<&'static str>,
}

impl AgentConfig {
    pub fn new(listen: SocketAddr) -> AgentConfig {
        AgentConfig {
            listen,
            token: None,
            client_queue_bytes: 64 << 20,
            client_queue_batches: 4096,
            heartbeat: Duration::from_secs(1),
            auth_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            wait_for_client: false,
            max_clients: 32,
            control: None,
            #[cfg(test)]
            fails: None,
        }
    }
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("listening on {addr} (not loopback) needs a token: pass --token-file")]
    TokenRequired { addr: SocketAddr },
    #[error("token: {0}")]
    BadToken(String),
    #[error("listen on {addr}: {cause}")]
    Listen { addr: SocketAddr, cause: io::Error },
    #[error("source {name}: {error}")]
    Source { name: String, error: String },
    /// One of the agent's own threads failed (a bug), told in its words.
    #[error("{0}")]
    Failed(String),
}

/// Reads and checks a token file: one line of 16-256 printable ASCII
/// characters without spaces (surrounding whitespace is ignored).
pub fn read_token_file(path: &std::path::Path) -> Result<Vec<u8>, AgentError> {
    let text = std::fs::read(path)
        .map_err(|e| AgentError::BadToken(format!("{}: {e}", path.display())))?;
    let token = text.trim_ascii();
    if token.len() < MIN_TOKEN_BYTES || token.len() > MAX_TOKEN_BYTES {
        return Err(AgentError::BadToken(format!(
            "{}: the token must be {MIN_TOKEN_BYTES}-{MAX_TOKEN_BYTES} bytes, it is {}",
            path.display(),
            token.len()
        )));
    }
    if !token.iter().all(|b| b.is_ascii_graphic()) {
        return Err(AgentError::BadToken(format!(
            "{}: the token must be printable ASCII without spaces",
            path.display()
        )));
    }
    Ok(token.to_vec())
}

/// The card's control program, run as `PROGRAM [ARGS...] start|stop|filter
/// 0xHEX16` (no shell). Exit status 0 is success; its output (first 400
/// bytes) goes into the reply. Runs are serialised.
#[derive(Debug, Clone)]
pub struct CardControl {
    argv: Vec<String>,
    timeout: Duration,
    lock: Arc<Mutex<()>>,
}

impl CardControl {
    /// `command` is split at whitespace into program and leading arguments.
    pub fn new(command: &str) -> Option<CardControl> {
        let argv: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        if argv.is_empty() {
            return None;
        }
        Some(CardControl {
            argv,
            timeout: Duration::from_secs(10),
            lock: Arc::default(),
        })
    }

    /// Runs the program with `args` appended.
    pub fn run(&self, args: &[String]) -> Result<String, String> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut child = Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.argv[0]))?;
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if start.elapsed() > self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{} timed out", self.argv[0]));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(e.to_string()),
            }
        };
        let mut out = Vec::new();
        if let Some(mut o) = child.stdout.take() {
            let _ = io::Read::read_to_end(&mut io::Read::take(&mut o, 400), &mut out);
        }
        if let Some(mut e) = child.stderr.take() {
            let _ = io::Read::read_to_end(&mut io::Read::take(&mut e, 400), &mut out);
        }
        let text = String::from_utf8_lossy(&out).trim().replace('\n', "; ");
        if status.success() {
            Ok(text)
        } else {
            Err(format!("{status}: {text}"))
        }
    }
}

/// Counters of an agent (running totals).
#[derive(Debug, Default)]
pub struct AgentStats {
    pub clients_accepted: AtomicU64,
    pub clients_active: AtomicU64,
    pub clients_rejected: AtomicU64,
    pub auth_failures: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub frames_published: AtomicU64,
    pub records_published: AtomicU64,
    /// Frames dropped for clients, all clients together.
    pub frames_dropped: AtomicU64,
    pub frames_sent: AtomicU64,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// One attached client, as the hub and its threads see it.
#[derive(Debug)]
struct Slot {
    id: u64,
    queue: BatchQueue,
    replies: Mutex<Vec<Reply>>,
    probes: Mutex<ProbeSet>,
    /// Stop serving this client (error, BYE, auth failure).
    closed: AtomicBool,
}

/// Fans batches out to the clients' queues.
#[derive(Debug, Default)]
struct Hub {
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Probe definitions seen so far: every client gets them first.
    probe_defs: Mutex<Vec<Record>>,
    stats: Arc<AgentStats>,
    /// `BYE` reason and text once the agent ends.
    end: Mutex<(String, String)>,
    /// Batches the client writers are done with, back to the sources.
    pool: BatchPool,
}

impl Hub {
    fn broadcast(&self, batch: Batch) {
        batch.count_into(&self.stats.frames_published, &self.stats.records_published);
        if batch.records() > 0 {
            let mut defs = self.probe_defs.lock().unwrap_or_else(|e| e.into_inner());
            for e in batch.iter() {
                if let Entry::Record(r @ Record::ProbeDef(d)) = e {
                    defs.retain(|x| !matches!(x, Record::ProbeDef(x) if x.probe == d.probe));
                    if defs.len() < 4096 {
                        defs.push(r.clone());
                    }
                }
            }
        }
        let batch = Arc::new(batch);
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        for s in slots.iter() {
            if !s.queue.push(Arc::clone(&batch)) {
                self.stats
                    .frames_dropped
                    .fetch_add(batch.frames(), Ordering::Relaxed);
            }
        }
    }

    /// Adds a client; its queue starts with the probe definitions.
    fn join(&self, slot: &Arc<Slot>) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let defs = self.probe_defs.lock().unwrap_or_else(|e| e.into_inner());
        if !defs.is_empty() {
            let mut b = Batch::default();
            for d in defs.iter() {
                b.push_record(d.clone());
            }
            slot.queue.push(Arc::new(b));
        }
        slots.push(Arc::clone(slot));
        self.stats.clients_active.fetch_add(1, Ordering::Relaxed);
    }

    fn leave(&self, id: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let before = slots.len();
        slots.retain(|s| s.id != id);
        if slots.len() < before {
            self.stats.clients_active.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn count(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Ends every client's stream (after its queue drains).
    fn close_all(&self) {
        for s in self.slots.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            s.queue.close();
        }
    }
}

/// A bound agent, ready to [`run`](Agent::run).
#[derive(Debug)]
pub struct Agent {
    listener: TcpListener,
    cfg: Arc<AgentConfig>,
    hub: Arc<Hub>,
    stop: Arc<AtomicBool>,
    source_name: Arc<Mutex<String>>,
}

impl Agent {
    /// Binds the listening socket. A non-loopback address without a token
    /// is refused.
    pub fn bind(cfg: AgentConfig) -> Result<Agent, AgentError> {
        if !cfg.listen.ip().is_loopback() && cfg.token.is_none() {
            return Err(AgentError::TokenRequired { addr: cfg.listen });
        }
        let listener = TcpListener::bind(cfg.listen).map_err(|cause| AgentError::Listen {
            addr: cfg.listen,
            cause,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|cause| AgentError::Listen {
                addr: cfg.listen,
                cause,
            })?;
        Ok(Agent {
            listener,
            cfg: Arc::new(cfg),
            hub: Arc::default(),
            stop: Arc::default(),
            source_name: Arc::default(),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Set it to stop the agent (sources stop, clients get `BYE shutdown`).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    pub fn stats(&self) -> Arc<AgentStats> {
        Arc::clone(&self.hub.stats)
    }

    /// Serves until the main source ends (then every client's queue is
    /// drained, it gets `BYE end`, and `run` returns) or the stop flag is
    /// set. Side sources run alongside and stop with it.
    pub fn run(
        self,
        mut main: Box<dyn Source>,
        side: Vec<Box<dyn Source>>,
    ) -> Result<SourceStatus, AgentError> {
        *self.source_name.lock().unwrap_or_else(|e| e.into_inner()) = main.describe();
        let clients: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        // Without its accepting thread the agent would serve on to the
        // clients it has and refuse every other, silently: a failure there
        // stops the agent with the failure as its error.
        let accept_failed: Arc<Mutex<Option<String>>> = Arc::default();
        let accept = {
            let listener = self.listener;
            let cfg = Arc::clone(&self.cfg);
            let hub = Arc::clone(&self.hub);
            let stop = Arc::clone(&self.stop);
            let name = Arc::clone(&self.source_name);
            let clients = Arc::clone(&clients);
            let failed = Arc::clone(&accept_failed);
            std::thread::Builder::new()
                .name("agent-accept".into())
                .spawn(move || {
                    let ran = rocescope_replay::contain::contain(|| {
                        #[cfg(test)]
                        if cfg.fails == Some("accept") {
                            panic!("an accepting thread's failure, for the test");
                        }
                        accept_loop(&listener, &cfg, &hub, &stop, &name, &clients)
                    });
                    if let Err(why) = ran {
                        let text = format!(
                            "the agent's accepting thread failed ({why}; a rocescope bug: please report it): no new client could connect"
                        );
                        tracing::error!("{text}: stopping");
                        *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
                        stop.store(true, Ordering::Relaxed);
                    }
                })
                .map_err(|e| AgentError::Source {
                    name: "accept".into(),
                    error: e.to_string(),
                })?
        };
        if self.cfg.wait_for_client {
            tracing::info!("waiting for a client before reading the source");
            while self.hub.count() == 0 && !self.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let side_stop = Arc::new(AtomicBool::new(false));
        let mut side_threads = Vec::new();
        for mut s in side {
            let hub = Arc::clone(&self.hub);
            let pool = hub.pool.clone();
            let out =
                Publisher::new(Arc::clone(&side_stop), move |b| hub.broadcast(b)).with_pool(pool);
            let name = s.describe();
            let told = name.clone();
            match std::thread::Builder::new()
                .name("agent-side-source".into())
                .spawn(move || {
                    if let Err(e) = s.run(&out) {
                        tracing::error!("source {name}: {e}");
                    }
                }) {
                Ok(t) => side_threads.push(t),
                // Its records are missing from every client's stream: said.
                Err(e) => tracing::error!("source {told} not read: cannot start its thread: {e}"),
            }
        }
        let hub = Arc::clone(&self.hub);
        let pool = hub.pool.clone();
        let audience = Arc::clone(&self.hub);
        let out = Publisher::new(Arc::clone(&self.stop), move |b| hub.broadcast(b))
            .with_pool(pool)
            .with_audience(move || audience.count());
        let result = main.run(&out);
        let accept_failed = accept_failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match &result {
            Ok(SourceStatus::End) => tracing::info!("source {} ended", main.describe()),
            Ok(SourceStatus::Stopped) => tracing::info!("stopping"),
            Err(e) => tracing::error!("source {} failed: {e}", main.describe()),
        }
        side_stop.store(true, Ordering::Relaxed);
        for t in side_threads {
            let _ = t.join();
        }
        // No more data: let each client drain, then say BYE.
        *self.hub.end.lock().unwrap_or_else(|e| e.into_inner()) = match &result {
            _ if accept_failed.is_some() => {
                ("error".into(), accept_failed.clone().unwrap_or_default())
            }
            Ok(SourceStatus::End) => ("end".into(), "the source ended".into()),
            Ok(SourceStatus::Stopped) => ("shutdown".into(), "the agent stops".into()),
            Err(e) => ("error".into(), format!("source failed: {e}")),
        };
        self.stop.store(true, Ordering::Relaxed);
        self.hub.close_all();
        let _ = accept.join();
        let handles = std::mem::take(&mut *clients.lock().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            let _ = h.join();
        }
        if let Some(text) = accept_failed {
            return Err(AgentError::Failed(text));
        }
        result.map_err(|e| AgentError::Source {
            name: main.describe(),
            error: e.to_string(),
        })
    }
}

fn accept_loop(
    listener: &TcpListener,
    cfg: &Arc<AgentConfig>,
    hub: &Arc<Hub>,
    stop: &Arc<AtomicBool>,
    source_name: &Arc<Mutex<String>>,
    clients: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    let mut next_id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                next_id += 1;
                hub.stats.clients_accepted.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_nonblocking(false);
                let mut live = clients.lock().unwrap_or_else(|e| e.into_inner());
                live.retain(|h| !h.is_finished());
                if live.len() >= cfg.max_clients {
                    hub.stats.clients_rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        "client {next_id} from {peer} refused: {} clients already",
                        cfg.max_clients
                    );
                    reject(stream, "too many clients");
                    continue;
                }
                tracing::info!("client {next_id} from {peer} connected");
                let conn = Conn {
                    id: next_id,
                    peer,
                    cfg: Arc::clone(cfg),
                    hub: Arc::clone(hub),
                    stop: Arc::clone(stop),
                    source: source_name
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone(),
                };
                // A second handle, for a client no thread could be made
                // for to be told why it is refused, not just cut off.
                let spare = stream.try_clone();
                match std::thread::Builder::new()
                    .name(format!("agent-client-{next_id}"))
                    .spawn(move || conn.serve(stream))
                {
                    Ok(h) => live.push(h),
                    Err(e) => {
                        hub.stats.clients_rejected.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            "client {next_id} from {peer} refused: cannot start its thread: {e}"
                        );
                        if let Ok(s) = spare {
                            reject(s, "the agent cannot start a thread for this client");
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Section header, then `BYE`, then close.
fn reject(stream: TcpStream, why: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    if let Ok(mut w) = PcapngWriter::new(&stream) {
        let _ = w.flush();
    }
    let mut b = Vec::new();
    Reply::Bye {
        reason: "error".into(),
        text: why.into(),
    }
    .encode_block(now_ns(), &mut b);
    let _ = (&stream).write_all(&b);
    let _ = stream.shutdown(Shutdown::Both);
}

struct Conn {
    id: u64,
    peer: SocketAddr,
    cfg: Arc<AgentConfig>,
    hub: Arc<Hub>,
    stop: Arc<AtomicBool>,
    source: String,
}

/// What the writer sent a client, for the log line when it leaves.
#[derive(Debug, Default)]
struct SentCounts {
    frames: u64,
}

/// Consecutive protocol errors after which a client is disconnected.
const MAX_ERRORS: u32 = 8;

impl Conn {
    /// Runs the writer here and the control reader on a second thread.
    fn serve(self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(self.cfg.write_timeout));
        let slot = Arc::new(Slot {
            id: self.id,
            queue: BatchQueue::new(self.cfg.client_queue_bytes, self.cfg.client_queue_batches),
            replies: Mutex::new(vec![Reply::Hello {
                version: PROTOCOL_VERSION,
                agent: concat!("rocescope-agent/", env!("CARGO_PKG_VERSION")).into(),
                auth_required: self.cfg.token.is_some(),
                caps: CAPS.iter().map(|c| (*c).to_owned()).collect(),
                source: self.source.clone(),
            }]),
            probes: Mutex::new(ProbeSet::All),
            closed: AtomicBool::new(false),
        });
        let authed = Arc::new(AtomicBool::new(self.cfg.token.is_none()));
        if self.cfg.token.is_none() {
            self.hub.join(&slot);
        }
        let reader = stream.try_clone().and_then(|rs| {
            let slot = Arc::clone(&slot);
            let authed = Arc::clone(&authed);
            let cfg = Arc::clone(&self.cfg);
            let hub = Arc::clone(&self.hub);
            let stop = Arc::clone(&self.stop);
            let id = self.id;
            std::thread::Builder::new()
                .name(format!("agent-control-{id}"))
                .spawn(move || {
                    let ran = rocescope_replay::contain::contain(|| {
                        #[cfg(test)]
                        if cfg.fails == Some("control") {
                            panic!("a control reader's failure, for the test");
                        }
                        control_loop(rs, &slot, &authed, &cfg, &hub, &stop);
                    });
                    // Its lines (AUTH, FILTER, BYE) would go unread: the
                    // client is told why and closed, never left waiting.
                    if let Err(why) = ran {
                        let text = format!(
                            "the agent's reader of this client's lines failed ({why}; a rocescope bug: please report it)"
                        );
                        tracing::error!("client {id}: {text}: closing");
                        slot.replies
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(Reply::Bye {
                                reason: "error".into(),
                                text,
                            });
                        slot.closed.store(true, Ordering::Relaxed);
                    }
                })
        });
        let (id, peer) = (self.id, self.peer);
        // Without its reader a client's lines (AUTH, FILTER) go unread: it
        // would wait for good, unauthenticated or unfiltered. Refused, said.
        let reader = match reader {
            Ok(r) => r,
            Err(e) => {
                self.hub.leave(id);
                self.hub
                    .stats
                    .clients_rejected
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!("client {id} from {peer} refused: cannot read its lines: {e}");
                reject(stream, "the agent cannot read this client's lines");
                return;
            }
        };
        let mut sent = SentCounts::default();
        match self.write_loop(&stream, &slot, &mut sent) {
            Ok(()) => tracing::info!(
                "client {id} from {peer} left: {} frames sent, {} dropped for a full queue",
                sent.frames,
                slot.queue.drops.frames()
            ),
            // The client went away or stalled: nothing to tell it.
            Err(e) => tracing::info!(
                "client {id} from {peer} gone ({e}): {} frames sent, {} dropped for a full queue",
                sent.frames,
                slot.queue.drops.frames()
            ),
        }
        slot.closed.store(true, Ordering::Relaxed);
        self.hub.leave(self.id);
        slot.queue.close();
        let _ = stream.shutdown(Shutdown::Both);
        // The reader ends with the socket shut above; a failure of it was
        // told (logged, the client sent BYE) by its thread.
        let _ = reader.join();
    }

    fn write_loop(
        &self,
        stream: &TcpStream,
        slot: &Arc<Slot>,
        counts: &mut SentCounts,
    ) -> io::Result<()> {
        let mut raw = stream;
        let mut w = PcapngWriter::with_capacity(256 * 1024, stream)?;
        w.flush()?;
        let mut block = Vec::with_capacity(2048);
        let mut last_beat = Instant::now();
        let mut seq = 0u64;
        let mut sent_frames = 0u64;
        let mut told_dropped = 0u64;
        let mut last_drop_log: Option<Instant> = None;
        let probes_all = |slot: &Slot| {
            matches!(
                *slot.probes.lock().unwrap_or_else(|e| e.into_inner()),
                ProbeSet::All
            )
        };
        let mut send_replies = |w: &mut PcapngWriter<&TcpStream>, raw: &mut &TcpStream| {
            let replies =
                std::mem::take(&mut *slot.replies.lock().unwrap_or_else(|e| e.into_inner()));
            if replies.is_empty() {
                return Ok(());
            }
            w.flush()?;
            block.clear();
            for r in &replies {
                r.encode_block(now_ns(), &mut block);
            }
            raw.write_all(&block)
        };
        loop {
            send_replies(&mut w, &mut raw)?;
            if slot.closed.load(Ordering::Relaxed) {
                // Replies pushed just before the close (ERR auth, BYE).
                send_replies(&mut w, &mut raw)?;
                w.flush()?;
                return Ok(());
            }
            counts.frames = sent_frames;
            let dropped = slot.queue.drops.frames();
            if dropped != told_dropped {
                // Once a second at most: a slow client drops often.
                if last_drop_log.is_none_or(|t: Instant| t.elapsed() >= Duration::from_secs(1)) {
                    last_drop_log = Some(Instant::now());
                    tracing::warn!(
                        "client {} from {} reads slower than the source: {dropped} frames dropped so far",
                        self.id,
                        self.peer
                    );
                }
                told_dropped = dropped;
                w.write_record(&queue_drops(dropped))?;
            }
            if last_beat.elapsed() >= self.cfg.heartbeat {
                last_beat = Instant::now();
                seq += 1;
                slot.replies
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Reply::Heartbeat {
                        seq,
                        sent_frames,
                        dropped_frames: dropped,
                        dropped_records: slot.queue.drops.records(),
                    });
                continue;
            }
            match slot.queue.pop(Duration::from_millis(20)) {
                Pop::Batch(b) => {
                    let all = probes_all(slot);
                    let probes = if all {
                        ProbeSet::All
                    } else {
                        slot.probes
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone()
                    };
                    for e in b.iter() {
                        match e {
                            Entry::Frame(f) => {
                                w.write_frame(
                                    f.meta.ts_ns,
                                    f.meta.port,
                                    f.meta.direction,
                                    f.meta.orig_len,
                                    f.data,
                                )?;
                                sent_frames += 1;
                            }
                            Entry::Record(Record::Profiler(p)) if !probes.contains(p.probe) => {}
                            Entry::Record(r) => w.write_record(r)?,
                        }
                    }
                    self.hub
                        .stats
                        .frames_sent
                        .fetch_add(b.frames(), Ordering::Relaxed);
                    self.hub.pool.recycle(b);
                    if slot.queue.queued_batches() == 0 {
                        w.flush()?;
                    }
                }
                Pop::Empty => w.flush()?,
                Pop::Closed => {
                    counts.frames = sent_frames;
                    // The source ended (or the agent stops): final counts.
                    let dropped = slot.queue.drops.frames();
                    w.write_record(&queue_drops(dropped))?;
                    w.write_record(&Record::Marker {
                        ts_ns: now_ns(),
                        kind: MarkerKind::Stop,
                        text: "agent: end of stream".into(),
                    })?;
                    let (reason, text) = self
                        .hub
                        .end
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone();
                    let mut r = slot.replies.lock().unwrap_or_else(|e| e.into_inner());
                    if reason == "end" {
                        r.push(Reply::End {
                            source: self.source.clone(),
                            frames: self.hub.stats.frames_published.load(Ordering::Relaxed),
                            records: self.hub.stats.records_published.load(Ordering::Relaxed),
                        });
                    }
                    r.push(Reply::Heartbeat {
                        seq: seq + 1,
                        sent_frames,
                        dropped_frames: dropped,
                        dropped_records: slot.queue.drops.records(),
                    });
                    r.push(Reply::Bye { reason, text });
                    drop(r);
                    send_replies(&mut w, &mut raw)?;
                    w.flush()?;
                    return Ok(());
                }
            }
        }
    }
}

fn control_loop(
    stream: TcpStream,
    slot: &Arc<Slot>,
    authed: &AtomicBool,
    cfg: &AgentConfig,
    hub: &Arc<Hub>,
    stop: &AtomicBool,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let deadline = Instant::now() + cfg.auth_timeout;
    let mut lines = LineReader::new(&stream);
    let mut errors = 0u32;
    let reply = |r: Reply| {
        slot.replies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
    };
    let close = || slot.closed.store(true, Ordering::Relaxed);
    let id = slot.id;
    let err = |code: ErrorCode, text: String, errors: &mut u32| {
        tracing::warn!("client {id}: ERR {} {text}", code.as_str());
        hub.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
        reply(Reply::Err { code, text });
        *errors += 1;
        if *errors >= MAX_ERRORS {
            reply(Reply::Err {
                code: ErrorCode::TooManyErrors,
                text: format!("{MAX_ERRORS} errors in a row: closing"),
            });
            close();
        }
    };
    // A client that may not stay: logged, counted, told why, closed.
    let refuse = |code: ErrorCode, text: &str| {
        tracing::warn!("client {id}: {text}, closing");
        hub.stats.auth_failures.fetch_add(1, Ordering::Relaxed);
        reply(Reply::Err {
            code,
            text: text.into(),
        });
        close();
    };
    while !slot.closed.load(Ordering::Relaxed) {
        if !authed.load(Ordering::Relaxed) && Instant::now() > deadline {
            refuse(ErrorCode::Timeout, "no AUTH in time");
            return;
        }
        let line = match lines.next_line() {
            Ok(l) => l,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if stop.load(Ordering::Relaxed) && slot.queue.queued_batches() == 0 {
                    // Keep reading until the writer closes the socket.
                }
                continue;
            }
            Err(_) => return,
        };
        let text = match line {
            Line::Text(t) => t,
            Line::TooLong(n) => {
                err(
                    ErrorCode::TooLong,
                    format!(
                        "line of {n} bytes, limit {}",
                        crate::protocol::MAX_LINE_BYTES
                    ),
                    &mut errors,
                );
                continue;
            }
            Line::Cut(n) => {
                err(
                    ErrorCode::Malformed,
                    format!("stream ended inside a line ({n} bytes without newline)"),
                    &mut errors,
                );
                // The client closed its side: it may still read.
                if !authed.load(Ordering::Relaxed) {
                    close();
                }
                return;
            }
            Line::Eof => {
                if !authed.load(Ordering::Relaxed) {
                    close();
                }
                return;
            }
        };
        let req = match Request::parse(&text) {
            Ok(r) => r,
            Err(e) => {
                err(e.code, e.text, &mut errors);
                continue;
            }
        };
        match &req {
            // The token never goes to the log.
            Request::Auth { .. } => tracing::debug!("client {id}: AUTH"),
            r => tracing::debug!("client {id}: {r}"),
        }
        errors = 0;
        match req {
            Request::Hello { version, .. } if version != PROTOCOL_VERSION => {
                err(
                    ErrorCode::Version,
                    format!(
                        "protocol version {version} not spoken; this agent speaks {PROTOCOL_VERSION}"
                    ),
                    &mut errors,
                );
            }
            Request::Hello { .. } => reply(Reply::Ok {
                verb: "HELLO".into(),
                detail: String::new(),
            }),
            Request::Auth { token } => match &cfg.token {
                None => reply(Reply::Ok {
                    verb: "AUTH".into(),
                    detail: "no token required".into(),
                }),
                Some(expected) => {
                    if token_matches(token.as_bytes(), expected) {
                        if !authed.swap(true, Ordering::Relaxed) {
                            tracing::info!("client {id} authenticated");
                            hub.join(slot);
                        }
                        reply(Reply::Ok {
                            verb: "AUTH".into(),
                            detail: String::new(),
                        });
                    } else {
                        refuse(ErrorCode::Auth, "wrong token");
                        return;
                    }
                }
            },
            Request::Ping(n) => reply(Reply::Pong(n)),
            Request::Bye => {
                reply(Reply::Bye {
                    reason: "client".into(),
                    text: "goodbye".into(),
                });
                close();
                return;
            }
            _ if !authed.load(Ordering::Relaxed) => {
                err(
                    ErrorCode::AuthRequired,
                    "send AUTH <token> first".into(),
                    &mut errors,
                );
            }
            Request::Subscribe(p) => {
                let detail = format!("probes={p}");
                *slot.probes.lock().unwrap_or_else(|e| e.into_inner()) = p;
                reply(Reply::Ok {
                    verb: "SUBSCRIBE".into(),
                    detail,
                });
            }
            req @ (Request::Filter(_) | Request::Start | Request::Stop) => {
                let verb = req.verb();
                let Some(ctl) = &cfg.control else {
                    err(
                        ErrorCode::Unsupported,
                        format!("{verb}: this agent has no --control-cmd"),
                        &mut errors,
                    );
                    continue;
                };
                let args: Vec<String> = match req {
                    Request::Filter(w) => vec!["filter".into(), format!("0x{w:016x}")],
                    Request::Start => vec!["start".into()],
                    _ => vec!["stop".into()],
                };
                let outcome = ctl.run(&args);
                match &outcome {
                    Ok(out) => tracing::info!("client {id}: {verb}: {}: {out}", args.join(" ")),
                    Err(e) => {
                        tracing::error!("client {id}: {verb}: {} failed: {e}", args.join(" "))
                    }
                }
                match outcome {
                    Ok(out) => {
                        let ts_ns = now_ns();
                        let record = match req {
                            Request::Start => Record::Marker {
                                ts_ns,
                                kind: MarkerKind::Start,
                                text: "sniffer start".into(),
                            },
                            Request::Stop => Record::Marker {
                                ts_ns,
                                kind: MarkerKind::Stop,
                                text: "sniffer stop".into(),
                            },
                            _ => Record::Annotation {
                                ts_ns,
                                text: format!("sniffer {}", args.join(" ")),
                            },
                        };
                        let mut b = Batch::default();
                        b.push_record(record);
                        hub.broadcast(b);
                        reply(Reply::Ok {
                            verb: verb.into(),
                            detail: out,
                        });
                    }
                    Err(e) => err(ErrorCode::ControlFailed, e, &mut errors),
                }
            }
        }
    }
}

/// The agent's queue-full drop count so far, as the record that carries it.
fn queue_drops(dropped: u64) -> Record {
    Record::Drops(DropCount {
        ts_ns: now_ns(),
        interface: AGENT_QUEUE_INTERFACE,
        dropped,
        reason: DropReason::QueueFull,
    })
}

#[cfg(test)]
mod tests;
