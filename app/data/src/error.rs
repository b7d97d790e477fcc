use std::path::PathBuf;

/// Everything that can go wrong getting data out.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error(
        "unknown table {0:?} (tables: packets, qps, episodes, findings, profiler, slots, qp_states)"
    )]
    UnknownTable(String),
    #[error("cannot tell the output format of {path}: name it .parquet, .csv or .jsonl")]
    UnknownFormat { path: PathBuf },
    #[error("--partition writes Parquet folders; {path} is not a .parquet path or a folder")]
    PartitionNeedsParquet { path: PathBuf },
    #[error("{what} {path}: {cause}")]
    Io {
        what: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("reading frames back from the capture")]
    Store(#[from] rocescope_replay::store::StoreError),
    #[error("the export's writer stopped before the table was written")]
    WriterStopped,
    /// A thread building the packets table's batches panicked (its words).
    #[error(
        "a thread building the packets table failed ({0}; a rocescope bug: please report it): the table is not written"
    )]
    BuilderFailed(String),
    /// Its `ExportOptions::cancel` was set; what it was writing is removed.
    #[error("the export was stopped before the table was written")]
    Cancelled,
    /// The engine's own message (bad SQL, a type error, a failed write).
    #[error(transparent)]
    Polars(#[from] polars::prelude::PolarsError),
}
