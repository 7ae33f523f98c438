//! pprof's `profile.proto`, gzip-compressed, shaped like Go's mutex and
//! block profiles so that `go tool pprof` (and every tool that reads
//! pprof) shows where time was lost waiting.
//!
//! Sample types: `contentions/count` (contended acquisitions; each MPI
//! wait state counts one), `delay/nanoseconds` (wait time, Go's name for
//! it; the default), and `hold/nanoseconds` (hold time of locks). A
//! sample's stack is the call stack recorded with the event
//! (`contend record --stack-every N`) from the event's call site outward,
//! or the call site alone; an MPI wait state's stack is its MPI call's
//! site. Function names, files and lines come from the symbolizer (an
//! address without symbols is named `module+offset`), one mapping per
//! module. Labels (all strings): `lock` and `kind` (the synchronisation
//! object and its kind), `thread` (tid) and, when the recording has it,
//! `thread_name` (the thread's comm) for lock events; `rank`,
//! `mpi_call`, `pattern` and `caused_by_rank` for MPI wait states. Samples with equal stacks and labels are merged,
//! so the profile grows with the distinct stacks, not with the events.
//!
//! Which events: those the filter keeps (`--min-duration`, `--lock`,
//! `--site`, `--thread`, `--critical-only`), as in the report's tables,
//! so the delay per site equals the report's wait per site; MPI wait
//! states count from `--threshold-p2p`/`--threshold-collective` like the
//! report's MPI section.

mod proto;

use std::io::Write;

use flate2::write::GzEncoder;
use prost::Message;
use rustc_hash::FxHashMap;

use super::timeline::{
    futex_on_path, futex_word_rows, keeps_futex_wait, keeps_omp_event, openmp_mutex_names,
    openmp_on_path,
};
use super::{ExportError, ExportOptions, ExportSummary, Exporter};
use crate::analysis::Analysis;
use crate::futex::{FutexEvents, ShownSites};
use crate::locks::{LockEvents, Outcome, Selection};
use crate::mpi::{MapsSiteResolver, MpiEvents, SiteResolver};
use crate::symbols::ResolvedSite;
use proto::*;

/// The pprof exporter.
pub(crate) struct Pprof;

/// Labels of a sample: (key, string value, number value) as string ids.
type Labels = Vec<(i64, i64, i64)>;

/// A profile being built.
struct Builder {
    profile: Profile,
    strings: FxHashMap<String, i64>,
    functions: FxHashMap<(i64, i64), u64>,
    /// (pid, address) → location id.
    locations: FxHashMap<(u32, u64), u64>,
    /// Module path → mapping id.
    mappings: FxHashMap<String, u64>,
    /// (stack, labels) → index in `profile.sample`.
    samples: FxHashMap<(Vec<u64>, Labels), usize>,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder {
            profile: Profile::default(),
            strings: FxHashMap::default(),
            functions: FxHashMap::default(),
            locations: FxHashMap::default(),
            mappings: FxHashMap::default(),
            samples: FxHashMap::default(),
        };
        b.string("");
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    /// The location of `address` in process `pid`, resolved by `resolve`
    /// the first time.
    fn location(&mut self, pid: u32, address: u64, resolve: impl FnOnce() -> ResolvedSite) -> u64 {
        if let Some(&id) = self.locations.get(&(pid, address)) {
            return id;
        }
        let site = resolve();
        let name = self.string(site.function.as_deref().unwrap_or(&site.display));
        let file = match &site.file {
            Some(f) => self.string(f),
            None => match &site.module {
                Some(m) => self.string(m),
                None => 0,
            },
        };
        let next_function = self.functions.len() as u64 + 1;
        let function = *self.functions.entry((name, file)).or_insert_with(|| {
            self.profile.function.push(Function {
                id: next_function,
                name,
                system_name: name,
                filename: file,
                start_line: 0,
            });
            next_function
        });
        let mapping_id = match &site.module {
            Some(m) => match self.mappings.get(m) {
                Some(&id) => id,
                None => {
                    let id = self.profile.mapping.len() as u64 + 1;
                    let filename = self.string(m);
                    self.profile.mapping.push(Mapping {
                        id,
                        filename,
                        has_functions: true,
                        has_filenames: true,
                        has_line_numbers: true,
                        ..Mapping::default()
                    });
                    self.mappings.insert(m.clone(), id);
                    id
                }
            },
            None => 0,
        };
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location {
            id,
            mapping_id,
            address,
            line: vec![Line {
                function_id: function,
                line: site.line.map_or(0, i64::from),
            }],
        });
        self.locations.insert((pid, address), id);
        id
    }

    fn add(&mut self, stack: Vec<u64>, labels: Labels, values: [i64; 3]) {
        let next = self.profile.sample.len();
        let i = *self
            .samples
            .entry((stack.clone(), labels.clone()))
            .or_insert(next);
        if i == next {
            self.profile.sample.push(Sample {
                location_id: stack,
                value: values.to_vec(),
                label: labels
                    .into_iter()
                    .map(|(key, str, num)| Label {
                        key,
                        str,
                        num,
                        num_unit: 0,
                    })
                    .collect(),
            });
        } else {
            for (v, add) in self.profile.sample[i].value.iter_mut().zip(values) {
                *v += add;
            }
        }
    }
}

