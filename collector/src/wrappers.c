/*
 * The interposed functions.
 *
 * Every wrapper:
 *   - takes its call site from its own return address (the caller's
 *     instruction after the call);
 *   - checks, with one TLS byte and one global, whether it may record
 *     (contend_may_record); if not, contend_prepare() runs the lazy
 *     initialisation on the very first call and otherwise the call passes
 *     straight through;
 *   - passes return values and errno through unchanged.
 *
 * Mapping to records (docs/trace-format.md, "How the wrappers map calls to
 * records"): blocking acquisitions try the real try-lock first (mutrace
 * style) and record IMMEDIATE when it succeeds; only when it is busy do they
 * record REQUEST, call the real blocking function and record ACQUIRED,
 * BUSY (timeout) or ERROR. Releases record RELEASE before the real call;
 * a release that then fails (EPERM, ...) is followed by an ERROR record.
 *
 * Light mode (contend_g.light, `contend record --light`): an acquisition
 * that succeeds at once is only counted per (object, call site) and thread
 * (contend_count_acq), without a timestamp; everything that waits is
 * recorded as in the default mode, and so is the release of every hold
 * whose acquisition was recorded. A release that finds waiters is always
 * recorded with the time after the real call too (RELEASED: the wake
 * cost), in both modes; in light mode, when its hold was only counted, the
 * count is taken back and the acquisition recorded as UNTIMED first.
 *
 * Where glibc checks arguments before it would try the lock (clock ids,
 * tv_nsec of rwlock and semaphore timeouts), the wrapper makes the same
 * check first and, if it fails, goes straight to the real call, so a bad
 * argument still yields EINVAL even when the lock is free.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/mman.h>

#include "collector.h"
#include "contend/raw_mm.h"

/* The pass-through fallbacks before the real_* pointers exist: glibc's own
 * aliases. glibc 2.34 moved libpthread into libc and left them as compat
 * symbols (no default version), so they can only be bound by version; the
 * .symver must sit in the object file that references them. */
__asm__(".symver contend_libc_mutex_lock, __pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver contend_libc_mutex_trylock, __pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver contend_libc_mutex_unlock, __pthread_mutex_unlock@GLIBC_2.2.5");
__asm__(".symver contend_libc_rwlock_rdlock, __pthread_rwlock_rdlock@GLIBC_2.2.5");
__asm__(".symver contend_libc_rwlock_wrlock, __pthread_rwlock_wrlock@GLIBC_2.2.5");
__asm__(".symver contend_libc_rwlock_tryrdlock, __pthread_rwlock_tryrdlock@GLIBC_2.2.5");
__asm__(".symver contend_libc_rwlock_trywrlock, __pthread_rwlock_trywrlock@GLIBC_2.2.5");
__asm__(".symver contend_libc_rwlock_unlock, __pthread_rwlock_unlock@GLIBC_2.2.5");

#define TAG(prim, phase) CONTEND_OP_TAG(CONTEND_PRIM_##prim, CONTEND_PHASE_##phase)

/* A robust mutex whose owner died is acquired with EOWNERDEAD. */
#define ACQUIRED(r) ((r) == 0 || (r) == EOWNERDEAD)

#define PASS_SEM(field, name, ...)                                               \
    do {                                                                         \
        __typeof__(contend_real.field) f_ = CONTEND_REAL(field);                 \
        if (CONTEND_UNLIKELY(!f_))                                               \
            f_ = (__typeof__(f_))contend_resolve_one(name, NULL);                \
        if (CONTEND_UNLIKELY(!f_)) {                                             \
            errno = ENOSYS;                                                      \
            return -1;                                                           \
        }                                                                        \
        return f_(__VA_ARGS__);                                                  \
    } while (0)

/* The clocks glibc's futex waits accept (futex_abstimed_supported_clockid). */
static inline int clock_ok(clockid_t clk)
{
    return clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC;
}

static inline int nsec_ok(const struct timespec *ts)
{
    return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

/* glibc's rwlock timeout check: only when abstime is given (NULL waits
 * without a timeout), clock and nanoseconds before trying. */
static inline int rw_timeout_ok(clockid_t clk, const struct timespec *abstime)
{
    return !abstime || (clock_ok(clk) && nsec_ok(abstime));
}

/* ======================================================================== */
/* Mutexes                                                                   */

/*
 * Robust mutexes are not tried first: glibc's pthread_mutex_trylock on a
 * robust mutex that has become not recoverable returns ENOTRECOVERABLE but
 * leaves the lock word owned by the caller (it compares the CAS result, 0,
 * with the tid before unlocking), so the real lock that would follow would
 * then wait forever instead of returning ENOTRECOVERABLE. Their
 * acquisitions are recorded as REQUEST + ACQUIRED around the real call.
 * The flag is PTHREAD_MUTEX_ROBUST_NORMAL_NP of glibc's pthreadP.h, set in
 * __data.__kind by pthread_mutex_init and never changed.
 */
#define GLIBC_MUTEX_KIND_ROBUST 16
#define GLIBC_MUTEX_KIND_PI 32
#define GLIBC_MUTEX_KIND_PSHARED 128
#define FUTEX_WAITERS_BIT 0x80000000u

CONTEND_INLINE int mutex_try_first(const pthread_mutex_t *m)
{
    return !(__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) & GLIBC_MUTEX_KIND_ROBUST);
}

/*
 * While the process has never had a second thread, glibc locks and
 * unlocks a private mutex without atomic instructions, but its try-lock
 * always uses one. No other thread can hold a private, non-robust mutex
 * then, so the real lock cannot wait for anybody (only deadlock on the
 * caller itself, or return an error, as it would unrecorded): call it
 * instead of trying first, and record its outcome.
 */
CONTEND_INLINE int mutex_single_threaded(const pthread_mutex_t *m)
{
    return contend_process_single_threaded() &&
           !(__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) &
             (GLIBC_MUTEX_KIND_ROBUST | GLIBC_MUTEX_KIND_PSHARED));
}

