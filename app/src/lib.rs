//! The front ends of rocescope over the UI-free core (`rocescope-core`):
//! the terminal workbench. The binary's subcommands live in `main.rs`.

pub mod tui;
