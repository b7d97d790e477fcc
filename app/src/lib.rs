//! The front ends of rocescope over the UI-free core (`rocescope-core`):
//! the terminal workbench (`tui`) and the desktop workbench (`gui`). Both
//! open their sources through `rocescope_core::source::open`. The
//! commands of the `rocescope` binary are in `cli`, one file each.

pub mod cli;
pub mod gui;
pub mod tui;

/// glibc's allocator tuned to what a command does (`mallopt`); other
/// allocators keep their own policy.
pub(crate) mod malloc {
    /// One setting of glibc's allocator.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Tune {
        /// Free bytes at the heap's top before it is given back.
        TrimThreshold(i32),
        /// Bytes the heap grows by beyond what is asked.
        TopPad(i32),
        /// Blocks this big or larger are mapped on their own.
        MmapThreshold(i32),
    }

    /// Applies `settings` in order.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    pub(crate) fn tune(settings: &[Tune]) {
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        for &s in settings {
            let (param, value) = match s {
                Tune::TrimThreshold(v) => (-1, v),
                Tune::TopPad(v) => (-2, v),
                Tune::MmapThreshold(v) => (-3, v),
            };
            // SAFETY: `mallopt` only tunes glibc's allocator (how far the
            // heap grows, which blocks it maps on their own, when it
            // shrinks); no memory changes hands.
            unsafe {
                mallopt(param, value);
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub(crate) fn tune(_settings: &[Tune]) {}
}

#[cfg(test)]
pub(crate) mod test_points;
#[cfg(test)]
pub(crate) mod test_wave;

/// A file opened in a workbench with its waveform: `wave` (beside a capture)
/// is aligned by content and the result shown in the status line; the
/// waveform's signals (of `wave`, or of `file` when it is a waveform) are
/// shown beside the packets, through the alignment's offset.
pub fn with_wave(
    model: &mut rocescope_core::Model,
    file: &std::path::Path,
    wave: Option<&std::path::Path>,
    options: &rocescope_replay::wave::WaveOptions,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    // The alignment reads both files once, before the workbench shows.
    let aligned = match wave {
        Some(w) => Some(
            rocescope_replay::wave::align(file, w, options)
                .with_context(|| format!("aligning {} with {}", w.display(), file.display()))?,
        ),
        None => None,
    };
    if let Some(c) =
        rocescope_core::signals::open_command(file, wave.zip(aligned.as_ref()), options)
    {
        model.apply(c);
    }
    if let Some(a) = aligned {
        model.apply(rocescope_core::Command::Notify(a.to_string()));
    }
    Ok(())
}

/// Tests keep the lessons' progress out of the user's state folder (the
/// first call in the process sets where).
#[cfg(test)]
pub(crate) fn keep_test_progress_apart() {
    // Emptied once a run: a progress a run before kept would change what
    // the lessons' tests see.
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = rocescope_testkit::build_tmp().join("test-progress");
        let _ = std::fs::remove_dir_all(&d);
        d
    });
    rocescope_core::paths::use_state_dir(dir.clone());
}

/// The workbench's model of the bundled sample capture, indexed in full,
/// with no lesson progress (the views' tests).
#[cfg(test)]
pub(crate) fn sample_model() -> rocescope_core::Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/captures/sample-write-read.pcap");
    indexed_model(&path, "sample-write-read.pcap")
}

/// The workbench's model of the capture or waveform at `path`, indexed in
/// full, its source called `name`, with no lesson progress.
#[cfg(test)]
pub(crate) fn indexed_model(path: &std::path::Path, name: &str) -> rocescope_core::Model {
    use rocescope_replay::store::{RcAnalyzer, Store};
    let analysis = RcAnalyzer::default();
    let store = Store::open(
        path,
        rocescope_decoders::DecodeConfig::default(),
        Box::new(analysis.clone()),
    )
    .unwrap_or_else(|e| panic!("{} opens as a capture: {e}", path.display()));
    store.wait();
    keep_test_progress_apart();
    let mut m = rocescope_core::Model::new(
        store,
        analysis,
        rocescope_core::source::SourceHandle::file(name.into()),
    );
    m.forget_lesson_progress();
    m.tick(std::time::Instant::now());
    m
}

/// A finished run of the first shipped lesson with a step that asks
/// `kind` (without parameters; `what` names it for the failure), open at
/// that step (the views' tests check its content), and that step's ask.
#[cfg(test)]
pub(crate) fn lesson_at_ask(
    kind: rocescope_core::lesson::AskKind,
    what: &str,
) -> (rocescope_core::Model, rocescope_core::lesson::Ask) {
    use rocescope_core::lesson::{self, check};
    use rocescope_core::source::{Pace, spawn_sim};
    use rocescope_core::{Command, Model};
    keep_test_progress_apart();
    let (i, step, l) = lesson::builtin()
        .iter()
        .enumerate()
        .find_map(|(i, l)| {
            let s = l.steps.iter().position(|s| {
                s.ask
                    .as_ref()
                    .is_some_and(|a| a.kind == kind && a.params.is_empty())
            })?;
            Some((i, s, l))
        })
        .unwrap_or_else(|| panic!("no shipped lesson asks {what}"));
    let sc = check::scenario(l, &Default::default()).expect("the lesson's scenario");
    let (store, analysis, handle) = spawn_sim(sc, Pace::Fast, None);
    store.wait();
    keep_test_progress_apart();
    let mut m = Model::new(store, analysis, handle);
    m.forget_lesson_progress();
    m.apply(Command::OpenLesson(i));
    m.take_outbox();
    for _ in 0..step {
        m.apply(Command::NextLessonStep);
    }
    let ask = l.steps[step].ask.clone().expect("the step asks");
    (m, ask)
}
