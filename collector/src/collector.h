/*
 * contend lock collector: shared declarations and the hot path.
 *
 * The collector is an LD_PRELOAD library. Its pieces:
 *   real.c       resolves the real pthread/sem functions (real_*), once
 *   collector.c  configuration, the trace file, chunks, slow path, fork, exit
 *   maps.c       /proc/self/maps snapshots and the executable-range check
 *   wrappers.c   the interposed pthread_* and sem_* functions
 *   futex.c      the interposed syscall(): futex waits and wakes
 *   ompt.c       ompt_start_tool: OpenMP mutexes, barriers, parallel regions
 *   create.c     the interposed init functions: where each lock was created
 *   gomp.c       GCC's libgomp entry points (GOMP_*, omp_*_lock): the same
 *                OpenMP records for programs built with gcc -fopenmp
 *   names.c      the interposed pthread_setname_np() and prctl(): thread names
 *
 * Everything the wrappers do on every call lives in this header as static
 * inline functions, so that the fast path is: one TLS access, the real
 * try-lock, one timestamp, one table probe per address, one store.
 *
 * Design rules for anything reachable from a wrapper:
 *   - no allocation, no locks, no stdio; syscalls only on the slow path
 *     (chunk claim, maps snapshot), which saves and restores errno;
 *   - re-entry (a signal handler, or a pthread call made by something the
 *     slow path calls, e.g. libgcc's unwinder inside backtrace()) is caught
 *     by the per-thread `guard` byte and passes through unrecorded.
 */
#ifndef CONTEND_COLLECTOR_H
#define CONTEND_COLLECTOR_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "contend/clock.h" /* the trace clock, shared with the MPI recorder */
#include "contend/say.h"
#include "contend/trace_format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CONTEND_HAVE_TSC 1
#else
#define CONTEND_HAVE_TSC 0
#endif

#define CONTEND_HIDDEN __attribute__((visibility("hidden")))
#define CONTEND_EXPORT __attribute__((visibility("default")))
#define CONTEND_LIKELY(x) __builtin_expect(!!(x), 1)
#define CONTEND_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CONTEND_INLINE static inline __attribute__((always_inline))
#define CONTEND_NOINLINE __attribute__((noinline))
#define CONTEND_COLD __attribute__((noinline, cold))
/* Keeps the compiler from moving stores across it; signal handlers run on
 * the same thread, so a compiler barrier is all the ordering they need. */
#define CONTEND_SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* ------------------------------------------------------------------------ */
/* Real functions                                                            */

/* The next definition of every interposed function (normally glibc's).
 * Written only by contend_resolve_reals(); read with relaxed atomic loads
 * because a thread may read while another one is still resolving. */
struct contend_real {
    int (*mutex_lock)(pthread_mutex_t *);
    int (*mutex_trylock)(pthread_mutex_t *);
    int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*mutex_unlock)(pthread_mutex_t *);
    int (*rwlock_rdlock)(pthread_rwlock_t *);
    int (*rwlock_wrlock)(pthread_rwlock_t *);
    int (*rwlock_tryrdlock)(pthread_rwlock_t *);
    int (*rwlock_trywrlock)(pthread_rwlock_t *);
    int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rwlock_unlock)(pthread_rwlock_t *);
    int (*spin_lock)(pthread_spinlock_t *);
    int (*spin_trylock)(pthread_spinlock_t *);
    int (*spin_unlock)(pthread_spinlock_t *);
    int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);           /* GLIBC_2.3.2 */
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
                          const struct timespec *);                  /* GLIBC_2.3.2 */
    int (*cond_wait_old)(pthread_cond_t *, pthread_mutex_t *);       /* GLIBC_2.2.5 */
    int (*cond_timedwait_old)(pthread_cond_t *, pthread_mutex_t *,
                              const struct timespec *);              /* GLIBC_2.2.5 */
    int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                          const struct timespec *);
    int (*barrier_wait)(pthread_barrier_t *);
    int (*sem_wait)(sem_t *);
    int (*sem_timedwait)(sem_t *, const struct timespec *);
    int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
    int (*sem_trywait)(sem_t *);
    int (*sem_post)(sem_t *);
    /* init functions (create.c): where a lock was created */
    int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
    int (*rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
    int (*spin_init)(pthread_spinlock_t *, int);
    int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);     /* GLIBC_2.3.2 */
    int (*cond_init_old)(pthread_cond_t *, const pthread_condattr_t *); /* GLIBC_2.2.5 */
    int (*barrier_init)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
    int (*sem_init)(sem_t *, int, unsigned);
    /* thread joins (join.c) */
    int (*join)(pthread_t, void **);
    int (*timedjoin)(pthread_t, void **, const struct timespec *);
    int (*clockjoin)(pthread_t, void **, clockid_t, const struct timespec *);
};

