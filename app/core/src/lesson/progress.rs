//! Progress through the lessons, kept between runs in
//! `$ROCESCOPE_STATE_DIR/lessons.json` (default `$XDG_STATE_HOME/rocescope`,
//! else `~/.local/state/rocescope`): the furthest step reached and each
//! question's last verdict, per lesson.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One lesson's progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LessonProgress {
    /// Steps seen (the furthest, 1-based).
    pub reached: usize,
    /// 1-based step number -> the first answer was right. Later answers
    /// never change it.
    pub answers: BTreeMap<usize, bool>,
    /// Steps answered right after a wrong first answer.
    #[serde(default)]
    pub right_later: BTreeSet<usize>,
}

/// Every lesson's progress, by lesson title.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub lessons: BTreeMap<String, LessonProgress>,
}

/// Where progress is kept (`lessons.json` in the state folder), if a
/// home for it can be found.
pub fn path() -> Option<PathBuf> {
    Some(crate::paths::state_dir()?.join("lessons.json"))
}

impl Progress {
    /// The progress kept, or none yet. A file that cannot be read is
    /// reported and replaced by an empty progress.
    pub fn load() -> (Progress, Option<String>) {
        let Some(p) = path() else {
            return (Progress::default(), None);
        };
        match std::fs::read_to_string(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Progress::default(), None),
            Err(e) => (Progress::default(), Some(format!("{}: {e}", p.display()))),
            Ok(text) => match serde_json::from_str(&text) {
                Ok(v) => (v, None),
                Err(e) => (
                    Progress::default(),
                    Some(format!("{}: {e} (progress starts again)", p.display())),
                ),
            },
        }
    }

    /// Write it (through a temporary file, so a crash never leaves half).
    pub fn save(&self) -> Result<(), String> {
        let Some(p) = path() else {
            return Ok(());
        };
        let io = |e: std::io::Error| format!("{}: {e}", p.display());
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        // A temporary name of this save's own: two models of one process
        // saving at once must not rename each other's file.
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = p.with_extension(format!("json.{}-{n}.tmp", std::process::id()));
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &p).map_err(io)
    }

    /// `reached/steps` and `right/asked` for the lessons list: right at
    /// the first answer, and how many more were right on a later one.
    pub fn summary(&self, title: &str, steps: usize, questions: usize) -> String {
        let p = self.lessons.get(title).cloned().unwrap_or_default();
        let right = p.answers.values().filter(|r| **r).count();
        if p.reached == 0 {
            return "not started".into();
        }
        if questions == 0 {
            return format!("{}/{steps} steps", p.reached.min(steps));
        }
        let later = match p.right_later.len() {
            0 => String::new(),
            n => format!(", {n} more later"),
        };
        format!(
            "{}/{steps} steps, {right}/{questions} right first time{later}",
            p.reached.min(steps)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_before_right_later_reads_and_the_summary_counts_first_answers() {
        let old = r#"{"lessons":{"T":{"reached":3,"answers":{"2":true,"3":false}}}}"#;
        let mut p: Progress = serde_json::from_str(old).unwrap();
        assert_eq!(p.summary("T", 4, 2), "3/4 steps, 1/2 right first time");
        p.lessons.get_mut("T").unwrap().right_later.insert(3);
        assert_eq!(
            p.summary("T", 4, 2),
            "3/4 steps, 1/2 right first time, 1 more later"
        );
        assert_eq!(p.summary("U", 4, 2), "not started");
    }
}