/*
 * Whether unlocking `m` now wakes a waiter: glibc's lock word is 2 while
 * threads may be waiting (lll_lock; the low bits of a priority-protected
 * mutex), and has FUTEX_WAITERS set for robust and priority-inheriting
 * mutexes, whose word is the owner's tid.
 */
CONTEND_INLINE int mutex_has_waiters(const pthread_mutex_t *m)
{
    unsigned w = (unsigned)__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
    if (CONTEND_UNLIKELY(__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) &
                         (GLIBC_MUTEX_KIND_ROBUST | GLIBC_MUTEX_KIND_PI)))
        return (w & FUTEX_WAITERS_BIT) != 0;
    return (w & 3u) == 2u;
}

/* The blocking half: the try-lock was busy (or failed otherwise; the real
 * call then returns its own error). kind: 0 lock, 1 timedlock, 2 clocklock */
static CONTEND_NOINLINE int mutex_block(struct contend_thread *ts, pthread_mutex_t *m,
                                        const void *site, int kind, clockid_t clk,
                                        const struct timespec *abstime)
{
    contend_before_wait(ts, m, site);
    contend_op(ts, TAG(MUTEX, REQUEST), m, site, contend_now());
    int r;
    if (kind == 0)
        r = CONTEND_REAL(mutex_lock)(m);
    else if (kind == 1)
        r = CONTEND_REAL(mutex_timedlock)(m, abstime);
    else
        r = CONTEND_REAL(mutex_clocklock)(m, clk, abstime);
    uint32_t tag = ACQUIRED(r)       ? TAG(MUTEX, ACQUIRED)
                   : r == ETIMEDOUT ? TAG(MUTEX, BUSY)
                                    : TAG(MUTEX, ERROR);
    if (ACQUIRED(r) && contend_g.light)
        contend_held_push(ts, m);
    contend_emit2(ts, tag, m, site, contend_now());
    return r;
}

/* An acquisition that succeeded at once: counted in light mode, else
 * recorded (IMMEDIATE). */
CONTEND_INLINE void acquired_at_once(struct contend_thread *ts, uint32_t prim, const void *obj,
                                     const void *site, int light)
{
    if (light)
        contend_count_acq(ts, prim, obj, site);
    else
        contend_op(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_IMMEDIATE), obj, site, contend_now());
}

/* The single-threaded lock: the real lock itself, then its outcome. */
static CONTEND_NOINLINE int mutex_lock_alone_failed(struct contend_thread *ts,
                                                    pthread_mutex_t *m, const void *site, int r)
{
    uint64_t t = contend_now();
    if (ACQUIRED(r)) { /* EOWNERDEAD cannot come here (not robust) */
        if (contend_g.light)
            contend_held_push(ts, m);
        contend_op(ts, TAG(MUTEX, IMMEDIATE), m, site, t);
    } else {
        contend_op(ts, TAG(MUTEX, ERROR), m, site, t);
    }
    return r;
}

/* pthread_mutex_lock while recording; `light` is contend_g.light (a
 * constant where the calibration inlines this). */
CONTEND_INLINE int mutex_lock_recording(struct contend_thread *ts, pthread_mutex_t *m,
                                        const void *site, int light)
{
    if (mutex_single_threaded(m)) {
        int r = CONTEND_REAL(mutex_lock)(m);
        if (CONTEND_LIKELY(r == 0)) {
            acquired_at_once(ts, CONTEND_PRIM_MUTEX, m, site, light);
            return 0;
        }
        return mutex_lock_alone_failed(ts, m, site, r);
    }
    contend_ready_to_acquire(ts, light);
    if (CONTEND_LIKELY(mutex_try_first(m))) {
        int r = CONTEND_REAL(mutex_trylock)(m);
        if (CONTEND_LIKELY(r == 0)) {
            acquired_at_once(ts, CONTEND_PRIM_MUTEX, m, site, light);
            return 0;
        }
    }
    return mutex_block(ts, m, site, 0, 0, NULL);
}

/* The unlock of a hold that must be recorded in light mode (`recorded`:
 * its acquisition was; else it was counted and the unlock finds waiters). */
static CONTEND_NOINLINE int mutex_unlock_light_slow(struct contend_thread *ts,
                                                    pthread_mutex_t *m, const void *site,
                                                    int recorded, int waiters)
{
    uint64_t t = contend_now();
    if (!recorded)
        contend_untimed(ts, m, t);
    contend_op(ts, TAG(MUTEX, RELEASE), m, site, t);
    int r = CONTEND_REAL(mutex_unlock)(m);
    if (waiters && r == 0)
        contend_emit2(ts, TAG(MUTEX, RELEASED), m, site, contend_now());
    if (CONTEND_UNLIKELY(r != 0))
        contend_emit2(ts, TAG(MUTEX, ERROR), m, site, contend_now());
    return r;
}

/* pthread_mutex_unlock while recording. */
CONTEND_INLINE int mutex_unlock_recording(struct contend_thread *ts, pthread_mutex_t *m,
                                          const void *site, int light)
{
    int waiters = mutex_has_waiters(m);
    if (light) {
        int recorded = ts->held_n != 0 && contend_held_forget(ts, m);
        if (CONTEND_LIKELY(!recorded && !waiters)) {
            if (CONTEND_UNLIKELY(ts->by_site_n != 0))
                contend_by_site_forget(ts, m);
            return CONTEND_REAL(mutex_unlock)(m);
        }
        return mutex_unlock_light_slow(ts, m, site, recorded, waiters);
    }
    contend_op(ts, TAG(MUTEX, RELEASE), m, site, contend_now());
    int r = CONTEND_REAL(mutex_unlock)(m);
    if (CONTEND_UNLIKELY(waiters) && r == 0)
        contend_emit2(ts, TAG(MUTEX, RELEASED), m, site, contend_now());
    if (CONTEND_UNLIKELY(r != 0))
        contend_emit2(ts, TAG(MUTEX, ERROR), m, site, contend_now());
    return r;
}

CONTEND_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts))
        return mutex_lock_recording(ts, m, site, contend_g.light);
    int (*f)(pthread_mutex_t *) = CONTEND_REAL(mutex_lock);
    return f ? f(m) : contend_libc_mutex_lock(m);
}

