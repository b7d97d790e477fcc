//! Sources run on their own threads and feed one store through one
//! interface: the bundled simulator here; capture files index themselves
//! (`Store::open`), the live link arrives through device-link.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, TrySendError, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocescope_decoders::DecodeConfig;
use rocescope_replay::store::{Ingest, RcAnalyzer, Store};
use rocescope_replay::{PcapngWriter, TimeBase};
use rocescope_sim::{Scenario, Simulator};

use crate::sim_feed::{Feed, Handed, SimBatch, StagedBatch};

/// How fast the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// As fast as the machine allows.
    Fast,
    /// Simulated time follows wall time times this factor (1.0 = real time;
    /// 0.001 lets a student watch microseconds unfold).
    RealTime(f64),
}

impl Pace {
    /// The workbench's pace for a run of `duration_ns`: real time, but runs
    /// shorter than 1 ms are stretched to about 5 s of wall time so that a
    /// person can follow them.
    pub fn for_duration(duration_ns: u64) -> Pace {
        Pace::RealTime(if duration_ns < 1_000_000 {
            duration_ns as f64 / 1e9 / 5.0
        } else {
            1.0
        })
    }

    /// The pace of a lesson's run: the whole scenario stretched to about
    /// [`LESSON_WALL_S`] of wall time, however long it simulates, so that
    /// its steps arrive while the student reads them.
    pub fn for_lesson(duration_ns: u64) -> Pace {
        Pace::RealTime(duration_ns as f64 / 1e9 / LESSON_WALL_S)
    }
}

/// Wall time a lesson's scenario runs for, in seconds.
pub const LESSON_WALL_S: f64 = 5.0;

/// Commands a running source accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceCtl {
    Pause,
    Resume,
    Stop,
}

/// What kind of source feeds the store: the status line words its state
/// after it (a file indexes, a simulation ends, a link disconnects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    File,
    Sim,
    /// Fed by another component (the device-link client), which reports
    /// into [`SourceHandle::status`].
    Link,
}

/// What the workbench knows of a running source.
#[derive(Debug)]
pub struct SourceHandle {
    pub name: String,
    /// True for sources that keep producing (simulator, live link).
    pub live: bool,
    pub kind: SourceKind,
    /// The scenario and pace a simulator runs, so that a parameter change
    /// can rerun it.
    sim: Option<(Scenario, Pace)>,
    /// The limits a rerun's store is made under (unbounded without).
    limits: Option<crate::session::SessionLimits>,
    ctl: Option<Sender<SourceCtl>>,
    status: Arc<SourceStatus>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A live link's client and its status thread (stopped with the handle).
    pub(crate) link: Option<crate::link::LiveLink>,
    /// A live session of several capture points (their clients and the
    /// analysis thread, stopped with the handle).
    pub live_points: Option<crate::live_points::LiveSession>,
    /// Capture points' analysis for the model to take (a lesson's run at
    /// its points).
    pub(crate) points_report: Option<rocescope_replay::points::PointsReport>,
    /// The capture file a file session was opened from (what `:whatif`
    /// reruns); `None` for a store made in memory.
    pub path: Option<std::path::PathBuf>,
}

/// Progress a source reports.
#[derive(Debug, Default)]
pub struct SourceStatus {
    pub sim_time_ns: AtomicU64,
    pub frames: AtomicU64,
    pub records: AtomicU64,
    pub finished: AtomicBool,
    pub paused: AtomicBool,
    /// Records dropped between the source and ingest (shown, never silent).
    pub dropped: AtomicU64,
    /// Reconnects of a live link.
    pub reconnects: AtomicU64,
    /// Why a live link is down (with its retry), `None` while connected.
    pub disconnected: Mutex<Option<String>>,
    /// Why the source ended, when it says (`finished` is set too).
    pub end_reason: Mutex<Option<String>>,
    pub error: Mutex<Option<String>>,
    /// A paced simulator that cannot keep its pace (the machine too slow
    /// for the scenario): how far behind its schedule it is, in wall ns
    /// (0 while it keeps up), and how fast it ran over the last half
    /// second or more, as a fraction of its pace (`f64` bits; 0 before a
    /// first reading).
    pub behind_wall_ns: AtomicU64,
    pub pace_kept_bits: AtomicU64,
}

