//! The C headers `collector/include/contend/trace_format.h` (lock traces),
//! `mpi_trace_format.h` (MPI rank traces) and `region_format.h` (region
//! traces) are the one definition of the trace formats;
//! `contend_trace::format`, `contend_trace::mpi_format` and
//! `contend_trace::region_format` mirror them by hand. This test compiles a C program against the headers
//! with the system C compiler (`$CC`, default `cc`; `-std=c11 -Wall
//! -Wextra -Werror`) that prints, one `name value` per line, every field
//! offset and size of every struct, every struct size and every `#define`
//! constant (function-like macros applied to sample arguments), and
//! compares each line with the Rust constant the table below names.
//!
//! So that nothing is left out, it also parses the headers: a `#define`
//! or a struct field the table does not cover fails the test by name (add
//! the constant to the Rust mirror and a line to the table). The MPI
//! operation codes (`enum cm_op` in `collector/mpi/mpi_core.h`, which needs
//! `mpi.h` to compile) are compared with `contend_trace::mpi::MpiOp` from
//! the source text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use contend_trace::format::{self, calibration as cal, chunk, header as h, Phase, Primitive};
use contend_trace::mpi::{self, MpiOp};
use contend_trace::mpi_format::{self as mf, chunk as mc, header as mh, Head};
use contend_trace::region_format::{self as rf, calibration as rcal, chunk as rc, header as rh};

/// A value on the Rust side.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(i128),
    Text(String),
}

/// One line the C program prints: the C expression, the Rust expression
/// it is compared with (as written in this file), and its value.
struct Line {
    c: String,
    rust: String,
    value: Value,
}

/// `int!(C expression, Rust expression)`.
macro_rules! int {
    ($c:expr, $rust:expr) => {
        Line {
            c: String::from($c),
            rust: stringify!($rust).to_string(),
            value: Value::Int(($rust) as i128),
        }
    };
}

/// `text!(C string macro, Rust byte string)`.
macro_rules! text {
    ($c:expr, $rust:expr) => {
        Line {
            c: String::from($c),
            rust: stringify!($rust).to_string(),
            value: Value::Text(String::from_utf8(($rust).to_vec()).unwrap()),
        }
    };
}

/// A struct field: its offset and its size, each with its Rust expression.
macro_rules! field {
    ($lines:ident, $ty:expr, $field:literal, $offset:expr, $size:expr) => {
        $lines.push(Line {
            c: format!("offsetof({}, {})", $ty, $field),
            rust: stringify!($offset).to_string(),
            value: Value::Int(($offset) as i128),
        });
        $lines.push(Line {
            c: format!("sizeof((({} *)0)->{})", $ty, $field),
            rust: stringify!($size).to_string(),
            value: Value::Int(($size) as i128),
        });
    };
}