impl Exporter for Pprof {
    fn export(
        &self,
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        let recording = analysis.recording;
        let locks = analysis
            .events::<LockEvents>()
            .filter(|l| !l.set.events.is_empty());
        let mpi = match (&recording.mpi, analysis.events::<MpiEvents>()) {
            (Some(Ok(m)), Some(ev)) if !ev.analysis.waits.is_empty() => Some((m, ev)),
            _ => None,
        };
        let futex = crate::futex::events_of(analysis).filter(|f| !f.waits.is_empty());
        let omp = crate::openmp::sync::events_of(analysis);
        if locks.is_none() && futex.is_none() && omp.is_empty() && mpi.is_none() {
            return Err(ExportError::Nothing(
                "the recording holds no lock events, no futex waits, no OpenMP events and no MPI wait states: no profile to write"
                    .into(),
            ));
        }
        let mut b = Builder::new();
        let types = [
            ("contentions", "count"),
            ("delay", "nanoseconds"),
            ("hold", "nanoseconds"),
        ];
        for (t, u) in types {
            let vt = ValueType {
                r#type: b.string(t),
                unit: b.string(u),
            };
            b.profile.sample_type.push(vt);
        }
        b.profile.period_type = Some(ValueType {
            r#type: b.string("contentions"),
            unit: b.string("count"),
        });
        b.profile.period = 1;
        b.profile.default_sample_type = b.string("delay");
        b.profile.duration_nanos = analysis.report.run.wall_ns.min(i64::MAX as u64) as i64;
        let mut notes = Vec::new();
        let mut events = 0u64;
        if let Some(ev) = locks {
            let (n, with_stacks) = lock_samples(&mut b, analysis, ev, options);
            events += n;
            if n > 0 && with_stacks == 0 {
                notes.push("no call stacks were recorded: each sample's stack is its call site alone (record with --stack-every N for stacks)".into());
            }
        }
        if let Some(f) = futex {
            events += futex_samples(&mut b, analysis, f, options);
        }
        if !omp.is_empty() {
            events += openmp_samples(&mut b, analysis, &omp, options);
        }
        if let Some((m, ev)) = mpi {
            events += mpi_samples(&mut b, analysis, m, ev, options);
        }
        let filters = options.filter.describe();
        if !filters.is_empty() {
            notes.push(format!("lock events selected: {}", filters.join("; ")));
        }
        for n in &notes {
            let c = b.string(&format!("contend: {n}"));
            b.profile.comment.push(c);
        }
        let samples = b.profile.sample.len() as u64;
        let bytes = b.profile.encode_to_vec();
        let mut gz = GzEncoder::new(out, flate2::Compression::default());
        gz.write_all(&bytes)?;
        gz.finish()?.flush()?;
        notes.push(format!("{events} events in {samples} samples"));
        Ok(ExportSummary {
            records: samples,
            what: "samples",
            notes,
        })
    }
}

