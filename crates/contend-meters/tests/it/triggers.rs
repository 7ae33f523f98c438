//! Triggers with hysteresis, fed a synthetic meter whose short-term
//! averages are worked out by hand, and published through a blackboard
//! so that a reader sees the same states.

use contend_meters::blackboard::{Blackboard, CreateOptions, MeterDesc, MeterValues, Reader};
use contend_meters::layout::{Scope, TriggerState};
use contend_meters::trigger::{LevelError, Trigger, Window};

/// Levels high 10, low 4; window 3 ns so that the average is over the
/// values at t, t-1, t-2 (t one apart):
///
/// | t | value | window      | avg  | state | why |
/// |---|-------|-------------|------|-------|-----|
/// | 0 | 2     | 2           | 2    | clear | below high |
/// | 1 | 8     | 2 8         | 5    | clear | below high |
/// | 2 | 20    | 2 8 20      | 10   | high  | avg reaches high (≥) |
/// | 3 | 5     | 8 20 5      | 11   | high  | |
/// | 4 | 2     | 20 5 2      | 9    | high  | between: stays |
/// | 5 | 5     | 5 2 5       | 4    | clear | avg falls to low (≤) |
/// | 6 | 14    | 2 5 14      | 7    | clear | between: stays |
/// | 7 | 8     | 5 14 8      | 9    | clear | between: stays |
/// | 8 | 17    | 14 8 17     | 13   | high  | |
///
/// Three changes.
#[test]
fn trigger_sets_and_clears_with_hysteresis() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bb");
    let mut bb = Blackboard::create(&path, &CreateOptions::default()).unwrap();
    let desc = MeterDesc {
        name: "synthetic".into(),
        unit: "units".into(),
        scope: Scope::Machine,
        object: 0,
        label: String::new(),
        levels: Some((10.0, 4.0)),
    };
    let slot = bb.add_meter(&desc).unwrap();
    let reader = Reader::open(&path).unwrap();
    assert_eq!(reader.meter(slot).unwrap().trigger, TriggerState::Clear);

    let mut w = Window::new(3);
    let mut t = Trigger::new("synthetic", 10.0, 4.0).unwrap();
    let values = [2.0, 8.0, 20.0, 5.0, 2.0, 5.0, 14.0, 8.0, 17.0];
    let avgs = [2.0, 5.0, 10.0, 11.0, 9.0, 4.0, 7.0, 9.0, 13.0];
    use TriggerState::{Clear as C, High as H};
    let states = [C, C, H, H, H, C, C, C, H];
    for (i, &v) in values.iter().enumerate() {
        w.push(i as u64, v);
        let s = w.stats().unwrap();
        assert_eq!(s.avg, avgs[i], "average at t={i}");
        let st = t.update(s.avg);
        assert_eq!(st, states[i], "state at t={i}");
        bb.publish(
            slot,
            &MeterValues {
                value: v,
                avg: s.avg,
                min: s.min,
                max: s.max,
                window_samples: s.samples,
                time_ns: i as u64,
                updates: i as u64 + 1,
                trigger: Some(st),
                trigger_changes: t.changes,
                estimated: false,
                ended: false,
            },
        );
        let seen = reader.meter(slot).unwrap();
        assert_eq!(seen.trigger, states[i], "published state at t={i}");
        assert_eq!(seen.values.unwrap().avg, avgs[i]);
    }
    assert_eq!(t.changes, 3);
    assert_eq!(reader.meter(slot).unwrap().trigger_changes, 3);
}

#[test]
fn inverted_levels_are_refused_by_name() {
    let e = Trigger::new("memory_latency", 100.0, 200.0).unwrap_err();
    assert!(matches!(e, LevelError::Inverted { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("memory_latency") && msg.contains("low (200)"),
        "{msg}"
    );
    assert!(Trigger::new("x", f64::NAN, 1.0).is_err());
    // Equal levels are allowed: no hysteresis band.
    assert!(Trigger::new("x", 5.0, 5.0).is_ok());
}
