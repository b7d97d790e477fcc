//! `--partitions DIR [--window W] [--capture NAME]`, shared by `attach`,
//! `sim` and `gui`: the session written as hive-style Parquet partitions
//! while the workbench runs (the core's writer, `Command::WritePartitions`).

use std::path::PathBuf;

use rocescope_core::{Command, Model};

#[derive(Debug, Clone, clap::Args)]
pub struct PartitionArgs {
    /// Write the session as hive-style Parquet partitions under DIR, the
    /// layout of `export --partition`: each --window of the packets table
    /// as soon as it closes (a crash loses at most the open one), the other
    /// tables when the session ends. In the workbench, `:partitions off`
    /// stops and `:partitions DIR` starts again.
    #[arg(long, value_name = "DIR")]
    pub partitions: Option<PathBuf>,
    /// Capture time per partition with --partitions, e.g. 1m, 10s, 100ms.
    #[arg(
        long,
        default_value = "1m",
        value_name = "DURATION",
        value_parser = super::args::duration,
        requires = "partitions"
    )]
    pub window: std::time::Duration,
    /// The `capture` name of the partitions (default: live-UNIX_SECONDS).
    #[arg(long, value_name = "NAME", requires = "partitions")]
    pub capture: Option<String>,
}

impl PartitionArgs {
    /// The window in ns.
    pub fn window_ns(&self) -> u64 {
        super::args::ns(self.window)
    }

    /// The command that starts the writer, when --partitions is given.
    pub fn command(&self) -> Option<Command> {
        self.partitions
            .as_ref()
            .map(|dir| Command::WritePartitions {
                dir: dir.clone(),
                window_ns: self.window_ns(),
                capture: self.capture.clone(),
            })
    }

    /// Start writing partitions of `model`'s session, when asked.
    pub fn start(&self, mut model: Model) -> anyhow::Result<Model> {
        if let Some(c) = self.command() {
            model.apply(c);
            if model.partitions().is_none() {
                anyhow::bail!("{}", rocescope_core::status_line(&model).message);
            }
        }
        Ok(model)
    }
}
