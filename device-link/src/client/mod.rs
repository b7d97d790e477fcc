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
use rocescope_replay::points::{PointTap, SharedSightings};
use rocescope_replay::record::{DropCount, DropReason, MarkerKind};
use rocescope_replay::store::{
    Analyzer, Ingest, IngestFrame, RcAnalyzer, SpillConfig, Store, StoreError,
};
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

mod conn;
mod ingest;
mod rx;
mod status;
#[cfg(test)]
mod tests;

use conn::*;
pub use ingest::STOP_DRAIN;
use ingest::*;
use rx::*;
pub use status::{ClientError, LinkEvent, LinkState, LinkStats, LinkStatsSnapshot, SourceEnd};

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
    /// A capture point of a session of several: a point tap in front of
    /// the RC analysis keeps at most this many sightings (the newest) for
    /// the points analysis ([`Client::sightings`]).
    pub point_sightings: Option<usize>,
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
            point_sightings: None,
        }
    }
}

/// A running client. Dropping it without [`Client::stop`] leaves its
/// threads to end on their own when the link ends.
#[derive(Debug)]
pub struct Client {
    store: Arc<Store>,
    analysis: RcAnalyzer,
    sightings: Option<SharedSightings>,
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
        // A point's sightings are taken at ingest, as a file's are.
        let (analyzer, sightings): (Box<dyn Analyzer>, _) = match cfg.point_sightings {
            Some(max) => {
                let (tap, sightings) = PointTap::bounded(Box::new(analysis.clone()), max);
                (Box::new(tap), Some(sightings))
            }
            None => (Box::new(analysis.clone()), None),
        };
        let stats = Arc::new(LinkStats::default());
        let queue = Arc::new(BatchQueue::new(cfg.queue_bytes, cfg.queue_batches));
        let pool = BatchPool::default();
        *stats.queue.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&queue));
        let stop = Arc::new(AtomicBool::new(false));
        let rx_done = Arc::new(AtomicBool::new(false));
        let control = Control::default();
        let (ev_tx, events) = std::sync::mpsc::channel();
        let mut threads = Vec::new();
        let fail_tx = ev_tx.clone();
        // Each thread's panic is told (a fatal event with its words: the
        // link ends, its error shown) and stops the client, never a link
        // running on without storing or recording what it receives, or a
        // stop waiting for good on a queue nobody closes (`failed` tidies
        // up after the thread).
        let spawn = |name: &'static str,
                     f: Box<dyn FnOnce() + Send>,
                     failed: Box<dyn FnOnce(&str) + Send>| {
            let (events, stop) = (fail_tx.clone(), Arc::clone(&stop));
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    if let Err(why) = rocescope_replay::contain::contain(f) {
                        stop.store(true, Ordering::Relaxed);
                        let _ = events.send(LinkEvent::Fatal(format!(
                            "the link's {name} thread failed ({why}; a rocescope bug: please report it): the link was stopped"
                        )));
                        failed(&why);
                    }
                })
                .map_err(ClientError::Spawn)
        };
        let recorder = match &cfg.record {
            Some(path) => {
                let file = File::create(path).map_err(|cause| ClientError::Record {
                    path: path.clone(),
                    cause,
                })?;
                let w = PcapngWriter::with_capacity(1 << 20, BufWriter::new(file)).map_err(
                    |cause| ClientError::Record {
                        path: path.clone(),
                        cause,
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
                    Box::new(|_| ()),
                )?);
                Some(tx)
            }
            None => None,
        };
        {
            let store = Arc::clone(&store);
            let queue = Arc::clone(&queue);
            let stats = Arc::clone(&stats);
            let notes = analysis.clone();
            let decode = cfg.decode.clone();
            let pps = cfg.max_ingest_pps;
            let pool = pool.clone();
            let stop = Arc::clone(&stop);
            let failed_store = Arc::clone(&store);
            #[cfg(test)]
            let panics = matches!(&cfg.url, AttachUrl::File { path, .. } if path.ends_with(tests::INGEST_PANICS));
            threads.push(spawn(
                "attach-ingest",
                Box::new(move || {
                    #[cfg(test)]
                    if panics {
                        panic!("a link ingest's failure, for the test");
                    }
                    ingest_loop(
                        &store, &queue, &stats, analyzer, &notes, decode, pps, &pool, &stop,
                    );
                }),
                // The store ends with what it holds, its status naming why
                // (never a live session that looks as if it still grows).
                Box::new(move |why| {
                    failed_store.end_failed(format!(
                        "the link's ingest failed ({why}; a rocescope bug: please report it): the frames after row {} are not stored",
                        failed_store.len()
                    ));
                }),
            )?);
        }
        {
            #[cfg(test)]
            let panics = matches!(&cfg.url, AttachUrl::File { path, .. } if path.ends_with(tests::RX_PANICS));
            let closed = Arc::clone(&queue);
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
            let (done, failed_done) = (Arc::clone(&rx_done), Arc::clone(&rx_done));
            threads.push(spawn(
                "attach-rx",
                Box::new(move || {
                    #[cfg(test)]
                    if panics {
                        panic!("a link reader's failure, for the test");
                    }
                    rx.run();
                    done.store(true, Ordering::Release);
                }),
                // What `run` does at its end: ingest ends, the link is over.
                Box::new(move |_| {
                    closed.close();
                    failed_done.store(true, Ordering::Release);
                }),
            )?);
        }
        Ok(Client {
            store,
            analysis,
            sightings,
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

    /// A point's sightings, when started as one
    /// ([`ClientConfig::point_sightings`]).
    pub fn sightings(&self) -> Option<&SharedSightings> {
        self.sightings.as_ref()
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
