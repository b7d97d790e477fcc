//! What a client tells: its running counters and their snapshot, the link's
//! state, the events it reports, how a source ended, and its errors.

use super::*;

/// Running counters of a client; read with [`LinkStats::snapshot`].
#[derive(Debug, Default)]
pub struct LinkStats {
    pub(super) bytes_received: AtomicU64,
    pub(super) frames_read: AtomicU64,
    pub(super) records_read: AtomicU64,
    pub(super) frames_received: AtomicU64,
    pub(super) records_received: AtomicU64,
    pub(super) frames_dropped_agent: AtomicU64,
    pub(super) agent_dropped_base: AtomicU64,
    pub(super) reconnects: AtomicU64,
    pub(super) connections: AtomicU64,
    pub(super) connected: AtomicBool,
    /// The source ended (agent `END` / `BYE end`, end of a file or stdin)
    /// and no stream has started since.
    pub(super) source_ended: AtomicBool,
    /// [`Client::stop`] was called.
    pub(super) stopped: AtomicBool,
    pub(super) evidence_received: AtomicU64,
    pub(super) recorded_frames: AtomicU64,
    /// Queued when the client stopped and not stored within the drain's
    /// bound (counted with the client's drops).
    pub(super) frames_dropped_at_stop: AtomicU64,
    pub(super) records_dropped_at_stop: AtomicU64,
    pub(super) queue: Mutex<Option<Arc<BatchQueue>>>,
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
    #[error("recording {path}: {cause}")]
    Record { path: PathBuf, cause: io::Error },
    #[error("{0}")]
    Spawn(io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}
