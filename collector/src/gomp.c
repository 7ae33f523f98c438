/*
 * GCC's OpenMP runtime, libgomp, which has no OMPT (up to at least GCC
 * 13): its entry points, called by the code gcc and gfortran emit for
 * OpenMP constructs, are interposed here and write the same OpenMP records
 * as the OMPT tool (ompt.c; trace_format.h, "OpenMP records"), so one
 * analysis serves both runtimes:
 *
 *   GOMP_critical_start/end (unnamed critical), GOMP_critical_name_start/
 *     end (named: the object is the name's variable,
 *     `.gomp_critical_user_<name>.var`), GOMP_atomic_start/end, and
 *     omp_set/unset/test_lock and the nest-lock forms (C and Fortran, both
 *     symbol versions): mutex acquire / acquired / released, with the OMPT
 *     mutex kinds (lock 1, test_lock 2, nest_lock 3, test_nest_lock 4,
 *     critical 5, atomic 6); a nest lock re-acquired by its owner is no
 *     new acquisition (as in OMPT), only its outermost hold is recorded;
 *   GOMP_barrier, GOMP_barrier_cancel: a wait in a barrier (sync-region
 *     kind 1, "barrier": gcc emits GOMP_barrier both for `#pragma omp
 *     barrier` and for the implicit barrier of a static `for`, `single`,
 *     `sections`, which the call does not tell apart);
 *   GOMP_taskwait, GOMP_taskgroup_end: a wait in a taskwait (sync-region
 *     kind 5) or at the end of a taskgroup (kind 6), the tasks the thread
 *     runs meanwhile included (as OMPT's sync-region wait);
 *   GOMP_ordered_start/end: an ordered region (mutex kind 7, ordered) on
 *     one object per process, `libgomp_ordered`;
 *   GOMP_loop_end, GOMP_loop_end_cancel, GOMP_sections_end,
 *     GOMP_sections_end_cancel (the barrier at the end of a non-static
 *     `for` or of `sections` without nowait inside a parallel region): the
 *     thread's arrival at an implicit barrier of its region (kind 8,
 *     barrier_implicit_workshare), counted with the region's implicit
 *     barriers (the k-th arrival of every thread of a team is one
 *     barrier);
 *   GOMP_parallel, GOMP_parallel_loop_* (the combined `parallel for` forms
 *     of GOMP 4.0 and later), GOMP_parallel_sections,
 *     GOMP_parallel_reductions: the outlined function is replaced by
 *     `outlined`, which runs it between an implicit-task begin record and
 *     the thread's arrival at the region's implicit barrier (sync-region
 *     kind 9, barrier_implicit_parallel). The analysis takes each thread's
 *     wait there as the team's last arrival minus the thread's own: the
 *     load imbalance. The wrapper's frame holds the real function and its
 *     data: GOMP_parallel returns only after every thread of the team has
 *     passed the region's final barrier, so the frame outlives every use.
 *
 * Sites are the return addresses into the user's code. Parallel-region
 * instances are numbered from 1 (the object of their records); a thread's
 * current instance (thread-local) is the object of its barrier waits.
 *
 * Behaviour is kept: the real functions (dlsym(RTLD_NEXT), the symbol
 * version of the call; an OpenMP runtime loaded RTLD_LOCAL is found by its
 * soname with RTLD_NOLOAD) get the same arguments and give the same
 * results; errno is kept; nothing here allocates, locks or does IO after
 * the one-time lookup on the first call. The wrappers pass straight
 * through (no record) when the runtime behind them is LLVM's libomp
 * (which exports the GOMP_* entry points too and reports through OMPT),
 * once the OMPT tool was initialised, while the thread may not record,
 * and with CONTEND_GOMP=0. A program that calls none of them (no libgomp)
 * never reaches this file.
 *
 * Not wrapped: the GOMP 1.0 entry points GOMP_parallel_start/_end and
 * GOMP_parallel_loop_*_start (emitted only by gcc before 4.9), GOMP_teams,
 * GOMP_taskwait_depend, and the tasks themselves (creation, execution).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"

/* OMPT kinds (OpenMP 5.0, Section 4.4.4) */
enum {
    K_LOCK = 1,
    K_TEST_LOCK = 2,
    K_NEST_LOCK = 3,
    K_TEST_NEST_LOCK = 4,
    K_CRITICAL = 5,
    K_ATOMIC = 6,
};
enum { K_ORDERED = 7 };
enum {
    K_BARRIER = 1,
    K_TASKWAIT = 5,
    K_TASKGROUP = 6,
    K_BARRIER_IMPLICIT_WORKSHARE = 8,
    K_BARRIER_IMPLICIT_PARALLEL = 9
};

