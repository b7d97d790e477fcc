//! The front ends of rocescope over the UI-free core (`rocescope-core`):
//! the terminal workbench (`tui`) and the desktop workbench (`gui`), and
//! the live link as a source both use (`live`). The
//! binary's subcommands live in `main.rs`.

pub mod gui;
pub mod live;
pub mod tui;
