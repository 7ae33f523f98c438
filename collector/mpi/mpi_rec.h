/*
 * contend MPI recorder: the trace writer (mpi_trace.c), independent of the
 * MPI implementation. The wrappers (mpi_wrap.c, mpi_fortran.c) decide what
 * to record; this part owns the file, the per-thread chunks and the record
 * layout of include/contend/mpi_trace_format.h.
 *
 * Crash safety as in the lock collector: the file is created sparse and
 * mapped MAP_SHARED one chunk per thread; every record's head word is
 * stored last with release order, so whatever a process stored before it
 * died is in the page cache and a record being written is simply absent.
 * Memory per thread: one mapped chunk (64 KiB by default).
 */
#ifndef CONTEND_MPI_REC_H
#define CONTEND_MPI_REC_H

#include <stdint.h>
#include <time.h>

#include "contend/clock.h" /* the lock collector's trace clock */
#include "contend/mpi_trace_format.h"
#include "contend/say.h" /* contend_say: "contend: a b c" on stderr */

#define CM_HIDDEN __attribute__((visibility("hidden")))
#define CM_PUBLIC __attribute__((visibility("default")))
#define CM_LIKELY(x) __builtin_expect(!!(x), 1)
#define CM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Per-thread writer state. */
struct cm_thread {
    uint64_t *cur;       /* next free word of the mapped chunk (NULL: none) */
    uint64_t *end;       /* one past the chunk's last word                  */
    uint64_t *chunk;     /* start of the mapped chunk                       */
    uint64_t last;       /* time of the thread's previous timed record      */
    uint32_t tid;
    uint32_t seq;        /* next chunk sequence number                      */
    uint8_t busy;        /* inside a wrapper: nested MPI calls pass through */
    uint8_t disabled;    /* recording failed on this thread                 */
    uint8_t key_set;     /* the exit destructor is armed                    */
    uint8_t exit_rounds;
    uint64_t last_site;  /* site of the previous ENTER in this chunk     */
};

CM_HIDDEN extern _Thread_local struct cm_thread cm_tls __attribute__((tls_model("initial-exec")));

/* 1 while the trace is open and MPI is initialised (hot check). */
CM_HIDDEN extern int cm_recording;

/* Test hook: ns added to this rank's clock (CONTEND_MPI_TEST_CLOCK_SKEW_NS
 * on odd ranks), so that one machine can play ranks on nodes whose clocks
 * differ; 0 otherwise. Set once before MPI_Init's first timestamp. On the
 * TSC it is added to the CLOCK_MONOTONIC side of every calibration point,
 * so the reader's converted times carry it the same way. */
CM_HIDDEN extern uint64_t cm_clock_skew;

/* The trace clock (contend/clock.h, as the lock collector's): 1 for the
 * TSC (CONTEND_CLOCK=tsc from the launcher), 0 for CLOCK_MONOTONIC; and
 * CONTEND_TSC_HZ (0: unknown). Set by a constructor, before any call. */
CM_HIDDEN extern int cm_clock_tsc;
CM_HIDDEN extern uint64_t cm_tsc_hz;

/* A timestamp on the trace clock (TSC ticks or ns): what records store. */
static inline __attribute__((always_inline)) uint64_t cm_now(void)
{
#if CONTEND_CLOCK_HAVE_TSC
    if (CM_LIKELY(cm_clock_tsc))
        return __rdtsc();
#endif
    return contend_clock_monotonic_ns() + cm_clock_skew;
}

/* This rank's CLOCK_MONOTONIC ns (plus the test skew): the clock of the
 * header's offsets and the maps snapshots. */
static inline uint64_t cm_now_ns(void)
{
    return contend_clock_monotonic_ns() + cm_clock_skew;
}

/* A calibration point: the same instant on the trace clock and on
 * cm_now_ns() (`real`: CLOCK_REALTIME, may be NULL). */
CM_HIDDEN void cm_clock_point(uint64_t *ticks, uint64_t *mono, uint64_t *real);

/* Information for the header, known after MPI_Init. */
struct cm_rank_info {
    uint32_t rank, size;
    int32_t thread_level;
    uint16_t implementation;
    const char *host;
    const char *library;
};

/* CONTEND_DIR as an absolute path, or NULL: record nothing. */
CM_HIDDEN const char *cm_config_dir(void);
/* Creates <dir>/mpi/rank-<r>.cmpi and maps its header. 0 ok, -1 (said why
 * on stderr; the program runs on unrecorded). */