CONTEND_HIDDEN extern struct contend_real contend_real;

#define CONTEND_REAL(field) __atomic_load_n(&contend_real.field, __ATOMIC_RELAXED)

/* Shared by the interposed functions (wrappers.c, create.c, join.c). */
/* The call site: the interposed function's return address. */
#define SITE() ((const void *)__builtin_return_address(0))
/* May this call record? Cheap check first, lazy init on the cold path. */
#define RECORDING(ts) (CONTEND_LIKELY(contend_may_record(ts)) || contend_prepare(ts))
/* Pass-through for functions that have no glibc alias to fall back on: the
 * pointer is NULL only while this very thread is inside dlsym, which never
 * calls these; look the one symbol up then (ENOSYS if the C library has
 * none). */
#define PASS_PTHREAD(field, name, version, ...)                                  \
    do {                                                                         \
        __typeof__(contend_real.field) f_ = CONTEND_REAL(field);                 \
        if (CONTEND_UNLIKELY(!f_))                                               \
            f_ = (__typeof__(f_))contend_resolve_one(name, version);             \
        if (CONTEND_UNLIKELY(!f_))                                               \
            return ENOSYS;                                                       \
        return f_(__VA_ARGS__);                                                  \
    } while (0)

/* Resolves every real_* pointer (idempotent; two racing threads store the
 * same values). Sets the calling thread's guard while it runs. */
CONTEND_HIDDEN void contend_resolve_reals(void);
/* Looks up one symbol (version may be NULL) for a wrapper whose pointer is
 * still NULL while this very thread is resolving: never in practice. */
CONTEND_HIDDEN void *contend_resolve_one(const char *name, const char *version);

/* glibc's exported aliases of the mutex and rwlock functions (compat
 * symbols since 2.34, bound with .symver in real.c). Nobody interposes
 * them, so they are safe to call before the real_* pointers exist. Not
 * hidden: .symver turns these undefined names into references to libc. */
int contend_libc_mutex_lock(pthread_mutex_t *);
int contend_libc_mutex_trylock(pthread_mutex_t *);
int contend_libc_mutex_unlock(pthread_mutex_t *);
int contend_libc_rwlock_rdlock(pthread_rwlock_t *);
int contend_libc_rwlock_wrlock(pthread_rwlock_t *);
int contend_libc_rwlock_tryrdlock(pthread_rwlock_t *);
int contend_libc_rwlock_trywrlock(pthread_rwlock_t *);
int contend_libc_rwlock_unlock(pthread_rwlock_t *);

/* ------------------------------------------------------------------------ */
/* Per-thread state                                                          */

/* guard bits: while any is set, the thread's calls pass through unrecorded */
#define CONTEND_GUARD_BUSY 1u     /* inside the collector (or re-entered)    */
#define CONTEND_GUARD_DISABLED 2u /* recording failed for this thread        */
#define CONTEND_GUARD_FORK 4u     /* between fork's prepare and child hooks  */

/* rwlocks currently held by the thread and in which mode (see wrappers.c:
 * the unlock record must say whether a read or a write hold ends). */
#define CONTEND_RW_HELD_MAX 16
/* Light mode: locks whose current hold was recorded (contended, or a
 * condition wait's re-acquisition), so that their release is recorded. */
#define CONTEND_HELD_MAX 16
/* Light mode: open holds of mutexes and rwlocks counted by call site
 * (their lock has no count entry of its own) that a thread remembers, so
 * that a release that finds waiters can take the acquisition back out of
 * its site's count; past this many at once the oldest is forgotten. */
#define CONTEND_BY_SITE_HELD_MAX 16

struct contend_rw_held {
    const void *lock;
    uintptr_t write; /* 1 = write hold, 0 = read hold */
};

