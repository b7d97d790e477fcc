//! The front ends of rocescope over the UI-free core (`rocescope-core`):
//! the terminal workbench (`tui`) and the desktop workbench (`gui`). Both
//! open their sources through `rocescope_core::source::open`. The binary's
//! subcommands live in `main.rs`.

pub mod gui;
pub mod live_parts;
pub mod tui;

/// Tests keep the lessons' progress out of the user's state folder (the
/// first call in the process sets where).
#[cfg(test)]
pub(crate) fn keep_test_progress_apart() {
    rocescope_core::lesson::progress::use_dir(
        std::env::temp_dir().join(format!("rocescope-test-progress-{}", std::process::id())),
    );
}
