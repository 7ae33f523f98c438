/*
 * contend MPI-trace format, version 2 (version 1: every time in
 * CLOCK_MONOTONIC ns, no clock fields; readers read both).
 *
 * The one definition of the on-disk layout of a per-rank MPI trace
 * (`<recording>/mpi/rank-<world rank>.cmpi`), written by the PMPI wrapper
 * library (collector/mpi). The Rust module `contend_trace::mpi_format`
 * mirrors it constant for constant (checked by
 * crates/contend-trace/tests/format_layout.rs, which compiles this header);
 * the prose specification is the "MPI traces" section of
 * docs/trace-format.md. Keep the three in step.
 *
 * Rules (the same family as the lock trace, trace_format.h):
 *  - little-endian, 8-byte words; records are whole words;
 *  - record tags and operation codes are only ever added, never reused or
 *    renumbered (operation codes: contend_trace::mpi::MpiOp);
 *  - a zero word is "no record here": the file is created sparse, a writer
 *    stores the head word of a record last (release), so a record that was
 *    being written when the process died is absent;
 *  - every record's head word carries its payload length, so a reader skips
 *    records it does not know.
 */
#ifndef CONTEND_MPI_TRACE_FORMAT_H
#define CONTEND_MPI_TRACE_FORMAT_H

#include <stdint.h>

#define CONTEND_MPI_MAGIC "CNTDMPIT" /* 8 bytes, no NUL stored */
#define CONTEND_MPI_VERSION 2u
#define CONTEND_MPI_ENDIAN_CHECK 0x01020304u
#define CONTEND_MPI_HEADER_SIZE 4096u
#define CONTEND_MPI_DEFAULT_CHUNK_SIZE (64u * 1024u)

/* contend_mpi_header.implementation */
#define CONTEND_MPI_IMPL_OPENMPI 1u
#define CONTEND_MPI_IMPL_MPICH 2u

/* Header flags (contend_mpi_header.flags, updated atomically). */
#define CONTEND_MPI_FLAG_FINALIZED 1u      /* PMPI_Finalize returned           */
#define CONTEND_MPI_FLAG_REQUESTS_FULL 2u  /* the request table overflowed:
                                              some completions are missing     */
#define CONTEND_MPI_FLAG_CHUNKS_FAILED 4u  /* a thread could not get a chunk:
                                              its later calls are missing      */
#define CONTEND_MPI_FLAG_FINAL_OFFSET 8u   /* offset_final_* are valid         */
#define CONTEND_MPI_FLAG_FORTRAN 16u       /* a Fortran entry point was used   */
#define CONTEND_MPI_FLAG_END_CLOCK 32u     /* end_ticks / end_monotonic_ns are
                                              valid (version 2)                */

/* contend_mpi_header.clock (version 2; a version 1 trace has 0 there and
 * is on CLOCK_MONOTONIC): the trace clock of contend/clock.h, as the lock
 * trace's CONTEND_CLOCK_TSC / CONTEND_CLOCK_MONOTONIC. */
#define CONTEND_MPI_CLOCK_TSC 1u       /* TSC ticks; convert with the
                                          calibration points             */
#define CONTEND_MPI_CLOCK_MONOTONIC 2u /* CLOCK_MONOTONIC ns              */

