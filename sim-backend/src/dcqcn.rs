//! The DCQCN reaction point of a ConnectX-like requester (Zhu et al.,
//! "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
//! simplified:
//!
//! - On a CNP: target rate `Rt = Rc`, current rate `Rc = Rc (1 - α/2)`
//!   (at most half: α ≤ 1), then `α = (1 - g) α + g`; both timers restart.
//! - Every `alpha_timer` without a CNP: `α = (1 - g) α`.
//! - Every rate-increase `timer` without a CNP: the first
//!   `fast_recovery_steps` expiries are fast recovery, `Rc = (Rt + Rc) / 2`;
//!   later ones are additive increase, `Rt += R_AI` (up to the line rate),
//!   then `Rc = (Rt + Rc) / 2`.
//! - Left out: the byte counter and hyper increase (the paper's second
//!   trigger and third stage); the timer alone drives recovery.
//!
//! The state is advanced lazily, when the QP sends or a CNP arrives: the
//! timers' expiries since the last CNP are applied then, so the model adds
//! no events to the simulation.

use serde::Serialize;

/// Picoseconds (the engine's time unit).
type Ps = u64;

/// The reaction point's constants, from [`crate::Params`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnConfig {
    /// The rate the QP starts at and recovers to (the link rate).
    pub line_gbps: f64,
    /// The gain `g` of α's moving average.
    pub alpha_gain: f64,
    /// Period of α's decay without CNPs.
    pub alpha_timer_ps: Ps,
    /// Period of the rate-increase timer.
    pub timer_ps: Ps,
    /// Rate-increase events of fast recovery before additive increase.
    pub fast_recovery_steps: u64,
    /// Additive increase of the target rate per event after fast recovery.
    pub rate_ai_gbps: f64,
    /// Lowest rate a cut goes to.
    pub min_rate_gbps: f64,
}

/// One QP's reaction point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dcqcn {
    /// Current rate `Rc`.
    pub rate_gbps: f64,
    /// Target rate `Rt`.
    pub target_gbps: f64,
    /// α, the estimate of how congested the path is.
    pub alpha: f64,
    /// Time of the last CNP (both timers count from it).
    last_cnp_ps: Ps,
    /// Rate-increase expiries applied since the last CNP.
    increases: u64,
    /// α-timer expiries applied since the last CNP.
    decays: u64,
    /// True while the rate is below the line rate (timers running).
    limited: bool,
    /// CNPs received.
    pub cnps: u64,
}

/// Rates closer than this share of the line rate count as the line rate.
const AT_LINE_SHARE: f64 = 1e-3;

impl Dcqcn {
    /// A reaction point at the line rate, α = 1 (the paper's start: the
    /// first CNP halves the rate).
    pub fn new(cfg: &DcqcnConfig) -> Dcqcn {
        Dcqcn {
            rate_gbps: cfg.line_gbps,
            target_gbps: cfg.line_gbps,
            alpha: 1.0,
            last_cnp_ps: 0,
            increases: 0,
            decays: 0,
            limited: false,
            cnps: 0,
        }
    }

    /// True while a cut has not fully recovered.
    pub fn limited(&self) -> bool {
        self.limited
    }

    /// Applies the timers' expiries up to `now_ps`.
    pub fn advance(&mut self, cfg: &DcqcnConfig, now_ps: Ps) {
        if self.cnps == 0 {
            // α's timer starts with the first CNP.
            return;
        }
        let since = now_ps.saturating_sub(self.last_cnp_ps);
        let decays = since / cfg.alpha_timer_ps.max(1);
        if decays > self.decays {
            let n = (decays - self.decays).min(i32::MAX as u64) as i32;
            self.alpha *= (1.0 - cfg.alpha_gain).powi(n);
            self.decays = decays;
        }
        let increases = since / cfg.timer_ps.max(1);
        while self.limited && self.increases < increases {
            self.increases += 1;
            if self.increases > cfg.fast_recovery_steps {
                self.target_gbps = (self.target_gbps + cfg.rate_ai_gbps).min(cfg.line_gbps);
            }
            self.rate_gbps = (self.target_gbps + self.rate_gbps) / 2.0;
            if self.target_gbps >= cfg.line_gbps
                && cfg.line_gbps - self.rate_gbps <= AT_LINE_SHARE * cfg.line_gbps
            {
                // Back at the line rate: the limiter is off until the next CNP.
                self.rate_gbps = cfg.line_gbps;
                self.limited = false;
            }
        }
        if !self.limited {
            self.increases = increases;
        }
    }

