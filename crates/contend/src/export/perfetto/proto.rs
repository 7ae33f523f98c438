//! The few messages of Perfetto's trace schema that the export writes,
//! declared for `prost` from the published definitions
//! (`protos/perfetto/trace/trace_packet.proto`, `track_event/*.proto`,
//! `interned_data/interned_data.proto`): only the fields used here, with
//! their field numbers and types as the schema gives them. A field that
//! the schema puts in a `oneof` is declared as a plain optional field;
//! on the wire the two are the same.

/// `TracePacket`: one unit of a trace. A trace file is the `Trace`
/// message, `repeated TracePacket packet = 1`, so a file is these packets
/// one after another, each as field 1 (length-delimited).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// `timestamp = 8`: ns, in the default trace clock.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `track_descriptor = 60`.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    /// `trusted_packet_sequence_id = 10`: the writer's sequence.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `interned_data = 12`: names introduced by this packet.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `sequence_flags = 13`: `SEQ_INCREMENTAL_STATE_CLEARED = 1`,
    /// `SEQ_NEEDS_INCREMENTAL_STATE = 2`.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
}

/// `SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `SEQ_NEEDS_INCREMENTAL_STATE`.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `TrackDescriptor`: a track (process, thread, counter or plain).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// `uuid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `parent_uuid = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `name = 2`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// `process = 3`.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `thread = 4`.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// `counter = 8`.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// `pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `cmdline = 2`.
    #[prost(string, repeated, tag = "2")]
    pub cmdline: Vec<String>,
    /// `process_name = 6`.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// `pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `tid = 2`.
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    /// `thread_name = 5`.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `unit = 3`: `UNIT_TIME_NS = 1`, `UNIT_COUNT = 2`, … (0 with a
    /// `unit_name`).
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    /// `unit_name = 6`: a free-form unit.
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

// `TrackEvent` (field 11 of a packet) is written field by field by the
// sink (`Sink::begin_event`, `Sink::plain_event`), with the schema's
// numbers: `category_iids = 3`, `name_iid = 10`, `type = 9`,
// `track_uuid = 11`, `double_counter_value = 44`, `flow_ids = 47`,
// `terminating_flow_ids = 48`, `debug_annotations = 4` (each a
// `DebugAnnotation`: `name_iid = 1`, `bool_value = 2`, `uint_value = 3`,
// `string_value_iid = 17`).

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const TYPE_SLICE_END: i32 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const TYPE_INSTANT: i32 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const TYPE_COUNTER: i32 = 4;

/// `InternedData`: names and strings introduced on a sequence, referred to
/// by their iid in later packets.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// `event_categories = 1`.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<Interned>,
    /// `event_names = 2`.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<Interned>,
    /// `debug_annotation_names = 3`.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<Interned>,
    /// `debug_annotation_string_values = 29`.
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `EventCategory`, `EventName`, `DebugAnnotationName`: `iid = 1`,
/// `name = 2` (string).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Interned {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name = 2`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `InternedString`: `iid = 1`, `str = 2` (bytes).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `str = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}
