//! rocescope's data out: the store and its analysis as polars tables with a
//! stable schema (SCHEMA.md), streamed to Parquet, CSV or JSON lines, and
//! queried with SQL.
//!
//! Tables are built in batches of rows straight from the store's index and
//! the frame bytes it points at, so a capture larger than memory exports
//! without every packet being loaded at once.

mod error;
mod export;
mod live;
mod packets;
mod pages;
mod parquet;
mod rows;
mod scan;
mod sql;
mod tables;
mod text;

pub use error::DataError;
pub use export::{
    BATCH_ROWS, ExportOptions, ExportSummary, Format, Rows, export, partition_capture_name,
};
pub use live::LivePartitions;
pub use packets::{PacketBatch, PacketBatches, packets_schema};
pub use polars::prelude::DataFrame;
pub use scan::{ParquetTable, ScanTally, read_parquet};
pub use sql::{QueryOptions, query, query_parquet, query_parquet_tables};
pub use tables::{
    column_name, episode_table, episodes, finding_table, findings, left_out, losses, paths,
    profiler, qp_states, qp_table, qps, slots,
};
pub use text::{OutputFormat, write_frame};

use rocescope_decoders::analysis::Report;
use rocescope_replay::Record;
use rocescope_replay::points::PointsReport;
use rocescope_replay::store::Store;

/// One of the tables rocescope exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per frame, in frame order.
    Packets,
    /// One row per QP conversation.
    Qps,
    /// One row per Go-Back-N episode.
    Episodes,
    /// One row per throughput-drop finding.
    Findings,
    /// One row per profiler sample.
    Profiler,
    /// One row per service-slot decision.
    Slots,
    /// One row per run of one state of a requester QP's time.
    QpStates,
    /// One row per frame lost between capture points, with the segment
    /// it was lost on.
    Losses,
    /// One row per frame of each capture point: the points that saw it.
    Paths,
}

impl Table {
    pub const ALL: [Table; 9] = [
        Table::Packets,
        Table::Qps,
        Table::Episodes,
        Table::Findings,
        Table::Profiler,
        Table::Slots,
        Table::QpStates,
        Table::Losses,
        Table::Paths,
    ];

    /// A table of a session of capture points (`losses`, `paths`): empty
    /// for one capture, so left out of "every table" there.
    pub fn of_points(self) -> bool {
        matches!(self, Table::Losses | Table::Paths)
    }

    /// Whether the table reads the QPs' time by state (the runs, their
    /// totals, or the drops they tell): a command that needs none of these
    /// indexes without that accounting (BENCHMARKS.md, "Time by state").
    pub fn reads_time_by_state(self) -> bool {
        matches!(self, Table::Qps | Table::QpStates | Table::Findings)
    }

    /// The tables `sql` names (as [`query`] registers them).
    pub fn named_in(sql: &str) -> impl Iterator<Item = Table> + '_ {
        Table::ALL
            .into_iter()
            .filter(move |t| sql::mentions(sql, t.name()))
    }

    /// The table's name in SQL and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Table::Packets => "packets",
            Table::Qps => "qps",
            Table::Episodes => "episodes",
            Table::Findings => "findings",
            Table::Profiler => "profiler",
            Table::Slots => "slots",
            Table::QpStates => "qp_states",
            Table::Losses => "losses",
            Table::Paths => "paths",
        }
    }

    pub fn from_name(name: &str) -> Result<Table, DataError> {
        Table::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| DataError::UnknownTable(name.to_owned()))
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the tables are made of: a store, the analysis report over it, and
/// the capture's name (the `capture` partition key).
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub store: &'a Store,
    pub report: &'a Report,
    pub capture: &'a str,
    /// Profiler rows from outside the store (`ProbeDef` and `Profiler`
    /// records): a waveform's chosen signals, exported with the probes.
    pub extra_profiler: &'a [Record],
    /// A session of several capture points: the `losses` and `paths`
    /// tables (empty without).
    pub points: Option<&'a PointsReport>,
}

impl Source<'_> {
    /// A small table built whole (every table but `packets`).
    pub fn small_table(&self, table: Table) -> Result<DataFrame, DataError> {
        Ok(match table {
            Table::Packets => {
                let mut b = PacketBatches::new(self.store, usize::MAX);
                b.collect(0..self.store.len())?
            }
            Table::Qps => qps(self.report)?,
            Table::Episodes => episodes(self.report)?,
            Table::Findings => findings(self.report)?,
            Table::Profiler => profiler(self.store, self.extra_profiler)?,
            Table::Slots => slots(self.store)?,
            Table::QpStates => qp_states(self.report)?,
            Table::Losses => losses(self.points)?,
            Table::Paths => paths(self.points)?,
        })
    }
}
