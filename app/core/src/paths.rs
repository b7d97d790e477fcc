//! Where rocescope keeps files, in one place: the state folder (lesson
//! progress, the signals chosen per waveform), the cache folder (live
//! sessions' disk segments), and a path the user typed (`~/x`, relative)
//! made absolute.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A state folder set by the process (tests keep their state out of the
/// user's); the first call wins.
static STATE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Keep state in `dir` for the rest of the process (the first call wins).
pub fn use_state_dir(dir: PathBuf) {
    let _ = STATE_DIR.set(dir);
}

/// The state folder: `$ROCESCOPE_STATE_DIR`, else `$XDG_STATE_HOME/rocescope`,
/// else `~/.local/state/rocescope`; `None` without a home for it.
pub fn state_dir() -> Option<PathBuf> {
    if let Some(d) = STATE_DIR.get() {
        return Some(d.clone());
    }
    env_dir("ROCESCOPE_STATE_DIR")
        .or_else(|| env_dir("XDG_STATE_HOME").map(|d| d.join("rocescope")))
        .or_else(|| home().map(|h| h.join(".local/state/rocescope")))
}

/// The cache folder: `$XDG_CACHE_HOME/rocescope`, else `~/.cache/rocescope`,
/// else the temporary folder's `rocescope`.
pub fn cache_dir() -> PathBuf {
    env_dir("XDG_CACHE_HOME")
        .or_else(|| home().map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("rocescope")
}

/// Where live sessions put their segments, a folder each.
pub fn sessions_dir() -> PathBuf {
    cache_dir().join("sessions")
}

/// A path as the user typed it, made absolute (so that a message says
/// where a file went), with a leading `~/` expanded.
pub fn resolve(path: &Path) -> PathBuf {
    let expanded = match (path.strip_prefix("~"), home()) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    };
    std::path::absolute(&expanded).unwrap_or(expanded)
}

fn home() -> Option<PathBuf> {
    env_dir("HOME")
}

/// An environment variable naming a folder; empty is unset.
fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_absolute_and_tilde_is_home() {
        assert!(resolve(Path::new("out.csv")).is_absolute());
        if let Some(home) = home() {
            assert_eq!(resolve(Path::new("~/out.csv")), home.join("out.csv"));
            assert_eq!(resolve(Path::new("~")), home);
        }
        // `~user` is not expanded (nor is `~` anywhere but first).
        assert!(resolve(Path::new("~x/out.csv")).ends_with("~x/out.csv"));
        assert!(sessions_dir().ends_with("rocescope/sessions"));
    }
}
