//! Several capture points live: one device-link client per point (an
//! agent on each card's host, one at a switch's mirror), the points
//! analysis re-run on a thread of its own as frames arrive (the clocks
//! re-estimated each time; a frame is judged at a point only once that
//! point's capture has run past it, so a frame in flight is not called
//! lost), and each point's link (frames, drops, down and why) kept for
//! the views and the command line.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rocescope_device_link::client::{LinkEvent, LinkStatsSnapshot};
use rocescope_device_link::{Client, ClientConfig};
use rocescope_replay::points::{Point, PointsConfig, PointsError, PointsReport, analyse_points};

use crate::source::{SourceHandle, SourceStatus};

/// How often the counters and link events are read.
const UPDATE_EVERY: Duration = Duration::from_millis(200);
/// How often the points are analysed again (each analysis reads every
/// point's sightings so far).
const ANALYSE_EVERY: Duration = Duration::from_secs(1);
/// Link events kept for the command line to print.
const LOG_MAX: usize = 1000;
/// Each point's sightings take at most this part of its share of the
/// memory cap (40 bytes each).
const SIGHTINGS_PART: u64 = 8;

/// One point to attach to.
#[derive(Debug, Clone)]
pub struct LivePointSpec {
    pub name: String,
    pub cfg: ClientConfig,
    /// Its offset against the first point, given by hand.
    pub fixed_offset_ns: Option<i64>,
}

/// One point's link as the views show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointLink {
    pub name: String,
    pub url: String,
    pub frames: u64,
    /// Frames the agent or this side dropped (counted, never silent).
    pub dropped: u64,
    pub reconnects: u64,
    /// `connected`, `not connected yet`, `connection lost: WHY; retrying
    /// in 0.4 s`, `source ended after N frames`.
    pub state: String,
    /// Not connected now.
    pub down: bool,
    /// Its source ended for good (or a fatal error).
    pub ended: bool,
    /// The agent's last error, or a fatal one.
    pub error: Option<String>,
}

impl PointLink {
    /// One line: `b: connected, 1234 frames, 0 dropped`.
    pub fn text(&self) -> String {
        let mut t = format!(
            "{}: {}, {} frames, {} dropped",
            self.name, self.state, self.frames, self.dropped
        );
        if self.reconnects > 0 {
            t.push_str(&format!(", {} reconnects", self.reconnects));
        }
        if let Some(e) = &self.error {
            t.push_str(&format!("; {e}"));
        }
        t
    }
}

/// What the threads share.
#[derive(Debug, Default)]
struct Shared {
    links: Mutex<Vec<PointLink>>,
    report: Mutex<Option<Arc<PointsReport>>>,
    /// Counts the reports made, so that a reader takes each once.
    generation: AtomicU64,
    /// Why the last analysis made no report (nothing shared yet).
    note: Mutex<Option<String>>,
    /// Link events in words, for the command line.
    log: Mutex<Vec<String>>,
}

/// The clients of a live session of points, their status thread and the
/// analysis thread; dropping it stops them.
#[derive(Debug)]
pub struct LivePoints {
    points: Vec<Point>,
    cfg: PointsConfig,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    status: Option<JoinHandle<Vec<LinkStatsSnapshot>>>,
    analyser: Option<JoinHandle<()>>,
}