struct contend_thread {
    uint64_t *cur;     /* next free word of the mapped chunk (NULL: none)   */
    uint64_t *end;     /* end of the part of the chunk already faulted in   */
    uint64_t last;     /* ticks of the thread's previous record             */
    uint32_t countdown;/* operations until the next STACK record            */
    uint8_t guard;     /* CONTEND_GUARD_*                                   */
    uint8_t key_set;   /* the pthread_key value is set (destructor armed)   */
    uint8_t exit_rounds; /* key destructor calls so far                    */
    uint8_t created;   /* an object was just entered into the object table:
                          its first-use creation record is still to write */
    uint64_t *chunk;   /* start of the mapped chunk                         */
    uint64_t *chunk_end; /* one past the chunk's last word                  */
    uint32_t tid;      /* kernel tid (0 = not yet known)                    */
    uint32_t seq;      /* next chunk sequence number                        */
    uint32_t rw_n;     /* entries used in rw[]                              */
    uint32_t sample_countdown; /* operations until the next one whose cost
                                  is timed (sampling.c); in the first cache
                                  line, beside the fields every record uses */
    struct contend_rw_held rw[CONTEND_RW_HELD_MAX];
    /* light mode (contend_g.light) */
    contend_count *counts;   /* entries of the current COUNTS chunk (NULL: none) */
    contend_count *last_count; /* entry of the latest counted acquisition    */
    void *count_chunk;       /* mapping of the COUNTS chunk                   */
    uint32_t count_slots;    /* entries in counts[]                           */
    uint32_t count_seq;      /* next COUNTS chunk sequence number             */
    uint32_t count_used;     /* entries inserted into counts[]                */
    uint32_t held_n;         /* entries used in held[]                        */
    uint32_t count_claim_tried; /* contend_ready_to_acquire tried to claim
                                   the first COUNTS chunk ahead          */
    const void *held[CONTEND_HELD_MAX];
    uint32_t count_locks;    /* entries of (lock, site) pairs in counts[]    */
    uint32_t by_site_n;      /* entries used in by_site_lock[]                */
    /* the open holds counted in a by-site entry: their lock and entry
     * (contend_untimed finds a counted hold by its lock) */
    const void *by_site_lock[CONTEND_BY_SITE_HELD_MAX];
    contend_count *by_site_entry[CONTEND_BY_SITE_HELD_MAX];
    /* the slow path's own time (collector.c, contend_add_cost) */
    uint64_t slow_ns;          /* slow-path time counted so far (ns)      */
    uint64_t slot_made_wall_ns; /* wall time of the slot chunks this thread
                                   made (ns; counted by their CPU time:
                                   collector.c, claim_timing)           */
    /* in-situ cost sampling (sampling.c) */
    uint32_t slow_seq;         /* bumped by contend_cost_since: a sample
                                  that ran into the timed slow path is
                                  dropped (that time is in collector_ns) */
    uint32_t chunk_index;      /* the current chunk's index in the file     */
    uint64_t *zeroed_end;      /* end of the part of the chunk written with
                                  zeros (collector.c, claim_chunk)          */
    uint8_t slotted;           /* CONTEND_SLOTTED_*: which of the thread's
                                  chunks are slots (collector.c, "Slots")  */
};

#define CONTEND_SLOTTED_RECORDS 1u /* contend_thread.chunk is a slot       */
#define CONTEND_SLOTTED_COUNTS 2u  /* contend_thread.count_chunk is a slot */

CONTEND_HIDDEN extern _Thread_local struct contend_thread contend_tls
    __attribute__((tls_model("initial-exec")));

/* The calling thread renamed itself (names.c): its name goes into the
 * headers of its current chunks now, so that a crash keeps it. Saves errno;
 * does nothing when re-entered or not recording. */
CONTEND_HIDDEN void contend_thread_renamed(void);

/* Entering and leaving the collector's own slow work (initialisation,
 * resolving, constructor, destructor): calls the thread makes meanwhile
 * (dlsym, backtrace, malloc taking locks) pass through unrecorded, and the
 * target's errno is what it was. */
struct contend_saved {
    uint8_t guard;
    int err;
};

static inline struct contend_saved contend_enter(struct contend_thread *ts)
{
    struct contend_saved saved = {ts->guard, errno};
    ts->guard |= CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    return saved;
}

static inline void contend_leave(struct contend_thread *ts, struct contend_saved saved)
{
    errno = saved.err;
    CONTEND_SIGNAL_FENCE();
    ts->guard = saved.guard;
}

/* ------------------------------------------------------------------------ */
/* Global state                                                              */

#define CONTEND_STATE_NONE 0    /* nothing done yet                          */
#define CONTEND_STATE_INIT 1    /* one thread is initialising                */
#define CONTEND_STATE_ACTIVE 2  /* recording                                 */
#define CONTEND_STATE_PASS 3    /* pass-through (no CONTEND_DIR, or failure) */