/// Everything the headers define, with the Rust side of each.
fn table() -> Vec<Line> {
    use std::mem::size_of;
    let mut l = vec![
        // ---- trace_format.h ----
        text!("CONTEND_TRACE_MAGIC", format::MAGIC),
        int!("CONTEND_TRACE_VERSION", format::VERSION),
        int!("CONTEND_ENDIAN_CHECK", format::ENDIAN_CHECK),
        int!("CONTEND_HEADER_SIZE", format::HEADER_SIZE),
        int!("CONTEND_PREPARED_HEAD_BYTES", format::PREPARED_HEAD_BYTES),
        int!("CONTEND_CLOCK_TSC", format::CLOCK_TSC),
        int!("CONTEND_CLOCK_MONOTONIC", format::CLOCK_MONOTONIC),
        int!("CONTEND_FLAG_FINISHED", format::FLAG_FINISHED),
        int!("CONTEND_FLAG_FORKED", format::FLAG_FORKED),
        int!("CONTEND_FLAG_TABLE_FULL", format::FLAG_TABLE_FULL),
        int!("CONTEND_FLAG_LIGHT", format::FLAG_LIGHT),
        int!("CONTEND_FLAG_CAPPED", format::FLAG_CAPPED),
        int!("CONTEND_FLAG_SAMPLED_COST", format::FLAG_SAMPLED_COST),
        int!("CONTEND_SAMPLE_EVERY", format::SAMPLE_EVERY),
        int!("CONTEND_SAMPLE_SUM_BITS", format::SAMPLE_SUM_BITS),
        int!("CONTEND_SAMPLE_SUM_MASK", format::SAMPLE_SUM_MASK),
        text!("CONTEND_CONTROL_MAGIC", contend_trace::control::MAGIC),
        int!("CONTEND_CONTROL_VERSION", contend_trace::control::VERSION),
        int!("CONTEND_CONTROL_SIZE", contend_trace::control::SIZE),
        int!("sizeof(contend_control)", contend_trace::control::SIZE),
        int!("CONTEND_CHUNK_COUNTS", format::CHUNK_COUNTS),
        int!(
            "CONTEND_CHUNK_SINGLE_THREADED",
            format::CHUNK_SINGLE_THREADED
        ),
        int!("CONTEND_CHUNK_SLOTS", format::CHUNK_SLOTS),
        int!("CONTEND_SLOT_SIZE", format::SLOT_SIZE),
        int!("CONTEND_PHASE_RELEASED", Phase::Released),
        int!("CONTEND_PHASE_UNTIMED", Phase::Untimed),
        int!("sizeof(contend_count)", format::count::SIZE),
        int!("CONTEND_COUNT_BY_SITE", format::count::BY_SITE),
        int!("CONTEND_COUNT_LOCK_ENTRIES", format::count::LOCK_ENTRIES),
        int!("CONTEND_OBJECT_SLOTS", format::OBJECT_SLOTS),
        int!("CONTEND_SITE_SLOTS", format::SITE_SLOTS),
        int!("CONTEND_DEFAULT_CHUNK_SIZE", format::DEFAULT_CHUNK_SIZE),
        int!("CONTEND_CHUNK_MAGIC", format::CHUNK_MAGIC),
        int!("CONTEND_CHUNK_HEADER_SIZE", format::CHUNK_HEADER_SIZE),
        int!("CONTEND_DT_BITS", format::DT_BITS),
        int!("CONTEND_DT_MAX", format::DT_MAX),
        int!("CONTEND_TAG_TIME", format::TAG_TIME),
        int!("CONTEND_TAG_STACK", format::TAG_STACK),
        int!("CONTEND_TAG_WIDE", format::TAG_WIDE),
        int!("CONTEND_TAG_FUTEX", format::TAG_FUTEX),
        int!("CONTEND_FUTEX_PHASE_MASK", format::futex::PHASE_MASK),
        int!("CONTEND_FUTEX_CMD_SHIFT", format::futex::CMD_SHIFT),
        int!("CONTEND_FUTEX_PRIVATE", format::futex::PRIVATE),
        int!("CONTEND_FUTEX_VALUE_SHIFT", format::futex::VALUE_SHIFT),
        int!("CONTEND_FUTEX_CMD_WAITV", format::futex::CMD_WAITV),
        int!("CONTEND_TAG_OMP", format::TAG_OMP),
        int!("CONTEND_OMP_MUTEX_ACQUIRE", format::omp::MUTEX_ACQUIRE),
        int!("CONTEND_OMP_MUTEX_ACQUIRED", format::omp::MUTEX_ACQUIRED),
        int!("CONTEND_OMP_MUTEX_RELEASED", format::omp::MUTEX_RELEASED),
        int!("CONTEND_OMP_SYNC_WAIT_BEGIN", format::omp::SYNC_WAIT_BEGIN),
        int!("CONTEND_OMP_SYNC_WAIT_END", format::omp::SYNC_WAIT_END),
        int!("CONTEND_OMP_TASK_BEGIN", format::omp::TASK_BEGIN),
        int!("CONTEND_OMP_TASK_END", format::omp::TASK_END),
        int!("CONTEND_OMP_PARALLEL_BEGIN", format::omp::PARALLEL_BEGIN),
        int!("CONTEND_OMP_PARALLEL_END", format::omp::PARALLEL_END),
        int!("CONTEND_TAG_CREATE", format::TAG_CREATE),
        int!("CONTEND_TAG_JOIN", format::TAG_JOIN),
        int!("CONTEND_JOIN_PHASE_MASK", format::join::PHASE_MASK),
        int!("CONTEND_JOIN_VALUE_SHIFT", format::join::VALUE_SHIFT),
        int!("CONTEND_CREATE_INIT", format::create::INIT),
        int!("CONTEND_CREATE_FIRST_USE", format::create::FIRST_USE),
        int!("CONTEND_CREATE_HOW_MASK", format::create::HOW_MASK),
        int!("CONTEND_CREATE_PRIM_SHIFT", format::create::PRIM_SHIFT),
        int!("CONTEND_PRIM_MUTEX", Primitive::Mutex),
        int!("CONTEND_PRIM_RWLOCK_READ", Primitive::RwlockRead),
        int!("CONTEND_PRIM_RWLOCK_WRITE", Primitive::RwlockWrite),
        int!("CONTEND_PRIM_SPIN", Primitive::Spin),
        int!("CONTEND_PRIM_COND", Primitive::Cond),
        int!("CONTEND_PRIM_BARRIER", Primitive::Barrier),
        int!("CONTEND_PRIM_SEM", Primitive::Semaphore),
        int!("CONTEND_PHASE_REQUEST", Phase::Request),
        int!("CONTEND_PHASE_ACQUIRED", Phase::Acquired),
        int!("CONTEND_PHASE_IMMEDIATE", Phase::Immediate),
        int!("CONTEND_PHASE_BUSY", Phase::Busy),
        int!("CONTEND_PHASE_ERROR", Phase::Error),
        int!("CONTEND_PHASE_RELEASE", Phase::Release),
        int!("sizeof(contend_calibration)", cal::SIZE),
        int!("sizeof(contend_trace_header)", format::HEADER_SIZE),
        int!("sizeof(contend_chunk_header)", format::CHUNK_HEADER_SIZE),
        // ---- mpi_trace_format.h ----
        text!("CONTEND_MPI_MAGIC", mf::MAGIC),
        int!("CONTEND_MPI_VERSION", mf::VERSION),
        int!("CONTEND_MPI_ENDIAN_CHECK", mf::ENDIAN_CHECK),
        int!("CONTEND_MPI_HEADER_SIZE", mf::HEADER_SIZE),
        int!("CONTEND_MPI_DEFAULT_CHUNK_SIZE", mf::DEFAULT_CHUNK_SIZE),
        int!("CONTEND_MPI_IMPL_OPENMPI", mf::IMPL_OPENMPI),
        int!("CONTEND_MPI_IMPL_MPICH", mf::IMPL_MPICH),
        int!("CONTEND_MPI_FLAG_FINALIZED", mf::FLAG_FINALIZED),
        int!("CONTEND_MPI_FLAG_REQUESTS_FULL", mf::FLAG_REQUESTS_FULL),
        int!("CONTEND_MPI_FLAG_CHUNKS_FAILED", mf::FLAG_CHUNKS_FAILED),
        int!("CONTEND_MPI_FLAG_FINAL_OFFSET", mf::FLAG_FINAL_OFFSET),
        int!("CONTEND_MPI_FLAG_FORTRAN", mf::FLAG_FORTRAN),
        int!("CONTEND_MPI_FLAG_END_CLOCK", mf::FLAG_END_CLOCK),
        int!("CONTEND_MPI_CLOCK_TSC", mf::CLOCK_TSC),
        int!("CONTEND_MPI_CLOCK_MONOTONIC", mf::CLOCK_MONOTONIC),
        int!("CONTEND_MPI_CHUNK_MAGIC", mf::CHUNK_MAGIC),
        int!("CONTEND_MPI_CHUNK_HEADER_SIZE", mf::CHUNK_HEADER_SIZE),
        int!("CONTEND_MPI_MAX_PAYLOAD", mf::MAX_PAYLOAD),
        int!("CONTEND_MPI_REC_TIME", mf::REC_TIME),
        int!("CONTEND_MPI_REC_ENTER", mf::REC_ENTER),
        int!("CONTEND_MPI_REC_EXIT", mf::REC_EXIT),
        int!("CONTEND_MPI_SMALL_COMPACT", mf::SMALL_COMPACT),
        int!("CONTEND_MPI_SMALL_OP_MASK", mf::SMALL_OP_MASK),
        int!("CONTEND_MPI_REC_COMPLETION", mf::REC_COMPLETION),
        int!("CONTEND_MPI_REC_COMM", mf::REC_COMM),
        int!("CONTEND_MPI_REC_START", mf::REC_START),
        int!("CONTEND_MPI_START_RECV", mf::START_RECV),
        int!("CONTEND_MPI_START_SYNC", mf::START_SYNC),
        int!("CONTEND_MPI_START_BUFFERED", mf::START_BUFFERED),
        int!("CONTEND_MPI_START_READY", mf::START_READY),
        int!("CONTEND_MPI_COMPL_RECV", mf::COMPL_RECV),
        int!("CONTEND_MPI_COMPL_CANCELLED", mf::COMPL_CANCELLED),
        int!("CONTEND_MPI_COMPL_NO_SOURCE", mf::COMPL_NO_SOURCE),
        int!("CONTEND_MPI_COMPL_PROBE", mf::COMPL_PROBE),
        int!("CONTEND_MPI_COMPL_COLLECTIVE", mf::COMPL_COLLECTIVE),
        int!("CONTEND_MPI_PEER_ANY", mf::PEER_ANY),
        int!("CONTEND_MPI_PEER_NULL", mf::PEER_NULL),
        int!("CONTEND_MPI_PEER_UNKNOWN", mf::PEER_UNKNOWN),
        int!("CONTEND_MPI_ANY_TAG", mpi::ANY_TAG),
        int!("CONTEND_MPI_EXIT_FLAG_TRUE", mf::EXIT_FLAG_TRUE),
        int!("CONTEND_MPI_COMM_WORLD_ID", mpi::WORLD_COMM),
        int!("CONTEND_MPI_COMM_SELF_ID", mpi::SELF_COMM),
        int!("CONTEND_MPI_COMM_NULL_ID", mf::COMM_NULL_ID),
        int!("CONTEND_MPI_COMM_LOCAL_BIT", mf::COMM_LOCAL_BIT),
        int!("sizeof(contend_mpi_header)", mf::HEADER_SIZE),
        int!("sizeof(contend_mpi_chunk_header)", mf::CHUNK_HEADER_SIZE),
        // ---- region_format.h ----
        text!("CONTEND_REGION_MAGIC", rf::MAGIC),
        int!("CONTEND_REGION_VERSION", rf::VERSION),
        int!("CONTEND_REGION_ENDIAN_CHECK", rf::ENDIAN_CHECK),
        int!("CONTEND_REGION_HEADER_SIZE", rf::HEADER_SIZE),
        int!("CONTEND_REGION_CHUNK_SIZE", rf::CHUNK_SIZE),
        int!("CONTEND_REGION_CLOCK_TSC", rf::CLOCK_TSC),
        int!("CONTEND_REGION_CLOCK_MONOTONIC", rf::CLOCK_MONOTONIC),
        int!("CONTEND_REGION_FLAG_FINISHED", rf::FLAG_FINISHED),
        int!("CONTEND_REGION_FLAG_FORKED", rf::FLAG_FORKED),
        int!("CONTEND_REGION_FLAG_FUNCTIONS", rf::FLAG_FUNCTIONS),
        int!("CONTEND_REGION_FLAG_SITES_FULL", rf::FLAG_SITES_FULL),
        int!("CONTEND_REGION_FLAG_START_LOST", rf::FLAG_START_LOST),
        int!("CONTEND_REGION_TAG_TIME", rf::TAG_TIME),
        int!("CONTEND_REGION_TAG_SITE", rf::TAG_SITE),
        int!("CONTEND_REGION_TAG_BEGIN", rf::TAG_BEGIN),
        int!("CONTEND_REGION_TAG_BEGIN_KEY", rf::TAG_BEGIN_KEY),
        int!("CONTEND_REGION_TAG_END", rf::TAG_END),
        int!("CONTEND_REGION_TAG_ENTER", rf::TAG_ENTER),
        int!("CONTEND_REGION_TAG_EXIT", rf::TAG_EXIT),
        int!("CONTEND_REGION_SITE_BEGIN", rf::SITE_BEGIN),
        int!("CONTEND_REGION_SITE_END", rf::SITE_END),
        int!("CONTEND_REGION_SITE_BEGIN_KEY", rf::SITE_BEGIN_KEY),
        int!("CONTEND_REGION_SITE_MAX", rf::SITE_MAX),
        int!("CONTEND_REGION_STRING_MAX", rf::STRING_MAX),
        int!("CONTEND_REGION_CHUNK_MAGIC", rf::CHUNK_MAGIC),
        int!("CONTEND_REGION_CHUNK_HEADER_SIZE", rf::CHUNK_HEADER_SIZE),
        int!("sizeof(contend_region_calibration)", rcal::SIZE),
        int!("sizeof(contend_region_header)", rf::HEADER_SIZE),
        int!("sizeof(contend_region_chunk_header)", rf::CHUNK_HEADER_SIZE),
    ];

    // Function-like macros, applied to sample arguments.
    for p in Primitive::ALL {
        for ph in [
            Phase::Request,
            Phase::Acquired,
            Phase::Immediate,
            Phase::Busy,
            Phase::Error,
            Phase::Release,
            Phase::Released,
            Phase::Untimed,
        ] {
            l.push(Line {
                c: format!("CONTEND_OP_TAG({}, {})", p as u8, ph as u8),
                rust: format!("format::op_tag(Primitive::{p:?}, Phase::{ph:?})"),
                value: Value::Int(format::op_tag(p, ph) as i128),
            });
        }
    }
    for (tag, n, small, arg) in [
        (2u8, 4u16, 14u8, 123_456i64),
        (3, 0xffff, 0xff, -5),
        (1, 1, 0, 0),
    ] {
        let head = Head {
            tag,
            n,
            small,
            arg: arg as u32,
        };
        l.push(Line {
            c: format!("CONTEND_MPI_HEAD({tag}, {n}, {small}, {arg})"),
            rust: format!("{head:?}.encode()"),
            value: Value::Int(head.encode() as i128),
        });
    }
    for (a, b) in [(3i32, 77i32), (-1, -1), (-3, i32::MAX), (i32::MIN, 0)] {
        l.push(Line {
            c: format!("CONTEND_MPI_PEERTAG({a}, {b})"),
            rust: format!("mpi_format::pack_peer_tag({a}, {b})"),
            value: Value::Int(mf::pack_peer_tag(a, b) as i128),
        });
        assert_eq!(mf::peer_tag(mf::pack_peer_tag(a, b)), (a, b));
        let flags = b as u32;
        l.push(Line {
            c: format!("CONTEND_MPI_RCFLAGS({a}, {flags}u)"),
            rust: format!("mpi_format::pack_rc_flags({a}, {flags})"),
            value: Value::Int(mf::pack_rc_flags(a, flags) as i128),
        });
        assert_eq!(mf::rc_flags(mf::pack_rc_flags(a, flags)), (a, flags));
    }

    // Struct layouts: every field's offset and size. Sizes of scalar
    // fields are those of the type the readers read them as.
    let (u16s, u32s, u64s) = (size_of::<u16>(), size_of::<u32>(), size_of::<u64>());
    let t = "contend_calibration";
    field!(l, t, "ticks", cal::TICKS, u64s);
    field!(l, t, "monotonic_ns", cal::MONOTONIC_NS, u64s);
    field!(l, t, "realtime_ns", cal::REALTIME_NS, u64s);
    field!(l, t, "reserved", cal::RESERVED, cal::SIZE - cal::RESERVED);

    let t = "contend_trace_header";
    field!(l, t, "magic", h::MAGIC, format::MAGIC.len());
    field!(l, t, "version", h::VERSION, u32s);
    field!(l, t, "header_size", h::HEADER_SIZE, u32s);
    field!(l, t, "endian_check", h::ENDIAN_CHECK, u32s);
    field!(l, t, "pointer_size", h::POINTER_SIZE, u16s);
    field!(l, t, "clock", h::CLOCK, u16s);
    field!(l, t, "chunk_size", h::CHUNK_SIZE, u32s);
    field!(l, t, "chunks_claimed", h::CHUNKS_CLAIMED, u32s);
    field!(l, t, "pid", h::PID, u32s);
    field!(l, t, "ppid", h::PPID, u32s);
    field!(l, t, "flags", h::FLAGS, u64s);
    field!(l, t, "object_table_offset", h::OBJECT_TABLE_OFFSET, u64s);
    field!(l, t, "object_table_slots", h::OBJECT_TABLE_SLOTS, u32s);
    field!(l, t, "site_table_slots", h::SITE_TABLE_SLOTS, u32s);
    field!(l, t, "site_table_offset", h::SITE_TABLE_OFFSET, u64s);
    field!(l, t, "data_offset", h::DATA_OFFSET, u64s);
    field!(l, t, "start", h::START, cal::SIZE);
    field!(l, t, "end", h::END, cal::SIZE);
    field!(l, t, "ticks_per_second", h::TICKS_PER_SECOND, u64s);
    field!(l, t, "stack_every", h::STACK_EVERY, u32s);
    field!(l, t, "chunks_prepared", h::CHUNKS_PREPARED, u32s);
    field!(l, t, "collector_ns", h::COLLECTOR_NS, u64s);
    field!(l, t, "cost_record_ps", h::COST_RECORD_PS, u32s);
    field!(l, t, "cost_count_ps", h::COST_COUNT_PS, u32s);
    field!(l, t, "calibration_ns", h::CALIBRATION_NS, u32s);
    field!(
        l,
        t,
        "cost_window_record_ps",
        h::COST_WINDOW_RECORD_PS,
        u32s
    );
    field!(l, t, "cost_window_count_ps", h::COST_WINDOW_COUNT_PS, u32s);
    field!(l, t, "claims_prepared", h::CLAIMS_PREPARED, u32s);
    field!(l, t, "cost_record_mt_ps", h::COST_RECORD_MT_PS, u32s);
    field!(l, t, "cost_count_mt_ps", h::COST_COUNT_MT_PS, u32s);
    field!(l, t, "reserved", h::RESERVED, h::EXE_PATH - h::RESERVED);
    field!(l, t, "exe_path", h::EXE_PATH, h::EXE_PATH_LEN);
    field!(l, t, "cmdline", h::CMDLINE, h::CMDLINE_LEN);
    field!(l, t, "tail", h::TAIL, format::HEADER_SIZE - h::TAIL);

    let t = "contend_chunk_header";
    field!(l, t, "magic", chunk::MAGIC, u32s);
    field!(l, t, "tid", chunk::TID, u32s);
    field!(l, t, "sequence", chunk::SEQUENCE, u32s);
    field!(l, t, "flags", chunk::FLAGS, u32s);
    field!(l, t, "base_ticks", chunk::BASE_TICKS, u64s);
    field!(l, t, "monotonic_ns", chunk::MONOTONIC_NS, u64s);
    field!(l, t, "collector_ns", chunk::COLLECTOR_NS, u64s);
    field!(
        l,
        t,
        "thread_name",
        chunk::THREAD_NAME,
        chunk::THREAD_NAME_LEN
    );
    field!(
        l,
        t,
        "cost_samples",
        chunk::COST_SAMPLES,
        format::CHUNK_HEADER_SIZE - chunk::COST_SAMPLES
    );

    let t = "contend_control";
    {
        use contend_trace::control as c;
        field!(l, t, "magic", 0, c::MAGIC.len());
        field!(l, t, "version", c::OFF_VERSION, u32s);
        field!(l, t, "enabled", c::OFF_ENABLED, u32s);
        field!(l, t, "max_bytes", c::OFF_MAX_BYTES, u64s);
        field!(l, t, "claimed_bytes", c::OFF_CLAIMED, u64s);
        field!(l, t, "capped_ns", c::OFF_CAPPED, u64s);
        field!(
            l,
            t,
            "reserved",
            c::OFF_RESERVED,
            c::SIZE - c::OFF_RESERVED as usize
        );
    }

    let t = "contend_count";
    field!(l, t, "object", format::count::OBJECT, u64s);
    field!(l, t, "site", format::count::SITE, u64s);
    field!(l, t, "count", format::count::COUNT, u64s);
    field!(l, t, "primitive", format::count::PRIMITIVE, u32s);
    field!(l, t, "reserved", format::count::RESERVED, u32s);
    let t = "contend_region_calibration";
    field!(l, t, "ticks", rcal::TICKS, u64s);
    field!(l, t, "monotonic_ns", rcal::MONOTONIC_NS, u64s);
    field!(l, t, "realtime_ns", rcal::REALTIME_NS, u64s);
    field!(
        l,
        t,
        "reserved",
        rcal::RESERVED,
        rcal::SIZE - rcal::RESERVED
    );

    let t = "contend_region_header";
    field!(l, t, "magic", rh::MAGIC, rf::MAGIC.len());
    field!(l, t, "version", rh::VERSION, u32s);
    field!(l, t, "header_size", rh::HEADER_SIZE, u32s);
    field!(l, t, "endian_check", rh::ENDIAN_CHECK, u32s);
    field!(l, t, "pointer_size", rh::POINTER_SIZE, u16s);
    field!(l, t, "clock", rh::CLOCK, u16s);
    field!(l, t, "chunk_size", rh::CHUNK_SIZE, u32s);
    field!(l, t, "chunks_claimed", rh::CHUNKS_CLAIMED, u32s);
    field!(l, t, "pid", rh::PID, u32s);
    field!(l, t, "ppid", rh::PPID, u32s);
    field!(l, t, "flags", rh::FLAGS, u64s);
    field!(l, t, "data_offset", rh::DATA_OFFSET, u64s);
    field!(l, t, "function_every", rh::FUNCTION_EVERY, u32s);
    field!(l, t, "sites_defined", rh::SITES_DEFINED, u32s);
    field!(l, t, "start", rh::START, rcal::SIZE);
    field!(l, t, "end", rh::END, rcal::SIZE);
    field!(l, t, "ticks_per_second", rh::TICKS_PER_SECOND, u64s);
    field!(l, t, "reserved", rh::RESERVED, rh::EXE_PATH - rh::RESERVED);
    field!(l, t, "exe_path", rh::EXE_PATH, rh::EXE_PATH_LEN);
    field!(l, t, "tail", rh::TAIL, rf::HEADER_SIZE - rh::TAIL);

    let t = "contend_region_chunk_header";
    field!(l, t, "magic", rc::MAGIC, u32s);
    field!(l, t, "tid", rc::TID, u32s);
    field!(l, t, "sequence", rc::SEQUENCE, u32s);
    field!(l, t, "flags", rc::FLAGS, u32s);
    field!(l, t, "base_ticks", rc::BASE_TICKS, u64s);
    field!(l, t, "monotonic_ns", rc::MONOTONIC_NS, u64s);
    field!(
        l,
        t,
        "reserved",
        rc::RESERVED,
        rf::CHUNK_HEADER_SIZE - rc::RESERVED
    );

    let t = "contend_mpi_header";
    field!(l, t, "magic", mh::MAGIC, mf::MAGIC.len());
    field!(l, t, "version", mh::VERSION, u32s);
    field!(l, t, "header_size", mh::HEADER_SIZE, u32s);
    field!(l, t, "endian_check", mh::ENDIAN_CHECK, u32s);
    field!(l, t, "pointer_size", mh::POINTER_SIZE, u16s);
    field!(l, t, "implementation", mh::IMPLEMENTATION, u16s);
    field!(l, t, "chunk_size", mh::CHUNK_SIZE, u32s);
    field!(l, t, "chunks_claimed", mh::CHUNKS_CLAIMED, u32s);
    field!(l, t, "pid", mh::PID, u32s);
    field!(l, t, "world_rank", mh::WORLD_RANK, u32s);
    field!(l, t, "world_size", mh::WORLD_SIZE, u32s);
    field!(l, t, "thread_level", mh::THREAD_LEVEL, u32s);
    field!(l, t, "flags", mh::FLAGS, u64s);
    field!(l, t, "data_offset", mh::DATA_OFFSET, u64s);
    field!(l, t, "offset_init_ns", mh::OFFSET_INIT_NS, u64s);
    field!(l, t, "offset_init_at_ns", mh::OFFSET_INIT_AT_NS, u64s);
    field!(l, t, "offset_init_rtt_ns", mh::OFFSET_INIT_RTT_NS, u64s);
    field!(l, t, "offset_final_ns", mh::OFFSET_FINAL_NS, u64s);
    field!(l, t, "offset_final_at_ns", mh::OFFSET_FINAL_AT_NS, u64s);
    field!(l, t, "offset_final_rtt_ns", mh::OFFSET_FINAL_RTT_NS, u64s);
    field!(l, t, "start_monotonic_ns", mh::START_MONOTONIC_NS, u64s);
    field!(l, t, "start_realtime_ns", mh::START_REALTIME_NS, u64s);
    field!(l, t, "clock", mh::CLOCK, u16s);
    field!(l, t, "reserved16", mh::RESERVED16, u16s);
    field!(l, t, "reserved32", mh::RESERVED32, u32s);
    field!(l, t, "ticks_per_second", mh::TICKS_PER_SECOND, u64s);
    field!(l, t, "start_ticks", mh::START_TICKS, u64s);
    field!(l, t, "end_ticks", mh::END_TICKS, u64s);
    field!(l, t, "end_monotonic_ns", mh::END_MONOTONIC_NS, u64s);
    field!(l, t, "reserved", mh::RESERVED, mh::HOST - mh::RESERVED);
    field!(l, t, "host", mh::HOST, mh::HOST_LEN);
    field!(l, t, "library", mh::LIBRARY, mh::LIBRARY_LEN);
    field!(l, t, "exe_path", mh::EXE_PATH, mh::EXE_PATH_LEN);
    field!(l, t, "tail", mh::TAIL, mf::HEADER_SIZE - mh::TAIL);

    let t = "contend_mpi_chunk_header";
    field!(l, t, "magic", mc::MAGIC, u32s);
    field!(l, t, "tid", mc::TID, u32s);
    field!(l, t, "sequence", mc::SEQUENCE, u32s);
    field!(l, t, "flags", mc::FLAGS, u32s);
    field!(l, t, "base_ticks", mc::BASE_TICKS, u64s);
    field!(l, t, "monotonic_ns", mc::MONOTONIC_NS, u64s);
    l
}

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../collector/include")
}

