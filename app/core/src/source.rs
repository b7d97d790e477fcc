//! Sources run on their own threads and feed one store through one
//! interface: the bundled simulator here; capture files index themselves
//! (`Store::open`), the live link arrives through device-link.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::FindingCause;
use rocescope_replay::record::TruthEvent;
use rocescope_replay::store::{Ingest, IngestFrame, RcAnalyzer, Store};
use rocescope_replay::{PcapngWriter, Record, TimeBase};
use rocescope_sim::{FrameRef, RecordSink, Scenario, Simulator};

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
    /// A source that is already complete (a capture file).
    pub fn file(name: String) -> SourceHandle {
        SourceHandle {
            name,
            live: false,
            kind: SourceKind::File,
            sim: None,
            limits: None,
            ctl: None,
            status: Arc::new(SourceStatus::default()),
            thread: None,
        }
    }

    /// A live source fed by another component (the device-link client),
    /// which reports into `status()`.
    pub fn external(name: String) -> SourceHandle {
        SourceHandle {
            name,
            live: true,
            kind: SourceKind::Link,
            sim: None,
            limits: None,
            ctl: None,
            status: Arc::new(SourceStatus::default()),
            thread: None,
        }
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
    ) -> Result<Option<(Arc<Store>, RcAnalyzer, SourceHandle)>, String> {
        use crate::Command;
        if !matches!(
            change,
            Command::SetSimParam { .. } | Command::SetSnifferFilter(_)
        ) {
            return Ok(None);
        }
        let Some((scenario, pace)) = &self.sim else {
            return Err(format!("{} does not take {change:?}", self.name));
        };
        let mut next = scenario.clone();
        match change {
            Command::SetSimParam { key, value } => {
                next.set(key, value).map_err(|e| e.to_string())?;
            }
            Command::SetSnifferFilter(word) => match &mut next.sniffer {
                Some(s) => s.filter = *word,
                None => return Err(format!("scenario {} has no sniffer", next.name)),
            },
            _ => return Ok(None),
        }
        let Some(limits) = &self.limits else {
            return Ok(Some(spawn_sim(next, *pace, None)));
        };
        let store = limits.live_store(0).map_err(|e| e.to_string())?;
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
    ) -> Result<(Arc<Store>, RcAnalyzer, SourceHandle), String> {
        let scenario = Scenario::builtin(&lesson.scenario).ok_or_else(|| {
            format!(
                "lesson {}: no shipped scenario {}",
                lesson.title, lesson.scenario
            )
        })?;
        let pace = Pace::for_lesson(scenario.duration_ns);
        let Some(limits) = &self.limits else {
            return Ok(spawn_sim(scenario, pace, None));
        };
        let limits = crate::session::SessionLimits {
            dir: None,
            ..limits.clone()
        };
        let store = limits.live_store(0).map_err(|e| e.to_string())?;
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
    let thread = {
        let store = Arc::clone(&store);
        let analysis = analysis.clone();
        let status = Arc::clone(&status);
        std::thread::Builder::new()
            .name("rocescope-sim".into())
            .spawn(move || run_sim(scenario, pace, record, &store, analysis, &status, &rx))
            .ok()
    };
    let handle = SourceHandle {
        name,
        live: true,
        kind: SourceKind::Sim,
        sim: Some(spec),
        limits: None,
        ctl: Some(tx),
        status,
        thread,
    };
    (store, analysis, handle)
}

/// Longest simulated time per step: short enough that views update smoothly.
const STEP_NS: u64 = 20_000;

