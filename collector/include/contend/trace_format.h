/*
 * contend lock-trace format, version 3 (readers also read versions 1 and 2;
 * version 3 added slot chunks, CONTEND_CHUNK_SLOTS).
 *
 * The one definition of the on-disk layout of a per-process lock trace
 * (`<recording>/locks/<pid>.ctrace`). The C collector writes it; the Rust
 * module `contend_trace::format` mirrors it constant for constant and is
 * tested by reading traces this collector actually wrote and against this
 * header (crates/contend-trace/tests/format_layout.rs compiles it and
 * checks every #define, offset and size). The prose specification is
 * docs/trace-format.md; keep the three in step.
 *
 * Rules:
 *  - little-endian, 8-byte words; records are whole words;
 *  - record tags are only ever added, never reused or renumbered;
 *  - a zero word is "no record here": the file is created sparse (zero
 *    filled), a writer stores the head word of a record last, so a record
 *    that was being written when the process died is simply absent.
 */
#ifndef CONTEND_TRACE_FORMAT_H
#define CONTEND_TRACE_FORMAT_H

#include <stdint.h>

#define CONTEND_TRACE_MAGIC "CNTDLOCK" /* 8 bytes, no NUL stored */
#define CONTEND_TRACE_VERSION 3u
#define CONTEND_ENDIAN_CHECK 0x01020304u
#define CONTEND_HEADER_SIZE 4096u
/* Bytes at the start of a chunk the launcher prepares (chunks_prepared):
 * the part a claim would otherwise write with zeros itself. */
#define CONTEND_PREPARED_HEAD_BYTES 16384u

/* Clock of all tick values in a trace. */
#define CONTEND_CLOCK_TSC 1u       /* x86 rdtsc ticks (invariant TSC)   */
#define CONTEND_CLOCK_MONOTONIC 2u /* CLOCK_MONOTONIC nanoseconds       */

/* Header flags (contend_trace_header.flags, updated atomically). */
#define CONTEND_FLAG_FINISHED 1u   /* the process ran its exit path      */
#define CONTEND_FLAG_FORKED 2u     /* this process is a fork() child     */
#define CONTEND_FLAG_TABLE_FULL 4u /* some records use the wide form    */
/* Version 2: */
#define CONTEND_FLAG_LIGHT 8u      /* light mode (CONTEND_LIGHT=1):
                                      uncontended acquisitions are counted
                                      in COUNTS chunks, not recorded       */

#define CONTEND_FLAG_CAPPED 16u    /* the recording's size cap stopped
                                      recording in this process (header
                                      flags are additive: older readers
                                      ignore it)                          */
#define CONTEND_FLAG_SAMPLED_COST 32u /* the collector times its own work
                                      on a sample of the operations
                                      (chunk headers' cost_samples and the
                                      header's cost_window_*_ps are valid;
                                      additive: older readers ignore it and
                                      older traces, without it, keep the
                                      calibrated estimate)               */

/* The recording's control page: the file CONTEND_CONTROL names, written
 * by the launcher (`record --start-after/--duration/--max-size`), mapped
 * shared by every traced process. Processes record only while `enabled`
 * is 1; the one whose chunk claim would pass `max_bytes` sets `capped_ns`
 * and clears `enabled` for all. */
#define CONTEND_CONTROL_MAGIC "CNTDCTRL" /* 8 bytes, no NUL stored */
#define CONTEND_CONTROL_VERSION 1u
#define CONTEND_CONTROL_SIZE 4096u

typedef struct contend_control {
    char magic[8];          /*  0 "CNTDCTRL"                             */
    uint32_t version;       /*  8 CONTEND_CONTROL_VERSION                */
    uint32_t enabled;       /* 12 atomic; 1: record now; 0: outside the
                                  window, or the cap was reached          */
    uint64_t max_bytes;     /* 16 cap on the chunk bytes all processes
                                  claim together; 0 = no cap              */
    uint64_t claimed_bytes; /* 24 atomic; chunk bytes claimed so far      */
    uint64_t capped_ns;     /* 32 atomic; CLOCK_MONOTONIC ns when a claim
                                  would have passed max_bytes; 0 = never  */
    uint8_t reserved[4096 - 40];
} contend_control;

