//! The SCI analysis takes its lock executions from the lock analysis's
//! events instead of pairing the lock operations again (one copy of the
//! events in memory, not two): on the golden lock recordings, with and
//! without recorded call stacks, both ways give the same section (the
//! lock-only threads' executions scored from the events, not copied).

use std::path::Path;

use contend::locks::LockEvents;
use contend::sci::{gather, gather_with, SciReport};
use contend::symbols::Symbols;
use contend::{AnalysisOptions, Recording};

#[test]
fn sci_from_the_lock_analysis_events_equals_sci_from_pairing_again() {
    for name in ["sharequeue-two.data", "sharequeue-stacks.data"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden/recordings")
            .join(name);
        let rec = Recording::open(&dir).unwrap();
        let analysis = contend::analyze(
            &rec,
            &AnalysisOptions::default(),
            &contend::analysis::NoProgress,
        );
        let locks = analysis.events::<LockEvents>().expect("lock events");
        assert!(!locks.set.events.is_empty(), "{name}: no lock events");
        let symbols = Symbols::new();
        let reused = gather_with(&rec, &symbols, Some(&locks.set), None);
        let again = gather(&rec, &symbols);
        assert_eq!(reused.executions, again.executions, "{name}");
        assert!(reused.executions[0] > 0, "{name}: no lock executions");
        // the lock-only threads' executions stayed in the events
        assert!(reused.streamed.is_some(), "{name}: nothing streamed");
        assert!(
            again.streamed.is_none(),
            "{name}: paired again, yet streamed"
        );
        assert_eq!(
            SciReport::from_gathered(reused),
            SciReport::from_gathered(again),
            "{name}"
        );
    }
}
