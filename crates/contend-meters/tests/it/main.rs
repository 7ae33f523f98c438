//! Integration tests of `contend-meters`: the probe and the calibration
//! against the memory contention generator (known load), the blackboard
//! across processes, the triggers, and bad input.

mod blackboard;
mod layout;
mod probe_accuracy;
mod throttle;
mod triggers;