impl SourceStatus {
    /// Mark the source ended, saying why.
    pub fn end(&self, reason: impl Into<String>) {
        *self.end_reason.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason.into());
        self.finished.store(true, Ordering::Release);
    }

    /// Say the link is down (`Some(reason)`) or up (`None`).
    pub fn set_disconnected(&self, reason: Option<String>) {
        *self.disconnected.lock().unwrap_or_else(|e| e.into_inner()) = reason;
    }
}

impl SourceHandle {
    /// The pace a simulator runs at, a fraction of real time (`None`: not
    /// a simulator, or one run as fast as the machine allows).
    pub fn pace_factor(&self) -> Option<f64> {
        match self.sim {
            Some((_, Pace::RealTime(factor))) => Some(factor),
            _ => None,
        }
    }

    /// A handle with no thread, control or status of its own yet.
    fn bare(name: String, live: bool, kind: SourceKind) -> SourceHandle {
        SourceHandle {
            name,
            live,
            kind,
            sim: None,
            limits: None,
            ctl: None,
            status: Arc::new(SourceStatus::default()),
            thread: None,
            link: None,
            live_points: None,
            points_report: None,
            path: None,
        }
    }

    /// A source that is already complete (a capture file).
    pub fn file(name: String) -> SourceHandle {
        SourceHandle::bare(name, false, SourceKind::File)
    }

    /// A live source fed by another component (the device-link client),
    /// which reports into `status()`.
    pub fn external(name: String) -> SourceHandle {
        SourceHandle::bare(name, true, SourceKind::Link)
    }

    /// Rerun this simulator under `limits` (a bounded store, as the first
    /// run's).
    pub fn set_session_limits(&mut self, limits: crate::session::SessionLimits) {
        self.limits = Some(limits);
    }

    /// The scenario a simulator source runs.
    pub fn scenario(&self) -> Option<&Scenario> {
        self.sim.as_ref().map(|(s, _)| s)
    }

    /// A new run of this simulator with `change` applied (a parameter, the
    /// sniffer filter): `Ok(None)` when the command is not for a source.
    pub fn rerun(
        &self,
        change: &crate::Command,
    ) -> Result<Option<(Arc<Store>, RcAnalyzer, SourceHandle)>, RerunError> {
        use crate::Command;
        if !matches!(
            change,
            Command::SetSimParam { .. } | Command::SetSnifferFilter(_)
        ) {
            return Ok(None);
        }
        let Some((scenario, pace)) = &self.sim else {
            return Err(RerunError::NotASimulator {
                name: self.name.clone(),
                change: Box::new(change.clone()),
            });
        };
        let mut next = scenario.clone();
        match change {
            Command::SetSimParam { key, value } => {
                next.set(key, value)
                    .map_err(|cause| RerunError::Param { cause })?;
            }
            Command::SetSnifferFilter(word) => match &mut next.sniffer {
                Some(s) => s.filter = *word,
                None => {
                    return Err(RerunError::NoSniffer {
                        scenario: next.name,
                    });
                }
            },
            _ => return Ok(None),
        }
        let Some(limits) = &self.limits else {
            return Ok(Some(spawn_sim(next, *pace, None)));
        };
        let store = limits
            .live_store(0)
            .map_err(|cause| RerunError::Store { cause })?;
        let (store, analysis, mut handle) = spawn_sim_into(store, next, *pace, None);
        handle.limits = Some(limits.clone());
        Ok(Some((store, analysis, handle)))
    }