const HEADERS: [&str; 3] = [
    "contend/trace_format.h",
    "contend/mpi_trace_format.h",
    "contend/region_format.h",
];

fn header_text(name: &str) -> String {
    let path = include_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The C program: prints `C-expression value` for every line of the table.
fn c_program(table: &[Line]) -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n\
         #include \"contend/trace_format.h\"\n#include \"contend/mpi_trace_format.h\"\n\
         #include \"contend/region_format.h\"\n\
         int main(void)\n{\n",
    );
    for line in table {
        let label = &line.c;
        assert!(!label.contains('"') && !label.contains('\\'));
        let stmt = match &line.value {
            Value::Text(s) => format!(
                "    printf(\"%s %.{}s\\n\", \"{label}\", {label});\n",
                s.len()
            ),
            Value::Int(v) if *v < 0 => {
                format!("    printf(\"%s %lld\\n\", \"{label}\", (long long)({label}));\n")
            }
            Value::Int(_) => {
                format!("    printf(\"%s %llu\\n\", \"{label}\", (unsigned long long)({label}));\n")
            }
        };
        c.push_str(&stmt);
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// Compiles and runs the C program; its output as (label, value) pairs.
fn run_c(table: &[Line]) -> BTreeMap<String, String> {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("layout.c");
    let exe = tmp.path().join("layout");
    std::fs::write(&src, c_program(table)).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include_dir())
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        out.status.success(),
        "{cc} -std=c11 -Wall -Wextra -Werror failed on the headers:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').expect("`name value`");
            (name.to_string(), value.to_string())
        })
        .collect()
}

