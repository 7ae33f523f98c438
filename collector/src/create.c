/*
 * Where lock objects are created (trace_format.h, "Creation records"):
 * the interposed init functions. Each calls the real init first and, when
 * it succeeded and the thread may record, writes one CONTEND_CREATE_INIT
 * record naming the object and the init call's site (with the call stack
 * when stacks are on and the address is new to the object table). The
 * first-use records of objects no init call named are written by the
 * recording path itself (collector.c, emit_record).
 *
 * Return values and errno are the real call's: the record is written
 * after it returned, and the slow path keeps errno. An init is not a hot
 * operation, but the record goes through the same bounded, allocation-free
 * slow path as every other record.
 */
#include <pthread.h>
#include <semaphore.h>

#include "collector.h"

/* glibc's own exported aliases of the mutex and rwlock init functions
 * (compat symbols since 2.34, bound by version): the pass-through while
 * this thread is still resolving the real functions (a malloc replacement
 * initialising its mutexes inside dlsym). */
int contend_libc_mutex_init(pthread_mutex_t *, const pthread_mutexattr_t *);
int contend_libc_rwlock_init(pthread_rwlock_t *, const pthread_rwlockattr_t *);
__asm__(".symver contend_libc_mutex_init, __pthread_mutex_init@GLIBC_2.2.5");
__asm__(".symver contend_libc_rwlock_init, __pthread_rwlock_init@GLIBC_2.2.5");

/* Records the creation of `obj` when the init succeeded (r == 0). */
static inline void created(struct contend_thread *ts, int r, uint32_t prim, const void *obj,
                           const void *site)
{
    if (r == 0 && (CONTEND_LIKELY(contend_may_record(ts)) || contend_prepare(ts)))
        contend_emit_create(ts, prim, obj, site);
}

/* The real function, resolving it on the first call (contend_prepare may
 * not have run yet: an init can be the process's first pthread call). */
#define REAL_INIT(field, name, version)                                          \
    __extension__({                                                              \
        __typeof__(contend_real.field) f_ = CONTEND_REAL(field);                 \
        if (CONTEND_UNLIKELY(!f_) && !(contend_tls.guard & CONTEND_GUARD_BUSY))  \
            contend_resolve_reals();                                             \
        f_ = CONTEND_REAL(field);                                                \
        if (CONTEND_UNLIKELY(!f_))                                               \
            f_ = (__typeof__(f_))contend_resolve_one(name, version);             \
        f_;                                                                      \
    })

CONTEND_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (CONTEND_UNLIKELY(ts->guard & CONTEND_GUARD_BUSY) && !CONTEND_REAL(mutex_init))
        return contend_libc_mutex_init(m, a);
    int (*f)(pthread_mutex_t *, const pthread_mutexattr_t *) =
        REAL_INIT(mutex_init, "pthread_mutex_init", NULL);
    if (CONTEND_UNLIKELY(!f))
        return contend_libc_mutex_init(m, a);
    int r = f(m, a);
    created(ts, r, CONTEND_PRIM_MUTEX, m, site);
    return r;
}

CONTEND_EXPORT int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *a)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (CONTEND_UNLIKELY(ts->guard & CONTEND_GUARD_BUSY) && !CONTEND_REAL(rwlock_init))
        return contend_libc_rwlock_init(rw, a);
    int (*f)(pthread_rwlock_t *, const pthread_rwlockattr_t *) =
        REAL_INIT(rwlock_init, "pthread_rwlock_init", NULL);
    if (CONTEND_UNLIKELY(!f))
        return contend_libc_rwlock_init(rw, a);
    int r = f(rw, a);
    /* the primitive of an rwlock's records is its mode; WRITE names it */
    created(ts, r, CONTEND_PRIM_RWLOCK_WRITE, rw, site);
    return r;
}

CONTEND_EXPORT int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    int (*f)(pthread_spinlock_t *, int) = REAL_INIT(spin_init, "pthread_spin_init", NULL);
    if (CONTEND_UNLIKELY(!f))
        return ENOSYS;
    int r = f(s, pshared);
    created(ts, r, CONTEND_PRIM_SPIN, (const void *)s, site);
    return r;
}

CONTEND_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a,
                                        unsigned count)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    int (*f)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned) =
        REAL_INIT(barrier_init, "pthread_barrier_init", NULL);
    if (CONTEND_UNLIKELY(!f))
        return ENOSYS;
    int r = f(b, a, count);
    created(ts, r, CONTEND_PRIM_BARRIER, b, site);
    return r;
}

CONTEND_EXPORT int sem_init(sem_t *s, int pshared, unsigned value)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    int (*f)(sem_t *, int, unsigned) = REAL_INIT(sem_init, "sem_init", NULL);
    if (CONTEND_UNLIKELY(!f)) {
        errno = ENOSYS;
        return -1;
    }
    int r = f(s, pshared, value);
    created(ts, r, CONTEND_PRIM_SEM, s, site);
    return r;
}

/*
 * pthread_cond_init, like the waits, exists in two ABI versions
 * (GLIBC_2.3.2, the default, and GLIBC_2.2.5); each wrapper forwards to
 * the same version (lock_collector.map declares the version nodes).
 */
__asm__(".symver contend_cond_init_232, pthread_cond_init@@GLIBC_2.3.2");
__asm__(".symver contend_cond_init_225, pthread_cond_init@GLIBC_2.2.5");
CONTEND_EXPORT int contend_cond_init_232(pthread_cond_t *c, const pthread_condattr_t *a);
CONTEND_EXPORT int contend_cond_init_225(pthread_cond_t *c, const pthread_condattr_t *a);

int contend_cond_init_232(pthread_cond_t *c, const pthread_condattr_t *a)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    int (*f)(pthread_cond_t *, const pthread_condattr_t *) =
        REAL_INIT(cond_init, "pthread_cond_init", "GLIBC_2.3.2");
    if (CONTEND_UNLIKELY(!f))
        return ENOSYS;
    int r = f(c, a);
    created(ts, r, CONTEND_PRIM_COND, c, site);
    return r;
}

int contend_cond_init_225(pthread_cond_t *c, const pthread_condattr_t *a)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    int (*f)(pthread_cond_t *, const pthread_condattr_t *) =
        REAL_INIT(cond_init_old, "pthread_cond_init", "GLIBC_2.2.5");
    if (CONTEND_UNLIKELY(!f))
        return ENOSYS;
    int r = f(c, a);
    created(ts, r, CONTEND_PRIM_COND, c, site);
    return r;
}