struct contend_global {
    int recording;          /* atomic: 1 iff state == ACTIVE (hot-path flag) */
    int state;              /* atomic: CONTEND_STATE_*                       */
    int resolved;           /* atomic: real_* pointers resolved              */
    int clock_tsc;          /* 1: rdtsc; 0: CLOCK_MONOTONIC                  */
    uint32_t stack_every;   /* 0 = no stacks                                 */
    uint32_t chunk_size;    /* bytes                                         */
    int light;              /* light mode: count uncontended acquisitions    */
    int nt_stores;          /* store records with non-temporal stores        */
    uint64_t data_offset;   /* file offset of chunk 0                        */
    contend_trace_header *hdr; /* mapped header (followed by the tables)     */
    uint64_t *objects;      /* mapped object table                           */
    uint64_t *sites;        /* mapped site table                             */
    const uint32_t *enabled; /* the control page's `enabled` (record only
                                while it is 1), or a constant 1          */
};

CONTEND_HIDDEN extern struct contend_global contend_g;

/* ------------------------------------------------------------------------ */
/* Clock                                                                     */

CONTEND_INLINE uint64_t contend_monotonic_ns(void)
{
    return contend_clock_monotonic_ns();
}

CONTEND_INLINE uint64_t contend_now(void)
{
    return contend_clock_read(contend_g.clock_tsc);
}

/* ------------------------------------------------------------------------ */
/* Index tables                                                              */

CONTEND_INLINE uint32_t contend_hash(uint64_t addr)
{
    return (uint32_t)((addr * 0x9E3779B97F4A7C15ull) >> 48); /* 16 bits */
}

/* Probes on from `slot` (inserting if needed); -1 if the table is full
 * within 32 probes. `is_site`: a new insertion may trigger a maps snapshot. */
CONTEND_HIDDEN int32_t contend_table_insert(uint64_t *table, uint64_t addr, uint32_t slot,
                                            int is_site);

/* The slot of `addr` (inserted on first sight), or -1 (use the wide form).
 * Usually a single load that hits. */