CONTEND_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts)) {
        contend_ready_to_acquire(ts, contend_g.light);
        int r = CONTEND_REAL(mutex_trylock)(m);
        if (r == 0 && contend_g.light) {
            contend_count_acq(ts, CONTEND_PRIM_MUTEX, m, site);
            return r;
        }
        uint32_t tag = ACQUIRED(r) ? TAG(MUTEX, IMMEDIATE)
                       : r == EBUSY ? TAG(MUTEX, BUSY)
                                    : TAG(MUTEX, ERROR);
        if (ACQUIRED(r) && contend_g.light)
            contend_held_push(ts, m); /* EOWNERDEAD: recorded */
        contend_op(ts, tag, m, site, contend_now());
        return r;
    }
    int (*f)(pthread_mutex_t *) = CONTEND_REAL(mutex_trylock);
    return f ? f(m) : contend_libc_mutex_trylock(m);
}

CONTEND_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(mutex_timedlock)) {
        contend_ready_to_acquire(ts, contend_g.light);
        /* glibc checks abstime only when it has to block: try first */
        if (mutex_try_first(m) && CONTEND_REAL(mutex_trylock)(m) == 0) {
            acquired_at_once(ts, CONTEND_PRIM_MUTEX, m, site, contend_g.light);
            return 0;
        }
        return mutex_block(ts, m, site, 1, 0, abstime);
    }
    PASS_PTHREAD(mutex_timedlock, "pthread_mutex_timedlock", NULL, m, abstime);
}

CONTEND_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk,
                                           const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(mutex_clocklock)) {
        contend_ready_to_acquire(ts, contend_g.light);
        /* glibc rejects an unsupported clock before trying the lock */
        if (clock_ok(clk) && mutex_try_first(m) && CONTEND_REAL(mutex_trylock)(m) == 0) {
            acquired_at_once(ts, CONTEND_PRIM_MUTEX, m, site, contend_g.light);
            return 0;
        }
        return mutex_block(ts, m, site, 2, clk, abstime);
    }
    PASS_PTHREAD(mutex_clocklock, "pthread_mutex_clocklock", NULL, m, clk, abstime);
}

CONTEND_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts))
        return mutex_unlock_recording(ts, m, site, contend_g.light);
    int (*f)(pthread_mutex_t *) = CONTEND_REAL(mutex_unlock);
    return f ? f(m) : contend_libc_mutex_unlock(m);
}

/* ======================================================================== */
/* Read-write locks                                                          */

/*
 * pthread_rwlock_unlock does not say whether it ends a read or a write hold,
 * but the RELEASE record must (primitive RWLOCK_READ or RWLOCK_WRITE). Each
 * thread keeps a small fixed array of the rwlocks it currently holds and in
 * which mode, filled by successful (recorded) acquisitions and emptied by
 * unlocks. An rwlock not found there (more than CONTEND_RW_HELD_MAX held at
 * once, or acquired while recording was off) is released as READ.
 */
CONTEND_INLINE void rw_remember(struct contend_thread *ts, const void *rw, uintptr_t write)
{
    uint32_t n = ts->rw_n;
    if (n < CONTEND_RW_HELD_MAX) {
        ts->rw[n].lock = rw;
        ts->rw[n].write = write;
        ts->rw_n = n + 1;
    }
}

CONTEND_INLINE uint32_t rw_forget(struct contend_thread *ts, const void *rw)
{
    for (uint32_t i = ts->rw_n; i-- > 0;) {
        if (ts->rw[i].lock == rw) {
            uint32_t prim =
                ts->rw[i].write ? CONTEND_PRIM_RWLOCK_WRITE : CONTEND_PRIM_RWLOCK_READ;
            ts->rw[i] = ts->rw[--ts->rw_n];
            return prim;
        }
    }
    return CONTEND_PRIM_RWLOCK_READ;
}

/* kind: 0 plain, 1 timed, 2 clock */
static CONTEND_NOINLINE int rwlock_block(struct contend_thread *ts, pthread_rwlock_t *rw,
                                         const void *site, int write, int kind, clockid_t clk,
                                         const struct timespec *abstime)
{
    uint32_t prim = write ? CONTEND_PRIM_RWLOCK_WRITE : CONTEND_PRIM_RWLOCK_READ;
    contend_before_wait(ts, rw, site);
    contend_op(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_REQUEST), rw, site, contend_now());
    int r;
    if (write)
        r = kind == 0   ? CONTEND_REAL(rwlock_wrlock)(rw)
            : kind == 1 ? CONTEND_REAL(rwlock_timedwrlock)(rw, abstime)
                        : CONTEND_REAL(rwlock_clockwrlock)(rw, clk, abstime);
    else
        r = kind == 0   ? CONTEND_REAL(rwlock_rdlock)(rw)
            : kind == 1 ? CONTEND_REAL(rwlock_timedrdlock)(rw, abstime)
                        : CONTEND_REAL(rwlock_clockrdlock)(rw, clk, abstime);
    uint32_t phase = r == 0           ? CONTEND_PHASE_ACQUIRED
                     : r == ETIMEDOUT ? CONTEND_PHASE_BUSY
                                      : CONTEND_PHASE_ERROR;
    if (r == 0) {
        rw_remember(ts, rw, (uintptr_t)write);
        if (contend_g.light)
            contend_held_push(ts, rw);
    }
    contend_emit2(ts, CONTEND_OP_TAG(prim, phase), rw, site, contend_now());
    return r;
}

/*
 * Whether unlocking `rw` now may wake a waiter (glibc's rwlock: readers
 * waiting for a write phase to end set PTHREAD_RWLOCK_RWAITING (4) in
 * __readers; waiting writers set the futex-used bit 31 of __writers_futex
 * or __wrphase_futex).
 */
