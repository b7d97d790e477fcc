//! The UI-free core of the rocescope workbench.
//!
//! The model, the one command enum, the display filter, the explanations
//! and the sources live here and compile without ratatui, crossterm, egui or
//! eframe (CI checks `cargo tree -p rocescope-core`). The TUI and the GUI
//! only read the [`Model`] and send it [`Command`]s.

pub mod cmdline;
pub mod command;
pub mod explain;
pub mod export;
pub mod filter;
pub mod lesson;
pub mod link;
pub mod live_points;
pub mod model;
pub mod partitions;
pub mod paths;
pub mod query;
pub mod records;
mod scan;
pub mod session;
pub mod signals;
mod sim_feed;
pub mod source;
pub mod status;

pub use command::{Command, UiCommand, View};
pub use export::{ExportError, view_table};
pub use model::{Model, Overlay};
pub use rocescope_data::{ExportSummary, Table};
pub use status::{StatusLine, status_line};
