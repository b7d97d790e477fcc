//! The front ends of rocescope over the UI-free core (`rocescope-core`):
//! the terminal workbench (`tui`) and the desktop workbench (`gui`). Both
//! open their sources through `rocescope_core::source::open`. The binary's
//! subcommands live in `main.rs`.

pub mod gui;
pub mod live_parts;
pub mod tui;

/// How a waveform or ILA capture is read: `--axis`, `--clock`,
/// `--sample-clock` (`decode`, `info`, `stats`, `open`, `gui`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WaveArgs {
    /// Waveforms: only this AXI4-Stream interface (scope path or its end);
    /// or, for an ILA capture with generic probe names, which probe is
    /// which: tdata=probe0,tkeep=probe1,tvalid=probe2,tlast=probe3,tready=probe4.
    #[arg(long, value_name = "SCOPE|MAP")]
    pub axis: Option<String>,
    /// Waveforms: the clock of the interfaces (full path or name), instead
    /// of the clk/aclk/ap_clk/aclk_i found in scope.
    #[arg(long, value_name = "SIGNAL")]
    pub clock: Option<String>,
    /// ILA captures: the clock the ILA sampled at (250MHz, 322.265625MHz,
    /// 4ns), which the file does not hold [default: 250MHz, the card's].
    #[arg(long, value_name = "FREQ", value_parser = rocescope_replay::wave::ila::parse_sample_clock)]
    pub sample_clock: Option<u64>,
}

impl WaveArgs {
    /// As the reader takes them.
    pub fn options(&self) -> rocescope_replay::wave::WaveOptions {
        rocescope_replay::wave::WaveOptions {
            axis: self.axis.clone(),
            clock: self.clock.clone(),
            sample_clock_hz: self.sample_clock,
        }
    }
}

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
    rocescope_core::lesson::progress::use_dir(
        std::env::temp_dir().join(format!("rocescope-test-progress-{}", std::process::id())),
    );
}