CONTEND_INLINE int32_t contend_index(uint64_t *table, uint64_t addr, int is_site)
{
    uint32_t slot = contend_hash(addr);
    if (CONTEND_LIKELY(__atomic_load_n(&table[slot], __ATOMIC_RELAXED) == addr))
        return (int32_t)slot;
    return contend_table_insert(table, addr, slot, is_site);
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */

CONTEND_INLINE uint64_t contend_head(uint32_t tag, uint64_t dt, uint32_t obj, uint32_t site)
{
    return (uint64_t)tag | (dt << 8) | ((uint64_t)obj << 32) | ((uint64_t)site << 48);
}

/* Everything that is not "one narrow record into the current chunk": chunk
 * claim, TIME record, wide form, STACK record. Ends by clearing the BUSY
 * guard bit. */
CONTEND_HIDDEN void contend_emit_slow(struct contend_thread *ts, uint32_t tag, const void *obj,
                                      const void *site, uint64_t t, int want_stack);
/* A record with one extension word (trace_format.h: CONTEND_TAG_FUTEX,
 * CONTEND_TAG_OMP) through the slow path; `first`: the first record of the
 * call (counts operations for the stacks, as contend_op). The caller has
 * checked that the thread may record; errno is kept. Ends by clearing the
 * BUSY guard bit. */
CONTEND_HIDDEN void contend_emit_ext_slow(struct contend_thread *ts, uint32_t tag, uint64_t ext,
                                          const void *obj, const void *site, uint64_t t,
                                          int first);
/* Creation records (trace_format.h, "Creation records"; create.c).
 * contend_table_insert sets ts->created when it enters a new object; the
 * record is then written before the operation's record (emit_record),
 * or, by contend_before_wait, before the REQUEST timestamp. */
/* A CONTEND_CREATE_FIRST_USE record for `obj` at `site` now (with a stack
 * when stacks are on); clears ts->created. The caller has checked that
 * the thread may record and does not hold the BUSY guard; errno is kept. */
CONTEND_HIDDEN void contend_emit_first_use(struct contend_thread *ts, const void *obj,
                                           const void *site);

/* A CONTEND_CREATE_INIT record for `obj`, initialised as primitive `prim`
 * by the call at `site` (with a stack when stacks are on and the object
 * is new to the table). Same contract as contend_emit_first_use. */
CONTEND_HIDDEN void contend_emit_create(struct contend_thread *ts, uint32_t prim,
                                        const void *obj, const void *site);

/* The every-N-th-operation branch: a STACK record then the record. */
CONTEND_HIDDEN void contend_emit_stack(struct contend_thread *ts, uint32_t tag,
                                       const void *obj, const void *site, uint64_t t);

/*
 * Writes one operation record. The caller has checked contend_may_record().
 * The BUSY guard is held while the thread's cursor is read and advanced, so
 * a signal handler that locks something in between passes through instead
 * of writing into the same words.
 */
CONTEND_INLINE void contend_emit(struct contend_thread *ts, uint32_t tag, const void *obj,
                                 const void *site, uint64_t t)
{
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    uint64_t *p = ts->cur;
    uint64_t dt = t - ts->last;
    if (CONTEND_LIKELY(p < ts->end && dt <= CONTEND_DT_MAX)) {
        int32_t oi = contend_index(contend_g.objects, (uint64_t)(uintptr_t)obj, 0);
        int32_t si = contend_index(contend_g.sites, (uint64_t)(uintptr_t)site, 1);
        if (CONTEND_LIKELY((oi | si) >= 0 && !ts->created)) {
            ts->cur = p + 1;
            ts->last = t;
            /* the head word is the whole record; release so that a reader
             * in another process never sees it before the table slots (a
             * non-temporal store is weakly ordered, but a slot is only
             * ever filled by a compare-and-swap, a full barrier, before
             * the first record that names it) */
            uint64_t head = contend_head(tag, dt, (uint32_t)oi, (uint32_t)si);
#if CONTEND_HAVE_TSC && defined(__x86_64__)
            if (CONTEND_UNLIKELY(contend_g.nt_stores))
                _mm_stream_si64((long long *)p, (long long)head);
            else
#endif
                __atomic_store_n(p, head, __ATOMIC_RELEASE);
            CONTEND_SIGNAL_FENCE();
            ts->guard = 0;
            return;
        }
    }
    contend_emit_slow(ts, tag, obj, site, t, 0);
}

/* A record with one extension word: narrow into the current chunk when it
 * fits (two words, the extension word stored before the head), else
 * through the slow path. The caller has checked contend_may_record(). */
CONTEND_INLINE void contend_emit_ext(struct contend_thread *ts, uint32_t tag, uint64_t ext,
                                     const void *obj, const void *site, uint64_t t, int first)
{
    if (CONTEND_LIKELY(!first || ts->countdown != 0)) {
        ts->guard = CONTEND_GUARD_BUSY;
        CONTEND_SIGNAL_FENCE();
        uint64_t *p = ts->cur;
        uint64_t dt = t - ts->last;
        if (CONTEND_LIKELY(p + 2 <= ts->end && dt <= CONTEND_DT_MAX)) {
            int32_t oi = contend_index(contend_g.objects, (uint64_t)(uintptr_t)obj, 0);
            int32_t si = contend_index(contend_g.sites, (uint64_t)(uintptr_t)site, 1);
            if (CONTEND_LIKELY((oi | si) >= 0 && !ts->created)) {
                if (first)
                    ts->countdown--;
                p[1] = ext;
                ts->cur = p + 2;
                ts->last = t;
                __atomic_store_n(p, contend_head(tag, dt, (uint32_t)oi, (uint32_t)si),
                                 __ATOMIC_RELEASE);
                CONTEND_SIGNAL_FENCE();
                ts->guard = 0;
                return;
            }
        }
        ts->guard = 0;
    }
    contend_emit_ext_slow(ts, tag, ext, obj, site, t, first);
}

/* The end of a thread that recorded something: a join RELEASE naming its
 * own pthread_t (join.c; trace_format.h, "Join records"), written when the
 * thread may record and does not hold the BUSY guard; `site` is the
 * return address into the C library's thread exit. */
CONTEND_HIDDEN void contend_join_exit(struct contend_thread *ts, const void *site);

/* In-situ cost sampling (sampling.c, docs/trace-format.md "Recording
 * cost"): one in CONTEND_SAMPLE_EVERY operations of a thread (a per-thread
 * countdown) goes through these instead, which time the collector's own
 * work on it and add the window to the current chunk's cost_samples. */
CONTEND_HIDDEN void contend_op_sampled(struct contend_thread *ts, uint32_t tag, const void *obj,
                                       const void *site, uint64_t t);
CONTEND_HIDDEN void contend_count_sampled(struct contend_thread *ts, uint32_t prim,
                                          const void *obj, const void *site);

/* The first record of an operation: counts operations for the stacks and
 * for the cost samples. `t` is the operation's timestamp, read after the
 * real call of an acquisition and before the real call of a release, so
 * a sampled window never holds the real call. */
CONTEND_INLINE void contend_op(struct contend_thread *ts, uint32_t tag, const void *obj,
                               const void *site, uint64_t t)
{
    if (CONTEND_UNLIKELY(ts->countdown-- == 0)) {
        contend_emit_stack(ts, tag, obj, site, t);
        return;
    }
    if (CONTEND_UNLIKELY(ts->sample_countdown-- == 0)) {
        contend_op_sampled(ts, tag, obj, site, t);
        return;
    }
    contend_emit(ts, tag, obj, site, t);
}

/* A later record of the same operation (ACQUIRED after REQUEST, ...):
 * skipped if the thread stopped recording meanwhile. */
CONTEND_INLINE void contend_emit2(struct contend_thread *ts, uint32_t tag, const void *obj,
                                  const void *site, uint64_t t)
{
    if (CONTEND_LIKELY(ts->guard == 0))
        contend_emit(ts, tag, obj, site, t);
}

/* ------------------------------------------------------------------------ */
/* The collector's own cost                                                  */

/* glibc's "the process has never had a second thread" flag (2.32 and
 * later; weak, so the collector still loads on an older libc). */
extern char __libc_single_threaded __attribute__((weak));

/* Whether the process has had one thread only (glibc's flag; 0 where
 * glibc has none, as if it had more): glibc's locks then take their
 * non-atomic paths, and so does the collector's mutex lock. */
CONTEND_INLINE int contend_process_single_threaded(void)
{
    return &__libc_single_threaded != NULL &&
           __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED);
}

