//! The short-term statistics of a meter and its two trigger levels
//! (Fowler et al. 2011, "RCRDaemon": "computes adjustable short term
//! average/min/max … each meter defines 2 trigger levels, high/low
//! contention detected").
//!
//! **Window.** [`Window`] keeps the values of the last `window` ns (at
//! least the last value) and gives their average, minimum and maximum.
//!
//! **Triggers, with hysteresis** ([`Trigger`]; docs/meters.md,
//! "Triggers"). A meter with levels `high ≥ low` starts *clear*. After
//! every value the short-term average `a` is compared:
//!
//! - clear and `a ≥ high` → *high* (one change);
//! - high and `a ≤ low` → *clear* (one change);
//! - otherwise the state stays.
//!
//! So between the levels the state is whatever it was: a meter hovering
//! around one level does not flap.

use std::collections::VecDeque;

use crate::layout::TriggerState;

/// Values of the last `span_ns` (at least one).
///
/// Each [`Window::push`] and [`Window::stats`] costs O(1) amortised, not
/// O(values in the window): a running sum (recomputed from the values
/// every [`RESUM_EVERY`] pushes, so rounding does not accumulate) and two
/// monotonic queues whose fronts are the minimum and the maximum. The
/// statistics are those of the values in the window, exactly as before
/// (minimum and maximum exactly; the average to the last bits).
#[derive(Debug, Clone)]
pub struct Window {
    span_ns: u64,
    /// (time, value, sequence number) of every value in the window.
    values: VecDeque<(u64, f64, u64)>,
    /// (sequence number, value), values strictly increasing: the front is
    /// the minimum.
    mins: VecDeque<(u64, f64)>,
    /// (sequence number, value), values strictly decreasing: the front is
    /// the maximum.
    maxs: VecDeque<(u64, f64)>,
    sum: f64,
    seq: u64,
}

/// The window's running sum is recomputed from its values every this many
/// pushes.
pub const RESUM_EVERY: u64 = 1024;

/// Average, minimum and maximum of a [`Window`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowStats {
    /// Mean of the values.
    pub avg: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Number of values.
    pub samples: u64,
}

impl Window {
    /// A window of `span_ns` ns.
    pub fn new(span_ns: u64) -> Window {
        Window {
            span_ns,
            values: VecDeque::new(),
            mins: VecDeque::new(),
            maxs: VecDeque::new(),
            sum: 0.0,
            seq: 0,
        }
    }

    /// Adds `value` taken at `t_ns` and drops values older than the span
    /// (the newest always stays). NaN values are ignored.
    pub fn push(&mut self, t_ns: u64, value: f64) {
        if value.is_nan() {
            return;
        }
        let seq = self.seq;
        self.seq += 1;
        self.values.push_back((t_ns, value, seq));
        self.sum += value;
        while self.mins.back().is_some_and(|&(_, v)| v >= value) {
            self.mins.pop_back();
        }
        self.mins.push_back((seq, value));
        while self.maxs.back().is_some_and(|&(_, v)| v <= value) {
            self.maxs.pop_back();
        }
        self.maxs.push_back((seq, value));
        while self.values.len() > 1
            && self
                .values
                .front()
                .is_some_and(|&(t, _, _)| t_ns.saturating_sub(t) >= self.span_ns)
        {
            let Some((_, v, s)) = self.values.pop_front() else {
                break;
            };
            self.sum -= v;
            if self.mins.front().is_some_and(|&(q, _)| q == s) {
                self.mins.pop_front();
            }
            if self.maxs.front().is_some_and(|&(q, _)| q == s) {
                self.maxs.pop_front();
            }
        }
        if self.seq.is_multiple_of(RESUM_EVERY) {
            self.sum = self.values.iter().map(|&(_, v, _)| v).sum();
        }
    }