CONTEND_INLINE int rwlock_has_waiters(const pthread_rwlock_t *rw)
{
    unsigned r = __atomic_load_n(&rw->__data.__readers, __ATOMIC_RELAXED);
    unsigned wf = __atomic_load_n(&rw->__data.__writers_futex, __ATOMIC_RELAXED);
    unsigned pf = __atomic_load_n(&rw->__data.__wrphase_futex, __ATOMIC_RELAXED);
    return ((r & 4u) | ((wf | pf) & FUTEX_WAITERS_BIT)) != 0;
}

/* The try-first part shared by all acquisitions; `check` false means glibc
 * would reject the arguments before trying (go straight to the real call). */
CONTEND_INLINE int rwlock_acquire(struct contend_thread *ts, pthread_rwlock_t *rw,
                                  const void *site, int write, int kind, clockid_t clk,
                                  const struct timespec *abstime, int check)
{
    if (check) {
        contend_ready_to_acquire(ts, contend_g.light);
        int r = write ? CONTEND_REAL(rwlock_trywrlock)(rw) : CONTEND_REAL(rwlock_tryrdlock)(rw);
        if (CONTEND_LIKELY(r == 0)) {
            uint32_t prim = write ? CONTEND_PRIM_RWLOCK_WRITE : CONTEND_PRIM_RWLOCK_READ;
            if (contend_g.light) {
                contend_count_acq(ts, prim, rw, site);
                return 0;
            }
            rw_remember(ts, rw, (uintptr_t)write);
            contend_op(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_IMMEDIATE), rw, site,
                       contend_now());
            return 0;
        }
    }
    return rwlock_block(ts, rw, site, write, kind, clk, abstime);
}

CONTEND_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts))
        return rwlock_acquire(ts, rw, site, 0, 0, 0, NULL, 1);
    int (*f)(pthread_rwlock_t *) = CONTEND_REAL(rwlock_rdlock);
    return f ? f(rw) : contend_libc_rwlock_rdlock(rw);
}

CONTEND_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts))
        return rwlock_acquire(ts, rw, site, 1, 0, 0, NULL, 1);
    int (*f)(pthread_rwlock_t *) = CONTEND_REAL(rwlock_wrlock);
    return f ? f(rw) : contend_libc_rwlock_wrlock(rw);
}

static inline int rwlock_try(struct contend_thread *ts, pthread_rwlock_t *rw, const void *site,
                             int write)
{
    contend_ready_to_acquire(ts, contend_g.light);
    int r = write ? CONTEND_REAL(rwlock_trywrlock)(rw) : CONTEND_REAL(rwlock_tryrdlock)(rw);
    uint32_t prim = write ? CONTEND_PRIM_RWLOCK_WRITE : CONTEND_PRIM_RWLOCK_READ;
    uint32_t phase = r == 0       ? CONTEND_PHASE_IMMEDIATE
                     : r == EBUSY ? CONTEND_PHASE_BUSY
                                  : CONTEND_PHASE_ERROR;
    if (r == 0 && contend_g.light) {
        contend_count_acq(ts, prim, rw, site);
        return r;
    }
    if (r == 0)
        rw_remember(ts, rw, (uintptr_t)write);
    contend_op(ts, CONTEND_OP_TAG(prim, phase), rw, site, contend_now());
    return r;
}

CONTEND_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts))
        return rwlock_try(ts, rw, site, 0);
    int (*f)(pthread_rwlock_t *) = CONTEND_REAL(rwlock_tryrdlock);
    return f ? f(rw) : contend_libc_rwlock_tryrdlock(rw);
}

CONTEND_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts))
        return rwlock_try(ts, rw, site, 1);
    int (*f)(pthread_rwlock_t *) = CONTEND_REAL(rwlock_trywrlock);
    return f ? f(rw) : contend_libc_rwlock_trywrlock(rw);
}

CONTEND_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
                                              const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(rwlock_timedrdlock))
        return rwlock_acquire(ts, rw, site, 0, 1, CLOCK_REALTIME, abstime,
                              rw_timeout_ok(CLOCK_REALTIME, abstime));
    PASS_PTHREAD(rwlock_timedrdlock, "pthread_rwlock_timedrdlock", NULL, rw, abstime);
}

CONTEND_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
                                              const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(rwlock_timedwrlock))
        return rwlock_acquire(ts, rw, site, 1, 1, CLOCK_REALTIME, abstime,
                              rw_timeout_ok(CLOCK_REALTIME, abstime));
    PASS_PTHREAD(rwlock_timedwrlock, "pthread_rwlock_timedwrlock", NULL, rw, abstime);
}

CONTEND_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clk,
                                              const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(rwlock_clockrdlock))
        return rwlock_acquire(ts, rw, site, 0, 2, clk, abstime, rw_timeout_ok(clk, abstime));
    PASS_PTHREAD(rwlock_clockrdlock, "pthread_rwlock_clockrdlock", NULL, rw, clk, abstime);
}

CONTEND_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clk,
                                              const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(rwlock_clockwrlock))
        return rwlock_acquire(ts, rw, site, 1, 2, clk, abstime, rw_timeout_ok(clk, abstime));
    PASS_PTHREAD(rwlock_clockwrlock, "pthread_rwlock_clockwrlock", NULL, rw, clk, abstime);
}

CONTEND_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts)) {
        int waiters = rwlock_has_waiters(rw);
        uint32_t prim;
        uint64_t t;
        if (contend_g.light) {
            int recorded = ts->held_n != 0 && contend_held_forget(ts, rw);
            if (CONTEND_LIKELY(!recorded && !waiters)) {
                if (CONTEND_UNLIKELY(ts->by_site_n != 0))
                    contend_by_site_forget(ts, rw);
                return CONTEND_REAL(rwlock_unlock)(rw);
            }
            t = contend_now();
            prim = recorded ? rw_forget(ts, rw) : contend_untimed(ts, rw, t);
            if (!prim)
                prim = rw_forget(ts, rw);
        } else {
            prim = rw_forget(ts, rw);
            t = contend_now();
        }
        contend_op(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_RELEASE), rw, site, t);
        int r = CONTEND_REAL(rwlock_unlock)(rw);
        if (CONTEND_UNLIKELY(waiters) && r == 0)
            contend_emit2(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_RELEASED), rw, site,
                          contend_now());
        if (CONTEND_UNLIKELY(r != 0))
            contend_emit2(ts, CONTEND_OP_TAG(prim, CONTEND_PHASE_ERROR), rw, site,
                          contend_now());
        return r;
    }
    int (*f)(pthread_rwlock_t *) = CONTEND_REAL(rwlock_unlock);
    return f ? f(rw) : contend_libc_rwlock_unlock(rw);
}