/* The calling thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID: a system
 * call, for the slow path only). Time the thread was descheduled is not
 * in it, so a slow path interrupted by another process costs nothing. */
CONTEND_HIDDEN uint64_t contend_cpu_ns(void);

/* Adds the CPU time since `t0` (contend_cpu_ns()) to the collector's
 * slow-path total: the header's and, when the thread has a chunk, that
 * chunk's (docs/trace-format.md, "Recording cost"). */
CONTEND_HIDDEN void contend_cost_since(struct contend_thread *ts, uint64_t t0);

/* Adds `dt` ns to the collector's slow-path total (as contend_cost_since;
 * also to the thread's running total slow_ns). */
CONTEND_HIDDEN void contend_add_cost(struct contend_thread *ts, uint64_t dt);

/* Measures the time the fast path adds per record and, in light mode, per
 * counted pair (wrappers.c), into the header. Run once, by the
 * initialising thread, before recording starts. */
CONTEND_HIDDEN void contend_calibrate_cost(struct contend_thread *ts);

/* ------------------------------------------------------------------------ */
/* Light mode: counts                                                        */

/* Entry slot of (object, site) in a count table of `slots` entries. */
CONTEND_INLINE uint32_t contend_count_slot(uint64_t obj, uint64_t site, uint32_t slots)
{
    uint64_t h = (obj * 0x9E3779B97F4A7C15ull) ^ (site * 0xC2B2AE3D27D4EB4Full);
    return (uint32_t)(((h >> 32) * (uint64_t)slots) >> 32);
}

/* Everything that is not "the entry is at its slot": probing, inserting,
 * the first or a new COUNTS chunk; if no entry can be had, the acquisition
 * is recorded (IMMEDIATE) instead and remembered as a recorded hold.
 * Ends by clearing the BUSY guard bit. */
CONTEND_HIDDEN void contend_count_slow(struct contend_thread *ts, uint32_t prim, const void *obj,
                                       const void *site);

/* Light mode: counts one uncontended acquisition of `obj` at `site`. The
 * caller has checked contend_may_record(). */
CONTEND_INLINE void contend_count_op(struct contend_thread *ts, uint32_t prim, const void *obj,
                                     const void *site)
{
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    contend_count *t = ts->counts;
    if (CONTEND_LIKELY(t != NULL)) {
        uint64_t o = (uint64_t)(uintptr_t)obj, s = (uint64_t)(uintptr_t)site;
        contend_count *e = &t[contend_count_slot(o, s, ts->count_slots)];
        if (CONTEND_LIKELY(e->object == o && e->site == s)) {
            __atomic_store_n(&e->count, e->count + 1, __ATOMIC_RELAXED);
            ts->last_count = e;
            CONTEND_SIGNAL_FENCE();
            ts->guard = 0;
            return;
        }
    }
    contend_count_slow(ts, prim, obj, site);
}

/* Light mode: counts one uncontended acquisition, one in
 * CONTEND_SAMPLE_EVERY of the thread's operations timed (sampling.c). */
CONTEND_INLINE void contend_count_acq(struct contend_thread *ts, uint32_t prim, const void *obj,
                                  const void *site)
{
    if (CONTEND_UNLIKELY(ts->sample_countdown-- == 0)) {
        contend_count_sampled(ts, prim, obj, site);
        return;
    }
    contend_count_op(ts, prim, obj, site);
}

/* The in-situ sampling of the calibration: started before its first
 * round (its samples go to the calibration's own windows, not to a
 * chunk), told the end of each round (the round's mean windows are
 * kept), and ended after the last: stores the median of the rounds' mean
 * windows into the header (cost_window_*_ps). */