CM_HIDDEN int cm_trace_open(const struct cm_rank_info *info);
/* Header updates. */
CM_HIDDEN void cm_set_flag(uint64_t flag);
CM_HIDDEN void cm_set_offset(int final, int64_t offset, uint64_t at, uint64_t rtt);
/* Appends a snapshot of /proc/self/maps to <dir>/maps/<pid>.maps. */
CM_HIDDEN void cm_maps_snapshot(void);
/* Stores the end calibration point in the header (MPI_Finalize). */
CM_HIDDEN void cm_clock_end(void);
/* Stops recording (after MPI_Finalize, in a fork child). */
CM_HIDDEN void cm_stop(void);

/* Room for `words` more words in the thread's chunk: 1, else a new chunk
 * is claimed (cm_room_slow, out of line); 0 when the thread cannot record. */
CM_HIDDEN int cm_room_slow(struct cm_thread *ts, uint32_t words);
static inline __attribute__((always_inline)) int cm_room(struct cm_thread *ts, uint32_t words)
{
    if (CM_LIKELY(ts->cur && (uint64_t)(ts->end - ts->cur) >= words))
        return 1;
    return cm_room_slow(ts, words);
}

/* One record: head fields + payload (n words). `timed`: arg is the delta
 * from the thread's last time to `t` (a TIME record is written first when
 * it does not fit). Does nothing when the thread cannot record. Inline:
 * the wrappers' fast path is a few stores (only a new chunk is a call). */
static inline __attribute__((always_inline)) void
cm_record(struct cm_thread *ts, uint32_t tag, uint32_t small, int timed, uint64_t t, uint32_t arg,
          const uint64_t *payload, uint32_t n)
{
    if (CM_UNLIKELY(!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE)))
        return;
    if (!cm_room(ts, n + 3))
        return;
    uint64_t *p = ts->cur;
    if (timed) {
        uint64_t dt = t - ts->last;
        if (CM_UNLIKELY(t < ts->last || dt > UINT32_MAX)) {
            p[1] = t;
            __atomic_store_n(&p[0], CONTEND_MPI_HEAD(CONTEND_MPI_REC_TIME, 1, 0, 0),
                             __ATOMIC_RELEASE);
            p += 2;
            dt = 0;
        }
        ts->last = t;
        arg = (uint32_t)dt;
    }
    for (uint32_t i = 0; i < n; i++)
        p[1 + i] = payload[i];
    __atomic_store_n(&p[0], CONTEND_MPI_HEAD(tag, n, small, arg), __ATOMIC_RELEASE);
    ts->cur = p + 1 + n;
}

/* An ENTER record: the site is left out (compact form) when it is the
 * previous ENTER's in the same chunk. Written straight into the chunk (the
 * same words cm_record would write, without first gathering the payload
 * in a local array): the wrappers call it on every recorded call. */
static inline __attribute__((always_inline)) void
cm_record_enter(struct cm_thread *ts, uint32_t op, uint64_t t, uint64_t site,
                const uint64_t *fields, uint32_t n)
{
    if (CM_UNLIKELY(!__atomic_load_n(&cm_recording, __ATOMIC_ACQUIRE)))
        return;
    if (n > 7 || !cm_room(ts, n + 4)) /* TIME + head + site + fields: no new chunk below */
        return;
    uint64_t *p = ts->cur;
    uint64_t dt = t - ts->last;
    if (CM_UNLIKELY(t < ts->last || dt > UINT32_MAX)) {
        p[1] = t;
        __atomic_store_n(&p[0], CONTEND_MPI_HEAD(CONTEND_MPI_REC_TIME, 1, 0, 0), __ATOMIC_RELEASE);
        p += 2;
        dt = 0;
    }
    ts->last = t;
    uint32_t small = op, k = 1;
    if (site != 0 && site == ts->last_site)
        small |= CONTEND_MPI_SMALL_COMPACT;
    else
        p[k++] = site;
    ts->last_site = site;
    for (uint32_t i = 0; i < n; i++)
        p[k + i] = fields[i];
    k += n;
    __atomic_store_n(&p[0], CONTEND_MPI_HEAD(CONTEND_MPI_REC_ENTER, k - 1, small, dt),
                     __ATOMIC_RELEASE);
    ts->cur = p + k;
}

#endif /* CONTEND_MPI_REC_H */
