//! The chosen signals and their formats, kept per waveform file between
//! runs in `signals.json` beside the lessons' progress (the state dir:
//! `$ROCESCOPE_STATE_DIR`, else `$XDG_STATE_HOME/rocescope`, else
//! `~/.local/state/rocescope`), keyed by the file's absolute path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Radix;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Saved {
    path: String,
    radix: Radix,
}

type All = BTreeMap<String, Vec<Saved>>;

fn state_file() -> Option<PathBuf> {
    Some(crate::paths::state_dir()?.join("signals.json"))
}

fn key(file: &Path) -> String {
    std::fs::canonicalize(file)
        .unwrap_or_else(|_| file.to_path_buf())
        .display()
        .to_string()
}

fn read_all() -> Result<All, String> {
    let Some(p) = state_file() else {
        return Ok(All::new());
    };
    match std::fs::read_to_string(&p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(All::new()),
        Err(e) => Err(format!("{}: {e}", p.display())),
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{}: {e} (saved signals ignored)", p.display())),
    }
}

/// The signals saved for `file`, and a warning when the state could not be read.
pub(super) fn load(file: &Path) -> (Vec<(String, Radix)>, Option<String>) {
    match read_all() {
        Ok(all) => (
            all.get(&key(file))
                .map(|v| v.iter().map(|s| (s.path.clone(), s.radix)).collect())
                .unwrap_or_default(),
            None,
        ),
        Err(e) => (Vec::new(), Some(e)),
    }
}

/// Keep `list` for `file` (through a temporary file, so a crash never leaves half).
pub(super) fn save(file: &Path, list: &[(String, Radix)]) -> Result<(), String> {
    let Some(p) = state_file() else {
        return Ok(());
    };
    // Read, change, write as one step within the process (each workbench
    // saves only its own file's entry; across processes the last writer wins).
    static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = SAVING.lock().unwrap_or_else(|e| e.into_inner());
    let mut all = read_all().unwrap_or_default();
    let entry: Vec<Saved> = list
        .iter()
        .map(|(path, radix)| Saved {
            path: path.clone(),
            radix: *radix,
        })
        .collect();
    if entry.is_empty() {
        all.remove(&key(file));
    } else {
        all.insert(key(file), entry);
    }
    let io = |e: std::io::Error| format!("{}: {e}", p.display());
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    // One temporary name per write: two workbenches may save at once.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = p.with_extension(format!("json.{}.{n}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &p).map_err(io)
}