    /// The statistics; `None` when no value was pushed.
    pub fn stats(&self) -> Option<WindowStats> {
        let (&(_, min), &(_, max)) = (self.mins.front()?, self.maxs.front()?);
        let n = self.values.len();
        // One value: exactly it (no rounding left over from the sum).
        let avg = if n == 1 { min } else { self.sum / n as f64 };
        Some(WindowStats {
            avg,
            min,
            max,
            samples: n as u64,
        })
    }
}

/// Errors of trigger levels.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LevelError {
    /// The low level is above the high level, or a level is not a number.
    #[error("trigger levels of {meter}: low ({low}) must not exceed high ({high})")]
    Inverted {
        /// The meter.
        meter: String,
        /// High level.
        high: f64,
        /// Low level.
        low: f64,
    },
}

/// The trigger of one meter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trigger {
    /// High level: the average reaching it sets the trigger.
    pub high: f64,
    /// Low level: the average falling to it clears the trigger.
    pub low: f64,
    /// Current state.
    pub state: TriggerState,
    /// State changes so far.
    pub changes: u64,
}

impl Trigger {
    /// A clear trigger with these levels.
    ///
    /// Errors: `low > high` or a NaN level ([`LevelError::Inverted`]).
    pub fn new(meter: &str, high: f64, low: f64) -> Result<Trigger, LevelError> {
        if high.is_nan() || low.is_nan() || low > high {
            return Err(LevelError::Inverted {
                meter: meter.to_string(),
                high,
                low,
            });
        }
        Ok(Trigger {
            high,
            low,
            state: TriggerState::Clear,
            changes: 0,
        })
    }

    /// Feeds the short-term average; returns the state after it.
    pub fn update(&mut self, avg: f64) -> TriggerState {
        let next = match self.state {
            TriggerState::High if avg <= self.low => TriggerState::Clear,
            TriggerState::Clear | TriggerState::None if avg >= self.high => TriggerState::High,
            s => s,
        };
        if next != self.state {
            self.changes += 1;
            self.state = next;
        }
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_its_span() {
        let mut w = Window::new(10);
        w.push(0, 1.0);
        w.push(5, 3.0);
        assert_eq!(w.stats().unwrap().avg, 2.0);
        w.push(10, 5.0); // drops t=0 (10 - 0 >= 10)
        let s = w.stats().unwrap();
        assert_eq!((s.avg, s.min, s.max, s.samples), (4.0, 3.0, 5.0, 2));
        w.push(100, 7.0);
        assert_eq!(w.stats().unwrap().samples, 1);
        w.push(101, f64::NAN);
        assert_eq!(w.stats().unwrap().samples, 1);
    }

    /// The O(1) statistics equal those computed from the values in the
    /// window, over many pushes (several re-summations, values that
    /// repeat, rise and fall, times that repeat).
    #[test]
    fn window_statistics_equal_a_full_scan() {
        let span = 50;
        let mut w = Window::new(span);
        let mut all: Vec<(u64, f64)> = Vec::new();
        let mut x: u64 = 12345;
        for i in 0..5000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Repeated times (i / 2) and a few repeated values (x % 97).
            let (t, v) = (i / 2, (x % 97) as f64 * 0.37 - 10.0);
            w.push(t, v);
            all.push((t, v));
            let mut keep: Vec<f64> = all
                .iter()
                .filter(|&&(u, _)| t.saturating_sub(u) < span)
                .map(|&(_, v)| v)
                .collect();
            if keep.is_empty() {
                keep.push(v);
            }
            let s = w.stats().unwrap();
            let avg = keep.iter().sum::<f64>() / keep.len() as f64;
            let min = keep.iter().copied().fold(f64::INFINITY, f64::min);
            let max = keep.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(s.samples, keep.len() as u64, "push {i}");
            assert_eq!((s.min, s.max), (min, max), "push {i}");
            assert!(
                (s.avg - avg).abs() <= 1e-9 * avg.abs().max(1.0),
                "push {i}: {} vs {avg}",
                s.avg
            );
        }
    }
}