/* ======================================================================== */
/* Spinlocks                                                                 */

static CONTEND_NOINLINE int spin_block(struct contend_thread *ts, pthread_spinlock_t *s,
                                       const void *site)
{
    contend_before_wait(ts, (const void *)s, site);
    contend_op(ts, TAG(SPIN, REQUEST), (const void *)s, site, contend_now());
    int r = CONTEND_REAL(spin_lock)(s);
    if (r == 0 && contend_g.light)
        contend_held_push(ts, (const void *)s);
    contend_emit2(ts, r == 0 ? TAG(SPIN, ACQUIRED) : TAG(SPIN, ERROR), (const void *)s, site,
                  contend_now());
    return r;
}

CONTEND_EXPORT int pthread_spin_lock(pthread_spinlock_t *s)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts)) {
        contend_ready_to_acquire(ts, contend_g.light);
        int r = CONTEND_REAL(spin_trylock)(s);
        if (CONTEND_LIKELY(r == 0)) {
            acquired_at_once(ts, CONTEND_PRIM_SPIN, (const void *)s, site, contend_g.light);
            return 0;
        }
        return spin_block(ts, s, site);
    }
    PASS_PTHREAD(spin_lock, "pthread_spin_lock", NULL, s);
}

CONTEND_EXPORT int pthread_spin_trylock(pthread_spinlock_t *s)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts)) {
        contend_ready_to_acquire(ts, contend_g.light);
        int r = CONTEND_REAL(spin_trylock)(s);
        if (r == 0 && contend_g.light) {
            contend_count_acq(ts, CONTEND_PRIM_SPIN, (const void *)s, site);
            return r;
        }
        uint32_t tag = r == 0       ? TAG(SPIN, IMMEDIATE)
                       : r == EBUSY ? TAG(SPIN, BUSY)
                                    : TAG(SPIN, ERROR);
        contend_op(ts, tag, (const void *)s, site, contend_now());
        return r;
    }
    PASS_PTHREAD(spin_trylock, "pthread_spin_trylock", NULL, s);
}

CONTEND_EXPORT int pthread_spin_unlock(pthread_spinlock_t *s)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts)) {
        /* light mode: a spinner cannot be seen, so only the release of a
         * recorded hold is recorded */
        if (contend_g.light &&
            CONTEND_LIKELY(ts->held_n == 0 || !contend_held_forget(ts, (const void *)s)))
            return CONTEND_REAL(spin_unlock)(s);
        contend_op(ts, TAG(SPIN, RELEASE), (const void *)s, site, contend_now());
        int r = CONTEND_REAL(spin_unlock)(s);
        if (CONTEND_UNLIKELY(r != 0))
            contend_emit2(ts, TAG(SPIN, ERROR), (const void *)s, site, contend_now());
        return r;
    }
    PASS_PTHREAD(spin_unlock, "pthread_spin_unlock", NULL, s);
}

/* ======================================================================== */
/* Condition variables                                                       */

/*
 * wait(c, m): RELEASE m and REQUEST c at entry; at return ACQUIRED c (BUSY
 * on timeout, ERROR otherwise) and IMMEDIATE m when glibc holds m again.
 * glibc re-acquires m inside the wait, so that waiting time is part of the
 * condition wait. Errors: EINVAL is returned before m is released and
 * EOVERFLOW after it is re-acquired (m held); EPERM (m not owned) and
 * ENOTRECOVERABLE leave m not held.
 *
 * A thread cancelled in the wait holds m again when its cleanup handlers
 * run; ours records ERROR c and IMMEDIATE m.
 */
struct cond_ctx {
    struct contend_thread *ts;
    pthread_cond_t *c;
    pthread_mutex_t *m;
    const void *site;
};

CONTEND_INLINE void cond_enter(const struct cond_ctx *x)
{
    contend_before_wait(x->ts, x->c, x->site);
    uint64_t t = contend_now();
    /* light mode: a counted hold of m ends here; record its acquisition
     * (UNTIMED) so that the RELEASE that ties m to the wait has it */
    if (contend_g.light && !contend_held_forget(x->ts, x->m))
        contend_untimed(x->ts, x->m, t);
    contend_op(x->ts, TAG(MUTEX, RELEASE), x->m, x->site, t);
    contend_emit2(x->ts, TAG(COND, REQUEST), x->c, x->site, t);
}

static void cond_leave(const struct cond_ctx *x, int r)
{
    uint64_t t = contend_now();
    uint32_t tag = ACQUIRED(r)       ? TAG(COND, ACQUIRED)
                   : r == ETIMEDOUT ? TAG(COND, BUSY)
                                    : TAG(COND, ERROR);
    contend_emit2(x->ts, tag, x->c, x->site, t);
    if (r != EPERM && r != ENOTRECOVERABLE) {
        if (contend_g.light)
            contend_held_push(x->ts, x->m);
        contend_emit2(x->ts, TAG(MUTEX, IMMEDIATE), x->m, x->site, t);
    }
}

static void cond_cancelled(void *arg)
{
    cond_leave(arg, ECANCELED);
}

/* One body for the five condition-wait entry points. */
#define COND_WAIT_BODY(field, name, version, ...)                                \
    const void *site = SITE();                                                   \
    struct contend_thread *ts = &contend_tls;                                    \
    if (RECORDING(ts) && CONTEND_REAL(field)) {                                  \
        struct cond_ctx x = {ts, c, m, site};                                    \
        int r;                                                                   \
        cond_enter(&x);                                                          \
        pthread_cleanup_push(cond_cancelled, &x);                                \
        r = CONTEND_REAL(field)(__VA_ARGS__);                                    \
        pthread_cleanup_pop(0);                                                  \
        cond_leave(&x, r);                                                       \
        return r;                                                                \
    }                                                                            \
    PASS_PTHREAD(field, name, version, __VA_ARGS__)