/* Sizes of the index tables (slots; a slot number is the index). */
#define CONTEND_OBJECT_SLOTS 65536u
#define CONTEND_SITE_SLOTS 65536u
#define CONTEND_DEFAULT_CHUNK_SIZE (128u * 1024u)

/* A calibration point: the same instant on the trace clock and on the
 * system clocks. Readers fit ns = a + b * ticks through all points. */
typedef struct contend_calibration {
    uint64_t ticks;        /* trace clock                          */
    uint64_t monotonic_ns; /* CLOCK_MONOTONIC, ns                  */
    uint64_t realtime_ns;  /* CLOCK_REALTIME, ns since the epoch   */
    uint64_t reserved;
} contend_calibration;

typedef struct contend_trace_header {
    char magic[8];                  /*    0 "CNTDLOCK"                    */
    uint32_t version;               /*    8 CONTEND_TRACE_VERSION         */
    uint32_t header_size;           /*   12 CONTEND_HEADER_SIZE           */
    uint32_t endian_check;          /*   16 CONTEND_ENDIAN_CHECK          */
    uint16_t pointer_size;          /*   20 sizeof(void *)                */
    uint16_t clock;                 /*   22 CONTEND_CLOCK_*               */
    uint32_t chunk_size;            /*   24 bytes, power of two >= 4096   */
    uint32_t chunks_claimed;        /*   28 atomic; chunks handed out     */
    uint32_t pid;                   /*   32                               */
    uint32_t ppid;                  /*   36                               */
    uint64_t flags;                 /*   40 atomic; CONTEND_FLAG_*        */
    uint64_t object_table_offset;   /*   48 bytes from file start         */
    uint32_t object_table_slots;    /*   56                               */
    uint32_t site_table_slots;      /*   60                               */
    uint64_t site_table_offset;     /*   64                               */
    uint64_t data_offset;           /*   72 first chunk                   */
    contend_calibration start;      /*   80 at collector start            */
    contend_calibration end;        /*  112 valid if FLAG_FINISHED        */
    uint64_t ticks_per_second;      /*  144 launcher's estimate, 0 = none */
    uint32_t stack_every;           /*  152 0 = no stacks                 */
    uint32_t chunks_prepared;       /*  156 atomic; written by the launcher
                                           (contend-record's chunk
                                           preparer): chunks with an index
                                           below it have their first
                                           CONTEND_PREPARED_HEAD_BYTES in
                                           the page cache, blocks reserved,
                                           and the file covers them whole,
                                           0 = none (0 in older traces)   */
    /* Version 2: the collector's own cost (0 in version 1 traces). */
    uint64_t collector_ns;          /*  160 atomic; CPU time (ns, the
                                           threads' CPU clocks) the
                                           collector spent in its slow path
                                           (chunk claims, faulting in trace
                                           pages, maps snapshots, stacks,
                                           the calibration), all threads  */
    uint32_t cost_record_ps;        /*  168 calibrated time one timed record
                                           adds to the program, ps (half of
                                           a recorded uncontended lock +
                                           unlock pair beyond try-lock +
                                           unlock, plus the wrapper's entry
                                           since the cost samples came),
                                           0 = not calibrated             */
    uint32_t cost_count_ps;         /*  172 light mode: calibrated time a
                                           counted uncontended lock + unlock
                                           pair adds, ps; 0 = not measured */
    uint32_t calibration_ns;        /*  176 time the calibration took      */
    /* With CONTEND_FLAG_SAMPLED_COST (0 without): */
    uint32_t cost_window_record_ps; /*  180 the typical sampled window
                                           (cost_samples) of the records
                                           the calibration wrote (the
                                           median of its rounds' means),
                                           ps: the part of cost_record_ps the
                                           in-situ timing sees on hot
                                           caches; 0 = none               */
    uint32_t cost_window_count_ps;  /*  184 the same for the counted pairs
                                           of the light-mode calibration  */
    uint32_t claims_prepared;       /*  188 atomic; chunk claims that took a
                                           prepared chunk (no zeros of
                                           their own), 0 in older traces  */
    /* Calibrated on a process-shared mutex, the paths glibc and the
     * collector take in a process with more than one thread (0 in older
     * traces: then cost_record_ps and cost_count_ps stand for every
     * chunk). cost_record_ps and cost_count_ps are the single-threaded
     * paths' (a private mutex while the process has one thread); a chunk
     * flagged CONTEND_CHUNK_SINGLE_THREADED takes those, every other chunk
     * these. The windows above are the same code in both. */
    uint32_t cost_record_mt_ps;     /*  192 as cost_record_ps              */
    uint32_t cost_count_mt_ps;      /*  196 as cost_count_ps               */
    uint8_t reserved[512 - 200];    /*  200                               */
    char exe_path[1024];            /*  512 NUL-terminated, truncated     */
    char cmdline[2048];             /* 1536 NUL-separated args, truncated */
    uint8_t tail[4096 - 3584];      /* 3584                               */
} contend_trace_header;

