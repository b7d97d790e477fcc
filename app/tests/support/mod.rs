//! What the integration tests share (`mod support;` in a test file).
#![allow(dead_code)]

use std::path::Path;

/// The user's documentation as one text: README.md, then the guide's
/// pages under docs/ in name order. Tests that run "the README's commands"
/// find them wherever a page of the guide shows them.
pub fn user_docs() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    for page in pages {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(&page).expect("a page of docs/"));
    }
    text
}