/// Adds the lock events the filter keeps; returns (events, events with a
/// recorded stack).
fn lock_samples(
    b: &mut Builder,
    analysis: &Analysis<'_>,
    ev: &LockEvents,
    options: &ExportOptions,
) -> (u64, u64) {
    let recording = analysis.recording;
    let set = &ev.set;
    let selection = Selection::new(&options.filter, set, &ev.critical_path, &ev.names);
    let (lock_key, kind_key, thread_key) = (b.string("lock"), b.string("kind"), b.string("thread"));
    let thread_name_key = b.string("thread_name");
    let (mut n, mut with_stacks) = (0u64, 0u64);
    for (i, e) in set.events.iter().enumerate() {
        if e.outcome() == Outcome::Post || !selection.keeps(i, e) {
            continue;
        }
        let values = [
            i64::from(e.contended()),
            e.wait_ns().min(i64::MAX as u64) as i64,
            e.hold_ns().min(i64::MAX as u64) as i64,
        ];
        if values == [0, 0, 0] {
            continue;
        }
        n += 1;
        let process = set.threads[e.thread() as usize].process;
        let proc = recording.processes.get(process as usize);
        let pid = proc.map_or(0, |p| p.trace.pid);
        let maps = recording.process_maps(process);
        let site_address = set.sites[e.site as usize].address;
        let site = ev.names.sites[e.site as usize].clone();
        let frames: Option<&[u64]> = set
            .stack_of(i)
            .and_then(|s| proc?.trace.stacks.get(s as usize))
            .map(Vec::as_slice)
            .filter(|f| !f.is_empty());
        let mut stack = Vec::new();
        match frames {
            Some(frames) => {
                with_stacks += 1;
                // From the event's site outward (the site may have moved
                // from a system frame to the user's, see
                // `attribute_sites_through_stacks`).
                let from = frames.iter().position(|&a| a == site_address);
                if from.is_none() {
                    stack.push(b.location(pid, site_address, || site.clone()));
                }
                for &a in &frames[from.unwrap_or(0)..] {
                    stack.push(b.location(pid, a, || analysis.symbols.site(maps, a)));
                }
            }
            None => stack.push(b.location(pid, site_address, || site)),
        }
        let lock = b.string(&ev.names.objects[e.object as usize]);
        let kind = b.string(set.object_kinds[e.object as usize].object_kind());
        let info = &set.threads[e.thread() as usize];
        let tid = b.string(&info.tid.to_string());
        let mut labels = vec![
            (lock_key, lock, 0),
            (kind_key, kind, 0),
            (thread_key, tid, 0),
        ];
        if let Some(name) = &info.name {
            labels.push((thread_name_key, b.string(name), 0));
        }
        b.add(stack, labels, values);
    }
    (n, with_stacks)
}

/// Adds the futex waits (`syscall(SYS_futex, …)` or the futex
/// tracepoints) that the filters keep ([`keeps_sync`]): `contentions` 1 for a wait
/// that slept, `delay` its wait, no hold (the kernel does not see futex
/// holds). The stack is the site the report's `futex.by_site` shows it at
/// ([`ShownSites`]) and, when a stack was recorded, the frames outward
/// from it; labels `lock` (the word, named as in `futex.by_word`), `kind`
/// `futex`, `futex_kind` (the inferred kind) and `thread`. Returns how
/// many waits.
fn futex_samples(
    b: &mut Builder,
    analysis: &Analysis<'_>,
    ev: &FutexEvents,
    options: &ExportOptions,
) -> u64 {
    let on_path = futex_on_path(analysis, ev.waits.len());
    let words = futex_word_rows(analysis);
    let mut sites = ShownSites::new(analysis.recording, &analysis.symbols, ev);
    let (lock_key, kind_key, fkind_key, thread_key) = (
        b.string("lock"),
        b.string("kind"),
        b.string("futex_kind"),
        b.string("thread"),
    );
    let futex = b.string("futex");
    let mut n = 0;
    for (i, w) in ev.waits.iter().enumerate() {
        let ns = w.wait_ns();
        let c = ev.wait_info(w);
        if !keeps_futex_wait(&options.filter, ev, on_path, i) {
            continue;
        }
        let values = [i64::from(w.slept()), ns.min(i64::MAX as u64) as i64, 0];
        if values == [0, 0, 0] {
            continue;
        }
        n += 1;
        let (address, site) = sites.site(c.process, c.site, c.stack).clone();
        let maps = sites.maps(c.process);
        let mut stack = vec![b.location(c.pid, address, || site)];
        if let Some(frames) = sites.stack(c.process, c.stack) {
            if let Some(from) = frames.iter().position(|&a| a == address) {
                for &a in &frames[from + 1..] {
                    stack.push(b.location(c.pid, a, || analysis.symbols.site(maps, a)));
                }
            }
        }
        let (word, fkind) = match words.get(&(c.pid, c.word)) {
            Some(row) => (b.string(&row.name), b.string(&row.kind)),
            None => (b.string(&format!("{:#x}", c.word)), futex),
        };
        let tid = b.string(&c.tid.to_string());
        let labels = vec![
            (lock_key, word, 0),
            (kind_key, futex, 0),
            (fkind_key, fkind, 0),
            (thread_key, tid, 0),
        ];
        b.add(stack, labels, values);
    }
    n
}

