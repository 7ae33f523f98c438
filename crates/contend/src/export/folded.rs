//! Folded stacks, the input format of flame-graph tools (Brendan Gregg's
//! `flamegraph.pl`, `inferno-flamegraph`, speedscope): one line per
//! distinct stack, `root;…;leaf value`, here weighted by the lock wait (or
//! hold) time in ns of the events with that stack.
//!
//! A stack is the process (its command name), then the call stack recorded
//! with the event (`contend record --stack-every N`), outermost frame
//! first, or, for events without one, the call site alone; the leaf is the
//! synchronisation object and its kind (`queue_lock [mutex]`). Frames are
//! function names where the symbolizer knows them, else `module+offset`.
//! Condition, barrier and semaphore waits are included (they are waits);
//! `sem_post` is not an event. The filter of the report (`--min-duration`,
//! `--lock`, `--site`, `--thread`, `--critical-only`) selects the events,
//! so totals equal the report's.
//!
//! Weighted by MPI wait (`--weight mpi-wait`), a stack is the program, the
//! MPI call's site, the call (`MPI_Recv`) and the wait-state pattern
//! (`late sender`), weighted by the wait states' wait in ns above the
//! report's thresholds. Lines are sorted, so equal recordings give equal
//! files.

use std::collections::BTreeMap;
use std::io::Write;

use super::timeline::{
    futex_on_path, futex_word_rows, keeps_futex_wait, keeps_omp_event, openmp_mutex_names,
    openmp_on_path, program_of,
};
use super::{ExportError, ExportOptions, ExportSummary, Exporter, Weight};
use crate::analysis::Analysis;
use crate::futex::{FutexEvents, ShownSites};
use crate::locks::{LockEvents, LockReport, Outcome, Selection};
use crate::mpi::{MapsSiteResolver, MpiEvents, SiteResolver};
use crate::symbols::ResolvedSite;
use rustc_hash::FxHashMap;

/// The folded-stacks exporter.
pub(crate) struct Folded;

/// A frame name without the separators of the format.
fn frame(name: &str) -> String {
    name.replace([';', '\n', '\r'], ":")
}

/// A resolved site as a frame: its function, else its display form.
fn site_frame(site: &ResolvedSite) -> String {
    frame(site.function.as_deref().unwrap_or(&site.display))
}

/// Folded stacks of `analysis`: stack → weight (ns), sorted, and notes
/// on what is missing. Errors: nothing to fold ([`ExportError::Nothing`]).
pub(crate) fn fold(
    analysis: &Analysis<'_>,
    options: &ExportOptions,
) -> Result<(BTreeMap<String, u64>, Vec<String>), ExportError> {
    if options.weight == Weight::MpiWait {
        return fold_mpi(analysis, options);
    }
    let futex = crate::futex::events_of(analysis)
        .filter(|f| !f.waits.is_empty() && options.weight == Weight::Wait);
    let omp = crate::openmp::sync::events_of(analysis);
    {
        let ev = match analysis.events::<LockEvents>() {
            Some(ev) if !ev.set.events.is_empty() => ev,
            _ if futex.is_some() || !omp.is_empty() => {
                let mut folded = BTreeMap::new();
                let mut with_stack = 0;
                if let Some(f) = futex {
                    with_stack += fold_futex(analysis, f, options, &mut folded);
                }
                fold_openmp(analysis, &omp, options, &mut folded);
                let notes = fold_notes(&folded, with_stack, options);
                return Ok((folded, notes));
            }
            _ => {
                let why = analysis
                    .report
                    .section::<LockReport>()
                    .and_then(|l| l.no_events_reason.clone())
                    .unwrap_or_default();
                return Err(ExportError::Nothing(
                    format!("the recording holds no lock events to fold. {why}")
                        .trim_end()
                        .to_string(),
                ));
            }
        };
        let recording = analysis.recording;
        let set = &ev.set;
        let selection = Selection::new(&options.filter, set, &ev.critical_path, &ev.names);
        let process_names: Vec<String> = recording
            .processes
            .iter()
            .map(|p| {
                let name = p
                    .trace
                    .cmdline
                    .first()
                    .map(String::as_str)
                    .unwrap_or(&p.trace.exe_path);
                frame(name.rsplit('/').next().unwrap_or(name))
            })
            .collect();
        // (process, stack index) → frames, outermost first, resolved once.
        let mut stacks: BTreeMap<(u32, u32), Vec<String>> = BTreeMap::new();
        let mut folded: BTreeMap<String, u64> = BTreeMap::new();
        let mut with_stack = 0u64;
        for (i, e) in set.events.iter().enumerate() {
            if e.outcome() == Outcome::Post || !selection.keeps(i, e) {
                continue;
            }
            let weight = match options.weight {
                Weight::Wait | Weight::MpiWait => e.wait_ns(),
                Weight::Hold => e.hold_ns(),
            };
            if weight == 0 {
                continue;
            }
            let process = set.threads[e.thread() as usize].process;
            let mut line = process_names
                .get(process as usize)
                .cloned()
                .unwrap_or_else(|| "?".into());
            let recorded = set.stack_of(i).and_then(|s| {
                let frames = recording
                    .processes
                    .get(process as usize)?
                    .trace
                    .stacks
                    .get(s as usize)?;
                Some(
                    stacks
                        .entry((process, s))
                        .or_insert_with(|| {
                            let maps = recording.process_maps(process);
                            frames
                                .iter()
                                .rev()
                                .map(|&a| site_frame(&analysis.symbols.site(maps, a)))
                                .collect()
                        })
                        .clone(),
                )
            });
            match recorded {
                Some(frames) if !frames.is_empty() => {
                    with_stack += 1;
                    for f in frames {
                        line.push(';');
                        line.push_str(&f);
                    }
                }
                _ => {
                    line.push(';');
                    line.push_str(&site_frame(&ev.names.sites[e.site as usize]));
                }
            }
            line.push(';');
            line.push_str(&frame(&format!(
                "{} [{}]",
                ev.names.objects[e.object as usize],
                set.object_kinds[e.object as usize].object_kind()
            )));
            *folded.entry(line).or_insert(0) += weight;
        }
        if let Some(f) = futex {
            with_stack += fold_futex(analysis, f, options, &mut folded);
        }
        fold_openmp(analysis, &omp, options, &mut folded);
        let notes = fold_notes(&folded, with_stack, options);
        Ok((folded, notes))
    }
}