/* Chunk: a fixed-size slice of the file owned by one thread. */
#define CONTEND_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */
#define CONTEND_CHUNK_HEADER_SIZE 64u

/* Chunk flags (version 2). */
#define CONTEND_CHUNK_COUNTS 1u /* holds count entries, not records; its
                                   sequence numbers are separate from the
                                   thread's record chunks              */
#define CONTEND_CHUNK_SINGLE_THREADED 2u /* the process had one thread
                                   (glibc's __libc_single_threaded) when
                                   the chunk was claimed and each time the
                                   collector looked again (every extension
                                   of its written part, new count entries,
                                   its release): its operations took the
                                   single-threaded paths, whose calibrated
                                   cost is the header's cost_record_ps /
                                   cost_count_ps (additive: 0 in older
                                   traces)                             */

/* Chunk flag (version 3): a chunk of slots, each a small chunk of one
 * thread. A thread's first record chunk and its first COUNTS table, once
 * the process has more than one thread, are slots: handed out of the
 * process's current slot chunk by a lock and a counter, they cost a thread
 * no system call and no page fault of its own, where a chunk of its own
 * cost 7-20 us per thread on the guests of docs/benchmarks.md ("Slots for
 * a thread's first records"). A thread that fills its slot claims a chunk
 * of its own as before (sequence 1 on). The slot chunk's own header has
 * this flag, tid 0 and, in `sequence`, the slot size in bytes; slot k
 * (k = 0, 1, ... while it fits in the chunk) starts at byte
 * CONTEND_CHUNK_HEADER_SIZE + k * slot size and is laid out as a chunk of
 * that size: a chunk header (magic stored last; never this flag), then
 * records, or count entries when its header has CONTEND_CHUNK_COUNTS. A
 * slot without the chunk magic was never handed out (or its thread died
 * before its header was complete): it holds nothing. */
#define CONTEND_CHUNK_SLOTS 4u
#define CONTEND_SLOT_SIZE 4096u

typedef struct contend_chunk_header {
    uint32_t magic;        /*  0 CONTEND_CHUNK_MAGIC (stored last)     */
    uint32_t tid;          /*  4 kernel thread id                      */
    uint32_t sequence;     /*  8 0, 1, 2, ... within the thread        */
    uint32_t flags;        /* 12 CONTEND_CHUNK_* (0 in version 1)      */
    uint64_t base_ticks;   /* 16 time base for the first record        */
    uint64_t monotonic_ns; /* 24 CLOCK_MONOTONIC at base_ticks          */
    uint64_t collector_ns; /* 32 version 2: CPU time (ns) the owning
                               thread spent in the collector's slow
                               path while this chunk was its current
                               one (plain stores by that thread)      */
    char thread_name[16];  /* 40 added in version 2 (zero in older
                               traces): the owning thread's name as the
                               kernel has it (comm, prctl PR_GET_NAME),
                               NUL-padded, not always NUL-terminated,
                               written by that thread when it claims the
                               chunk and again when it renames itself
                               (pthread_setname_np, prctl PR_SET_NAME),
                               at its exit and at the process's exit. A
                               reader takes the thread's last chunk's   */
    uint64_t cost_samples; /* 56 with CONTEND_FLAG_SAMPLED_COST (0 in
                               older traces): the owning thread's sampled
                               cost windows while this chunk was its
                               current one, plain stores by that thread:
                               bits 0..39 their sum in trace-clock
                               ticks, bits 40..63 their number. A record
                               chunk's are windows of records (two clock
                               readings around the storing of an
                               operation's first record), a COUNTS
                               chunk's of counted acquisitions (around
                               the count)                              */
} contend_chunk_header;

/* cost_samples: one in CONTEND_SAMPLE_EVERY operations of a thread is
 * timed (a per-thread countdown, no division on the fast path). */
#define CONTEND_SAMPLE_EVERY 256u
#define CONTEND_SAMPLE_SUM_BITS 40
#define CONTEND_SAMPLE_SUM_MASK ((1ull << CONTEND_SAMPLE_SUM_BITS) - 1u)

/*
 * Count entry (version 2, light mode): one (object, call site) of one
 * thread, in a COUNTS chunk after its header; entry i at byte
 * CONTEND_CHUNK_HEADER_SIZE + i * sizeof(contend_count). An entry is used
 * when its object is non-zero (stored last, with release order); its
 * count grows by plain stores of the owning thread. Open addressing: the
 * reader just takes every used entry. An entry whose object is
 * CONTEND_COUNT_BY_SITE counts the thread's acquisitions at its call site
 * of locks the table keeps no entry of their own for (more than
 * CONTEND_COUNT_LOCK_ENTRIES (lock, call site) pairs): their call site,
 * primitive and number are exact, the locks are not known.
 */
#define CONTEND_COUNT_BY_SITE 1u
#define CONTEND_COUNT_LOCK_ENTRIES 256u
typedef struct contend_count {
    uint64_t object;    /*  0 object address (0 = unused entry)         */
    uint64_t site;      /*  8 call site of the acquisitions            */
    uint64_t count;     /* 16 uncontended acquisitions counted          */
    uint32_t primitive; /* 24 CONTEND_PRIM_*                            */
    uint32_t reserved;  /* 28                                           */
} contend_count;

/*
 * Record head word:
 *   bits  0..7   tag
 *   bits  8..31  dt: ticks since the previous record of this thread
 *                (the chunk's base_ticks for the first record)
 *   bits 32..47  object index (slot in the object table)
 *   bits 48..63  site index (slot in the site table)
 * With CONTEND_TAG_WIDE set, the index fields are 0 and two words follow:
 * the object address and the call-site address.
 */
#define CONTEND_DT_BITS 24
#define CONTEND_DT_MAX ((1u << CONTEND_DT_BITS) - 1u)

/* Control tags. */
#define CONTEND_TAG_TIME 0x01u  /* 1 word follows: absolute ticks; dt = 0   */
#define CONTEND_TAG_STACK 0x02u /* bits 8..31 = n; n words follow: return
                                   addresses, innermost first; belongs to the
                                   next operation record of the thread     */

/* Operation tags: (primitive << 4) | phase, optionally | CONTEND_TAG_WIDE.
 * Primitive and phase codes, like all tags, are only ever added, never
 * reused or renumbered. */
#define CONTEND_TAG_WIDE 0x80u

#define CONTEND_PRIM_MUTEX 1u
#define CONTEND_PRIM_RWLOCK_READ 2u
#define CONTEND_PRIM_RWLOCK_WRITE 3u
#define CONTEND_PRIM_SPIN 4u
#define CONTEND_PRIM_COND 5u
#define CONTEND_PRIM_BARRIER 6u
#define CONTEND_PRIM_SEM 7u

#define CONTEND_PHASE_REQUEST 1u   /* blocking call entered, not acquired   */
#define CONTEND_PHASE_ACQUIRED 2u  /* the pending REQUEST succeeded         */
#define CONTEND_PHASE_IMMEDIATE 3u /* acquired at once (no waiting)        */
#define CONTEND_PHASE_BUSY 4u      /* try failed at once / timed out after
                                      a REQUEST                           */
#define CONTEND_PHASE_ERROR 5u     /* call returned another error (EDEADLK,
                                      EINVAL, ...); ends a pending REQUEST */