    /// A CNP at `now_ps`: the rate cut, then α's update.
    pub fn on_cnp(&mut self, cfg: &DcqcnConfig, now_ps: Ps) {
        self.advance(cfg, now_ps);
        self.target_gbps = self.rate_gbps;
        self.rate_gbps = (self.rate_gbps * (1.0 - self.alpha / 2.0)).max(cfg.min_rate_gbps);
        self.alpha = (1.0 - cfg.alpha_gain) * self.alpha + cfg.alpha_gain;
        self.last_cnp_ps = now_ps;
        self.increases = 0;
        self.decays = 0;
        self.limited = true;
        self.cnps += 1;
    }

    /// Time to send `wire_bits` at the current rate.
    pub fn gap_ps(&self, wire_bits: u64) -> Ps {
        (wire_bits as f64 * 1000.0 / self.rate_gbps) as Ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Ps = 1_000_000;

    fn cfg() -> DcqcnConfig {
        DcqcnConfig {
            line_gbps: 100.0,
            alpha_gain: 1.0 / 256.0,
            alpha_timer_ps: 55 * US,
            timer_ps: 55 * US,
            fast_recovery_steps: 5,
            rate_ai_gbps: 5.0,
            min_rate_gbps: 0.1,
        }
    }

    #[test]
    fn each_cnp_cuts_at_most_half_and_the_timer_brings_the_rate_back() {
        let c = cfg();
        let mut d = Dcqcn::new(&c);
        let mut t = 0;
        let mut before = d.rate_gbps;
        for _ in 0..4 {
            t += 50 * US;
            d.on_cnp(&c, t);
            assert!(d.rate_gbps < before, "a CNP cuts");
            assert!(
                d.rate_gbps >= before / 2.0,
                "{} after {before}",
                d.rate_gbps
            );
            assert_eq!(d.target_gbps, before);
            before = d.rate_gbps;
        }
        // CNPs closer than α's timer keep α at 1: each cut halves.
        assert_eq!(d.alpha, 1.0);
        assert_eq!(d.rate_gbps, c.line_gbps / 16.0);
        // Fast recovery: halfway to the target each expiry.
        let low = d.rate_gbps;
        d.advance(&c, t + 55 * US);
        assert!((d.rate_gbps - (low + d.target_gbps) / 2.0).abs() < 1e-9);
        // Then additive increase, back to the line rate and off.
        d.advance(&c, t + 2000 * 55 * US);
        assert_eq!(d.rate_gbps, c.line_gbps);
        assert!(!d.limited());
        assert!(d.alpha < 0.01, "α decays without CNPs: {}", d.alpha);
        // A CNP after one α period: less than half.
        let mut d = Dcqcn::new(&c);
        d.on_cnp(&c, 0);
        d.on_cnp(&c, 60 * US);
        let alpha = (1.0 - c.alpha_gain) * (1.0 - c.alpha_gain) + c.alpha_gain;
        assert!((d.alpha - alpha).abs() < 1e-12, "α = {}", d.alpha);
        assert!(d.rate_gbps > d.target_gbps / 2.0 && d.rate_gbps < d.target_gbps);
    }

    #[test]
    fn no_cnp_no_change() {
        let c = cfg();
        let mut d = Dcqcn::new(&c);
        d.advance(&c, 10_000 * US);
        assert_eq!(d.rate_gbps, c.line_gbps);
        assert_eq!(d.alpha, 1.0);
        assert!(!d.limited());
        d.on_cnp(&c, 10_001 * US);
        assert_eq!(
            d.rate_gbps,
            c.line_gbps / 2.0,
            "α = 1: the first CNP halves"
        );
    }
}
