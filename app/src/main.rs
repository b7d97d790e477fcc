//! `rocescope`: the observability and debugging workbench for RoCE. The
//! command line is `rocescope::cli`.

fn main() -> std::process::ExitCode {
    rocescope::cli::main()
}