#define CONTEND_PHASE_RELEASE 6u   /* unlock / sem_post, before the call    */
/* Version 2: */
#define CONTEND_PHASE_RELEASED 7u  /* after the real unlock / sem_post
                                      returned, recorded only when the
                                      object had waiters at the RELEASE
                                      before it: the time between the two
                                      is the wake cost (HaLock, Sec. 4.3)  */
#define CONTEND_PHASE_UNTIMED 8u   /* light mode: the acquisition of a
                                      hold that was counted, not recorded,
                                      and whose release found waiters; its
                                      time is unknown and the record
                                      carries the time of that release (it
                                      comes right before the RELEASE); the
                                      count was decremented               */

#define CONTEND_OP_TAG(prim, phase) ((uint8_t)(((prim) << 4) | (phase)))

/*
 * Futex records (added in version 2; a reader that does not know tag 0x03
 * stops at it as at a bad record). The interposed glibc syscall(SYS_futex,
 * ...) and syscall(SYS_futex_waitv, ...) of the program (Rust's std, InnoDB,
 * hand-written locks; glibc's own pthread code makes its futex calls inline
 * and never reaches them) write one record before and one after the call:
 *
 *   head word: tag CONTEND_TAG_FUTEX, dt, object index (the futex word's
 *              address; for futex_waitv the address of the waiter array),
 *              site index (the call site), as an operation record;
 *   wide form: tag CONTEND_TAG_FUTEX | CONTEND_TAG_WIDE, index fields 0,
 *              then the object and the site address;
 *   then one extension word (CONTEND_FUTEX_*): bits 0..7 the phase
 *   (CONTEND_PHASE_*), bits 8..15 the futex command (op & FUTEX_CMD_MASK,
 *   or CONTEND_FUTEX_CMD_WAITV), bit 16 FUTEX_PRIVATE_FLAG was set, bits
 *   32..63 a signed 32-bit value.
 *
 * Phases: a wait (WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI,
 * futex_waitv) is REQUEST before the call and, after it, ACQUIRED (it
 * returned >= 0: woken, or the PI lock taken; value = the return value),
 * BUSY (ETIMEDOUT) or ERROR (value = errno: EAGAIN when the word no longer
 * held the expected value, EINTR, ...). A wake (WAKE, WAKE_BITSET, WAKE_OP,
 * REQUEUE, CMP_REQUEUE, UNLOCK_PI) is RELEASE before the call and, after
 * it, RELEASED (value = the return value: the number of waiters woken, for
 * CMP_REQUEUE woken + requeued) or ERROR (value = errno). Other commands
 * are not recorded. A STACK record before the first record of a call
 * belongs to it.
 */