/// Why a live session of points could not start.
#[derive(Debug, thiserror::Error)]
pub enum LivePointsError {
    #[error("{0}")]
    Points(#[from] PointsError),
    /// A thread of the session (its `what`) could not be made.
    #[error("cannot make the live points' {what} thread: {source}")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("point {name}: {source}")]
    Link {
        name: String,
        #[source]
        source: rocescope_device_link::client::ClientError,
    },
}

impl LivePoints {
    /// Attach to every point (in path order), each store within its share
    /// of `limits`.
    pub fn start(
        specs: Vec<LivePointSpec>,
        cfg: PointsConfig,
        limits: &crate::session::SessionLimits,
    ) -> Result<LivePoints, LivePointsError> {
        let n = specs.len();
        if n < 2 {
            return Err(PointsError::TooFew(n).into());
        }
        if n > rocescope_replay::points::MAX_POINTS {
            return Err(PointsError::TooMany(n).into());
        }
        for (i, s) in specs.iter().enumerate() {
            if specs[..i].iter().any(|o| o.name == s.name) {
                return Err(PointsError::SameName(s.name.clone()).into());
            }
        }
        let mut clients = Vec::with_capacity(n);
        let mut points = Vec::with_capacity(n);
        let mut links = Vec::with_capacity(n);
        for spec in specs {
            let share = crate::session::SessionLimits {
                max_memory_bytes: limits.max_memory_bytes / n as u64,
                max_disk_bytes: limits.max_disk_bytes.map(|d| d / n as u64),
                dir: limits.dir.as_ref().map(|d| d.join(&spec.name)),
                index_dir: None,
            };
            let mut c = spec.cfg;
            let queue_bytes = share.queue_bytes(c.queue_bytes as u64);
            c.queue_bytes = queue_bytes as usize;
            if c.spill.is_none() {
                c.spill = Some(share.spill_config(queue_bytes));
            }
            c.point_sightings =
                Some((share.max_memory_bytes / SIGHTINGS_PART / 40).max(1 << 16) as usize);
            let url = c.url.to_string();
            let client = Client::start(c).map_err(|source| LivePointsError::Link {
                name: spec.name.clone(),
                source,
            })?;
            let Some(sightings) = client.sightings().cloned() else {
                unreachable!("started as a point");
            };
            points.push(Point {
                name: spec.name.clone(),
                store: Arc::clone(client.store()),
                analysis: client.analysis().clone(),
                sightings,
                fixed_offset_ns: spec.fixed_offset_ns,
            });
            links.push(PointLink {
                name: spec.name,
                url,
                state: "not connected yet".into(),
                down: true,
                ..PointLink::default()
            });
            clients.push(client);
        }
        let shared = Arc::new(Shared {
            links: Mutex::new(links),
            ..Shared::default()
        });
        let stop = Arc::new(AtomicBool::new(false));
        let analyser = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            let (points, cfg) = (points.clone(), cfg.clone());
            std::thread::Builder::new()
                .name("points-analysis".into())
                .spawn(move || {
                    let mut last = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(UPDATE_EVERY);
                        if last.elapsed() >= ANALYSE_EVERY {
                            // A panic here is told in the note, never a
                            // live analysis that stops changing unsaid;
                            // the analysis at the session's end runs anew.
                            let ran = rocescope_replay::contain::contain(|| {
                                analyse(&points, &cfg, &shared);
                            });
                            if let Err(why) = ran {
                                *shared.note.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                                    "the live points' analysis failed ({why}; a rocescope bug: please report it): it is no longer updated"
                                ));
                                return;
                            }
                            last = Instant::now();
                        }
                    }
                })
        };
        let analyser = match analyser {
            Ok(t) => t,
            Err(source) => {
                for c in clients {
                    c.stop();
                }
                return Err(LivePointsError::Thread {
                    what: "analysis",
                    source,
                });
            }
        };
        // The clients go to the status thread through this slot, so that
        // they are stopped here when no thread could be made (a client
        // dropped runs on).
        let slot = Arc::new(Mutex::new(Some(clients)));
        let status = {
            let (shared, stop, slot) = (Arc::clone(&shared), Arc::clone(&stop), Arc::clone(&slot));
            std::thread::Builder::new()
                .name("points-status".into())
                .spawn(move || {
                    let clients = slot
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take()
                        .unwrap_or_default();
                    // A panic here is told on every link (each ended, with
                    // the error), and the links stopped with their final
                    // counters, never links frozen as they were or a
                    // session's end without its links' counts.
                    let ran = rocescope_replay::contain::contain(|| {
                        while !stop.load(Ordering::Relaxed) {
                            update(&clients, &shared);
                            std::thread::sleep(UPDATE_EVERY);
                        }
                        update(&clients, &shared);
                    });
                    let snaps: Vec<LinkStatsSnapshot> =
                        clients.into_iter().map(Client::stop).collect();
                    if let Err(why) = ran {
                        let why = format!(
                            "the points' status thread failed ({why}; a rocescope bug: please report it): the link was stopped"
                        );
                        let mut links = shared.links.lock().unwrap_or_else(|e| e.into_inner());
                        let mut log = shared.log.lock().unwrap_or_else(|e| e.into_inner());
                        for (link, s) in links.iter_mut().zip(&snaps) {
                            log.push(format!("point {}: {why}", link.name));
                            link.frames = s.frames_received;
                            link.dropped = s.frames_dropped;
                            link.reconnects = s.reconnects;
                            link.down = true;
                            link.ended = true;
                            link.state = "stopped".into();
                            link.error = Some(why.clone());
                        }
                    }
                    snaps
                })
        };
        let status = match status {
            Ok(t) => t,
            Err(source) => {
                stop.store(true, Ordering::Relaxed);
                let _ = analyser.join();
                for c in slot
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .unwrap_or_default()
                {
                    c.stop();
                }
                return Err(LivePointsError::Thread {
                    what: "status",
                    source,
                });
            }
        };
        let (status, analyser) = (Some(status), Some(analyser));
        Ok(LivePoints {
            points,
            cfg,
            shared,
            stop,
            status,
            analyser,
        })
    }

    /// The points, in path order (the first's store is what a workbench
    /// shows).
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Each point's link now.
    pub fn links(&self) -> Vec<PointLink> {
        self.shared
            .links
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The latest analysis and its generation (0: none yet).
    pub fn report(&self) -> (u64, Option<Arc<PointsReport>>) {
        let r = self
            .shared
            .report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        (self.shared.generation.load(Ordering::Acquire), r)
    }

    /// Why the last analysis made no report, if it did not.
    pub fn note(&self) -> Option<String> {
        self.shared
            .note
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The link events since the last call, in words.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every point's source has ended for good.
    pub fn all_ended(&self) -> bool {
        self.links().iter().all(|l| l.ended)
    }

    /// Stop the links (what each had queued stored), and analyse what
    /// every point received, once more: each point's final counters and
    /// the analysis.
    pub fn stop(mut self) -> (Vec<LinkStatsSnapshot>, Result<PointsReport, PointsError>) {
        let snaps = self.halt();
        let report = analyse_points(&self.points, &self.cfg);
        (snaps, report)
    }

    fn halt(&mut self) -> Vec<LinkStatsSnapshot> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.analyser.take() {
            let _ = t.join();
        }
        // The status thread's panics are contained and told on its links
        // (their counters kept); its join fails on none of them.
        self.status
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for LivePoints {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Analyse the points as they are now; a session whose points share no
/// frame yet waits for one (said, not an error).
fn analyse(points: &[Point], cfg: &PointsConfig, shared: &Shared) {
    // The tests' failing analysis (a point of this name exists only there).
    #[cfg(test)]
    if points.iter().any(|p| p.name == tests::ANALYSIS_PANICS) {
        panic!("a points analysis's failure, for the test");
    }
    let mut note = shared.note.lock().unwrap_or_else(|e| e.into_inner());
    match analyse_points(points, cfg) {
        Ok(r) => {
            *shared.report.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(r));
            shared.generation.fetch_add(1, Ordering::AcqRel);
            *note = None;
        }
        Err(e @ PointsError::NothingShared(_)) => {
            *note = Some(format!("waiting: {e}"));
        }
        Err(e) => *note = Some(e.to_string()),
    }
}

/// Each client's events and counters into its point's link.
fn update(clients: &[Client], shared: &Shared) {
    let mut links = shared.links.lock().unwrap_or_else(|e| e.into_inner());
    // The tests' failing status thread (a point of this name exists only there).
    #[cfg(test)]
    if links.iter().any(|l| l.name == tests::STATUS_PANICS) {
        drop(links);
        panic!("a points status's failure, for the test");
    }
    let mut log = Vec::new();
    for (client, link) in clients.iter().zip(links.iter_mut()) {
        while let Ok(ev) = client.events().try_recv() {
            let said = match ev {
                LinkEvent::Connected { to, agent } => {
                    link.ended = false;
                    link.error = None;
                    if agent.is_empty() {
                        format!("connected to {to}")
                    } else {
                        format!("connected to {to} ({agent})")
                    }
                }
                LinkEvent::Disconnected { reason, retry_in } => {
                    let retry = retry_in.map_or_else(
                        || "not retrying".to_owned(),
                        |d| format!("retrying in {:.1} s", d.as_secs_f64()),
                    );
                    link.state = format!("connection lost: {reason}; {retry}");
                    link.state.clone()
                }
                LinkEvent::AgentError { code, text } => {
                    let e = format!("agent says ERR {code} {text}");
                    link.error = Some(e.clone());
                    e
                }
                LinkEvent::End(end) => {
                    link.ended = true;
                    link.state = match end.frames {
                        Some(n) => format!("source ended after {n} frames"),
                        None => "source ended".to_owned(),
                    };
                    link.state.clone()
                }
                LinkEvent::Fatal(why) => {
                    link.ended = true;
                    link.error = Some(why.clone());
                    link.state = "stopped".into();
                    why
                }
            };
            log.push(format!("point {}: {said}", link.name));
        }
        let s = client.stats();
        link.frames = s.frames_received;
        link.dropped = s.frames_dropped;
        link.reconnects = s.reconnects;
        link.down = !s.connected;
        if s.connected {
            if !link.ended {
                link.state = "connected".into();
            }
        } else if link.state == "connected" {
            link.state = "not connected".into();
        }
        if client.is_finished() {
            link.ended = true;
        }
    }
    drop(links);
    if !log.is_empty() {
        let mut l = shared.log.lock().unwrap_or_else(|e| e.into_inner());
        l.extend(log);
        let over = l.len().saturating_sub(LOG_MAX);
        l.drain(..over);
    }
}

/// The session's own status from its points' links: frames of the first
/// (the store shown), drops and reconnects of all, a point down named.
fn update_source(links: &[PointLink], status: &SourceStatus) {
    status
        .frames
        .store(links.first().map_or(0, |l| l.frames), Ordering::Relaxed);
    status
        .dropped
        .store(links.iter().map(|l| l.dropped).sum(), Ordering::Relaxed);
    status
        .reconnects
        .store(links.iter().map(|l| l.reconnects).sum(), Ordering::Relaxed);
    let down: Vec<String> = links
        .iter()
        .filter(|l| l.down && !l.ended)
        .map(|l| format!("point {}: {}", l.name, l.state))
        .collect();
    status.set_disconnected((!down.is_empty()).then(|| down.join("; ")));
    let errors: Vec<String> = links
        .iter()
        .filter_map(|l| l.error.as_ref().map(|e| format!("point {}: {e}", l.name)))
        .collect();
    *status.error.lock().unwrap_or_else(|e| e.into_inner()) =
        (!errors.is_empty()).then(|| errors.join("; "));
    if links.iter().all(|l| l.ended) {
        if !status.finished.load(Ordering::Acquire) {
            status.end("every point's source ended");
        }
    } else {
        *status.end_reason.lock().unwrap_or_else(|e| e.into_inner()) = None;
        status.finished.store(false, Ordering::Release);
    }
}

/// A workbench's model of the first point's live store, with the points'
/// analysis beside it as it is re-run; its source handle keeps the links
/// (dropping the model stops them).
pub fn attach_points_model(live: LivePoints) -> crate::Model {
    let first = &live.points[0];
    let (store, analysis) = (Arc::clone(&first.store), first.analysis.clone());
    let names: Vec<&str> = live.points.iter().map(|p| p.name.as_str()).collect();
    let mut handle = SourceHandle::external(format!("attach:{}", names.join(",")));
    handle.live_points = Some(LiveSession {
        live,
        seen_generation: 0,
    });
    crate::Model::new(store, analysis, handle)
}

/// A live session of points as a workbench source holds it.
#[derive(Debug)]
pub struct LiveSession {
    pub live: LivePoints,
    /// The analysis the model took last.
    seen_generation: u64,
}

impl LiveSession {
    /// The source status from the links, and the analysis when a new one
    /// was made since the last call.
    pub(crate) fn poll(&mut self, status: &SourceStatus) -> Option<Arc<PointsReport>> {
        update_source(&self.live.links(), status);
        let (generation, report) = self.live.report();
        if generation == self.seen_generation {
            return None;
        }
        self.seen_generation = generation;
        report
    }

    /// Lines for the Overview: each point's link, and why there is no
    /// analysis yet.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .live
            .links()
            .iter()
            .map(|l| format!("link {}", l.text()))
            .collect();
        if let Some(n) = self.live.note() {
            out.push(n);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_device_link::AttachUrl;

    /// Point names whose threads fail, for the tests.
    pub(super) const STATUS_PANICS: &str = "test-points-status-panics";
    pub(super) const ANALYSIS_PANICS: &str = "test-points-analysis-panics";

    /// Two points reading the sample capture, the second named `name`.
    fn start(name: &str) -> LivePoints {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/captures/sample-write-read.pcap");
        let url = AttachUrl::parse(&format!("file:{}", path.display())).expect("a file url");
        let specs = ["a", name]
            .iter()
            .map(|n| LivePointSpec {
                name: (*n).to_owned(),
                cfg: ClientConfig::new(url.clone()),
                fixed_offset_ns: None,
            })
            .collect();
        let limits = crate::session::SessionLimits {
            max_memory_bytes: 64 << 20,
            max_disk_bytes: None,
            dir: Some(rocescope_testkit::build_tmp().join(name)),
            index_dir: None,
        };
        LivePoints::start(specs, Default::default(), &limits).expect("the session starts")
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !done() {
            assert!(t0.elapsed() < Duration::from_secs(30), "never {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A status thread that panics ends every link with the error (in the
    /// log too) and the session's end still has each link's counters.
    #[test]
    fn a_points_status_thread_that_fails_says_so_on_each_link() {
        let live = start(STATUS_PANICS);
        wait_for("ended", || live.all_ended());
        for l in live.links() {
            let e = l.error.clone().expect("the failure is told");
            assert!(e.starts_with("the points' status thread failed ("), "{e}");
            assert!(e.contains("a points status's failure, for the test"), "{e}");
            assert_eq!(l.state, "stopped");
        }
        let log = live.take_log();
        assert_eq!(log.len(), 2, "{log:?}");
        let (snaps, _) = live.stop();
        assert_eq!(snaps.len(), 2, "each link's counters");
    }

    /// An analysis that panics says so in the note, never a live analysis
    /// that stops changing unsaid.
    #[test]
    fn a_points_analysis_that_fails_says_so() {
        let live = start(ANALYSIS_PANICS);
        wait_for("noted", || {
            live.note().is_some_and(|n| n.contains("failed"))
        });
        let n = live.note().unwrap_or_default();
        assert!(n.starts_with("the live points' analysis failed ("), "{n}");
        assert!(
            n.contains("a points analysis's failure, for the test"),
            "{n}"
        );
    }
}