/// Adds the OpenMP synchronisation events ([`crate::openmp::sync::collect`]:
/// critical sections, OpenMP locks, atomic, ordered, barrier waits) that
/// the filters keep ([`keeps_sync`], duration wait + hold):
/// `contentions` 1 for an event that waited, `delay` its wait, `hold` a
/// mutex's hold. The stack is the event's site (the acquisition's, the
/// barrier construct's); labels `lock` (a mutex's name as in
/// `openmp.mutexes`, else the barrier's kind), `kind` `openmp`,
/// `openmp_kind` (`critical`, `lock`, `implicit barrier`, …) and `thread`.
/// Returns how many events.
fn openmp_samples(
    b: &mut Builder,
    analysis: &Analysis<'_>,
    ev: &crate::openmp::sync::OmpSyncEvents,
    options: &ExportOptions,
) -> u64 {
    let recording = analysis.recording;
    let on_path = openmp_on_path(analysis, ev.len());
    let names = openmp_mutex_names(analysis);
    let (lock_key, kind_key, okind_key, thread_key) = (
        b.string("lock"),
        b.string("kind"),
        b.string("openmp_kind"),
        b.string("thread"),
    );
    let openmp = b.string("openmp");
    let mut n = 0;
    for (i, e) in ev.iter().enumerate() {
        let wait = e.wait_ns();
        if !keeps_omp_event(&options.filter, &e, on_path, i) {
            continue;
        }
        let values = [
            i64::from(wait > 0),
            wait.min(i64::MAX as u64) as i64,
            e.hold_ns().min(i64::MAX as u64) as i64,
        ];
        if values == [0, 0, 0] {
            continue;
        }
        n += 1;
        let maps = recording.process_maps(e.process);
        let stack = vec![b.location(e.pid(recording), e.site, || {
            analysis.symbols.site(maps, e.site)
        })];
        let kind = e.kind_name();
        let lock = match names.get(&(e.pid(recording), kind, e.object)) {
            Some(name) if !e.barrier => b.string(name),
            _ if e.barrier => b.string(kind),
            _ => b.string(&format!("{:#x}", e.object)),
        };
        let okind = b.string(kind);
        let tid = b.string(&e.tid.to_string());
        let labels = vec![
            (lock_key, lock, 0),
            (kind_key, openmp, 0),
            (okind_key, okind, 0),
            (thread_key, tid, 0),
        ];
        b.add(stack, labels, values);
    }
    n
}

/// Adds the MPI wait states above the report's thresholds; returns how
/// many.
fn mpi_samples(
    b: &mut Builder,
    analysis: &Analysis<'_>,
    rec: &contend_trace::mpi::MpiRecording,
    ev: &MpiEvents,
    options: &ExportOptions,
) -> u64 {
    let mut resolver = MapsSiteResolver::new(analysis.recording, &analysis.symbols);
    let keys = [
        b.string("rank"),
        b.string("mpi_call"),
        b.string("pattern"),
        b.string("caused_by_rank"),
    ];
    let mut n = 0;
    for w in &ev.analysis.waits {
        let threshold = if w.pattern.is_p2p() {
            options.mpi.threshold_p2p_ns
        } else {
            options.mpi.threshold_collective_ns
        };
        if w.wait_ns < threshold {
            continue;
        }
        let Some(t) = rec.ranks.iter().find(|t| t.rank == w.rank) else {
            continue;
        };
        let Some(call) = t.events.get(w.event) else {
            continue;
        };
        n += 1;
        let pid = t.pid;
        let loc = b.location(pid, call.site, || resolver.site(pid, call.site));
        let op = b.string(call.op.name());
        let pattern = b.string(w.pattern.key());
        let rank = b.string(&w.rank.to_string());
        let cause = b.string(&w.cause.to_string());
        b.add(
            vec![loc],
            vec![
                (keys[0], rank, 0),
                (keys[1], op, 0),
                (keys[2], pattern, 0),
                (keys[3], cause, 0),
            ],
            [1, w.wait_ns.min(i64::MAX as u64) as i64, 0],
        );
    }
    n
}
