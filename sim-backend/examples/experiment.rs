//! Runs one of the paper's experiments from the model and prints its JSON.
//! `cargo run -p rocescope-sim --release --example experiment -- NAME [KEY=VALUE]...`

use rocescope_sim::{Params, experiments};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "retransmission".to_owned());
    let mut params = Params::default();
    for kv in args {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("expected KEY=VALUE, got `{kv}`");
            std::process::exit(2);
        };
        if let Err(e) = params.set(k, v) {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
    match experiments::run_json(&name, &params) {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
