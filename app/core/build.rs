//! The shipped lessons: every assets/lessons/*.toml, in file-name order,
//! and the scenarios written for them (assets/lessons/scenarios/*.toml),
//! compiled in (a new lesson needs no code).

use std::fmt::Write;
use std::path::Path;

fn main() {
    let lessons = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/lessons");
    table(&lessons, "lessons.rs");
    table(&lessons.join("scenarios"), "lesson_scenarios.rs");
}

/// `[(stem, include_str!(path)), ...]` of the folder's TOML files, sorted.
fn table(dir: &Path, out_name: &str) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    files.sort();
    let mut out = String::from("[\n");
    for p in &files {
        println!("cargo:rerun-if-changed={}", p.display());
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let _ = writeln!(
            out,
            "    ({stem:?}, include_str!({:?})),",
            p.display().to_string()
        );
    }
    out.push(']');
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join(out_name);
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}
