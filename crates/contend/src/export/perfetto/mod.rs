//! Perfetto's native trace format: a stream of protobuf `TracePacket`s
//! (the `Trace` message), which ui.perfetto.dev and `trace_processor`
//! open. The content is the [`timeline`](super::timeline) walk: process
//! and thread tracks, lock and MPI slices with their arguments, flows for
//! the critical path's hand-overs and for matched messages, counter tracks
//! from the service samples.
//!
//! Written as it goes: each packet is encoded into one reused buffer and
//! written out, so memory does not grow with the trace; it holds only the
//! interned names (one per distinct lock, site, argument name) and, per
//! track, the ends of the slices still open (the nesting depth). Names
//! are interned on the one packet sequence this writer uses (sequence 1;
//! its first event packet clears the incremental state) so that each
//! event carries small ids instead of strings. Timestamps are
//! CLOCK_MONOTONIC ns in the trace's default clock.

mod proto;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use prost::Message;
use rustc_hash::FxHashMap;

use super::timeline::{self, Arg, Slice, TimelineSink, Track, TrackId, TrackKind};
use super::{ExportError, ExportOptions, ExportSummary, Exporter};
use crate::analysis::Analysis;
use proto::*;

/// The Perfetto exporter.
pub(crate) struct Perfetto;

impl Exporter for Perfetto {
    fn export(
        &self,
        analysis: &Analysis<'_>,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<ExportSummary, ExportError> {
        let mut sink = Sink::new(out);
        timeline::walk(analysis, options, &mut sink, "trace events")
    }
}

/// The packet sequence of this writer.
const SEQUENCE: u32 = 1;

/// Interned strings of one kind: string → iid.
#[derive(Default)]
struct Table {
    ids: FxHashMap<String, u64>,
}

impl Table {
    /// The iid of `s`, and whether it is new (to be sent with the packet).
    fn get(&mut self, s: &str) -> (u64, bool) {
        if let Some(&id) = self.ids.get(s) {
            return (id, false);
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(s.to_string(), id);
        (id, true)
    }
}

/// A slice end waiting to be written: (end time, later-begun first).
type PendingEnd = Reverse<(u64, Reverse<u64>)>;

struct Sink<'w> {
    out: &'w mut dyn Write,
    buf: Vec<u8>,
    /// The next event packet is the sequence's first: it clears the
    /// incremental state.
    first_event: bool,
    names: Table,
    categories: Table,
    arg_names: Table,
    strings: Table,
    /// Per track, the ends of its open slices.
    open: FxHashMap<TrackId, BinaryHeap<PendingEnd>>,
    /// Slices begun, to order equal ends (inner first).
    begun: u64,
}

impl<'w> Sink<'w> {
    fn new(out: &'w mut dyn Write) -> Sink<'w> {
        Sink {
            out,
            buf: Vec::with_capacity(256),
            first_event: true,
            names: Table::default(),
            categories: Table::default(),
            arg_names: Table::default(),
            strings: Table::default(),
            open: FxHashMap::default(),
            begun: 0,
        }
    }

    /// Writes `p` as one `packet` field of the `Trace` message.
    fn write(&mut self, p: &TracePacket) -> std::io::Result<()> {
        self.buf.clear();
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut self.buf);
        prost::encoding::encode_varint(p.encoded_len() as u64, &mut self.buf);
        p.encode(&mut self.buf)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.out.write_all(&self.buf)
    }

    /// An event packet at `t`, with the names it introduces.
    fn event(
        &mut self,
        t: u64,
        event: TrackEvent,
        interned: Option<InternedData>,
    ) -> std::io::Result<()> {
        let flags = if std::mem::take(&mut self.first_event) {
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            SEQ_NEEDS_INCREMENTAL_STATE
        };
        self.write(&TracePacket {
            timestamp: Some(t),
            track_event: Some(event),
            trusted_packet_sequence_id: Some(SEQUENCE),
            interned_data: interned,
            sequence_flags: Some(flags),
            ..TracePacket::default()
        })
    }

    /// Writes the ends on `track` up to time `t` (all with `None`).
    fn close_until(&mut self, track: TrackId, t: Option<u64>) -> std::io::Result<()> {
        loop {
            let Some(heap) = self.open.get_mut(&track) else {
                return Ok(());
            };
            let end = match heap.peek() {
                Some(Reverse((end, _))) if t.is_none_or(|t| *end <= t) => *end,
                _ => return Ok(()),
            };
            heap.pop();
            self.event(
                end,
                TrackEvent {
                    r#type: Some(TYPE_SLICE_END),
                    track_uuid: Some(track),
                    ..TrackEvent::default()
                },
                None,
            )?;
        }
    }