typedef struct contend_mpi_header {
    char magic[8];                /*    0 "CNTDMPIT" (stored last)          */
    uint32_t version;             /*    8 CONTEND_MPI_VERSION               */
    uint32_t header_size;         /*   12 CONTEND_MPI_HEADER_SIZE           */
    uint32_t endian_check;        /*   16 CONTEND_MPI_ENDIAN_CHECK          */
    uint16_t pointer_size;        /*   20 sizeof(void *)                    */
    uint16_t implementation;      /*   22 CONTEND_MPI_IMPL_*                */
    uint32_t chunk_size;          /*   24 bytes, power of two >= 4096       */
    uint32_t chunks_claimed;      /*   28 atomic; chunks handed out         */
    uint32_t pid;                 /*   32                                   */
    uint32_t world_rank;          /*   36 rank in MPI_COMM_WORLD            */
    uint32_t world_size;          /*   40 size of MPI_COMM_WORLD            */
    int32_t thread_level;         /*   44 provided (MPI_Init_thread), -1    */
    uint64_t flags;               /*   48 atomic; CONTEND_MPI_FLAG_*        */
    uint64_t data_offset;         /*   56 first chunk (= header_size)       */
    /* Clock: record times are on the trace clock (`clock` below: TSC
     * ticks or CLOCK_MONOTONIC ns), which the reader converts to this
     * process's CLOCK_MONOTONIC ns (with the calibration points: start,
     * end and every chunk header). offset_* (ns) is what to add to such a
     * time to put it on rank 0's CLOCK_MONOTONIC, measured at local
     * CLOCK_MONOTONIC time offset_*_at_ns by ping-pong with rank 0
     * (minimum round trip offset_*_rtt_ns); 0 with rtt 0 when on rank 0's
     * host. */
    int64_t offset_init_ns;       /*   64                                   */
    uint64_t offset_init_at_ns;   /*   72                                   */
    uint64_t offset_init_rtt_ns;  /*   80                                   */
    int64_t offset_final_ns;      /*   88 valid with FLAG_FINAL_OFFSET      */
    uint64_t offset_final_at_ns;  /*   96                                   */
    uint64_t offset_final_rtt_ns; /*  104                                   */
    uint64_t start_monotonic_ns;  /*  112 when the trace was created        */
    uint64_t start_realtime_ns;   /*  120 the same instant, CLOCK_REALTIME  */
    uint16_t clock;               /*  128 CONTEND_MPI_CLOCK_* (version 2)   */
    uint16_t reserved16;          /*  130 0                                 */
    uint32_t reserved32;          /*  132 0                                 */
    uint64_t ticks_per_second;    /*  136 launcher's TSC frequency (0:
                                          unknown); 1e9 on CLOCK_MONOTONIC */
    uint64_t start_ticks;         /*  144 trace clock at start_monotonic_ns */
    uint64_t end_ticks;           /*  152 trace clock at MPI_Finalize
                                          (FLAG_END_CLOCK)                 */
    uint64_t end_monotonic_ns;    /*  160 CLOCK_MONOTONIC at end_ticks      */
    uint8_t reserved[256 - 168];  /*  168                                   */
    char host[256];               /*  256 gethostname, NUL-terminated       */
    char library[512];            /*  512 MPI_Get_library_version, first
                                          line, NUL-terminated             */
    char exe_path[1024];          /* 1024 /proc/self/exe, NUL-terminated    */
    uint8_t tail[4096 - 2048];    /* 2048                                   */
} contend_mpi_header;

/* Chunk: a fixed-size slice of the file owned by one thread. */
#define CONTEND_MPI_CHUNK_MAGIC 0x49504d43u /* "CMPI" */
#define CONTEND_MPI_CHUNK_HEADER_SIZE 32u

typedef struct contend_mpi_chunk_header {
    uint32_t magic;       /*  0 CONTEND_MPI_CHUNK_MAGIC (stored last)   */
    uint32_t tid;         /*  4 kernel thread id                        */
    uint32_t sequence;    /*  8 0, 1, 2, ... within the thread          */
    uint32_t flags;       /* 12 reserved, 0                             */
    uint64_t base_ticks;  /* 16 time base of the first record (trace
                                clock; CLOCK_MONOTONIC ns in version 1) */
    uint64_t monotonic_ns; /* 24 CLOCK_MONOTONIC at base_ticks (a
                                calibration point; 0 in version 1)      */
} contend_mpi_chunk_header;

/*
 * Record head word:
 *   bits  0..7   tag (CONTEND_MPI_REC_*)
 *   bits  8..23  n: payload words that follow the head word
 *   bits 24..31  small: tag-specific (operation code, flags)
 *   bits 32..63  arg: tag-specific 32 bits (time delta, rank)
 * Times are deltas on the trace clock (TSC ticks or ns, header `clock`)
 * from the previous timed record of the same thread (the chunk's
 * base_ticks for the first); a TIME record sets an absolute time when the
 * delta would not fit in 32 bits.
 */
