//! Panics held at the call that made them, told as errors.
//!
//! wellen and fst-reader assert on what a damaged file holds (a value
//! with a character no VCD allows, an FST block longer than its section):
//! they panic rather than fail. Every call into them from rocescope goes
//! through [`contain`], on whichever thread it runs (the main thread at
//! open, `rocescope-wave`, `rocescope-signal`), and a panic there becomes
//! the text of an error that names the file and where, as a cut file's
//! does. The long-running threads (indexing, the simulator and its
//! ingest, a link's reader, ingest and recorder, the agent's accepting
//! thread and client line readers, the links' status and
//! the live points' analysis, the filter's scan, the partitions' writer,
//! the export's builders) run contained too: a bug there is an error the
//! user sees, never a thread gone quiet. The panic hook stays silent for
//! a contained panic, so nothing but that error reaches the user; any
//! other panic is reported as before.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// Contained calls running on this thread (they nest); a parser pool
    /// thread starts at 1 and stays there.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The contained panic's message and place, taken by the hook.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// The last panic on a parser pool thread: it comes back to the caller's
/// [`contain`] as a payload, without its place.
static WORKER_PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Threads that run wellen's parallel body pass ([`contain_parallel`]):
/// every panic on them is a parser's, contained.
fn parser_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        install_hook();
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("rocescope-parse-{i}"))
            .start_handler(|_| DEPTH.with(|d| d.set(1)))
            .build()
            .ok()
    })
    .as_ref()
}

/// [`contain`] for a call into wellen that may run on several threads
/// (its parallel VCD body pass): it runs in rocescope's parser pool, whose
/// threads' panics are contained too. Without the pool (it could not be
/// started) the call runs on this thread alone.
pub fn contain_parallel<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    match parser_pool() {
        Some(pool) => contain(|| pool.install(f)),
        None => contain(f),
    }
}

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if panic_contained() {
                let text = describe(info);
                let on_pool = std::thread::current()
                    .name()
                    .is_some_and(|n| n.starts_with("rocescope-parse-"));
                if on_pool {
                    *WORKER_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
                } else {
                    CAUGHT.with(|c| *c.borrow_mut() = Some(text));
                }
            } else {
                previous(info);
            }
        }));
    });
}

/// Whether a panic on this thread now would be contained: for other panic
/// hooks (the terminal workbench's restores the terminal) to leave it be.
pub fn panic_contained() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// Runs `f`; a panic inside it is `Err` with its message and place
/// (`Failed to parse ... at wellen-0.25.7/src/vcd.rs:1693`). `f`'s state
/// is dropped after a panic, never used again.
pub fn contain<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    DEPTH.with(|d| d.set(d.get() + 1));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    result.map_err(|payload| {
        CAUGHT
            .with(|c| c.borrow_mut().take())
            .or_else(|| {
                WORKER_PANIC
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
            })
            .unwrap_or_else(|| short(payload_text(payload.as_ref())))
    })
}

/// Message and place of a panic, one line.
fn describe(info: &PanicHookInfo<'_>) -> String {
    let message = short(payload_text(info.payload()));
    match info.location() {
        Some(l) => format!("{message} at {}:{}", short_path(l.file()), l.line()),
        None => message,
    }
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a parser failed".to_owned()
    }
}

/// At most 160 characters on one line: a panic may quote a whole value.
fn short(text: String) -> String {
    let one: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    if one.chars().count() <= 160 {
        return one;
    }
    let cut: String = one.chars().take(160).collect();
    format!("{cut}...")
}

/// `wellen-0.25.7/src/vcd.rs` out of the registry's full path.
fn short_path(file: &str) -> String {
    let parts: Vec<&str> = file.split(['/', '\\']).collect();
    let keep = parts
        .iter()
        .rposition(|p| *p == "src")
        .map_or(0, |i| i.saturating_sub(1));
    parts[keep..].join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contained_panic_is_its_message_and_place() {
        let err = contain(|| {
            let v: Vec<u8> = Vec::new();
            if v.is_empty() {
                panic!("Failed to parse four state value: {}", "2".repeat(300));
            }
            1
        })
        .expect_err("contained");
        assert!(
            err.starts_with("Failed to parse four state value: 222"),
            "{err}"
        );
        assert!(err.contains("...") && err.len() < 300, "{err}");
        assert!(err.contains(" at replay/src/contain.rs:"), "{err}");
        assert_eq!(contain(|| 7), Ok(7));
        assert!(!panic_contained());
    }

    #[test]
    fn registry_paths_are_shortened() {
        assert_eq!(
            short_path(
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wellen-0.25.7/src/vcd.rs"
            ),
            "wellen-0.25.7/src/vcd.rs"
        );
        assert_eq!(short_path("vcd.rs"), "vcd.rs");
    }
}