/// The notes of a lock or futex fold: nothing positive, or no stacks.
fn fold_notes(
    folded: &BTreeMap<String, u64>,
    with_stack: u64,
    options: &ExportOptions,
) -> Vec<String> {
    let mut notes = Vec::new();
    if folded.is_empty() {
        notes.push(format!(
            "no event had a positive {} time",
            options.weight.name()
        ));
    } else if with_stack == 0 {
        notes.push(
            "no call stacks were recorded: each stack is the call site alone (record with --stack-every N for stacks)"
                .into(),
        );
    }
    notes
}

/// Adds the OpenMP synchronisation events that the filters keep
/// ([`keeps_sync`], duration wait + hold) to `folded`, weighted by wait (or a
/// mutex's hold with `--weight hold`): the program, the event's site, and
/// as leaf the mutex (`<name> [openmp critical]`, named as in
/// `openmp.mutexes`) or the barrier kind (`implicit barrier [openmp]`).
fn fold_openmp(
    analysis: &Analysis<'_>,
    ev: &crate::openmp::sync::OmpSyncEvents,
    options: &ExportOptions,
    folded: &mut BTreeMap<String, u64>,
) {
    let recording = analysis.recording;
    let on_path = openmp_on_path(analysis, ev.len());
    let names = openmp_mutex_names(analysis);
    let mut prefixes: FxHashMap<(u32, u64), String> = FxHashMap::default();
    for (i, e) in ev.iter().enumerate() {
        let weight = match options.weight {
            Weight::Hold => e.hold_ns(),
            _ => e.wait_ns(),
        };
        if weight == 0 || !keeps_omp_event(&options.filter, &e, on_path, i) {
            continue;
        }
        let pid = e.pid(recording);
        let prefix = prefixes.entry((e.process, e.site)).or_insert_with(|| {
            let program =
                program_of(recording, pid).map_or_else(|| format!("pid {pid}"), |p| frame(&p));
            let site = analysis
                .symbols
                .site(recording.process_maps(e.process), e.site);
            format!("{program};{}", site_frame(&site))
        });
        let kind = e.kind_name();
        let leaf = if e.barrier {
            format!("{kind} [openmp]")
        } else {
            let name = names
                .get(&(pid, kind, e.object))
                .map_or_else(|| format!("{:#x}", e.object), |n| n.to_string());
            format!("{} [openmp {kind}]", frame(&name))
        };
        *folded.entry(format!("{prefix};{leaf}")).or_insert(0) += weight;
    }
}