#[test]
fn rust_mirrors_match_the_c_headers() {
    let table = table();
    let c = run_c(&table);
    assert_eq!(c.len(), table.len(), "every table line printed once");
    let mut wrong = Vec::new();
    for line in &table {
        let got = c
            .get(&line.c)
            .unwrap_or_else(|| panic!("the C program did not print {}", line.c));
        let rust = match &line.value {
            Value::Int(v) => v.to_string(),
            Value::Text(s) => s.clone(),
        };
        if *got != rust {
            wrong.push(format!(
                "{}: C says {got}, Rust `{}` is {rust}",
                line.c, line.rust
            ));
        }
    }
    assert!(wrong.is_empty(), "mirrors differ:\n{}", wrong.join("\n"));
}

/// `#define` names of a header, without its include guard.
fn defines(text: &str) -> Vec<String> {
    let mut guard = None;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let ident = |s: &str| -> String {
            s.trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        if let Some(r) = rest.strip_prefix("ifndef") {
            guard.get_or_insert_with(|| ident(r));
        } else if let Some(r) = rest.strip_prefix("define") {
            let name = ident(r);
            if guard.as_deref() != Some(name.as_str()) {
                names.push(name);
            }
        }
    }
    names
}

#[test]
fn every_define_of_the_headers_is_checked() {
    let table = table();
    // A line checks a macro when its C expression is the macro, or a call
    // of it.
    let covered: BTreeSet<String> = table
        .iter()
        .map(|l| {
            l.c.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| name != "offsetof" && name != "sizeof")
        .collect();
    let mut all = BTreeSet::new();
    for header in HEADERS {
        let names = defines(&header_text(header));
        assert!(names.len() > 10, "{header}: too few #defines found");
        let missing: Vec<&String> = names.iter().filter(|n| !covered.contains(*n)).collect();
        assert!(
            missing.is_empty(),
            "{header} defines {missing:?}, which this test does not compare with the Rust mirror: \
             add the constant to contend_trace::format / mpi_format and a line to the table"
        );
        all.extend(names);
    }
    let stale: Vec<&String> = covered.iter().filter(|n| !all.contains(*n)).collect();
    assert!(
        stale.is_empty(),
        "the table checks {stale:?}, which no header defines"
    );
}

/// `typedef struct NAME { fields } NAME;` of a header: (NAME, field names).
fn structs(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        let code = line.split("/*").next().unwrap().trim();
        if let Some(rest) = code.strip_prefix("typedef struct ") {
            let name = rest.trim_end_matches('{').trim().to_string();
            current = Some((name, Vec::new()));
        } else if code.starts_with('}') {
            if let Some(s) = current.take() {
                out.push(s);
            }
        } else if let Some((_, fields)) = current.as_mut() {
            if let Some(decl) = code.strip_suffix(';') {
                let decl = decl.split('[').next().unwrap().trim();
                let name = decl.rsplit(' ').next().unwrap();
                fields.push(name.to_string());
            }
        }
    }
    out
}

