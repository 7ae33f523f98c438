//! Chrome's trace-event JSON (the `{"traceEvents": […]}` object format of
//! `chrome://tracing`, which Perfetto, Speedscope and many other tools
//! also read), for tools that read only that: the same
//! [`timeline`](super::timeline) as the Perfetto export, as far as the
//! format allows.
//!
//! Slices are complete events (`"ph": "X"`), instants `"i"`, counter
//! values `"C"` (per process: the system-wide counters belong to a
//! process named `system` with pid 0), flows `"s"`/`"f"` bound to the
//! slices they start and end at, process and thread names metadata
//! (`"M"`). Times are µs with ns precision (three decimals), as the
//! format wants; the extra lane of a thread (events that overlap without
//! nesting) is a thread of its own with id `lane × 2³² + tid`. Written as
//! it goes, like the Perfetto export.

use std::io::Write;

use rustc_hash::FxHashMap;

use super::timeline::{self, Arg, Slice, TimelineSink, Track, TrackId, TrackKind};
use super::{ExportError, ExportOptions, ExportSummary, Exporter};
use crate::analysis::Analysis;

/// The Chrome JSON exporter.
pub(crate) struct Chrome;

impl Exporter for Chrome {
    fn export(
        &self,
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        let mut sink = Sink {
            out,
            first: true,
            threads: FxHashMap::default(),
            counters: FxHashMap::default(),
            system_named: false,
        };
        sink.out
            .write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        timeline::walk(analysis, options, &mut sink, "trace events")
    }
}

struct Sink<'w> {
    out: &'w mut dyn Write,
    first: bool,
    /// Track → (pid, tid) of slice tracks.
    threads: FxHashMap<TrackId, (u32, u64)>,
    /// Track → (pid, name) of counters.
    counters: FxHashMap<TrackId, (u32, String)>,
    system_named: bool,
}

/// A JSON string literal.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// ns as µs with three decimals.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

impl Sink<'_> {
    fn record(&mut self, json: &str) -> std::io::Result<()> {
        if !std::mem::take(&mut self.first) {
            self.out.write_all(b",\n")?;
        } else {
            self.out.write_all(b"\n")?;
        }
        self.out.write_all(json.as_bytes())
    }

    fn args(args: &[(&'static str, Arg<'_>)]) -> String {
        let fields: Vec<String> = args
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Arg::Str(s) => js(s),
                    Arg::U64(n) => n.to_string(),
                    Arg::Bool(b) => b.to_string(),
                };
                format!("{}:{v}", js(k))
            })
            .collect();
        format!("{{{}}}", fields.join(","))
    }

    fn flows(&mut self, s: &Slice<'_>, pid: u32, tid: u64) -> std::io::Result<()> {
        for (ids, ph, bind) in [(s.flows_out, "s", ""), (s.flows_in, "f", ",\"bp\":\"e\"")] {
            for id in ids {
                self.record(&format!(
                    "{{\"name\":\"hand-over\",\"cat\":{},\"ph\":\"{ph}\",\"id\":{id},\"ts\":{},\"pid\":{pid},\"tid\":{tid}{bind}}}",
                    js(s.category),
                    us(s.start_ns)
                ))?;
            }
        }
        Ok(())
    }
}

impl TimelineSink for Sink<'_> {
    fn track(&mut self, t: &Track<'_>) -> std::io::Result<()> {
        match &t.kind {
            TrackKind::Process { pid, name, .. } => self.record(&format!(
                "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
                js(name)
            )),
            TrackKind::Thread { pid, tid, name } => {
                self.threads.insert(t.id, (*pid, u64::from(*tid)));
                self.record(&format!(
                    "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                    js(name)
                ))
            }
            TrackKind::Lane {
                pid,
                tid,
                lane,
                name,
            } => {
                let id = (u64::from(*lane) << 32) + u64::from(*tid);
                self.threads.insert(t.id, (*pid, id));
                self.record(&format!(
                    "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{id},\"args\":{{\"name\":{}}}}}",
                    js(name)
                ))
            }
            TrackKind::Counter { pid, name, unit } => {
                self.counters
                    .insert(t.id, (*pid, format!("{name} [{unit}]")));
                if *pid == 0 && !std::mem::replace(&mut self.system_named, true) {
                    self.record(
                        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"system\"}}",
                    )?;
                }
                Ok(())
            }
        }
    }

    fn slice(&mut self, s: &Slice<'_>) -> std::io::Result<()> {
        let (pid, tid) = self.threads.get(&s.track).copied().unwrap_or((0, 0));
        self.record(&format!(
            "{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{tid},\"args\":{}}}",
            js(s.name),
            js(s.category),
            us(s.start_ns),
            us(s.end_ns - s.start_ns),
            Self::args(s.args)
        ))?;
        self.flows(s, pid, tid)
    }

    fn instant(&mut self, s: &Slice<'_>) -> std::io::Result<()> {
        let (pid, tid) = self.threads.get(&s.track).copied().unwrap_or((0, 0));
        self.record(&format!(
            "{{\"name\":{},\"cat\":{},\"ph\":\"i\",\"s\":\"t\",\"ts\":{},\"pid\":{pid},\"tid\":{tid},\"args\":{}}}",
            js(s.name),
            js(s.category),
            us(s.start_ns),
            Self::args(s.args)
        ))?;
        self.flows(s, pid, tid)
    }

    fn counter(&mut self, track: TrackId, t_ns: u64, value: f64) -> std::io::Result<()> {
        let (pid, name) = match self.counters.get(&track) {
            Some((pid, name)) => (*pid, js(name)),
            None => return Ok(()),
        };
        let value = if value.is_finite() { value } else { 0.0 };
        self.record(&format!(
            "{{\"name\":{name},\"ph\":\"C\",\"ts\":{},\"pid\":{pid},\"args\":{{\"value\":{value}}}}}",
            us(t_ns)
        ))
    }

    fn end_track(&mut self, _track: TrackId) -> std::io::Result<()> {
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()
    }
}