CONTEND_HIDDEN void contend_sampling_calibration_start(void);
/* The calibration's rounds (wrappers.c); each times every lock path (the
 * process-private and the process-shared mutex) once per mode, and only
 * the recorded and the counted pass of a path take windows, so each kind
 * of window gets one round per calibration round and path. */
#define CONTEND_CAL_ROUNDS 5
#define CONTEND_CAL_PATHS 2
#define CONTEND_CAL_WINDOW_ROUNDS (CONTEND_CAL_ROUNDS * CONTEND_CAL_PATHS)
CONTEND_HIDDEN void contend_sampling_round_end(void);
CONTEND_HIDDEN void contend_sampling_calibration_end(void);

/* Light mode: remembers that the thread's current hold of `lock` was
 * recorded (its release must be recorded too). */
CONTEND_INLINE void contend_held_push(struct contend_thread *ts, const void *lock)
{
    if (ts->held_n < CONTEND_HELD_MAX)
        ts->held[ts->held_n++] = lock;
}

/* Light mode: 1 if the thread's hold of `lock` was recorded (and forgets it). */
CONTEND_INLINE int contend_held_forget(struct contend_thread *ts, const void *lock)
{
    for (uint32_t i = ts->held_n; i-- > 0;) {
        if (ts->held[i] == lock) {
            ts->held[i] = ts->held[--ts->held_n];
            return 1;
        }
    }
    return 0;
}

/* Light mode: the hold of `lock` ends (its release): forgets it if it was
 * counted by call site, newest first, and returns the by-site entry it was
 * counted in (NULL if none, or if that entry did not move with a growing
 * table). */
CONTEND_INLINE contend_count *contend_by_site_forget(struct contend_thread *ts,
                                                     const void *lock)
{
    for (uint32_t i = ts->by_site_n; i-- > 0;) {
        if (ts->by_site_lock[i] == lock) {
            contend_count *e = ts->by_site_entry[i];
            uint32_t last = --ts->by_site_n;
            ts->by_site_lock[i] = ts->by_site_lock[last];
            ts->by_site_entry[i] = ts->by_site_entry[last];
            return e;
        }
    }
    return NULL;
}

/* Light mode: the release of `lock`, whose acquisition was counted, not
 * recorded, found waiters: takes the acquisition back out of its count
 * and records it (UNTIMED, at time `t`), so that the RELEASE recorded next
 * has its acquisition. Returns the primitive of the counted acquisition,
 * or 0 when none is found (acquired before recording began). The BUSY
 * guard must not be held; errno is kept. */
CONTEND_HIDDEN uint32_t contend_untimed(struct contend_thread *ts, const void *lock,
                                        uint64_t t);

/* Words that any one operation's records can take: TIME (2) + STACK
 * (1 + 64) + a wide record (3), plus a second record (cond waits). */
#define CONTEND_ROOM_WORDS 80u

/* Makes room for CONTEND_ROOM_WORDS words now: faults in more of the
 * chunk, or claims the next one (BUSY guard, errno saved). */
CONTEND_HIDDEN void contend_make_room(struct contend_thread *ts);

/* Called before the REQUEST timestamp of a blocking call, so that the
 * collector's own slow work is not counted as waiting time: makes room in
 * the chunk now (page faults, chunk claim), enters the object and site
 * into the tables (a new site may take a maps snapshot), and touches the
 * words the records will take (only matters where the kernel cannot
 * pre-fault; storing 0 over free words changes nothing). */
CONTEND_INLINE void contend_before_wait(struct contend_thread *ts, const void *obj,
                                        const void *site)
{
    if (CONTEND_UNLIKELY((uintptr_t)ts->end - (uintptr_t)ts->cur < CONTEND_ROOM_WORDS * 8u))
        contend_make_room(ts);
    if (CONTEND_LIKELY(ts->guard == 0)) {
        ts->guard = CONTEND_GUARD_BUSY;
        CONTEND_SIGNAL_FENCE();
        contend_index(contend_g.objects, (uint64_t)(uintptr_t)obj, 0);
        contend_index(contend_g.sites, (uint64_t)(uintptr_t)site, 1);
        __atomic_store_n(&ts->cur[0], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&ts->cur[CONTEND_ROOM_WORDS - 1], 0, __ATOMIC_RELAXED);
        CONTEND_SIGNAL_FENCE();
        ts->guard = 0;
        if (CONTEND_UNLIKELY(ts->created))
            contend_emit_first_use(ts, obj, site);
    }
}

/* Light mode: claims the thread's first COUNTS chunk now, once (BUSY
 * guard, errno saved, its time counted as the collector's). */