#[test]
fn every_struct_field_of_the_headers_is_checked() {
    let table = table();
    let checked: BTreeSet<String> = table
        .iter()
        .filter_map(|l| l.c.strip_prefix("offsetof("))
        .map(|s| s.trim_end_matches(')').replace(' ', ""))
        .collect();
    let mut sizes_checked = BTreeSet::new();
    for l in &table {
        if let Some(t) =
            l.c.strip_prefix("sizeof(")
                .and_then(|s| s.strip_suffix(')'))
        {
            if !t.contains("->") {
                sizes_checked.insert(t.to_string());
            }
        }
    }
    let mut all = BTreeSet::new();
    for header in HEADERS {
        let found = structs(&header_text(header));
        assert!(found.len() >= 2, "{header}: too few structs found");
        for (name, fields) in found {
            assert!(fields.len() >= 4, "{header}: {name}: too few fields found");
            assert!(
                sizes_checked.contains(&name),
                "{header}: sizeof({name}) is not checked"
            );
            for f in fields {
                let key = format!("{name},{f}");
                assert!(
                    checked.contains(&key),
                    "{header}: field {name}.{f} is not checked against the Rust mirror"
                );
                all.insert(key);
            }
        }
    }
    let stale: Vec<&String> = checked.iter().filter(|k| !all.contains(*k)).collect();
    assert!(
        stale.is_empty(),
        "fields checked that no header has: {stale:?}"
    );
}