    /// A new run of the scenario `lesson` was written for, under this
    /// source's limits (a bounded store when it has some, in a folder of
    /// its own: the session it replaces stays open beside it), finite and
    /// paced for a student ([`Pace::for_lesson`]).
    pub fn spawn_lesson(
        &self,
        lesson: &crate::lesson::Lesson,
    ) -> Result<(Arc<Store>, RcAnalyzer, SourceHandle), crate::lesson::LessonError> {
        let scenario = crate::lesson::check::scenario(lesson, &Default::default())?;
        if !scenario.points.is_empty() {
            // Seen at capture points: the whole run, at each, then shown
            // as `open --point` shows the points' captures.
            let name = format!("lesson:{}", scenario.name);
            let run = crate::lesson::points::run(scenario)?;
            let first =
                run.points
                    .into_iter()
                    .next()
                    .ok_or_else(|| crate::lesson::LessonError::Run {
                        message: "no capture point".into(),
                    })?;
            let mut handle = SourceHandle::file(name);
            handle.points_report = Some(run.report);
            return Ok((first.store, first.analysis, handle));
        }
        let finite_ns = scenario.duration_ns;
        let pace = Pace::for_lesson(finite_ns);
        let Some(limits) = &self.limits else {
            return Ok(spawn_sim(scenario, pace, None));
        };
        let limits = crate::session::SessionLimits {
            dir: None,
            ..limits.clone()
        };
        let store = limits
            .live_store(0)
            .map_err(|cause| crate::lesson::LessonError::Store { cause })?;
        let (store, analysis, mut handle) = spawn_sim_into(store, scenario, pace, None);
        handle.limits = Some(limits);
        Ok((store, analysis, handle))
    }

    pub fn status(&self) -> &SourceStatus {
        &self.status
    }

    /// The status to update from another thread.
    pub fn status_arc(&self) -> Arc<SourceStatus> {
        Arc::clone(&self.status)
    }

    pub fn send(&self, c: SourceCtl) {
        if let Some(tx) = &self.ctl {
            let _ = tx.send(c);
        }
    }