/*
 * glibc exports pthread_cond_wait and pthread_cond_timedwait in two
 * versions: GLIBC_2.3.2 (the default, current ABI) and GLIBC_2.2.5 (the
 * old ABI, used by old binaries). Both are interposed; each forwards to
 * the same version (dlvsym in real.c). The version nodes are declared in
 * lock_collector.map.
 */
__asm__(".symver contend_cond_wait_232, pthread_cond_wait@@GLIBC_2.3.2");
__asm__(".symver contend_cond_wait_225, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver contend_cond_timedwait_232, pthread_cond_timedwait@@GLIBC_2.3.2");
__asm__(".symver contend_cond_timedwait_225, pthread_cond_timedwait@GLIBC_2.2.5");

CONTEND_EXPORT int contend_cond_wait_232(pthread_cond_t *c, pthread_mutex_t *m);
CONTEND_EXPORT int contend_cond_wait_225(pthread_cond_t *c, pthread_mutex_t *m);
CONTEND_EXPORT int contend_cond_timedwait_232(pthread_cond_t *c, pthread_mutex_t *m,
                                              const struct timespec *abstime);
CONTEND_EXPORT int contend_cond_timedwait_225(pthread_cond_t *c, pthread_mutex_t *m,
                                              const struct timespec *abstime);

int contend_cond_wait_232(pthread_cond_t *c, pthread_mutex_t *m)
{
    COND_WAIT_BODY(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2", c, m);
}

int contend_cond_wait_225(pthread_cond_t *c, pthread_mutex_t *m)
{
    COND_WAIT_BODY(cond_wait_old, "pthread_cond_wait", "GLIBC_2.2.5", c, m);
}

int contend_cond_timedwait_232(pthread_cond_t *c, pthread_mutex_t *m,
                               const struct timespec *abstime)
{
    COND_WAIT_BODY(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2", c, m, abstime);
}

int contend_cond_timedwait_225(pthread_cond_t *c, pthread_mutex_t *m,
                               const struct timespec *abstime)
{
    COND_WAIT_BODY(cond_timedwait_old, "pthread_cond_timedwait", "GLIBC_2.2.5", c, m,
                   abstime);
}

CONTEND_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                          const struct timespec *abstime)
{
    COND_WAIT_BODY(cond_clockwait, "pthread_cond_clockwait", NULL, c, m, clk, abstime);
}

/* ======================================================================== */
/* Barriers                                                                  */

CONTEND_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(barrier_wait)) {
        /* Light mode: a thread that waits at a barrier before its first
         * lock call (workers started together) claims its first COUNTS
         * chunk here, about to block, instead of in that first lock call
         * right after the barrier, where all the threads it releases
         * would claim theirs at once while they run (docs/benchmarks.md,
         * "Light mode's count table claimed at the barrier"). A condition
         * wait needs no such step: its thread took the mutex through
         * pthread_mutex_lock, which claimed the table. */
        if (contend_g.light)
            contend_counts_ready(ts);
        contend_before_wait(ts, b, site);
        contend_op(ts, TAG(BARRIER, REQUEST), b, site, contend_now());
        int r = CONTEND_REAL(barrier_wait)(b);
        uint32_t tag = (r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD) ? TAG(BARRIER, ACQUIRED)
                                                                      : TAG(BARRIER, ERROR);
        contend_emit2(ts, tag, b, site, contend_now());
        return r;
    }
    PASS_PTHREAD(barrier_wait, "pthread_barrier_wait", NULL, b);
}

/* ======================================================================== */
/* Semaphores (these report errors through errno)                            */

struct sem_ctx {
    struct contend_thread *ts;
    sem_t *s;
    const void *site;
};

static void sem_cancelled(void *arg)
{
    const struct sem_ctx *x = arg;
    contend_emit2(x->ts, TAG(SEM, ERROR), x->s, x->site, contend_now());
}

/* kind: 0 wait, 1 timedwait, 2 clockwait */
static CONTEND_NOINLINE int sem_block(struct contend_thread *ts, sem_t *s, const void *site,
                                      int kind, clockid_t clk, const struct timespec *abstime)
{
    struct sem_ctx x = {ts, s, site};
    int r;
    contend_before_wait(ts, s, site);
    contend_op(ts, TAG(SEM, REQUEST), s, site, contend_now());
    pthread_cleanup_push(sem_cancelled, &x);
    if (kind == 0)
        r = CONTEND_REAL(sem_wait)(s);
    else if (kind == 1)
        r = CONTEND_REAL(sem_timedwait)(s, abstime);
    else
        r = CONTEND_REAL(sem_clockwait)(s, clk, abstime);
    pthread_cleanup_pop(0);
    int e = errno;
    uint32_t tag = r == 0           ? TAG(SEM, ACQUIRED)
                   : e == ETIMEDOUT ? TAG(SEM, BUSY)
                                    : TAG(SEM, ERROR);
    contend_emit2(ts, tag, s, site, contend_now());
    errno = e;
    return r;
}

/* Whether a sem_post now may wake a waiter: glibc's 64-bit semaphore word
 * holds the value in its low and the number of waiters in its high 32
 * bits (struct new_sem). */
CONTEND_INLINE int sem_has_waiters(sem_t *s)
{
    uint64_t data;
    memcpy(&data, s, sizeof data); /* sem_t is 8-byte aligned */
    return (data >> 32) != 0;
}

/* sem_trywait first, leaving errno as it was when the semaphore is busy. */
CONTEND_INLINE int sem_try_first(struct contend_thread *ts, sem_t *s, const void *site)
{
    contend_ready_to_acquire(ts, contend_g.light);
    int saved = errno;
    if (CONTEND_REAL(sem_trywait)(s) == 0) {
        acquired_at_once(ts, CONTEND_PRIM_SEM, s, site, contend_g.light);
        return 1;
    }
    errno = saved;
    return 0;
}