/// `OP_NAME = code` of `enum cm_op` in collector/mpi/mpi_core.h.
fn c_operation_codes() -> BTreeMap<String, u16> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../collector/mpi/mpi_core.h");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find("enum cm_op {").expect("enum cm_op in mpi_core.h");
    let body = &text[start + "enum cm_op {".len()..];
    let body = &body[..body.find('}').unwrap()];
    body.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, code) = item.split_once('=').expect("OP_X = n");
            let code = code
                .trim()
                .parse()
                .unwrap_or_else(|e| panic!("{item}: {e}"));
            (name.trim().trim_start_matches("OP_").to_string(), code)
        })
        .collect()
}

/// `SendrecvReplace` → `SENDRECV_REPLACE`.
fn upper_snake(camel: &str) -> String {
    let mut s = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            s.push('_');
        }
        s.push(c.to_ascii_uppercase());
    }
    s
}

#[test]
fn mpi_operation_codes_match_the_recorder() {
    let c = c_operation_codes();
    assert!(c.len() > 50, "{c:?}");
    let rust: BTreeMap<String, u16> = MpiOp::ALL
        .iter()
        .map(|op| (upper_snake(&format!("{op:?}")), *op as u16))
        .collect();
    assert_eq!(rust.len(), MpiOp::ALL.len(), "names are distinct");
    for (name, code) in &c {
        assert_eq!(
            rust.get(name),
            Some(code),
            "OP_{name} = {code} in mpi_core.h; MpiOp has {:?}",
            rust.get(name)
        );
        assert!(*code < 128, "OP_{name}: codes stay below the compact bit");
    }
    for (name, code) in &rust {
        assert_eq!(
            c.get(name),
            Some(code),
            "MpiOp {name} = {code} is not in mpi_core.h"
        );
        assert_eq!(MpiOp::from_code(*code).map(|op| op as u16), Some(*code));
    }
}
