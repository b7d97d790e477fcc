//! The front ends of rocescope over the UI-free core (`rocescope-core`):
//! the terminal workbench (`tui`) and the desktop workbench (`gui`). Both
//! open their sources through `rocescope_core::source::open`. The binary's
//! subcommands live in `main.rs`.

pub mod gui;
pub mod tui;
