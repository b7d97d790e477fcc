//! The rx thread: connects (with backoff), reads the link, hands batches to
//! the queue and records what it receives.

use super::*;

pub(super) struct Rx {
    pub(super) cfg: ClientConfig,
    /// The agent connection's write half, while connected.
    pub(super) control: Control,
    pub(super) queue: Arc<BatchQueue>,
    pub(super) pool: BatchPool,
    pub(super) recorder: Option<SyncSender<Arc<Batch>>>,
    pub(super) stats: Arc<LinkStats>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) events: std::sync::mpsc::Sender<LinkEvent>,
}

/// Read buffer of an agent connection: large, so that one read takes in
/// thousands of frames.
pub(super) const STREAM_BUFFER_BYTES: usize = 1 << 20;

/// How one connection ended.
pub(super) enum Ended {
    /// The source ended (END / BYE end, end of file).
    End(SourceEnd),
    /// Cannot continue.
    Fatal(String),
    /// The link broke: retry.
    Broken(String),
    Stopped,
}

impl Rx {
    pub(super) fn run(self) {
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
                    // A first connection that fails is a wrong address or
                    // no agent: an error, not a link to wait on. Losses
                    // after it reconnect.
                    Err(e) if self.stats.connections.load(Ordering::Relaxed) == 0 => {
                        Ended::Fatal(format!(
                            "cannot connect to {host}:{port}: {e} (is `rocescope agent --listen {host}:{port}` running there?)"
                        ))
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

    pub(super) fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
        }
    }

    pub(super) fn connect(&self, host: &str, port: u16) -> io::Result<TcpStream> {
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

    pub(super) fn shared(&self, tcp: bool) -> Rc<Shared> {
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
    pub(super) fn attached(&self, shared: &Shared, to: &str) {
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
    pub(super) fn on_record(&self, c: &mut Conn, r: Record) {
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
    pub(super) fn serve_agent(&self, mut input: TcpStream, to: &str) -> Ended {
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
    pub(super) fn serve(&self, input: Box<dyn Read>, tcp: bool, to: &str) -> Ended {
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

    pub(super) fn finish(
        &self,
        shared: &Rc<Shared>,
        error: Option<String>,
        source_name: &str,
    ) -> Ended {
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