typedef void (*outlined_fn)(void *);

/* The next definitions. Written only by resolve(), read with relaxed
 * loads (another thread may still be resolving; it stores the same). */
static struct {
    void (*critical_start)(void);
    void (*critical_end)(void);
    void (*critical_name_start)(void **);
    void (*critical_name_end)(void **);
    void (*atomic_start)(void);
    void (*atomic_end)(void);
    void (*barrier)(void);
    bool (*barrier_cancel)(void);
    void (*taskwait)(void);
    void (*taskgroup_end)(void);
    void (*ordered_start)(void);
    void (*ordered_end)(void);
    void (*loop_end)(void);
    bool (*loop_end_cancel)(void);
    void (*sections_end)(void);
    bool (*sections_end_cancel)(void);
    void (*parallel)(outlined_fn, void *, unsigned, unsigned);
    unsigned (*parallel_reductions)(outlined_fn, void *, unsigned, unsigned);
    void (*parallel_sections)(outlined_fn, void *, unsigned, unsigned, unsigned);
    /* fn, data, num_threads, start, end, incr, chunk_size, flags */
    void (*loop_static)(outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_dynamic)(outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_guided)(outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_dynamic)(outlined_fn, void *, unsigned, long, long, long, long,
                                      unsigned);
    void (*loop_nonmonotonic_guided)(outlined_fn, void *, unsigned, long, long, long, long,
                                     unsigned);
    /* fn, data, num_threads, start, end, incr, flags */
    void (*loop_runtime)(outlined_fn, void *, unsigned, long, long, long, unsigned);
    void (*loop_nonmonotonic_runtime)(outlined_fn, void *, unsigned, long, long, long,
                                      unsigned);
    void (*loop_maybe_nonmonotonic_runtime)(outlined_fn, void *, unsigned, long, long, long,
                                            unsigned);
    int (*get_thread_num)(void);
    /* locks: [0] the OMP_1.0 version, [1] OMP_3.0; C and Fortran (_) */
    void (*set_lock[2])(void *);
    void (*unset_lock[2])(void *);
    int (*test_lock[2])(void *);
    void (*set_nest_lock[2])(void *);
    void (*unset_nest_lock[2])(void *);
    int (*test_nest_lock[2])(void *);
    void (*set_lock_f[2])(void *);
    void (*unset_lock_f[2])(void *);
    int32_t (*test_lock_f[2])(void *);
    void (*set_nest_lock_f[2])(void *);
    void (*unset_nest_lock_f[2])(void *);
    int32_t (*test_nest_lock_f[2])(void *);
} real;

#define MODE_UNRESOLVED 0
#define MODE_RECORD 1 /* libgomp: record                                 */
#define MODE_PASS 2   /* libomp (OMPT records it), CONTEND_GOMP=0: pass     */
static int mode;

/* Parallel-region instances (objects of the region's records). */
static uint64_t region_count;
/* The thread's current region instance (0: none). */
static _Thread_local uint64_t cur_region __attribute__((tls_model("initial-exec")));

/* Objects of the unnamed critical section and of the atomic lock (one
 * each in libgomp): named like gcc's variables of named critical
 * sections, so the analysis names them `(unnamed)` and `libgomp_atomic`. */
static char unnamed_critical __asm__(".gomp_critical_user_.var") __attribute__((used));
static char atomic_lock __asm__("libgomp_atomic") __attribute__((used));
/* The object of ordered regions (libgomp orders them per loop; one object
 * per process here, its rows split by site). */
static char ordered_lock __asm__("libgomp_ordered") __attribute__((used));

/* The object of the thread's barrier records: its region instance, or
 * CONTEND_OMP_NO_REGION outside any recorded region. */