fn run_sim(
    scenario: Scenario,
    pace: Pace,
    mut record: Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
    store: &Store,
    analysis: RcAnalyzer,
    status: &SourceStatus,
    rx: &Receiver<SourceCtl>,
) {
    // Small steps for short runs so that a paced run unfolds smoothly.
    let step_ns = (scenario.duration_ns / 200).clamp(100, STEP_NS);
    let mut sim = Simulator::new(scenario);
    let mut ingest = Ingest::new(DecodeConfig::default(), Box::new(analysis.clone()));
    let start = Instant::now();
    let mut paused_for = Duration::ZERO;
    let mut t_ns = 0u64;
    let mut write_error: Option<String> = None;
    // The scenario ran to its end (not stopped by the workbench).
    let mut ended = false;
    loop {
        match rx.try_recv() {
            Ok(SourceCtl::Stop) | Err(TryRecvError::Disconnected) => break,
            Ok(SourceCtl::Pause) => {
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
                store,
                ingest: &mut ingest,
                analysis: &analysis,
                status,
            },
        );
        store.flush_live(&mut ingest);
        status.sim_time_ns.store(sim.now_ns(), Ordering::Relaxed);
        if !more {
            ended = true;
            break;
        }
        if let Pace::RealTime(factor) = pace {
            let due = Duration::from_secs_f64(t_ns as f64 / 1e9 / factor.max(1e-9));
            let elapsed = start.elapsed().saturating_sub(paused_for);
            if due > elapsed {
                // Sleep in slices so that Stop is seen quickly.
                std::thread::sleep((due - elapsed).min(Duration::from_millis(50)));
            }
        }
    }
    if let Some(w) = &mut record {
        if let Err(e) = w.flush() {
            write_error.get_or_insert_with(|| format!("recording: {e}"));
        }
    }
    if let Some(e) = write_error {
        *status.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }
    store.finish_live(&mut ingest);
    if ended {
        status.end(format!(
            "simulation ended at {}",
            crate::units::format_time_ns(sim.now_ns())
        ));
    } else {
        status.end("simulation stopped");
    }
}

/// Where the simulator's records go: the optional recording, then the
/// store (frames lent by the simulator, so none is allocated on the way).
struct Feed<'a> {
    record: &'a mut Option<PcapngWriter<std::io::BufWriter<std::fs::File>>>,
    write_error: &'a mut Option<String>,
    store: &'a Store,
    ingest: &'a mut Ingest,
    analysis: &'a RcAnalyzer,
    status: &'a SourceStatus,
}

impl RecordSink for Feed<'_> {
    fn frame(&mut self, f: FrameRef<'_>) {
        if let Some(w) = self.record.as_mut()
            && let Err(e) = w.write_frame(f.ts_ns, f.port, f.direction, f.orig_len, f.data)
        {
            self.write_error
                .get_or_insert_with(|| format!("recording stopped: {e}"));
        }
        let frame = IngestFrame {
            ts_ns: f.ts_ns,
            data: f.data,
            origlen: f.orig_len,
            linktype: 1,
            port: f.port,
            dir: f.direction,
            file_offset: 0,
        };
        self.store.ingest(self.ingest, &frame);
        self.status.frames.fetch_add(1, Ordering::Relaxed);
    }

    fn record(&mut self, r: Record) {
        if let Some(w) = self.record.as_mut()
            && let Err(e) = w.write_record(&r)
        {
            self.write_error
                .get_or_insert_with(|| format!("recording stopped: {e}"));
        }
        note_evidence(self.analysis, &r);
        self.store.push_record(r);
        self.status.records.fetch_add(1, Ordering::Relaxed);
    }
}

/// Ground truth that the diagnosis may cite (what frames cannot show).
fn note_evidence(analysis: &RcAnalyzer, r: &Record) {
    let Record::Truth(t) = r else { return };
    let what = match t.event {
        TruthEvent::PfcPause { .. } => FindingCause::PfcPause,
        TruthEvent::DpiDrop => FindingCause::DpiDrop,
        _ => return,
    };
    analysis
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .note(t.ts_ns, what);
}

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
            _ => match model.source.rerun(&c) {
                Ok(Some((store, analysis, handle))) => {
                    let mut next = crate::Model::new(store, analysis, handle);
                    next.view = model.view;
                    next.adopt_exports(model);
                    next.adopt_lesson(model);
                    next.status = format!("restarted with {}", change_text(&c));
                    *model = next;
                }
                Ok(None) => {}
                Err(e) => model.status = e,
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
            model.status = e;
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
