//! rocescope: a body pass held to a memory budget (PATCHES.md item 4).

use std::sync::atomic::Ordering;

use crate::vcd::VcdParseError;

/// rocescope: the memory a body pass may hold, shared by its threads: each
/// encoder adds what it holds (its blocks and open buffers) in steps of at
/// most [`HeldBudget::STEP_BYTES`], and the pass stops with
/// [`VcdParseError::VcdHeldPastBudget`] once the sum passes `max_bytes`.
/// A VCD writes a vector's value without its leading zeros, and each change
/// is held at the signal's width: a file can ask for many times its size.
#[derive(Debug)]
pub struct HeldBudget {
    max_bytes: u64,
    held: std::sync::atomic::AtomicU64,
    stopped: std::sync::atomic::AtomicBool,
}

impl HeldBudget {
    /// What an encoder holds beyond what it told before it tells again.
    pub const STEP_BYTES: u64 = 1 << 20;

    pub fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            held: std::sync::atomic::AtomicU64::new(0),
            stopped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// What the pass holds (as told, within a step a thread).
    pub fn held_bytes(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Whether the pass stopped at the budget.
    pub fn passed(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// An encoder now holds `now`, having told `told`.
    #[inline]
    pub(crate) fn tell(&self, told: &mut u64, now: u64) -> Result<(), VcdParseError> {
        if now.abs_diff(*told) < Self::STEP_BYTES {
            return Ok(());
        }
        let held = if now > *told {
            self.held.fetch_add(now - *told, Ordering::Relaxed) + (now - *told)
        } else {
            self.held.fetch_sub(*told - now, Ordering::Relaxed) - (*told - now)
        };
        *told = now;
        if held > self.max_bytes {
            // The other threads stop at their next step.
            self.stopped.store(true, Ordering::Relaxed);
        }
        if self.passed() {
            return Err(VcdParseError::VcdHeldPastBudget(self.max_bytes));
        }
        Ok(())
    }
}