#define CONTEND_MPI_HEAD(tag, n, small, arg)                                       \
    ((uint64_t)(tag) | ((uint64_t)(n) << 8) | ((uint64_t)(small) << 24) |          \
     ((uint64_t)(uint32_t)(arg) << 32))
#define CONTEND_MPI_MAX_PAYLOAD 0xffffu

/* TIME: n = 1; payload: absolute time on the trace clock. */
#define CONTEND_MPI_REC_TIME 1u
/* ENTER: a wrapped call begins. small = operation code (bit 7:
 * CONTEND_MPI_SMALL_COMPACT), arg = dt.
 * payload: call site (return address; left out when COMPACT is set: the
 * same site as the thread's previous ENTER in this chunk), then by
 * operation class
 *   init/finalize:                nothing
 *   send, recv, isend..., irecv:  comm id, PEERTAG(peer, tag), bytes
 *   sendrecv(_replace):           comm id, PEERTAG(dest, sendtag), send bytes,
 *                                 PEERTAG(source, recvtag), recv bytes
 *   probe, iprobe, mprobe,
 *   improbe:                      comm id, PEERTAG(source, tag)
 *   mrecv, imrecv:                as recv/irecv, with the communicator,
 *                                 source and tag of the message the
 *                                 (i)mprobe found (MPI_Message handle
 *                                 followed by the recorder; PEER_NULL and
 *                                 world id for MPI_MESSAGE_NO_PROC)
 *   wait*, test*, start(all):     number of requests passed
 *   send_init..., recv_init:      as isend/irecv (the persistent envelope)
 *   request_free:                 nothing (recorded for persistent
 *                                 requests only)
 *   collectives, blocking and
 *   nonblocking (ibarrier...):    comm id, root (i32 world rank, -1: none;
 *                                 low half of the word), bytes sent, bytes
 *                                 received (this rank's part)
 *   comm split/dup/create/free,
 *   create_group, idup:           the (parent) communicator's id
 *   intercomm_create:             the local communicator's id
 *   abort:                        the communicator's id, the error code
 *                                 (i32, low half); the process ends inside
 *                                 the call, so no EXIT follows
 * Peers are world ranks or CONTEND_MPI_PEER_*; tags are as posted with
 * MPI_ANY_TAG stored as -1. */
#define CONTEND_MPI_REC_ENTER 2u
/* EXIT: the call returned. small = operation code (bit 7:
 * CONTEND_MPI_SMALL_COMPACT), arg = dt.
 * payload: RCFLAGS(return code, flags) (left out when COMPACT is set:
 * MPI_SUCCESS, no flags), then by operation class
 *   isend..., irecv, imrecv,
 *   nonblocking collectives,
 *   comm_idup:                 the new request's id
 *   comm split/dup/create,
 *   create_group,
 *   intercomm_create:          the new communicator's id
 *                              (CONTEND_MPI_COMM_NULL_ID: MPI_COMM_NULL)
 * (A communicator made by MPI_Comm_idup is recorded, COMM record, by the
 * Wait / Test call that completes its request.)
 * flags bit 0: Iprobe/Test* flag was true. Records COMPLETION and COMM that
 * belong to the call come between its ENTER and its EXIT. */
#define CONTEND_MPI_REC_EXIT 3u
/* Bit 7 of an ENTER's or EXIT's small byte: the compact form (operation
 * codes stay below 128; they are enum cm_op of collector/mpi/mpi_core.h and
 * contend_trace::mpi::MpiOp, and are only ever added, never renumbered). */
#define CONTEND_MPI_SMALL_COMPACT 0x80u
#define CONTEND_MPI_SMALL_OP_MASK 0x7fu
/* COMPLETION: one receive or request completed by the enclosing call.
 * small = CONTEND_MPI_COMPL_* flags, arg = source world rank (receives;
 * the destination for sends), payload: request id (0: the blocking call's
 * own receive), tag (i32, low half), bytes. */
#define CONTEND_MPI_REC_COMPLETION 4u
/* COMM: members of a communicator. arg = number of ranks in this record;
 * payload: id, (size u32 | first u32 << 32), then the world ranks of local
 * ranks first, first+1, ... packed two per word (low half first). Large
 * communicators take several records. */