#define CONTEND_TAG_FUTEX 0x03u
#define CONTEND_FUTEX_PHASE_MASK 0xffu
#define CONTEND_FUTEX_CMD_SHIFT 8
#define CONTEND_FUTEX_PRIVATE (1u << 16)
#define CONTEND_FUTEX_VALUE_SHIFT 32
#define CONTEND_FUTEX_CMD_WAITV 0xffu /* futex_waitv(2), its own syscall */

/*
 * OpenMP records (added in version 2): written by the collector's OMPT tool
 * (ompt_start_tool), which an OpenMP runtime that implements OMPT (LLVM's
 * libomp) finds and initialises, and by the collector's wrappers of GCC's
 * libgomp entry points (gomp.c), with the same events and kinds. Same layout as a futex record: head word
 * with tag CONTEND_TAG_OMP (wide: | CONTEND_TAG_WIDE, two address words),
 * then one extension word: bits 0..7 the event (CONTEND_OMP_*), bits 8..15
 * the OMPT kind (ompt_mutex_t for mutex events, ompt_sync_region_t for
 * sync-region waits), bits 32..63 an unsigned 32-bit value.
 *
 * Objects: the OMPT wait id for mutex events (the lock's address; for a
 * critical section the address of its lock variable), the parallel
 * region's instance number (1, 2, ...; not an address) for the others.
 * Sites: the OMPT codeptr_ra (the user's code after the construct), else
 * the return address into the runtime.
 */
#define CONTEND_TAG_OMP 0x04u
#define CONTEND_OMP_MUTEX_ACQUIRE 1u   /* acquisition begins               */
#define CONTEND_OMP_MUTEX_ACQUIRED 2u  /* acquired (acquire -> here: wait)  */
#define CONTEND_OMP_MUTEX_RELEASED 3u  /* released (acquired -> here: hold) */
#define CONTEND_OMP_SYNC_WAIT_BEGIN 4u /* a thread begins to wait in a
                                          barrier, taskwait, taskgroup     */
