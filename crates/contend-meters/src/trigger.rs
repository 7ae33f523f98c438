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
#[derive(Debug, Clone)]
pub struct Window {
    span_ns: u64,
    values: VecDeque<(u64, f64)>,
}

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
        }
    }

    /// Adds `value` taken at `t_ns` and drops values older than the span
    /// (the newest always stays). NaN values are ignored.
    pub fn push(&mut self, t_ns: u64, value: f64) {
        if value.is_nan() {
            return;
        }
        self.values.push_back((t_ns, value));
        while self.values.len() > 1
            && self
                .values
                .front()
                .is_some_and(|&(t, _)| t_ns.saturating_sub(t) >= self.span_ns)
        {
            self.values.pop_front();
        }
    }

    /// The statistics; `None` when no value was pushed.
    pub fn stats(&self) -> Option<WindowStats> {
        if self.values.is_empty() {
            return None;
        }
        let (mut sum, mut min, mut max) = (0.0, f64::INFINITY, f64::NEG_INFINITY);
        for &(_, v) in &self.values {
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        Some(WindowStats {
            avg: sum / self.values.len() as f64,
            min,
            max,
            samples: self.values.len() as u64,
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
}