#define CONTEND_MPI_REC_COMM 5u
/* START: one persistent request activated by the enclosing MPI_Start or
 * MPI_Startall (a posting, like Isend / Irecv). small = CONTEND_MPI_START_*
 * flags, arg = peer as posted at *_init (world rank or PEER_*; i32),
 * payload: comm id, the activation's new request id (completed later by a
 * Wait* / Test* COMPLETION), tag (i32, low half; ANY_TAG -1), bytes. */
#define CONTEND_MPI_REC_START 6u
#define CONTEND_MPI_START_RECV 1u     /* a receive (Recv_init), else a send */
#define CONTEND_MPI_START_SYNC 2u     /* a synchronous send (Ssend_init)    */
#define CONTEND_MPI_START_BUFFERED 4u /* a buffered send (Bsend_init)       */
#define CONTEND_MPI_START_READY 8u    /* a ready send (Rsend_init)          */

#define CONTEND_MPI_COMPL_RECV 1u      /* a receive (else a send)           */
#define CONTEND_MPI_COMPL_CANCELLED 2u /* MPI_Test_cancelled said so        */
#define CONTEND_MPI_COMPL_NO_SOURCE 4u /* MPI_PROC_NULL / unknown peer      */
#define CONTEND_MPI_COMPL_PROBE 8u     /* not a completion: the message a
                                          probe (Probe, Mprobe, Iprobe and
                                          Improbe with flag true) found,
                                          from its status; request 0       */
#define CONTEND_MPI_COMPL_COLLECTIVE 16u /* a nonblocking collective's
                                            request (Ibarrier, Iallreduce,
                                            ...); source, tag, bytes 0     */

#define CONTEND_MPI_PEER_ANY (-1)     /* MPI_ANY_SOURCE                     */
#define CONTEND_MPI_PEER_NULL (-2)    /* MPI_PROC_NULL                      */
#define CONTEND_MPI_PEER_UNKNOWN (-3) /* could not be translated            */
#define CONTEND_MPI_ANY_TAG (-1)

#define CONTEND_MPI_PEERTAG(peer, tag) ((uint64_t)(uint32_t)(peer) | ((uint64_t)(uint32_t)(tag) << 32))
#define CONTEND_MPI_RCFLAGS(rc, flags) ((uint64_t)(uint32_t)(rc) | ((uint64_t)(uint32_t)(flags) << 32))
#define CONTEND_MPI_EXIT_FLAG_TRUE 1u

/* Communicator ids: world 0, self 1; one created by a wrapped call: a
 * 63-bit hash of (parent id, number of earlier creation calls on the
 * parent, smallest world rank of the new group), the same on every member
 * without communication (docs/trace-format.md). Communicators the library
 * did not see created get CONTEND_MPI_COMM_LOCAL_BIT | world rank << 32 |
 * a local counter (rank-local ids). */
#define CONTEND_MPI_COMM_WORLD_ID 0ull
#define CONTEND_MPI_COMM_SELF_ID 1ull
#define CONTEND_MPI_COMM_NULL_ID 0xffffffffffffffffull
#define CONTEND_MPI_COMM_LOCAL_BIT 0x8000000000000000ull

_Static_assert(sizeof(contend_mpi_header) == CONTEND_MPI_HEADER_SIZE, "header is 4096 bytes");
_Static_assert(sizeof(contend_mpi_chunk_header) == CONTEND_MPI_CHUNK_HEADER_SIZE,
               "chunk header is 32 bytes");
_Static_assert(__builtin_offsetof(contend_mpi_header, offset_init_ns) == 64, "offset 64");
_Static_assert(__builtin_offsetof(contend_mpi_header, host) == 256, "offset 256");
_Static_assert(__builtin_offsetof(contend_mpi_header, library) == 512, "offset 512");
_Static_assert(__builtin_offsetof(contend_mpi_header, exe_path) == 1024, "offset 1024");

#endif /* CONTEND_MPI_TRACE_FORMAT_H */