    /// Stop the source thread and wait for it.
    pub fn stop(&mut self) {
        self.send(SourceCtl::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SourceHandle {
    fn drop(&mut self) {
        self.stop();
        // Dropping the link stops its client.
        self.link = None;
        self.live_points = None;
    }
}

/// Every source the workbench opens, in one place: the TUI, the GUI and
/// the workbench commands (`open`, `sim`, `attach`, `gui`) name what to
/// open and get the same model, status and steering from [`open`].
#[derive(Debug, Clone)]
pub enum SourceSpec {
    /// A capture file, indexed in the background; the views show all of it
    /// as it is indexed.
    File {
        path: std::path::PathBuf,
        decode: DecodeConfig,
        /// How a waveform or ILA capture is read (interfaces, clocks).
        wave: rocescope_replay::wave::WaveOptions,
    },
    /// The bundled simulator on a scenario, paced to wall time (or not),
    /// optionally recorded as pcapng.
    Sim {
        scenario: Box<Scenario>,
        pace: Pace,
        record: Option<std::path::PathBuf>,
    },
    /// A live link: an agent, a pcap stream on stdin, a followed file.
    Attach(Box<rocescope_device_link::ClientConfig>),
}

/// Why a command for the simulator (a parameter, the sniffer filter)
/// could not rerun the source.
#[derive(Debug, thiserror::Error)]
pub enum RerunError {
    /// The source (named as the status bar names it) is no simulator.
    #[error("{name} does not take {change:?}")]
    NotASimulator {
        name: String,
        change: Box<crate::Command>,
    },
    #[error("{cause}")]
    Param { cause: rocescope_sim::ParamError },
    #[error("scenario {scenario} has no sniffer")]
    NoSniffer { scenario: String },
    /// The rerun's bounded store could not be made.
    #[error("{cause}")]
    Store {
        cause: rocescope_replay::store::StoreError,
    },
}

/// Why a source could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{path}")]
    File {
        path: String,
        #[source]
        source: rocescope_replay::store::StoreError,
    },
    #[error("cannot make the live store")]
    Store(#[source] rocescope_replay::store::StoreError),
    #[error("cannot write the recording {path}")]
    Record {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Link(#[from] rocescope_device_link::client::ClientError),
}

/// Open `spec` as a workbench model. Live sources (the simulator, a link)
/// get a store bounded by `limits`; a simulator's handle keeps them for
/// its reruns.
pub fn open(
    spec: SourceSpec,
    limits: &crate::session::SessionLimits,
) -> Result<crate::Model, OpenError> {
    match spec {
        SourceSpec::File { path, decode, wave } => {
            let analysis = RcAnalyzer::default();
            let store = limits
                .open_file(&path, decode, Box::new(analysis.clone()), &wave)
                .map_err(|source| OpenError::File {
                    path: path.display().to_string(),
                    source,
                })?;
            let kept = store.index_dir_status();
            let mut source = SourceHandle::file(path.display().to_string());
            source.path = Some(path);
            let mut model = crate::Model::new(store, analysis, source);
            // The status line says where the rows came from: a reused
            // index (with its analysis, or why not), or why the one kept
            // was stale.
            if let Some(kept) = kept {
                model.status = kept
                    .stale_line()
                    .or_else(|| kept.analysis_stale_line())
                    .unwrap_or_else(|| kept.summary());
            }
            Ok(model)
        }
        SourceSpec::Sim {
            scenario,
            pace,
            record,
        } => {
            let record = match record {
                Some(p) => {
                    let err = |source| OpenError::Record {
                        path: p.display().to_string(),
                        source,
                    };
                    let file = std::fs::File::create(&p).map_err(err)?;
                    Some(
                        PcapngWriter::new(std::io::BufWriter::with_capacity(1 << 20, file))
                            .map_err(err)?,
                    )
                }
                None => None,
            };
            let store = limits.live_store(0).map_err(OpenError::Store)?;
            let (store, analysis, mut handle) = spawn_sim_into(store, *scenario, pace, record);
            handle.set_session_limits(limits.clone());
            Ok(crate::Model::new(store, analysis, handle))
        }
        SourceSpec::Attach(cfg) => {
            let mut cfg = *cfg;
            let name = cfg.url.to_string();
            let queue_bytes = limits.queue_bytes(cfg.queue_bytes as u64);
            cfg.queue_bytes = queue_bytes as usize;
            if cfg.spill.is_none() {
                cfg.spill = Some(limits.spill_config(queue_bytes));
            }
            let client = rocescope_device_link::Client::start(cfg)?;
            Ok(crate::link::attach_model(client, &name))
        }
    }
}

/// Run `scenario` on its own thread into a new live store with the RC
/// analysis on. Frames and records go to `record` too, if given.
pub fn spawn_sim(
    scenario: Scenario,
    pace: Pace,
    record: Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
) -> (Arc<Store>, RcAnalyzer, SourceHandle) {
    spawn_sim_into(Store::live(TimeBase::Nanoseconds), scenario, pace, record)
}

/// [`spawn_sim`] into a store made by the caller (one bounded by the
/// session's limits, [`crate::session::SessionLimits::live_store`]).
pub fn spawn_sim_into(
    store: Arc<Store>,
    scenario: Scenario,
    pace: Pace,
    record: Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
) -> (Arc<Store>, RcAnalyzer, SourceHandle) {
    let analysis = RcAnalyzer::default();
    let (tx, rx) = channel();
    let status = Arc::new(SourceStatus::default());
    let name = format!("sim:{}", scenario.name);
    let spec = (scenario.clone(), pace);
    let spawned = {
        let store = Arc::clone(&store);
        let analysis = analysis.clone();
        let status = Arc::clone(&status);
        std::thread::Builder::new()
            .name("rocescope-sim".into())
            .spawn(move || {
                // A panic in the simulator is told (the error, the source
                // ended as failed), never a run that stalls looking live
                // or a headless run waiting for an end that never comes.
                let ran = rocescope_replay::contain::contain(|| {
                    run_sim(scenario, pace, record, &store, analysis, &status, &rx)
                });
                if let Err(why) = ran {
                    fail(
                        &status,
                        format!(
                            "the simulator failed at {} ({why}; a rocescope bug: please report it): the run after it is not in the session",
                            rocescope_decoders::units::duration_text(
                                status.sim_time_ns.load(Ordering::Relaxed)
                            )
                        ),
                    );
                }
            })
    };
    let thread = match spawned {
        Ok(t) => Some(t),
        Err(e) => {
            fail(
                &status,
                format!("the simulator did not start: cannot make its thread: {e}"),
            );
            None
        }
    };
    let mut handle = SourceHandle::bare(name, true, SourceKind::Sim);
    handle.sim = Some(spec);
    handle.ctl = Some(tx);
    handle.status = status;
    handle.thread = thread;
    (store, analysis, handle)
}

/// End a simulator's source as failed, saying why.
fn fail(status: &SourceStatus, why: String) {
    *status.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    status.end("simulation failed");
}

/// Longest simulated time per step: a millisecond, about 44 of the
/// simulator's repeating periods on `line-rate` (22.8 us each), which it
/// replays whole within a step (issue 51); a paced step is a millisecond
/// of wall time at most, so that views update smoothly.
const STEP_NS: u64 = 1_000_000;
const PACED_STEP_WALL_NS: f64 = 1e6;

/// The simulated time of one step: `STEP_NS` unpaced; paced, a step's
/// wall time at most `PACED_STEP_WALL_NS` (and 100 ns at least).
fn step_ns(pace: Pace) -> u64 {
    match pace {
        Pace::Fast => STEP_NS,
        Pace::RealTime(factor) => ((factor * PACED_STEP_WALL_NS) as u64).clamp(100, STEP_NS),
    }
}

fn run_sim(
    scenario: Scenario,
    pace: Pace,
    mut record: Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
    store: &Store,
    analysis: RcAnalyzer,
    status: &SourceStatus,
    rx: &Receiver<SourceCtl>,
) {
    // The tests' failing runs (scenarios of these names exist only there).
    #[cfg(test)]
    let ingest_panics = scenario.name == tests::INGEST_PANICS;
    // The tests' runs whose rows are all made on the simulator's thread.
    #[cfg(test)]
    let rows_here_always = scenario.name.ends_with(tests::ROWS_HERE);
    #[cfg(not(test))]
    let rows_here_always = false;
    #[cfg(test)]
    if scenario.name == tests::SIM_PANICS {
        panic!("a simulator's failure, for the test");
    }
    let step_ns = step_ns(pace);
    // A paced run is a card: a workload runs until stopped (unless the
    // scenario or --duration bounds it). Unpaced runs (`sim --headless`)
    // are the scenario's finite, reproducible run.
    let mut sim = match pace {
        Pace::RealTime(_) => Simulator::live(scenario),
        Pace::Fast => Simulator::new(scenario),
    };
    // Repeating periods replayed whole: the same records, a fraction of
    // the work (issue 51).
    sim.detect_periods(true);
    sim.replay_periods(true);
    let start = Instant::now();
    let mut paused_for = Duration::ZERO;
    let mut pace_kept = PaceKept::default();
    let mut t_ns = 0u64;
    let mut write_error: Option<String> = None;
    // The scenario ran to its end (not stopped by the workbench).
    let mut ended = false;
    // Ingest runs on a thread of its own, batches flowing to it and back
    // empty, a few in flight bounding memory. A batch's frames are made
    // into rows (`SimBatch::stage`) by the ingest thread, or by this one
    // when the ingest thread is behind (the channel full): in the time this
    // thread would have waited (`line-rate`, whose replayed periods cost
    // the simulator little), none of it on a simulator that is the slower.
    let (full_tx, full_rx) = sync_channel::<Handed>(BATCHES_IN_FLIGHT);
    let (free_tx, free_rx) = channel::<SimBatch>();
    let (free_staged_tx, free_staged_rx) = channel::<StagedBatch>();
    // Why the ingest thread stopped before the run's end (it failed).
    let ingest_failed = std::thread::scope(|scope| {
        let ingest_thread = std::thread::Builder::new()
            .name("rocescope-sim-ingest".into())
            .spawn_scoped(scope, || {
                // Its panic comes back as its words, for the error below.
                rocescope_replay::contain::contain(|| {
                    let mut ingest =
                        Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
                    let mut mine = StagedBatch::default();
                    for handed in full_rx {
                        #[cfg(test)]
                        if ingest_panics {
                            panic!("an ingest's failure, for the test");
                        }
                        // The simulator may have ended: a batch not taken
                        // back is dropped.
                        match handed {
                            Handed::Raw(mut batch) => {
                                batch.stage(&mut mine);
                                let _ = free_tx.send(batch);
                                mine.apply(store, &mut ingest, &analysis, status);
                            }
                            Handed::Staged(mut staged) => {
                                staged.apply(store, &mut ingest, &analysis, status);
                                let _ = free_staged_tx.send(staged);
                            }
                        }
                    }
                    store.finish_live(&mut ingest);
                })
            });
        let mut batch = SimBatch::default();
        // A batch this thread made into rows, emptied, for the next.
        let mut spare: Option<SimBatch> = None;
        // Without the thread (none could be made), ingest runs here.
        let mut inline_ingest = ingest_thread.is_err().then(|| {
            (
                Ingest::new(DecodeConfig::default(), Box::new(analysis.clone())),
                StagedBatch::default(),
            )
        });
        // False when the ingest thread is gone (it failed): the run stops.
        let mut hand_over = |batch: &mut SimBatch| {
            if batch.is_empty() {
                return true;
            }
            if let Some((ingest, staged)) = inline_ingest.as_mut() {
                batch.stage(staged);
                staged.apply(store, ingest, &analysis, status);
                return true;
            }
            let next = spare
                .take()
                .or_else(|| free_rx.try_recv().ok())
                .unwrap_or_default();
            let raw = Handed::Raw(std::mem::replace(batch, next));
            let sent = if rows_here_always {
                Err(TrySendError::Full(raw))
            } else {
                full_tx.try_send(raw)
            };
            match sent {
                Ok(()) => true,
                Err(TrySendError::Full(Handed::Raw(mut behind))) => {
                    let mut staged = free_staged_rx.try_recv().unwrap_or_default();
                    behind.stage(&mut staged);
                    spare = Some(behind);
                    full_tx.send(Handed::Staged(staged)).is_ok()
                }
                Err(TrySendError::Full(handed)) => full_tx.send(handed).is_ok(),
                Err(TrySendError::Disconnected(_)) => false,
            }
        };
        loop {
            match rx.try_recv() {
                Ok(SourceCtl::Stop) | Err(TryRecvError::Disconnected) => break,
                Ok(SourceCtl::Pause) => {
                    // What was simulated before the pause is shown during it.
                    if !hand_over(&mut batch) {
                        break;
                    }
                    status.paused.store(true, Ordering::Relaxed);
                    let paused_at = Instant::now();
                    match rx.recv() {
                        Ok(SourceCtl::Resume) => {}
                        _ => break,
                    }
                    paused_for += paused_at.elapsed();
                    status.paused.store(false, Ordering::Relaxed);
                }
                Ok(SourceCtl::Resume) | Err(TryRecvError::Empty) => {}
            }
            t_ns += step_ns;
            let more = sim.run_until_into(
                t_ns,
                &mut Feed {
                    record: &mut record,
                    write_error: &mut write_error,
                    batch: &mut batch,
                },
            );
            batch.step_end(sim.now_ns());
            // A paced run hands over every step so the views follow it.
            if (!more || batch.frames() >= BATCH_FRAMES || matches!(pace, Pace::RealTime(_)))
                && !hand_over(&mut batch)
            {
                break;
            }
            if !more {
                ended = true;
                break;
            }
            if let Pace::RealTime(factor) = pace {
                let due = Duration::from_secs_f64(t_ns as f64 / 1e9 / factor.max(1e-9));
                let elapsed = start.elapsed().saturating_sub(paused_for);
                pace_kept.observe(t_ns, elapsed, due, factor, status);
                if due > elapsed {
                    // Sleep in slices so that Stop is seen quickly.
                    std::thread::sleep((due - elapsed).min(Duration::from_millis(50)));
                }
            }
        }
        hand_over(&mut batch);
        drop(full_tx);
        if let Some((ingest, _)) = inline_ingest.as_mut() {
            store.finish_live(ingest);
        }
        match ingest_thread.map(|t| t.join()) {
            Ok(Ok(Err(why))) => Some(why),
            Ok(Err(_)) => Some("its thread stopped".to_owned()),
            Ok(Ok(Ok(()))) | Err(_) => None,
        }
    });
    if let Some(w) = &mut record
        && let Err(e) = w.flush()
    {
        write_error.get_or_insert_with(|| format!("recording: {e}"));
    }
    if let Some(e) = write_error {
        *status.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }
    if let Some(why) = ingest_failed {
        fail(
            status,
            format!(
                "the simulator's ingest failed ({why}; a rocescope bug: please report it): the run stopped at {}, the frames after {} are not in the session",
                rocescope_decoders::units::duration_text(sim.now_ns()),
                status.frames.load(Ordering::Relaxed)
            ),
        );
    } else if ended {
        status.end(format!(
            "simulation ended at {}",
            rocescope_decoders::units::duration_text(sim.now_ns())
        ));
    } else {
        status.end("simulation stopped");
    }
}

/// How well a paced run keeps its pace, told to the status line: a
/// simulation slower than its pace (a scenario too heavy for the machine)
/// is said beside its LIVE, not left to look as if it kept up.
#[derive(Debug, Default)]
struct PaceKept {
    /// The last reading's simulated ns and wall time (pauses left out).
    mark: Option<(u64, Duration)>,
}

/// Wall time a pace is read over: long enough that a step's jitter does
/// not show.
const PACE_WINDOW: Duration = Duration::from_millis(500);

impl PaceKept {
    /// After a step to `t_ns`, `elapsed` into the run (pauses left out),
    /// the step due at `due`, at `factor` of real time.
    fn observe(
        &mut self,
        t_ns: u64,
        elapsed: Duration,
        due: Duration,
        factor: f64,
        status: &SourceStatus,
    ) {
        let behind = elapsed.saturating_sub(due);
        status
            .behind_wall_ns
            .store(behind.as_nanos() as u64, Ordering::Relaxed);
        let (mark_ns, mark_at) = *self.mark.get_or_insert((t_ns, elapsed));
        let over = elapsed.saturating_sub(mark_at);
        if over >= PACE_WINDOW {
            let sim_s = t_ns.saturating_sub(mark_ns) as f64 / 1e9;
            let asked_s = over.as_secs_f64() * factor;
            let kept = sim_s / asked_s.max(1e-12);
            status
                .pace_kept_bits
                .store(kept.to_bits(), Ordering::Relaxed);
            self.mark = Some((t_ns, elapsed));
        }
    }
}

/// Frames per batch handed to the ingest thread by an unpaced run.
const BATCH_FRAMES: usize = 4096;
/// Batches queued for the ingest thread before the simulator waits.
const BATCHES_IN_FLIGHT: usize = 4;

/// Hand the commands the model queued for its source to it: a simulator
/// reruns with a parameter or sniffer change and the model is replaced,
/// keeping the view, the lesson and the exports still being written; a
/// lesson replaces the model with a run of its scenario, keeping the one
/// before to go back to; a source that cannot take one says so.
pub fn steer(model: &mut crate::Model) {
    for c in std::mem::take(&mut model.outbox) {
        match c {
            crate::Command::OpenLesson(_) => start_lesson(model),
            crate::Command::LeaveLesson => model.return_from_lesson(),
            // A live link's sniffer filter is the card's: the agent sets
            // it (its --control-cmd) and answers OK or ERR.
            crate::Command::SetSnifferFilter(word) if model.source.link.is_some() => {
                let sent = model.source.link.as_ref().map(|l| {
                    l.control
                        .send(&rocescope_device_link::protocol::Request::Filter(word))
                });
                model.status = match sent {
                    Some(Ok(())) => format!("sniffer filter {word:#x} sent to the agent"),
                    Some(Err(e)) => format!("sniffer filter {word:#x} not sent: {e}"),
                    None => String::new(),
                };
            }
            _ => match model.source.rerun(&c) {
                Ok(Some((store, analysis, handle))) => {
                    let mut next = crate::Model::new(store, analysis, handle);
                    next.view = model.view;
                    next.adopt_exports(model);
                    next.adopt_lesson(model);
                    next.adopt_partitions(model);
                    next.status = format!("restarted with {}", change_text(&c));
                    *model = next;
                }
                Ok(None) => {}
                Err(e) => model.status = e.to_string(),
            },
        }
    }
}

/// Replace the model with a run of its open lesson's scenario.
fn start_lesson(model: &mut crate::Model) {
    let Some(lesson) = model.lesson.clone() else {
        return;
    };
    match model.source.spawn_lesson(&lesson) {
        Ok((store, analysis, handle)) => {
            let mut next = crate::Model::new(store, analysis, handle);
            next.view = model.view;
            next.adopt_exports(model);
            next.adopt_lesson(model);
            let old = std::mem::replace(model, next);
            model.keep_previous(old);
            model.status = format!(
                "lesson: started {} (L leaves it, back to {})",
                lesson.scenario,
                model.previous_source_name().unwrap_or("the source before")
            );
        }
        Err(e) => {
            // Not played over a source it was not written for.
            model.lesson = None;
            model.status = e.to_string();
        }
    }
}

/// A source command as the user typed it.
fn change_text(c: &crate::Command) -> String {
    match c {
        crate::Command::SetSimParam { key, value } => format!("{key}={value}"),
        crate::Command::SetSnifferFilter(w) => format!("sniffer filter {w:#x}"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Scenario names whose runs fail, for the tests (no scenario has them).
    pub(super) const SIM_PANICS: &str = "test-sim-panics";
    pub(super) const INGEST_PANICS: &str = "test-sim-ingest-panics";
    /// A scenario name's ending: every batch's rows made on the simulator's
    /// thread, as when the ingest thread is behind.
    pub(crate) const ROWS_HERE: &str = "-rows-on-the-sim-thread";

    /// Waits (at most 30 s) for the source to end; its error.
    fn ended_with_error(handle: &SourceHandle) -> String {
        let t0 = Instant::now();
        while !handle.status().finished.load(Ordering::Acquire) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "a failed run never ended"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let reason = handle
            .status()
            .end_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        assert_eq!(reason.as_deref(), Some("simulation failed"));
        handle
            .status()
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .expect("the failure is told")
    }

    fn scenario(name: &str) -> Scenario {
        let mut sc = Scenario::resolve("teaching-basic").expect("a bundled scenario");
        sc.name = name.into();
        sc
    }

    /// A simulator whose thread panics ends as failed with its words, for
    /// a paced (workbench) run as for `sim --headless`.
    #[test]
    fn a_simulator_that_fails_ends_saying_so() {
        for pace in [Pace::Fast, Pace::RealTime(1e-6)] {
            let (_store, _analysis, handle) = spawn_sim(scenario(SIM_PANICS), pace, None);
            let e = ended_with_error(&handle);
            assert!(e.starts_with("the simulator failed at "), "{e}");
            assert!(e.contains("a simulator's failure, for the test"), "{e}");
        }
    }

    /// An ingest thread that panics stops the run (a paced one would run
    /// on, its frames thrown away) and ends it as failed, never "ended".
    #[test]
    fn a_simulator_whose_ingest_fails_ends_saying_so() {
        for pace in [Pace::Fast, Pace::RealTime(1e-6)] {
            let (store, _analysis, handle) = spawn_sim(scenario(INGEST_PANICS), pace, None);
            let e = ended_with_error(&handle);
            assert!(e.starts_with("the simulator's ingest failed ("), "{e}");
            assert!(e.contains("an ingest's failure, for the test"), "{e}");
            assert!(e.contains("are not in the session"), "{e}");
            assert_eq!(store.stats().packets, 0);
        }
    }
}
