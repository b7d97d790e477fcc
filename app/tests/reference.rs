//! docs/reference.md is the binary's own help, every command's, so the
//! command reference cannot drift from clap. `ROCESCOPE_ACCEPT_REFERENCE=1
//! cargo test -p rocescope --test reference` rewrites the page after a
//! change to the command line.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "rocescope {args:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands the top-level help lists, `help` aside.
fn commands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

fn reference() -> String {
    let top = help(&[]);
    let mut page = String::from(
        "# Command reference\n\n\
         Every command and its options, as `rocescope COMMAND --help` prints them\n\
         (a test compares this page with the binary's help; \
         `ROCESCOPE_ACCEPT_REFERENCE=1 cargo test -p rocescope --test reference`\n\
         rewrites it). Back to the [README](../README.md).\n\n## rocescope\n\n```text\n",
    );
    page.push_str(top.trim_end());
    page.push_str("\n```\n");
    let names = commands(&top);
    assert!(names.len() >= 10, "{top}");
    for name in names {
        page.push_str(&format!("\n## rocescope {name}\n\n```text\n"));
        page.push_str(help(&[name.as_str()]).trim_end());
        page.push_str("\n```\n");
    }
    page
}

#[test]
fn the_command_reference_is_the_binarys_help() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference.md");
    let want = reference();
    if std::env::var_os("ROCESCOPE_ACCEPT_REFERENCE").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/reference.md differs from the binary's help; run \
         ROCESCOPE_ACCEPT_REFERENCE=1 cargo test -p rocescope --test reference"
    );
}