/// Adds the futex waits that the filters keep ([`keeps_sync`])
/// to `folded` (wait weight only: the kernel does not see futex holds):
/// the program, the recorded stack outermost first down to the site the
/// report's `futex.by_site` shows ([`ShownSites`]), or that site alone,
/// and the word as leaf, `word [futex]`. Returns how many waits had a
/// recorded stack.
fn fold_futex(
    analysis: &Analysis<'_>,
    ev: &FutexEvents,
    options: &ExportOptions,
    folded: &mut BTreeMap<String, u64>,
) -> u64 {
    let on_path = futex_on_path(analysis, ev.waits.len());
    let words = futex_word_rows(analysis);
    let mut sites = ShownSites::new(analysis.recording, &analysis.symbols, ev);
    // (pid, address, stack) → the stack's frames up to the shown site
    let mut prefixes: FxHashMap<(u32, u64, u32), String> = FxHashMap::default();
    let mut with_stack = 0;
    for (i, w) in ev.waits.iter().enumerate() {
        let ns = w.wait_ns();
        let c = ev.wait_info(w);
        if ns == 0 || !keeps_futex_wait(&options.filter, ev, on_path, i) {
            continue;
        }
        let (address, site) = sites.site(c.process, c.site, c.stack).clone();
        let frames = sites.stack(c.process, c.stack);
        let maps = sites.maps(c.process);
        let prefix = prefixes
            .entry((c.pid, address, c.stack))
            .or_insert_with(|| {
                let program = program_of(analysis.recording, c.pid)
                    .map_or_else(|| format!("pid {}", c.pid), |p| frame(&p));
                let mut line = program;
                let from = frames.and_then(|f| f.iter().position(|&a| a == address));
                if let (Some(f), Some(from)) = (frames, from) {
                    for &a in f[from + 1..].iter().rev() {
                        line.push(';');
                        line.push_str(&site_frame(&analysis.symbols.site(maps, a)));
                    }
                }
                line.push(';');
                line.push_str(&site_frame(&site));
                line
            });
        with_stack += u64::from(frames.is_some());
        let word = words
            .get(&(c.pid, c.word))
            .map_or_else(|| format!("{:#x}", c.word), |row| frame(&row.name));
        *folded
            .entry(format!("{prefix};{word} [futex]"))
            .or_insert(0) += ns;
    }
    with_stack
}

/// Folded stacks of the MPI wait states (module docs).
fn fold_mpi(
    analysis: &Analysis<'_>,
    options: &ExportOptions,
) -> Result<(BTreeMap<String, u64>, Vec<String>), ExportError> {
    let recording = analysis.recording;
    let (rec, ev) = match (&recording.mpi, analysis.events::<MpiEvents>()) {
        (Some(Ok(m)), Some(ev)) => (m, ev),
        (Some(Err(e)), _) => {
            return Err(ExportError::Nothing(format!(
                "the MPI traces cannot be read ({e}): no MPI waits to fold"
            )))
        }
        _ => {
            return Err(ExportError::Nothing(
                "the recording holds no MPI traces: no MPI waits to fold (record with --mpi)"
                    .into(),
            ))
        }
    };
    let mut resolver = MapsSiteResolver::new(recording, &analysis.symbols);
    // (pid, site) → (program, site frame): the program is the module the
    // site is in (the rank's executable).
    let mut sites: BTreeMap<(u32, u64), (String, String)> = BTreeMap::new();
    let mut folded: BTreeMap<String, u64> = BTreeMap::new();
    for w in &ev.analysis.waits {
        if w.wait_ns == 0 || w.wait_ns < options.mpi.threshold(w.pattern) {
            continue;
        }
        let Some(t) = rec.ranks.iter().find(|t| t.rank == w.rank) else {
            continue;
        };
        let Some(call) = t.events.get(w.event) else {
            continue;
        };
        let (program, site) = sites.entry((t.pid, call.site)).or_insert_with(|| {
            let s = resolver.site(t.pid, call.site);
            let program = s
                .module
                .as_deref()
                .map(|m| frame(m.rsplit('/').next().unwrap_or(m)))
                .unwrap_or_else(|| format!("rank {}", t.rank));
            (program, site_frame(&s))
        });
        let line = format!(
            "{program};{site};{};{}",
            call.op.name(),
            frame(&w.pattern.label().to_lowercase())
        );
        *folded.entry(line).or_insert(0) += w.wait_ns;
    }
    let mut notes = Vec::new();
    if folded.is_empty() {
        notes.push("no MPI wait state above the thresholds".into());
    }
    Ok((folded, notes))
}

impl Exporter for Folded {
    fn export(
        &self,
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        let (folded, notes) = fold(analysis, options)?;
        for (stack, value) in &folded {
            writeln!(out, "{stack} {value}")?;
        }
        Ok(ExportSummary {
            records: folded.len() as u64,
            what: "stacks",
            notes,
        })
    }
}
