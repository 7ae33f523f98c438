//! `contend record --meters`: the meter engine runs beside the target
//! (a thread of the launcher; the probe on its own CPU) and every value
//! it computes goes into the recording's `meters.cmts`
//! (`contend_trace::meters`), with its trigger state, for `contend
//! report` to show the meters over the run and split waits and service
//! time by meter state (`contend::meters`). This recorder is a
//! [`contend_record::RunObserver`] for `contend_record::record_observed`.
//! The engine (the probe's chain, the first `/proc` readings) is started
//! before the target ([`MeterRecorder::start`]), so that the series
//! begins with the run and a bad option is an error before anything runs.
//! The lock meters are not computed: the recording holds the lock traces
//! themselves.
//!
//! Times in the file are CLOCK_MONOTONIC ns, the clock of the lock traces
//! (after their fit) and of the service samples.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use contend_record::RunObserver;
use contend_trace::meters::{Column, MetersWriter, Value, FILE_NAME};

use crate::blackboard::monotonic_ns;
use crate::engine::{Engine, EngineError, EngineOptions};
use crate::probe::Grid;

/// Records the meters into a recording while its target runs.
pub struct MeterRecorder {
    engine: Option<Engine>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl MeterRecorder {
    /// Starts the engine with these options (`lock_meters` is ignored):
    /// the probe's chain is built and its thread runs from here on.
    ///
    /// Errors: those of [`Engine::start`] (the probe cannot start, bad
    /// levels, an interval out of range).
    pub fn start(mut opts: EngineOptions) -> Result<MeterRecorder, EngineError> {
        opts.lock_meters = false;
        Ok(MeterRecorder {
            engine: Some(Engine::start(opts)?),
            stop: Arc::new(AtomicBool::new(false)),
            handle: None,
        })
    }
}

fn run(mut engine: Engine, path: &Path, stop: &AtomicBool) -> Vec<String> {
    let interval = engine.options().interval.as_nanos() as u64;
    let start = monotonic_ns();
    let mut w = match MetersWriter::create(path, start, interval) {
        Ok(w) => w,
        Err(e) => return vec![format!("meters are not recorded: {e}")],
    };
    // What is and is not metered goes with the series, not into the
    // run's warnings.
    for n in engine.notes() {
        if let Err(e) = w.note(n) {
            return vec![format!("meters are not recorded: {e}")];
        }
    }
    let mut declared: HashMap<usize, u32> = HashMap::new();
    // Behind (the machine was busy): no burst of ticks to catch up.
    let mut grid = Grid::new(start, engine.options().interval);
    let mut error = None;
    let mut last = false;
    // Kept across ticks: a tick allocates no index vector.
    let mut updated: Vec<usize> = Vec::with_capacity(64);
    loop {
        grid.sleep();
        if stop.load(Ordering::Relaxed) {
            // One last tick, so the end of the run has values too.
            last = true;
        }
        let now = monotonic_ns();
        engine.tick_into(now, &mut updated);
        let mut values = Vec::with_capacity(updated.len());
        for &i in &updated {
            let m = &engine.meters()[i];
            let column = match declared.get(&i) {
                Some(&c) => c,
                None => {
                    let c = declared.len() as u32;
                    let col = Column {
                        index: c,
                        name: m.desc.name.clone(),
                        unit: m.desc.unit.clone(),
                        scope: m.desc.scope.label(),
                        label: m.desc.label.clone(),
                        high: m.desc.levels.map(|l| l.0),
                        low: m.desc.levels.map(|l| l.1),
                    };
                    if let Err(e) = w.column(&col) {
                        error.get_or_insert(e.to_string());
                    }
                    declared.insert(i, c);
                    c
                }
            };
            if let Some(v) = &m.last {
                values.push(Value {
                    column,
                    state: v.trigger.map_or(0, |t| t.code()),
                    value: v.value,
                });
            }
        }
        if !values.is_empty() {
            if let Err(e) = w.values(now, &values) {
                error.get_or_insert(e.to_string());
            }
        }
        if last || error.is_some() {
            break;
        }
    }
    error
        .map(|e| format!("meters stopped early: {e}"))
        .into_iter()
        .collect()
}

impl RunObserver for MeterRecorder {
    fn started(&mut self, dir: &Path, _pid: u32, _start_ns: u64) {
        let path = dir.join(FILE_NAME);
        let stop = self.stop.clone();
        let Some(engine) = self.engine.take() else {
            return;
        };
        self.handle = std::thread::Builder::new()
            .name("contend-meters".into())
            .spawn(move || run(engine, &path, &stop))
            .ok();
    }

    fn ended(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take() {
            Some(h) => h.join().unwrap_or_else(|_| {
                vec!["the meter thread failed; meters may be incomplete".into()]
            }),
            None => vec!["meters are not recorded: the meter thread could not start".into()],
        }
    }
}