    /// The event of a slice begin or an instant, with its names interned.
    fn begin_event(&mut self, s: &Slice<'_>, kind: i32) -> (TrackEvent, Option<InternedData>) {
        let mut interned = InternedData::default();
        let (name, new) = self.names.get(s.name);
        if new {
            interned.event_names.push(Interned {
                iid: Some(name),
                name: Some(s.name.to_string()),
            });
        }
        let (category, new) = self.categories.get(s.category);
        if new {
            interned.event_categories.push(Interned {
                iid: Some(category),
                name: Some(s.category.to_string()),
            });
        }
        let mut annotations = Vec::with_capacity(s.args.len());
        for (key, value) in s.args {
            let (key_iid, new) = self.arg_names.get(key);
            if new {
                interned.debug_annotation_names.push(Interned {
                    iid: Some(key_iid),
                    name: Some(key.to_string()),
                });
            }
            let mut a = DebugAnnotation {
                name_iid: Some(key_iid),
                ..DebugAnnotation::default()
            };
            match *value {
                Arg::Str(v) => {
                    let (iid, new) = self.strings.get(v);
                    if new {
                        interned
                            .debug_annotation_string_values
                            .push(InternedString {
                                iid: Some(iid),
                                str: Some(v.as_bytes().to_vec()),
                            });
                    }
                    a.string_value_iid = Some(iid);
                }
                Arg::U64(v) => a.uint_value = Some(v),
                Arg::Bool(v) => a.bool_value = Some(v),
            }
            annotations.push(a);
        }
        let any_new = !(interned.event_names.is_empty()
            && interned.event_categories.is_empty()
            && interned.debug_annotation_names.is_empty()
            && interned.debug_annotation_string_values.is_empty());
        (
            TrackEvent {
                category_iids: vec![category],
                name_iid: Some(name),
                r#type: Some(kind),
                track_uuid: Some(s.track),
                flow_ids: s.flows_out.to_vec(),
                terminating_flow_ids: s.flows_in.to_vec(),
                debug_annotations: annotations,
                ..TrackEvent::default()
            },
            any_new.then_some(interned),
        )
    }
}

impl TimelineSink for Sink<'_> {
    fn track(&mut self, t: &Track<'_>) -> std::io::Result<()> {
        let mut d = TrackDescriptor {
            uuid: Some(t.id),
            parent_uuid: t.parent,
            ..TrackDescriptor::default()
        };
        match &t.kind {
            TrackKind::Process { pid, name, cmdline } => {
                d.process = Some(ProcessDescriptor {
                    pid: Some(*pid as i32),
                    cmdline: cmdline.to_vec(),
                    process_name: Some(name.to_string()),
                });
            }
            TrackKind::Thread { pid, tid, name } => {
                // A thread track needs no parent: the pid says its process.
                d.parent_uuid = None;
                d.thread = Some(ThreadDescriptor {
                    pid: Some(*pid as i32),
                    tid: Some(i64::from(*tid)),
                    thread_name: Some(name.to_string()),
                });
            }
            TrackKind::Lane { name, .. } => d.name = Some(name.to_string()),
            TrackKind::Counter { name, unit, .. } => {
                d.name = Some(name.to_string());
                d.counter = Some(CounterDescriptor {
                    unit: None,
                    unit_name: Some(unit.to_string()),
                });
            }
        }
        self.write(&TracePacket {
            track_descriptor: Some(d),
            trusted_packet_sequence_id: Some(SEQUENCE),
            ..TracePacket::default()
        })
    }

    fn slice(&mut self, s: &Slice<'_>) -> std::io::Result<()> {
        self.close_until(s.track, Some(s.start_ns))?;
        let (event, interned) = self.begin_event(s, TYPE_SLICE_BEGIN);
        self.event(s.start_ns, event, interned)?;
        self.begun += 1;
        self.open
            .entry(s.track)
            .or_default()
            .push(Reverse((s.end_ns, Reverse(self.begun))));
        Ok(())
    }

    fn instant(&mut self, s: &Slice<'_>) -> std::io::Result<()> {
        self.close_until(s.track, Some(s.start_ns))?;
        let (event, interned) = self.begin_event(s, TYPE_INSTANT);
        self.event(s.start_ns, event, interned)
    }

    fn counter(&mut self, track: TrackId, t_ns: u64, value: f64) -> std::io::Result<()> {
        self.event(
            t_ns,
            TrackEvent {
                r#type: Some(TYPE_COUNTER),
                track_uuid: Some(track),
                double_counter_value: Some(value),
                ..TrackEvent::default()
            },
            None,
        )
    }

    fn end_track(&mut self, track: TrackId) -> std::io::Result<()> {
        self.close_until(track, None)?;
        self.open.remove(&track);
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        let mut tracks: Vec<TrackId> = self.open.keys().copied().collect();
        tracks.sort_unstable();
        for t in tracks {
            self.end_track(t)?;
        }
        self.out.flush()
    }
}