CONTEND_HIDDEN void contend_claim_counts_ahead(struct contend_thread *ts);

/* Light mode: gives the thread its first COUNTS chunk now, unless it has
 * one or has tried (before a lock is tried, or before a barrier wait:
 * wrappers.c). */
CONTEND_INLINE void contend_counts_ready(struct contend_thread *ts)
{
    if (CONTEND_UNLIKELY(ts->counts == NULL) && !ts->count_claim_tried)
        contend_claim_counts_ahead(ts);
}

/* Called before a lock is tried: makes room now for the records of an
 * acquisition that succeeds at once (light mode: claims the thread's first
 * COUNTS chunk), so that a chunk claim (writing the chunk's zeros, faulting
 * in its first pages, reading the thread's name: tens of µs) does not run
 * inside the program's critical section, where every thread waiting for
 * the lock would wait for it too. The default mode's test is the one the
 * record would make anyway, on the same cache line. */
CONTEND_INLINE void contend_ready_to_acquire(struct contend_thread *ts, int light)
{
    if (light) {
        contend_counts_ready(ts);
    } else if (CONTEND_UNLIKELY((uintptr_t)ts->end - (uintptr_t)ts->cur <
                                CONTEND_ROOM_WORDS * 8u)) {
        contend_make_room(ts);
    }
}

/* Clock points (collector.c), shared with the region recorder: one
 * instant on the trace clock and CLOCK_MONOTONIC/REALTIME, and on the
 * trace clock and CLOCK_MONOTONIC. */
CONTEND_HIDDEN void contend_clock_point(int tsc, uint64_t *ticks, uint64_t *mono,
                                        uint64_t *real);
CONTEND_HIDDEN void contend_clock_pair(int tsc, uint64_t *ticks, uint64_t *mono);

/* The collector's own system calls, past its syscall() interposer
 * (futex.c): the next syscall() in the chain, never recorded. */
CONTEND_HIDDEN long contend_syscall6(long nr, long a1, long a2, long a3, long a4, long a5,
                                     long a6);

/* True when this thread may record right now (the hot check). */
CONTEND_INLINE int contend_may_record(const struct contend_thread *ts)
{
    return __atomic_load_n(&contend_g.recording, __ATOMIC_ACQUIRE) & (ts->guard == 0) &
           (int)__atomic_load_n(contend_g.enabled, __ATOMIC_RELAXED);
}

/* Slow half of the check: lazy initialisation on a wrapper's first call.
 * Returns 1 if the thread may record now, 0 to pass through. */
CONTEND_HIDDEN int contend_prepare(struct contend_thread *ts);

/* ------------------------------------------------------------------------ */
/* OpenMP records (trace_format.h, "OpenMP records"), shared by the OMPT
 * tool (ompt.c) and the libgomp wrappers (gomp.c)                           */

/* Set once an OpenMP runtime initialised the OMPT tool (ompt.c); the
 * GOMP_* wrappers then pass straight through, so nothing is counted twice
 * (libomp exports the GOMP_* entry points too). */
CONTEND_HIDDEN extern int contend_ompt_active;

/* The object of a record whose parallel region is unknown (an object of 0
 * would be an empty table slot). */
#define CONTEND_OMP_NO_REGION ((const void *)(uintptr_t)UINT64_MAX)

/* Writes one OpenMP record now: `event` CONTEND_OMP_*, `kind` the OMPT
 * mutex or sync-region kind, `value` the 32-bit value; `first`: the first
 * record of the operation (as contend_emit_ext). Passes through when the
 * thread may not record; errno is kept. */
CONTEND_INLINE void contend_omp_record(uint32_t event, uint32_t kind, uint32_t value,
                                       const void *obj, const void *site, int first)
{
    struct contend_thread *ts = &contend_tls;
    if (!(CONTEND_LIKELY(contend_may_record(ts)) || contend_prepare(ts)))
        return;
    int saved = errno;
    uint64_t ext = (uint64_t)event | ((uint64_t)(kind & 0xffu) << 8) | ((uint64_t)value << 32);
    contend_emit_ext(ts, CONTEND_TAG_OMP, ext, obj, site, contend_now(), first);
    errno = saved;
}

/* ------------------------------------------------------------------------ */
/* Internals shared between collector.c and maps.c                           */

/* Maps snapshots (maps.c). */
CONTEND_HIDDEN int contend_maps_open(const char *path); /* creates/truncates */
CONTEND_HIDDEN void contend_maps_snapshot(void);
CONTEND_HIDDEN int contend_maps_covers(uint64_t addr);
CONTEND_HIDDEN void contend_maps_after_fork(void);

#endif /* CONTEND_COLLECTOR_H */
