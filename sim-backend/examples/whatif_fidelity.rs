//! FIDELITY.md's "What if" table: each shipped scenario's run taken as
//! the capture, each change predicted from it and run directly.
//!
//! `cargo run --release -p rocescope-sim --example whatif_fidelity`

use rocescope_sim::Scenario;
use rocescope_sim::whatif::validate::{CHANGES, markdown, validate};

fn main() {
    let mut rows = Vec::new();
    for name in Scenario::builtin_names() {
        rows.extend(validate(name, 2_000_000, CHANGES));
    }
    print!("{}", markdown(&rows));
}
