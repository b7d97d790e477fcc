//! One connection's state, shared by the rx loop and the link reader's
//! events.

use super::*;

/// State of one connection, shared by the rx loop and the link reader's
/// events (same thread).
pub(super) struct Conn {
    pub(super) pending: Batch,
    pub(super) last_rx: Instant,
    pub(super) agent_dropped: u64,
    pub(super) bye: Option<String>,
    /// The agent's `END`.
    pub(super) end: Option<SourceEnd>,
    pub(super) fatal: Option<String>,
    pub(super) hello: Option<String>,
    pub(super) told_client_drops: (u64, u64),
    pub(super) last_drop_check: Instant,
}

pub(super) struct Shared {
    pub(super) conn: RefCell<Conn>,
    pub(super) queue: Arc<BatchQueue>,
    pub(super) pool: BatchPool,
    /// Set when this thread may decode frames for ingest (agent streams:
    /// Ethernet only).
    pub(super) decode: Option<DecodeConfig>,
    pub(super) recorder: Option<SyncSender<Arc<Batch>>>,
    pub(super) stats: Arc<LinkStats>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) silence: Option<Duration>,
    pub(super) events: std::sync::mpsc::Sender<LinkEvent>,
}

impl Shared {
    /// Hands the pending batch to the recorder and the ingest queue.
    pub(super) fn publish(&self, conn: &mut Conn) {
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
        b.count_into(&self.stats.frames_read, &self.stats.records_read);
        if let Some(r) = &self.recorder {
            let _ = r.send(Arc::clone(&b));
        }
        self.queue.push(b);
        self.report_client_drops(conn, false);
    }

    /// Records and stores the client queue's drop count when it changed
    /// (at most every 100 ms unless `now`).
    pub(super) fn report_client_drops(&self, conn: &mut Conn, now: bool) {
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
    pub(super) fn send_forced(&self, r: Record) {
        let mut b = Batch::default();
        b.push_record(r);
        let b = Arc::new(b);
        if let Some(rec) = &self.recorder {
            let _ = rec.send(Arc::clone(&b));
        }
        self.queue.push_force(b);
    }
}

pub(super) struct Events(pub(super) Rc<Shared>);

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
