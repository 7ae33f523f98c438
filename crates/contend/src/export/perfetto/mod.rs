//! Perfetto's native trace format: a stream of protobuf `TracePacket`s
//! (the `Trace` message), which ui.perfetto.dev and `trace_processor`
//! open. The content is the [`timeline`](super::timeline) walk: process
//! and thread tracks, lock and MPI slices with their arguments, flows for
//! the critical path's hand-overs and for matched messages, counter tracks
//! from the service samples.
//!
//! Written as it goes: packets are encoded into one reused buffer that
//! is written out whenever it holds 1 MiB, so memory does not grow with
//! the trace; it holds only the
//! interned names (one per distinct lock, site, argument name) and, per
//! track, the ends of the slices still open (the nesting depth). Names
//! are interned on the one packet sequence this writer uses (sequence 1;
//! its first event packet clears the incremental state) so that each
//! event carries small ids instead of strings. Timestamps are
//! CLOCK_MONOTONIC ns in the trace's default clock.

mod proto;

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

/// Interned strings of one kind: string → iid, with a small cache by
/// address (the same lock and site names come with nearly every event;
/// a hit is checked against the interned copy, so a reused address
/// cannot give a wrong id).
struct Table {
    ids: FxHashMap<Box<str>, u64>,
    /// The interned strings, by iid − 1.
    strings: Vec<Box<str>>,
    /// (address, length, iid) by a hash of the address.
    recent: [(usize, usize, u64); 64],
}

impl Default for Table {
    fn default() -> Self {
        Table {
            ids: FxHashMap::default(),
            strings: Vec::new(),
            recent: [(0, 0, 0); 64],
        }
    }
}

impl Table {
    /// The iid of `s`, and whether it is new (to be sent with the packet).
    fn get(&mut self, s: &str) -> (u64, bool) {
        let (ptr, len) = (s.as_ptr() as usize, s.len());
        let slot = ((ptr >> 3) ^ len) & 63;
        let (p, l, iid) = self.recent[slot];
        if p == ptr && l == len && iid > 0 && *self.strings[iid as usize - 1] == *s {
            return (iid, false);
        }
        let (iid, new) = match self.ids.get(s) {
            Some(&id) => (id, false),
            None => {
                self.strings.push(s.into());
                let id = self.strings.len() as u64;
                self.ids.insert(s.into(), id);
                (id, true)
            }
        };
        self.recent[slot] = (ptr, len, iid);
        (iid, new)
    }
}

/// Bytes gathered before one write to the output: packets are 20 to 100
/// bytes, and one `write_all` through `dyn Write` per packet costs more
/// than a copy into this buffer.
const OUT_CHUNK: usize = 1 << 20;

struct Sink<'w> {
    out: &'w mut dyn Write,
    /// Encoded packets not yet written to `out` (at most about
    /// [`OUT_CHUNK`] bytes: memory stays bounded).
    buf: Vec<u8>,
    /// Its `TrackEvent`.
    event: Vec<u8>,
    /// One debug annotation being encoded.
    annotation: Vec<u8>,
    /// The `InternedData` the packet introduces, encoded (empty: none).
    interned: Vec<u8>,
    /// The next event packet is the sequence's first: it clears the
    /// incremental state.
    first_event: bool,
    names: Table,
    categories: Table,
    arg_names: Table,
    strings: Table,
    /// Per track (by id: ids are small and dense), the ends of its open
    /// slices, the next to end last: slices on a track come properly
    /// nested, so this is a stack (an improperly nested slice is put in
    /// its place, so the ends still come out in order).
    open: Vec<Vec<u64>>,
}