CONTEND_INLINE const void *current_region(void)
{
    return cur_region ? (const void *)(uintptr_t)cur_region : CONTEND_OMP_NO_REGION;
}

/* Nest locks the thread holds, with their depth: only the outermost hold
 * is recorded. A lock that finds the table full is not recorded at all. */
#define NEST_MAX 8
static _Thread_local struct {
    const void *lock;
    uint32_t depth;
} nest[NEST_MAX] __attribute__((tls_model("initial-exec")));

/* Sonames of OpenMP runtimes, for one loaded RTLD_LOCAL (RTLD_NEXT does
 * not search local scopes). */
static const char *const RUNTIMES[] = {"libgomp.so.1", "libomp.so.5", "libomp.so",
                                       "libiomp5.so"};

static void *lookup(const char *name, const char *version)
{
    void *f = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
    for (size_t i = 0; !f && i < sizeof RUNTIMES / sizeof RUNTIMES[0]; i++) {
        void *h = dlopen(RUNTIMES[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = version ? dlvsym(h, name, version) : dlsym(h, name);
            dlclose(h);
        }
    }
    return f;
}

#define STORE(field, value) \
    __atomic_store_n(&real.field, (__typeof__(real.field))(value), __ATOMIC_RELAXED)
#define STORE_VERSIONS(field, name)                 \
    do {                                            \
        STORE(field[0], lookup(name, "OMP_1.0"));   \
        STORE(field[1], lookup(name, "OMP_3.0"));   \
    } while (0)

/* 1 when `f` lies in LLVM's libomp (or Intel's), which also exports the
 * GOMP_* entry points and reports through OMPT. */
static int in_libomp(void *f)
{
    void *kmp = dlsym(RTLD_DEFAULT, "__kmpc_fork_call");
    Dl_info a, b;
    return f && kmp && dladdr(f, &a) && dladdr(kmp, &b) && a.dli_fbase == b.dli_fbase;
}

static CONTEND_COLD int resolve(void)
{
    struct contend_thread *ts = &contend_tls;
    struct contend_saved saved = contend_enter(ts);
    STORE(critical_start, lookup("GOMP_critical_start", NULL));
    STORE(critical_end, lookup("GOMP_critical_end", NULL));
    STORE(critical_name_start, lookup("GOMP_critical_name_start", NULL));
    STORE(critical_name_end, lookup("GOMP_critical_name_end", NULL));
    STORE(atomic_start, lookup("GOMP_atomic_start", NULL));
    STORE(atomic_end, lookup("GOMP_atomic_end", NULL));
    STORE(barrier, lookup("GOMP_barrier", NULL));
    STORE(barrier_cancel, lookup("GOMP_barrier_cancel", NULL));
    STORE(taskwait, lookup("GOMP_taskwait", NULL));
    STORE(taskgroup_end, lookup("GOMP_taskgroup_end", NULL));
    STORE(ordered_start, lookup("GOMP_ordered_start", NULL));
    STORE(ordered_end, lookup("GOMP_ordered_end", NULL));
    STORE(loop_end, lookup("GOMP_loop_end", NULL));
    STORE(loop_end_cancel, lookup("GOMP_loop_end_cancel", NULL));
    STORE(sections_end, lookup("GOMP_sections_end", NULL));
    STORE(sections_end_cancel, lookup("GOMP_sections_end_cancel", NULL));
    STORE(parallel, lookup("GOMP_parallel", NULL));
    STORE(parallel_reductions, lookup("GOMP_parallel_reductions", NULL));
    STORE(parallel_sections, lookup("GOMP_parallel_sections", NULL));
    STORE(loop_static, lookup("GOMP_parallel_loop_static", NULL));
    STORE(loop_dynamic, lookup("GOMP_parallel_loop_dynamic", NULL));
    STORE(loop_guided, lookup("GOMP_parallel_loop_guided", NULL));
    STORE(loop_nonmonotonic_dynamic, lookup("GOMP_parallel_loop_nonmonotonic_dynamic", NULL));
    STORE(loop_nonmonotonic_guided, lookup("GOMP_parallel_loop_nonmonotonic_guided", NULL));
    STORE(loop_runtime, lookup("GOMP_parallel_loop_runtime", NULL));
    STORE(loop_nonmonotonic_runtime, lookup("GOMP_parallel_loop_nonmonotonic_runtime", NULL));
    STORE(loop_maybe_nonmonotonic_runtime,
          lookup("GOMP_parallel_loop_maybe_nonmonotonic_runtime", NULL));
    STORE(get_thread_num, lookup("omp_get_thread_num", NULL));
    STORE_VERSIONS(set_lock, "omp_set_lock");
    STORE_VERSIONS(unset_lock, "omp_unset_lock");
    STORE_VERSIONS(test_lock, "omp_test_lock");
    STORE_VERSIONS(set_nest_lock, "omp_set_nest_lock");
    STORE_VERSIONS(unset_nest_lock, "omp_unset_nest_lock");
    STORE_VERSIONS(test_nest_lock, "omp_test_nest_lock");
    STORE_VERSIONS(set_lock_f, "omp_set_lock_");
    STORE_VERSIONS(unset_lock_f, "omp_unset_lock_");
    STORE_VERSIONS(test_lock_f, "omp_test_lock_");
    STORE_VERSIONS(set_nest_lock_f, "omp_set_nest_lock_");
    STORE_VERSIONS(unset_nest_lock_f, "omp_unset_nest_lock_");
    STORE_VERSIONS(test_nest_lock_f, "omp_test_nest_lock_");
    const char *off = getenv("CONTEND_GOMP");
    int m = (off && strcmp(off, "0") == 0) || !real.get_thread_num ||
                    in_libomp((void *)real.critical_start) || in_libomp((void *)real.set_lock[1])
                ? MODE_PASS
                : MODE_RECORD;
    __atomic_store_n(&mode, m, __ATOMIC_RELEASE);
    contend_leave(ts, saved);
    return m;
}

/* The next definition of `field`, resolved on the first call. */
#define REAL(field)                                                                 \
    (CONTEND_UNLIKELY(__atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_UNRESOLVED) \
         ? (resolve(), real_or_die(real.field, #field))                            \
         : real_or_die(real.field, #field))

/* A call no runtime in the process defines (possible only through a weak
 * reference that the collector's definition satisfied): fails as the
 * dynamic linker would have, with a message. */
static CONTEND_COLD void missing(const char *what)
{
    contend_say("no OpenMP runtime in the process defines the function behind ", what,
                ": aborting");
    abort();
}
#define real_or_die(f, name) (CONTEND_LIKELY((f) != NULL) ? (f) : (missing(name), (f)))

/* True when this call records: libgomp behind the wrappers, no OMPT tool,
 * and the thread may record. Resolves on the first call. */
CONTEND_INLINE int recording(void)
{
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    if (CONTEND_UNLIKELY(m == MODE_UNRESOLVED))
        m = resolve();
    if (m != MODE_RECORD || __atomic_load_n(&contend_ompt_active, __ATOMIC_RELAXED))
        return 0;
    struct contend_thread *ts = &contend_tls;
    return CONTEND_LIKELY(contend_may_record(ts)) || contend_prepare(ts);
}

#define RECORD(event, kind, value, obj, site, first) \
    contend_omp_record(CONTEND_OMP_##event, (kind), (value), (obj), (site), (first))

/* Before a possibly blocking acquisition: the collector's own slow work
 * (chunk, tables) done now, outside the wait. */
CONTEND_INLINE void before_wait(const void *obj, const void *site)
{
    int saved = errno;
    contend_before_wait(&contend_tls, obj, site);
    errno = saved;
}

/* ---- mutexes ---- */

/* One acquisition of `obj`: acquire, the real call, acquired. */
#define ACQUIRE(kind, obj, site, call)                          \
    do {                                                        \
        if (!recording()) {                                     \
            call;                                               \
            break;                                              \
        }                                                       \
        before_wait((obj), (site));                             \
        RECORD(MUTEX_ACQUIRE, (kind), 0, (obj), (site), 1);     \
        call;                                                   \
        RECORD(MUTEX_ACQUIRED, (kind), 0, (obj), (site), 0);    \
    } while (0)

#define RELEASE(kind, obj, site, call)                       \
    do {                                                     \
        int rec_ = recording();                              \
        call;                                                \
        if (rec_)                                            \
            RECORD(MUTEX_RELEASED, (kind), 0, (obj), (site), 1); \
    } while (0)

CONTEND_EXPORT void GOMP_critical_start(void)
{
    void (*f)(void) = REAL(critical_start);
    ACQUIRE(K_CRITICAL, &unnamed_critical, __builtin_return_address(0), f());
}

CONTEND_EXPORT void GOMP_critical_end(void)
{
    void (*f)(void) = REAL(critical_end);
    RELEASE(K_CRITICAL, &unnamed_critical, __builtin_return_address(0), f());
}

CONTEND_EXPORT void GOMP_critical_name_start(void **pptr)
{
    void (*f)(void **) = REAL(critical_name_start);
    ACQUIRE(K_CRITICAL, pptr, __builtin_return_address(0), f(pptr));
}

CONTEND_EXPORT void GOMP_critical_name_end(void **pptr)
{
    void (*f)(void **) = REAL(critical_name_end);
    RELEASE(K_CRITICAL, pptr, __builtin_return_address(0), f(pptr));
}

CONTEND_EXPORT void GOMP_atomic_start(void)
{
    void (*f)(void) = REAL(atomic_start);
    ACQUIRE(K_ATOMIC, &atomic_lock, __builtin_return_address(0), f());
}

CONTEND_EXPORT void GOMP_atomic_end(void)
{
    void (*f)(void) = REAL(atomic_end);
    RELEASE(K_ATOMIC, &atomic_lock, __builtin_return_address(0), f());
}

/* ---- OpenMP locks ---- */

static void set_lock(void (*f)(void *), void *lock, const void *site)
{
    ACQUIRE(K_LOCK, lock, site, f(lock));
}

static void unset_lock(void (*f)(void *), void *lock, const void *site)
{
    RELEASE(K_LOCK, lock, site, f(lock));
}

/* omp_test_lock: an acquisition only when it succeeds (a failed test
 * leaves an acquire without acquired, as in OMPT). */
static int test_lock(int (*f)(void *), void *lock, const void *site)
{
    if (!recording())
        return f(lock);
    RECORD(MUTEX_ACQUIRE, K_TEST_LOCK, 0, lock, site, 1);
    int r = f(lock);
    if (r) {
        int e = errno;
        RECORD(MUTEX_ACQUIRED, K_TEST_LOCK, 0, lock, site, 0);
        errno = e;
    }
    return r;
}

/* The thread's entry of `lock` in nest[], or -1. */
static int nest_find(const void *lock)
{
    for (int i = 0; i < NEST_MAX; i++)
        if (nest[i].lock == lock && nest[i].depth)
            return i;
    return -1;
}

static void nest_push(const void *lock)
{
    for (int i = 0; i < NEST_MAX; i++)
        if (!nest[i].depth) {
            nest[i].lock = lock;
            nest[i].depth = 1;
            return;
        }
}

static int nest_room(void)
{
    for (int i = 0; i < NEST_MAX; i++)
        if (!nest[i].depth)
            return 1;
    return 0;
}

static void set_nest_lock(void (*f)(void *), void *lock, const void *site)
{
    int i = nest_find(lock);
    if (i >= 0) { /* the owner again: no acquisition */
        f(lock);
        nest[i].depth++;
        return;
    }
    if (!nest_room() || !recording()) {
        f(lock);
        return;
    }
    before_wait(lock, site);
    RECORD(MUTEX_ACQUIRE, K_NEST_LOCK, 0, lock, site, 1);
    f(lock);
    RECORD(MUTEX_ACQUIRED, K_NEST_LOCK, 0, lock, site, 0);
    nest_push(lock);
}

static void unset_nest_lock(void (*f)(void *), void *lock, const void *site)
{
    int i = nest_find(lock);
    f(lock);
    if (i < 0 || --nest[i].depth)
        return;
    int e = errno;
    RECORD(MUTEX_RELEASED, K_NEST_LOCK, 0, lock, site, 1);
    errno = e;
}

/* omp_test_nest_lock: the new nesting count, 0 if not acquired. */
static int test_nest_lock(int (*f)(void *), void *lock, const void *site)
{
    int i = nest_find(lock);
    if (i >= 0) {
        int r = f(lock);
        if (r)
            nest[i].depth++;
        return r;
    }
    if (!nest_room() || !recording())
        return f(lock);
    RECORD(MUTEX_ACQUIRE, K_TEST_NEST_LOCK, 0, lock, site, 1);
    int r = f(lock);
    if (r) {
        int e = errno;
        RECORD(MUTEX_ACQUIRED, K_TEST_NEST_LOCK, 0, lock, site, 0);
        errno = e;
        nest_push(lock);
    }
    return r;
}

/* Each lock function twice (the symbol versions OMP_1.0 and OMP_3.0 of
 * libgomp; the nest locks of the two differ in layout, so each forwards
 * to its own version), in C and in Fortran (trailing _, the lock by
 * reference; the test functions return a 32-bit logical). */
#define LOCK_VERSIONS(sym, impl, field, ret, R)                                       \
    __asm__(".symver contend_gomp_" #sym "_10, " #sym "@OMP_1.0");                     \
    __asm__(".symver contend_gomp_" #sym "_30, " #sym "@@OMP_3.0");                    \
    CONTEND_EXPORT ret contend_gomp_##sym##_10(void *lock);                            \
    CONTEND_EXPORT ret contend_gomp_##sym##_30(void *lock);                            \
    ret contend_gomp_##sym##_10(void *lock)                                            \
    {                                                                                  \
        R impl((__typeof__(real.field[0]))REAL(field[0]), lock,                        \
               __builtin_return_address(0));                                           \
    }                                                                                  \
    ret contend_gomp_##sym##_30(void *lock)                                            \
    {                                                                                  \
        R impl((__typeof__(real.field[1]))REAL(field[1]), lock,                        \
               __builtin_return_address(0));                                           \
    }

#define AS_VOID /* nothing */
#define AS_RETURN return

LOCK_VERSIONS(omp_set_lock, set_lock, set_lock, void, AS_VOID)
LOCK_VERSIONS(omp_unset_lock, unset_lock, unset_lock, void, AS_VOID)
LOCK_VERSIONS(omp_test_lock, test_lock, test_lock, int, AS_RETURN)
LOCK_VERSIONS(omp_set_nest_lock, set_nest_lock, set_nest_lock, void, AS_VOID)
LOCK_VERSIONS(omp_unset_nest_lock, unset_nest_lock, unset_nest_lock, void, AS_VOID)
LOCK_VERSIONS(omp_test_nest_lock, test_nest_lock, test_nest_lock, int, AS_RETURN)
LOCK_VERSIONS(omp_set_lock_, set_lock, set_lock_f, void, AS_VOID)
LOCK_VERSIONS(omp_unset_lock_, unset_lock, unset_lock_f, void, AS_VOID)
LOCK_VERSIONS(omp_test_lock_, (int32_t)test_lock, test_lock_f, int32_t, AS_RETURN)
LOCK_VERSIONS(omp_set_nest_lock_, set_nest_lock, set_nest_lock_f, void, AS_VOID)
LOCK_VERSIONS(omp_unset_nest_lock_, unset_nest_lock, unset_nest_lock_f, void, AS_VOID)
LOCK_VERSIONS(omp_test_nest_lock_, (int32_t)test_nest_lock, test_nest_lock_f, int32_t,
              AS_RETURN)

/* ---- barriers ---- */

CONTEND_EXPORT void GOMP_barrier(void)
{
    void (*f)(void) = REAL(barrier);
    if (!recording()) {
        f();
        return;
    }
    const void *site = __builtin_return_address(0);
    const void *obj = current_region();
    before_wait(obj, site);
    RECORD(SYNC_WAIT_BEGIN, K_BARRIER, 0, obj, site, 1);
    f();
    RECORD(SYNC_WAIT_END, K_BARRIER, 0, obj, site, 0);
}

CONTEND_EXPORT bool GOMP_barrier_cancel(void)
{
    bool (*f)(void) = REAL(barrier_cancel);
    if (!recording())
        return f();
    const void *site = __builtin_return_address(0);
    const void *obj = current_region();
    before_wait(obj, site);
    RECORD(SYNC_WAIT_BEGIN, K_BARRIER, 0, obj, site, 1);
    bool r = f();
    int e = errno;
    RECORD(SYNC_WAIT_END, K_BARRIER, 0, obj, site, 0);
    errno = e;
    return r;
}

/* A wait of sync-region kind `kind` around the real call `call` (a
 * statement; its result, if any, assigned there); the object is the
 * thread's region instance. */
#define SYNC_WAIT(kind, call)                                   \
    do {                                                        \
        if (!recording()) {                                     \
            call;                                               \
            break;                                              \
        }                                                       \
        const void *site_ = __builtin_return_address(0);        \
        const void *obj_ = current_region();                    \
        before_wait(obj_, site_);                               \
        RECORD(SYNC_WAIT_BEGIN, (kind), 0, obj_, site_, 1);     \
        call;                                                   \
        int e_ = errno;                                         \
        RECORD(SYNC_WAIT_END, (kind), 0, obj_, site_, 0);       \
        errno = e_;                                             \
    } while (0)

CONTEND_EXPORT void GOMP_taskwait(void)
{
    void (*f)(void) = REAL(taskwait);
    SYNC_WAIT(K_TASKWAIT, f());
}

CONTEND_EXPORT void GOMP_taskgroup_end(void)
{
    void (*f)(void) = REAL(taskgroup_end);
    SYNC_WAIT(K_TASKGROUP, f());
}

/* The barrier at the end of a worksharing construct without nowait: an
 * arrival at an implicit barrier of the thread's region. */
CONTEND_EXPORT void GOMP_loop_end(void)
{
    void (*f)(void) = REAL(loop_end);
    SYNC_WAIT(K_BARRIER_IMPLICIT_WORKSHARE, f());
}

CONTEND_EXPORT bool GOMP_loop_end_cancel(void)
{
    bool (*f)(void) = REAL(loop_end_cancel);
    bool r = false;
    SYNC_WAIT(K_BARRIER_IMPLICIT_WORKSHARE, r = f());
    return r;
}

CONTEND_EXPORT void GOMP_sections_end(void)
{
    void (*f)(void) = REAL(sections_end);
    SYNC_WAIT(K_BARRIER_IMPLICIT_WORKSHARE, f());
}

CONTEND_EXPORT bool GOMP_sections_end_cancel(void)
{
    bool (*f)(void) = REAL(sections_end_cancel);
    bool r = false;
    SYNC_WAIT(K_BARRIER_IMPLICIT_WORKSHARE, r = f());
    return r;
}

/* ---- ordered ---- */

CONTEND_EXPORT void GOMP_ordered_start(void)
{
    void (*f)(void) = REAL(ordered_start);
    ACQUIRE(K_ORDERED, &ordered_lock, __builtin_return_address(0), f());
}

CONTEND_EXPORT void GOMP_ordered_end(void)
{
    void (*f)(void) = REAL(ordered_end);
    RELEASE(K_ORDERED, &ordered_lock, __builtin_return_address(0), f());
}

/* ---- parallel regions ---- */

/* What the team's threads run instead of the outlined function; lives in
 * the frame of the encountering thread's GOMP_parallel* call. */
struct region {
    outlined_fn fn;
    void *data;
    uint64_t id;
    const void *site;
};

static void outlined(void *p)
{
    const struct region *r = p;
    outlined_fn fn = r->fn;
    void *data = r->data;
    uint64_t id = r->id;
    const void *site = r->site;
    const void *obj = (const void *)(uintptr_t)id;
    uint64_t outer = cur_region;
    cur_region = id;
    int e = errno;
    uint32_t number = (uint32_t)real.get_thread_num();
    errno = e;
    RECORD(TASK_BEGIN, 0, number, obj, site, 1);
    fn(data);
    /* the end of the thread's work: its arrival at the implicit barrier */
    e = errno;
    RECORD(SYNC_WAIT_BEGIN, K_BARRIER_IMPLICIT_PARALLEL, 0, obj, site, 1);
    errno = e;
    cur_region = outer;
}

/* Starts a region: numbers it, records its begin; 0 when not recording
 * (the call then passes the user's function through). */
CONTEND_INLINE int region_begin(struct region *r, outlined_fn fn, void *data,
                                unsigned num_threads, const void *site)
{
    if (!recording())
        return 0;
    r->fn = fn;
    r->data = data;
    r->site = site;
    r->id = __atomic_add_fetch(&region_count, 1, __ATOMIC_RELAXED);
    RECORD(PARALLEL_BEGIN, 0, num_threads, (const void *)(uintptr_t)r->id, site, 1);
    return 1;
}

/* After the region: the encountering thread left the implicit barrier,
 * the region ended. */
CONTEND_INLINE void region_end(const struct region *r)
{
    int e = errno;
    const void *obj = (const void *)(uintptr_t)r->id;
    RECORD(SYNC_WAIT_END, K_BARRIER_IMPLICIT_PARALLEL, 0, obj, r->site, 0);
    RECORD(PARALLEL_END, 0, 0, obj, r->site, 0);
    errno = e;
}

CONTEND_EXPORT void GOMP_parallel(outlined_fn fn, void *data, unsigned num_threads,
                                  unsigned flags)
{
    __typeof__(real.parallel) f = REAL(parallel);
    struct region r;
    if (!region_begin(&r, fn, data, num_threads, __builtin_return_address(0))) {
        f(fn, data, num_threads, flags);
        return;
    }
    f(outlined, &r, num_threads, flags);
    region_end(&r);
}

CONTEND_EXPORT unsigned GOMP_parallel_reductions(outlined_fn fn, void *data,
                                                 unsigned num_threads, unsigned flags)
{
    __typeof__(real.parallel_reductions) f = REAL(parallel_reductions);
    struct region r;
    if (!region_begin(&r, fn, data, num_threads, __builtin_return_address(0)))
        return f(fn, data, num_threads, flags);
    unsigned n = f(outlined, &r, num_threads, flags);
    region_end(&r);
    return n;
}

CONTEND_EXPORT void GOMP_parallel_sections(outlined_fn fn, void *data, unsigned num_threads,
                                           unsigned count, unsigned flags)
{
    __typeof__(real.parallel_sections) f = REAL(parallel_sections);
    struct region r;
    if (!region_begin(&r, fn, data, num_threads, __builtin_return_address(0))) {
        f(fn, data, num_threads, count, flags);
        return;
    }
    f(outlined, &r, num_threads, count, flags);
    region_end(&r);
}

#define PARALLEL_LOOP(name, field)                                                      \
    CONTEND_EXPORT void name(outlined_fn fn, void *data, unsigned num_threads, long start, \
                             long end, long incr, long chunk_size, unsigned flags)      \
    {                                                                                   \
        __typeof__(real.field) f = REAL(field);                                         \
        struct region r;                                                                \
        if (!region_begin(&r, fn, data, num_threads, __builtin_return_address(0))) {    \
            f(fn, data, num_threads, start, end, incr, chunk_size, flags);              \
            return;                                                                     \
        }                                                                               \
        f(outlined, &r, num_threads, start, end, incr, chunk_size, flags);              \
        region_end(&r);                                                                 \
    }

#define PARALLEL_LOOP_RUNTIME(name, field)                                              \
    CONTEND_EXPORT void name(outlined_fn fn, void *data, unsigned num_threads, long start, \
                             long end, long incr, unsigned flags)                       \
    {                                                                                   \
        __typeof__(real.field) f = REAL(field);                                         \
        struct region r;                                                                \
        if (!region_begin(&r, fn, data, num_threads, __builtin_return_address(0))) {    \
            f(fn, data, num_threads, start, end, incr, flags);                          \
            return;                                                                     \
        }                                                                               \
        f(outlined, &r, num_threads, start, end, incr, flags);                          \
        region_end(&r);                                                                 \
    }

PARALLEL_LOOP(GOMP_parallel_loop_static, loop_static)
PARALLEL_LOOP(GOMP_parallel_loop_dynamic, loop_dynamic)
PARALLEL_LOOP(GOMP_parallel_loop_guided, loop_guided)
PARALLEL_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic, loop_nonmonotonic_dynamic)
PARALLEL_LOOP(GOMP_parallel_loop_nonmonotonic_guided, loop_nonmonotonic_guided)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_runtime, loop_runtime)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime, loop_nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime,
                      loop_maybe_nonmonotonic_runtime)