CONTEND_EXPORT int sem_wait(sem_t *s)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(sem_wait)) {
        /* glibc's sem_wait acts on a pending cancellation even when the
         * semaphore is available: so do we, before trying */
        pthread_testcancel();
        if (sem_try_first(ts, s, site))
            return 0;
        return sem_block(ts, s, site, 0, 0, NULL);
    }
    PASS_SEM(sem_wait, "sem_wait", s);
}

CONTEND_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(sem_timedwait)) {
        /* glibc's order: abstime check (EINVAL), cancellation point, try */
        if (nsec_ok(abstime)) {
            pthread_testcancel();
            if (sem_try_first(ts, s, site))
                return 0;
        }
        return sem_block(ts, s, site, 1, 0, abstime);
    }
    PASS_SEM(sem_timedwait, "sem_timedwait", s, abstime);
}

CONTEND_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(sem_clockwait)) {
        /* glibc's order: clock and abstime checks (EINVAL), then try */
        if (clock_ok(clk) && nsec_ok(abstime) && sem_try_first(ts, s, site))
            return 0;
        return sem_block(ts, s, site, 2, clk, abstime);
    }
    PASS_SEM(sem_clockwait, "sem_clockwait", s, clk, abstime);
}

CONTEND_EXPORT int sem_trywait(sem_t *s)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts)) {
        contend_ready_to_acquire(ts, contend_g.light);
        int r = CONTEND_REAL(sem_trywait)(s);
        int e = errno;
        if (r == 0 && contend_g.light) {
            contend_count_acq(ts, CONTEND_PRIM_SEM, s, site);
            errno = e;
            return r;
        }
        uint32_t tag = r == 0        ? TAG(SEM, IMMEDIATE)
                       : e == EAGAIN ? TAG(SEM, BUSY)
                                     : TAG(SEM, ERROR);
        contend_op(ts, tag, s, site, contend_now());
        errno = e;
        return r;
    }
    PASS_SEM(sem_trywait, "sem_trywait", s);
}

CONTEND_EXPORT int sem_post(sem_t *s)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(sem_post)) {
        int waiters = sem_has_waiters(s);
        /* light mode: a post matters only when it may wake a waiter */
        if (contend_g.light && CONTEND_LIKELY(!waiters))
            return CONTEND_REAL(sem_post)(s);
        contend_op(ts, TAG(SEM, RELEASE), s, site, contend_now());
        int r = CONTEND_REAL(sem_post)(s);
        int e = errno;
        if (CONTEND_UNLIKELY(waiters) && r == 0)
            contend_emit2(ts, TAG(SEM, RELEASED), s, site, contend_now());
        if (CONTEND_UNLIKELY(r != 0))
            contend_emit2(ts, TAG(SEM, ERROR), s, site, contend_now());
        errno = e;
        return r;
    }
    PASS_SEM(sem_post, "sem_post", s);
}

/* ======================================================================== */
/* Calibration of the collector's own cost                                   */

/*
 * Measures, once, in the process being recorded, what the fast path adds
 * to an uncontended lock + unlock pair: the pair through the very code of
 * pthread_mutex_lock/unlock above (inlined here) against glibc's lock +
 * unlock of the same mutex, what the program would call unrecorded; and
 * the wrapper's own entry (the call through the exported symbol, the TLS
 * access and the check, which inlining leaves out) as the same pair
 * through the exported wrappers passing through, against glibc's: it is
 * added once per call to both costs. Records go to a private
 * scratch buffer in place of the thread's chunk, so the trace gets none;
 * the two table slots the scratch mutex and site took are emptied again.
 * Rounds alternate, and the fastest round of each kind counts, so that a
 * round disturbed by another process does not. Stored in the header:
 * cost_record_ps (half a recorded pair: one timed record), cost_count_ps
 * in light mode (one counted pair), calibration_ns. Page faults and chunk
 * claims are not part of it: the slow path measures its own time as it
 * runs (collector_ns).
 *
 * Both paths a lock takes are measured. The process is single-threaded
 * here, so on a private mutex glibc locks and unlocks without atomic
 * instructions and the collector takes its single-threaded path
 * (mutex_single_threaded); once the process has a second thread, both
 * use atomic instructions and the collector tries first. A
 * process-shared mutex takes the latter paths while the process is
 * single-threaded (glibc tests the PSHARED bit before its
 * __libc_single_threaded), so the same rounds on one give the
 * multi-threaded figures (cost_record_mt_ps, cost_count_mt_ps). On the
 * AMD guest of docs/benchmarks.md glibc's pair was 2.3 ns one way and
 * 10.7 ns the other, and the single-threaded figure alone overstated a
 * multi-threaded program's cost per pair by about 8 ns.
 *
 * Runs in contend_init with recording not yet on (other threads pass
 * through), so nobody else writes the tables meanwhile.
 */
#define CAL_PAIRS 1000u

static pthread_mutex_t cal_mutex = PTHREAD_MUTEX_INITIALIZER;
/* process-shared, as pthread_mutex_init with PTHREAD_PROCESS_SHARED leaves
 * it (glibc: the PSHARED bit in __kind; nobody else ever maps it) */
static pthread_mutex_t cal_mutex_shared = {.__data = {.__kind = GLIBC_MUTEX_KIND_PSHARED}};

static void forget_slot(uint64_t *table, uint64_t addr)
{
    uint32_t slot = contend_hash(addr);
    for (int i = 0; i < 32; i++, slot = (slot + 1) & 0xffffu) {
        if (__atomic_load_n(&table[slot], __ATOMIC_RELAXED) == addr) {
            __atomic_store_n(&table[slot], 0, __ATOMIC_RELAXED);
            return;
        }
    }
}

/* ns per pair of one round of `kind`: 0 glibc's lock + unlock, 1
 * recorded, 2 counted (light), 3 through the exported wrappers, passing
 * through (the wrapper's entry: the call, the TLS access and the check,
 * which the inlined kinds 1 and 2 leave out). */