#define CONTEND_OMP_SYNC_WAIT_END 5u   /* ... and ends                     */
#define CONTEND_OMP_TASK_BEGIN 6u      /* implicit task begins (its work);
                                          value: thread number in team     */
#define CONTEND_OMP_TASK_END 7u        /* implicit task ends                */
#define CONTEND_OMP_PARALLEL_BEGIN 8u  /* value: requested team size        */
#define CONTEND_OMP_PARALLEL_END 9u

/*
 * Creation records (added in version 2; a reader that does not know tag
 * 0x05 stops at it as at a bad record): where a lock object was created,
 * mutrace's "where the lock was created". Written
 *   - by the interposed pthread_mutex_init, pthread_rwlock_init,
 *     pthread_spin_init, pthread_cond_init, pthread_barrier_init and
 *     sem_init after the real call succeeded (how = CONTEND_CREATE_INIT),
 *     on every such call;
 *   - on the first recorded operation of an object that no init call of
 *     this process named before (statically initialised, or initialised
 *     by code that does not call the interposed function): when its
 *     address is entered into the object table (how =
 *     CONTEND_CREATE_FIRST_USE), once per object; an object whose
 *     operations use the wide form (the table is full) gets none.
 * Same layout as a futex record: head word with tag CONTEND_TAG_CREATE,
 * object index, site index (the call site of the init function or of the
 * first operation); wide: | CONTEND_TAG_WIDE, two address words; then one
 * extension word: bits 0..7 how (CONTEND_CREATE_*), bits 8..15 the
 * primitive (CONTEND_PRIM_*; 0 = see the object's operations). A STACK
 * record right before it is the creation's call stack (all frames with
 * stack_every != 0, else the 8 innermost; for an init call only when its
 * address was new to the object table: a re-initialisation at a reused
 * address carries none; none when the unwinder was not loaded). The
 * record's time is that of the init call's return or of the operation.
 */
#define CONTEND_TAG_CREATE 0x05u
#define CONTEND_CREATE_INIT 1u      /* an init function was called          */
#define CONTEND_CREATE_FIRST_USE 2u /* first operation, no init call seen    */
#define CONTEND_CREATE_HOW_MASK 0xffu
#define CONTEND_CREATE_PRIM_SHIFT 8

/*
 * Join records (added in version 2; a reader that does not know tag 0x06
 * stops at it as at a bad record): a thread waiting in pthread_join (or
 * pthread_timedjoin_np, pthread_clockjoin_np) for another thread's end,
 * and that other thread's end, so that the critical path can follow a
 * joining thread to the thread it waited for (docs/critical-path.md).
 * Same layout as a futex record: head word with tag CONTEND_TAG_JOIN,
 * object index, site index; wide: | CONTEND_TAG_WIDE, two address words;
 * then one extension word: bits 0..7 the phase (CONTEND_PHASE_*), bits
 * 32..63 a 32-bit value. The object is the joined thread's pthread_t (an
 * address; a pthread_t is reused only after its thread was joined).
 *   - the joining thread: REQUEST before the call; after it ACQUIRED
 *     (it returned 0), BUSY (ETIMEDOUT, EBUSY) or ERROR (another error;
 *     value = the error number, ECANCELED when the joining thread was
 *     cancelled in the call); site = the call site;
 *   - the ending thread: RELEASE in its exit (the collector's
 *     thread-specific destructor, after the thread's own code returned or
 *     called pthread_exit), object = its own pthread_self(), site = the
 *     return address into the C library's thread exit; only threads that
 *     recorded something write it.
 */
#define CONTEND_TAG_JOIN 0x06u
#define CONTEND_JOIN_PHASE_MASK 0xffu
#define CONTEND_JOIN_VALUE_SHIFT 32

_Static_assert(sizeof(contend_calibration) == 32, "calibration is 32 bytes");
_Static_assert(sizeof(contend_trace_header) == CONTEND_HEADER_SIZE, "header is 4096 bytes");
_Static_assert(sizeof(contend_chunk_header) == CONTEND_CHUNK_HEADER_SIZE, "chunk header is 64 bytes");
_Static_assert(sizeof(contend_count) == 32, "count entry is 32 bytes");

#endif /* CONTEND_TRACE_FORMAT_H */