impl<'w> Sink<'w> {
    fn new(out: &'w mut dyn Write) -> Sink<'w> {
        Sink {
            out,
            buf: Vec::with_capacity(OUT_CHUNK + 4096),
            event: Vec::with_capacity(256),
            annotation: Vec::with_capacity(32),
            interned: Vec::with_capacity(256),
            first_event: true,
            names: Table::default(),
            categories: Table::default(),
            arg_names: Table::default(),
            strings: Table::default(),
            open: Vec::new(),
        }
    }

    /// Writes `p` as one `packet` field of the `Trace` message.
    fn write(&mut self, p: &TracePacket) -> std::io::Result<()> {
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut self.buf);
        prost::encoding::encode_varint(p.encoded_len() as u64, &mut self.buf);
        p.encode(&mut self.buf)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.spill()
    }

    /// Hands the gathered packets to the output once there are enough.
    fn spill(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= OUT_CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes the event packet at `t` whose `TrackEvent` is encoded in
    /// `self.event`, with the names it introduces (encoded in
    /// `self.interned`, empty when none). The packet is encoded field by
    /// field into reused buffers (prost's wire encoding), so an event
    /// costs no allocation; its length is worked out first, so that it is
    /// encoded straight into the output buffer.
    fn event(&mut self, t: u64) -> std::io::Result<()> {
        use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
        let flags = if std::mem::take(&mut self.first_event) {
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            SEQ_NEEDS_INCREMENTAL_STATE
        };
        // every key below is one byte (field numbers < 16)
        let delimited = |n: usize| 1 + encoded_len_varint(n as u64) + n;
        let mut len = 1
            + encoded_len_varint(t)
            + delimited(self.event.len())
            + 1
            + encoded_len_varint(u64::from(SEQUENCE))
            + 1
            + encoded_len_varint(u64::from(flags));
        if !self.interned.is_empty() {
            len += delimited(self.interned.len());
        }
        let p = &mut self.buf;
        encode_key(1, WireType::LengthDelimited, p); // Trace.packet
        encode_varint(len as u64, p);
        encode_key(8, WireType::Varint, p); // timestamp
        encode_varint(t, p);
        encode_key(11, WireType::LengthDelimited, p); // track_event
        encode_varint(self.event.len() as u64, p);
        p.extend_from_slice(&self.event);
        encode_key(10, WireType::Varint, p); // trusted_packet_sequence_id
        encode_varint(u64::from(SEQUENCE), p);
        if !self.interned.is_empty() {
            encode_key(12, WireType::LengthDelimited, p); // interned_data
            encode_varint(self.interned.len() as u64, p);
            p.extend_from_slice(&self.interned);
        }
        encode_key(13, WireType::Varint, p); // sequence_flags
        encode_varint(u64::from(flags), p);
        self.spill()
    }

    /// Encodes a `TrackEvent` of `kind` on `track` into `self.event`
    /// (without name, arguments or flows: a slice end or a counter value).
    fn plain_event(&mut self, kind: i32, track: TrackId) {
        use prost::encoding::{encode_key, encode_varint, WireType};
        let e = &mut self.event;
        e.clear();
        encode_key(9, WireType::Varint, e); // type
        encode_varint(kind as u64, e);
        encode_key(11, WireType::Varint, e); // track_uuid
        encode_varint(track, e);
        self.interned.clear();
    }

    /// Writes the ends on `track` up to time `t` (all with `None`).
    fn close_until(&mut self, track: TrackId, t: Option<u64>) -> std::io::Result<()> {
        let k = track as usize;
        while let Some(&end) = self.open.get(k).and_then(|s| s.last()) {
            if t.is_some_and(|t| end > t) {
                break;
            }
            self.open[k].pop();
            self.plain_event(TYPE_SLICE_END, track);
            self.event(end)?;
        }
        Ok(())
    }

    /// Notes a slice on `track` ending at `end`, begun after every one
    /// noted so far: the ends come out earliest first, of equal ends the
    /// later begun (the inner) first.
    fn open_slice(&mut self, track: TrackId, end: u64) {
        let k = track as usize;
        if self.open.len() <= k {
            self.open.resize_with(k + 1, Vec::new);
        }
        let stack = &mut self.open[k];
        // Properly nested: it ends no later than the innermost open one,
        // and goes on top. Otherwise below every open slice that ends
        // earlier (above those ending at the same time: begun later).
        let at = stack.iter().rposition(|&e| e >= end).map_or(0, |i| i + 1);
        stack.insert(at, end);
    }

    /// Encodes the `TrackEvent` of a slice begin or an instant into
    /// `self.event` and the names it introduces into `self.interned`.
    fn begin_event(&mut self, s: &Slice<'_>, kind: i32) {
        use prost::encoding::{encode_key, encode_varint, WireType};
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
        let e = &mut self.event;
        e.clear();
        encode_key(3, WireType::Varint, e); // category_iids
        encode_varint(category, e);
        encode_key(10, WireType::Varint, e); // name_iid
        encode_varint(name, e);
        encode_key(9, WireType::Varint, e); // type
        encode_varint(kind as u64, e);
        encode_key(11, WireType::Varint, e); // track_uuid
        encode_varint(s.track, e);
        for &f in s.flows_out {
            encode_key(47, WireType::SixtyFourBit, e); // flow_ids
            e.extend_from_slice(&f.to_le_bytes());
        }
        for &f in s.flows_in {
            encode_key(48, WireType::SixtyFourBit, e); // terminating_flow_ids
            e.extend_from_slice(&f.to_le_bytes());
        }
        for (key, value) in s.args {
            let (key_iid, new) = self.arg_names.get(key);
            if new {
                interned.debug_annotation_names.push(Interned {
                    iid: Some(key_iid),
                    name: Some(key.to_string()),
                });
            }
            // DebugAnnotation: name_iid = 1, then its value.
            let a = &mut self.annotation;
            a.clear();
            encode_key(1, WireType::Varint, a);
            encode_varint(key_iid, a);
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
                    encode_key(17, WireType::Varint, a); // string_value_iid
                    encode_varint(iid, a);
                }
                Arg::U64(v) => {
                    encode_key(3, WireType::Varint, a); // uint_value
                    encode_varint(v, a);
                }
                Arg::Bool(v) => {
                    encode_key(2, WireType::Varint, a); // bool_value
                    encode_varint(u64::from(v), a);
                }
            }
            let e = &mut self.event;
            encode_key(4, WireType::LengthDelimited, e); // debug_annotations
            encode_varint(self.annotation.len() as u64, e);
            e.extend_from_slice(&self.annotation);
        }
        self.interned.clear();
        let any_new = !(interned.event_names.is_empty()
            && interned.event_categories.is_empty()
            && interned.debug_annotation_names.is_empty()
            && interned.debug_annotation_string_values.is_empty());
        if any_new {
            interned.encode(&mut self.interned).ok();
        }
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
        self.begin_event(s, TYPE_SLICE_BEGIN);
        self.event(s.start_ns)?;
        self.open_slice(s.track, s.end_ns);
        Ok(())
    }

    fn instant(&mut self, s: &Slice<'_>) -> std::io::Result<()> {
        self.close_until(s.track, Some(s.start_ns))?;
        self.begin_event(s, TYPE_INSTANT);
        self.event(s.start_ns)
    }

    fn counter(&mut self, track: TrackId, t_ns: u64, value: f64) -> std::io::Result<()> {
        self.plain_event(TYPE_COUNTER, track);
        // double_counter_value = 44 (fixed 64 bits).
        prost::encoding::encode_key(44, prost::encoding::WireType::SixtyFourBit, &mut self.event);
        self.event.extend_from_slice(&value.to_le_bytes());
        self.event(t_ns)
    }

    fn end_track(&mut self, track: TrackId) -> std::io::Result<()> {
        self.close_until(track, None)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        for t in 0..self.open.len() {
            self.end_track(t as TrackId)?;
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}
