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
 * differ; 0 otherwise. Set once before MPI_Init's first timestamp. */
CM_HIDDEN extern uint64_t cm_clock_skew;

static inline __attribute__((always_inline)) uint64_t cm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + cm_clock_skew;
}

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
/* Stops recording (after MPI_Finalize, in a fork child). */
CM_HIDDEN void cm_stop(void);

/* One record: head fields + payload (n words). `timed`: arg is the delta
 * from the thread's last time to `t` (a TIME record is written first when
 * it does not fit). Does nothing when the thread cannot record. */
CM_HIDDEN void cm_record(struct cm_thread *ts, uint32_t tag, uint32_t small, int timed, uint64_t t,
                         uint32_t arg, const uint64_t *payload, uint32_t n);

/* An ENTER record: the site is left out (compact form) when it is the
 * previous ENTER's in the same chunk. */
CM_HIDDEN void cm_record_enter(struct cm_thread *ts, uint32_t op, uint64_t t, uint64_t site,
                               const uint64_t *fields, uint32_t n);


#endif /* CONTEND_MPI_REC_H */
