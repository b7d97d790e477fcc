//! The playback clock: makes a recording behave like a live feed.
//!
//! Views show the rows whose capture time is at or before the clock
//! (`Store::seek_time(clock.now_ns(wall))` is the live "horizon"), so a
//! replay grows in the views exactly as the same feed would live. The clock
//! takes wall time as an argument, which keeps it deterministic in tests.

use std::time::Instant;

/// Slowest and fastest replay speeds.
pub const MIN_SPEED: f64 = 0.01;
pub const MAX_SPEED: f64 = 100.0;

/// Playing or paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayState {
    Playing,
    Paused,
}

/// Why a clock command was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ClockError {
    #[error("speed x{0} is outside x0.01..x100")]
    Speed(f64),
}

/// Capture time advancing with wall time at a chosen speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaybackClock {
    state: PlayState,
    speed: f64,
    /// Capture time at `anchor`.
    pos_ns: u64,
    /// Wall time at which `pos_ns` held (while playing).
    anchor: Option<Instant>,
    /// Capture time of the first and last rows: the clock stays in between.
    start_ns: u64,
    end_ns: u64,
    /// Capture ns per wall ns at speed x1 (1 for real time; ordinal
    /// captures, whose "time" is a packet index, use a fixed packet rate).
    scale: f64,
}

impl PlaybackClock {
    /// A paused clock at `start_ns` over a capture spanning `start_ns..=end_ns`.
    pub fn new(start_ns: u64, end_ns: u64) -> PlaybackClock {
        PlaybackClock {
            state: PlayState::Paused,
            speed: 1.0,
            pos_ns: start_ns,
            anchor: None,
            start_ns,
            end_ns: end_ns.max(start_ns),
            scale: 1.0,
        }
    }

    /// For ordinal captures (no time): x1 replays `packets_per_s` packets a second.
    pub fn ordinal(first: u64, last: u64, packets_per_s: f64) -> PlaybackClock {
        PlaybackClock {
            scale: packets_per_s.max(1e-6) / 1e9,
            ..PlaybackClock::new(first, last)
        }
    }

    pub fn state(&self) -> PlayState {
        self.state
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Extend the span as a live source or a background indexer adds rows.
    pub fn set_end(&mut self, end_ns: u64) {
        self.end_ns = end_ns.max(self.start_ns);
    }

    /// Capture time shown at wall time `wall`.
    pub fn now_ns(&self, wall: Instant) -> u64 {
        let pos = match (self.state, self.anchor) {
            (PlayState::Playing, Some(anchor)) => {
                let wall_ns = wall.saturating_duration_since(anchor).as_nanos() as f64;
                let advanced = (wall_ns * self.speed * self.scale) as u64;
                self.pos_ns.saturating_add(advanced)
            }
            _ => self.pos_ns,
        };
        pos.clamp(self.start_ns, self.end_ns)
    }

    /// True once a playing clock has reached the end of the capture.
    pub fn at_end(&self, wall: Instant) -> bool {
        self.now_ns(wall) >= self.end_ns
    }

    pub fn play(&mut self, wall: Instant) {
        if self.state == PlayState::Paused {
            if self.pos_ns >= self.end_ns {
                self.pos_ns = self.start_ns; // play at the end starts over
            }
            self.state = PlayState::Playing;
            self.anchor = Some(wall);
        }
    }

    pub fn pause(&mut self, wall: Instant) {
        self.pos_ns = self.now_ns(wall);
        self.state = PlayState::Paused;
        self.anchor = None;
    }

    pub fn toggle(&mut self, wall: Instant) {
        match self.state {
            PlayState::Playing => self.pause(wall),
            PlayState::Paused => self.play(wall),
        }
    }

    /// Change speed without a jump in the shown time.
    pub fn set_speed(&mut self, speed: f64, wall: Instant) -> Result<(), ClockError> {
        if !(MIN_SPEED..=MAX_SPEED).contains(&speed) || speed.is_nan() {
            return Err(ClockError::Speed(speed));
        }
        self.pos_ns = self.now_ns(wall);
        if self.state == PlayState::Playing {
            self.anchor = Some(wall);
        }
        self.speed = speed;
        Ok(())
    }

    /// Jump to a capture time (clamped to the capture's span); keeps playing
    /// if it was.
    pub fn seek(&mut self, ts_ns: u64, wall: Instant) {
        self.pos_ns = ts_ns.clamp(self.start_ns, self.end_ns);
        if self.state == PlayState::Playing {
            self.anchor = Some(wall);
        }
    }

    /// Step: pause and move to `next_ts_ns` (the time of the next packet or
    /// event, which the caller looks up in the store).
    pub fn step_to(&mut self, next_ts_ns: u64) {
        self.state = PlayState::Paused;
        self.anchor = None;
        self.pos_ns = next_ts_ns.clamp(self.start_ns, self.end_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn plays_pauses_and_changes_speed_without_jumps() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut c = PlaybackClock::new(1_000_000_000, 2_000_000_000);
        assert_eq!(
            c.now_ns(ms(500)),
            1_000_000_000,
            "paused clocks stand still"
        );
        c.play(ms(0));
        assert_eq!(c.now_ns(ms(10)), 1_010_000_000);
        c.set_speed(0.5, ms(10)).unwrap();
        assert_eq!(c.now_ns(ms(10)), 1_010_000_000);
        assert_eq!(c.now_ns(ms(30)), 1_020_000_000);
        c.pause(ms(30));
        assert_eq!(c.now_ns(ms(1000)), 1_020_000_000);
        c.set_speed(100.0, ms(1000)).unwrap();
        c.play(ms(1000));
        assert_eq!(c.now_ns(ms(1005)), 1_520_000_000);
        assert_eq!(c.now_ns(ms(5000)), 2_000_000_000, "clamped at the end");
        assert!(c.at_end(ms(5000)));
        assert!(c.set_speed(0.001, ms(0)).is_err());
        assert!(c.set_speed(101.0, ms(0)).is_err());
        assert!(c.set_speed(f64::NAN, ms(0)).is_err());
    }

    #[test]
    fn seek_and_step() {
        let t0 = Instant::now();
        let mut c = PlaybackClock::new(100, 1_000);
        c.seek(5_000, t0);
        assert_eq!(c.now_ns(t0), 1_000);
        c.seek(0, t0);
        assert_eq!(c.now_ns(t0), 100);
        c.play(t0);
        c.step_to(400);
        assert_eq!(c.state(), PlayState::Paused);
        assert_eq!(c.now_ns(t0 + Duration::from_secs(1)), 400);
    }

    #[test]
    fn ordinal_clock_counts_packets() {
        let t0 = Instant::now();
        let mut c = PlaybackClock::ordinal(0, 1_000_000, 1000.0);
        c.play(t0);
        assert_eq!(c.now_ns(t0 + Duration::from_millis(250)), 250);
    }
}