static CONTEND_NOINLINE uint64_t cal_round(struct contend_thread *ts, pthread_mutex_t *m, int kind,
                                           uint64_t *scratch, const void *site)
{
    int (*lock)(pthread_mutex_t *) = CONTEND_REAL(mutex_lock);
    int (*unlock)(pthread_mutex_t *) = CONTEND_REAL(mutex_unlock);
    ts->cur = scratch;
    ts->last = contend_now();
    uint64_t t0 = contend_monotonic_ns();
    if (kind == 0) {
        for (unsigned i = 0; i < CAL_PAIRS; i++) {
            lock(m);
            unlock(m);
        }
    } else if (kind == 1) {
        for (unsigned i = 0; i < CAL_PAIRS; i++) {
            mutex_lock_recording(ts, m, site, 0);
            mutex_unlock_recording(ts, m, site, 0);
        }
    } else if (kind == 2) {
        for (unsigned i = 0; i < CAL_PAIRS; i++) {
            mutex_lock_recording(ts, m, site, 1);
            mutex_unlock_recording(ts, m, site, 1);
        }
    } else {
        /* called as the program calls them, through a pointer; the BUSY
         * guard makes them pass straight through */
        int (*volatile wl)(pthread_mutex_t *) = pthread_mutex_lock;
        int (*volatile wu)(pthread_mutex_t *) = pthread_mutex_unlock;
        uint8_t guard = ts->guard;
        ts->guard = CONTEND_GUARD_BUSY;
        for (unsigned i = 0; i < CAL_PAIRS; i++) {
            wl(m);
            wu(m);
        }
        ts->guard = guard;
    }
    return contend_monotonic_ns() - t0;
}

void contend_calibrate_cost(struct contend_thread *ts)
{
    contend_trace_header *h = contend_g.hdr;
    uint64_t start = contend_monotonic_ns();
    /* records: 2 words a pair; counts: one table; all faulted in now */
    size_t words = 2 * CAL_PAIRS + 2 * CONTEND_ROOM_WORDS;
    size_t count_slots = 64;
    size_t len = words * 8 + count_slots * sizeof(contend_count);
    len = (len + 4095) & ~(size_t)4095;
    void *mem = contend_raw_mmap(NULL, len, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED)
        return;
    uint64_t *scratch = mem;
    contend_count *counts = (contend_count *)(scratch + words);

    struct contend_thread saved = *ts;
    ts->guard = 0;
    ts->countdown = UINT32_MAX; /* no stacks */
    ts->chunk = NULL;           /* no slow-path time into a chunk */
    ts->end = ts->chunk_end = scratch + words;
    ts->count_chunk = NULL;
    ts->counts = counts;
    ts->count_slots = (uint32_t)count_slots;
    ts->count_used = 0;
    ts->count_locks = 0;
    ts->last_count = NULL;
    ts->by_site_n = 0;
    ts->held_n = 0;
    const void *site = (const void *)(uintptr_t)&contend_calibrate_cost;

    /* [0] the private mutex (single-threaded paths), [1] the shared one */
    _Static_assert(CONTEND_CAL_PATHS == 2, "the header keeps a figure for each of the two paths");
    uint64_t best[CONTEND_CAL_PATHS][4];
    for (int p = 0; p < CONTEND_CAL_PATHS; p++)
        for (int k = 0; k < 4; k++)
            best[p][k] = UINT64_MAX;
    pthread_mutex_t *mutexes[CONTEND_CAL_PATHS] = {&cal_mutex, &cal_mutex_shared};
    int light = contend_g.light;
    /* the in-situ sampling runs as in the program; its windows here, on
     * hot caches, are what it sees of cost_record_ps and cost_count_ps */
    ts->sample_countdown = 0;
    contend_sampling_calibration_start();
    for (int round = 0; round < CONTEND_CAL_ROUNDS; round++) {
        for (int p = 0; p < CONTEND_CAL_PATHS; p++) {
            for (int k = 0; k < 4; k++) {
                if (k == 2 && !light)
                    continue;
                uint64_t ns = cal_round(ts, mutexes[p], k, scratch, site);
                contend_sampling_round_end();
                if (ns < best[p][k])
                    best[p][k] = ns;
            }
        }
    }

    /* the median of the rounds' windows (sampling.c) */
    contend_sampling_calibration_end();
    *ts = saved;
    forget_slot(contend_g.objects, (uint64_t)(uintptr_t)&cal_mutex);
    forget_slot(contend_g.objects, (uint64_t)(uintptr_t)&cal_mutex_shared);
    forget_slot(contend_g.sites, (uint64_t)(uintptr_t)site);
    contend_raw_munmap(mem, len);

    uint32_t rec_ps[CONTEND_CAL_PATHS], cnt_ps[CONTEND_CAL_PATHS];
    for (int p = 0; p < CONTEND_CAL_PATHS; p++) {
        const uint64_t *b = best[p];
        /* ps: ns per round * 1000 / pairs; a record is half a recorded pair */
        /* the wrapper's entry, per call: added to both (a pair is two calls) */
        uint64_t entry = b[3] > b[0] ? (b[3] - b[0]) * 1000u / CAL_PAIRS / 2u : 0;
        uint64_t rec = b[1] > b[0] ? (b[1] - b[0]) * 1000u / CAL_PAIRS / 2u + entry : 0;
        uint64_t cnt = light && b[2] > b[0] ? (b[2] - b[0]) * 1000u / CAL_PAIRS + 2 * entry : 0;
        rec_ps[p] = (uint32_t)(rec < UINT32_MAX ? (rec ? rec : 1) : UINT32_MAX);
        cnt_ps[p] = (uint32_t)(cnt < UINT32_MAX ? cnt : UINT32_MAX);
        if (light && !cnt_ps[p])
            cnt_ps[p] = 1;
    }
    h->cost_record_ps = rec_ps[0];
    h->cost_count_ps = cnt_ps[0];
    h->cost_record_mt_ps = rec_ps[1];
    h->cost_count_mt_ps = cnt_ps[1];
    uint64_t took = contend_monotonic_ns() - start;
    h->calibration_ns = (uint32_t)(took < UINT32_MAX ? took : UINT32_MAX);
}
