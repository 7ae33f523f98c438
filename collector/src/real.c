/*
 * Resolution of the real functions: the one place that fills contend_real.
 *
 * dlsym() may take locks and allocate, and a malloc replacement (jemalloc,
 * tcmalloc) takes pthread mutexes inside malloc, so a pthread call can
 * arrive here while the pointers are still being looked up. The calling
 * thread's guard is set meanwhile: its mutex and rwlock calls then go to
 * glibc's own exported aliases (__pthread_mutex_lock, ...), which nobody
 * interposes, and record nothing.
 */
#include <dlfcn.h>
#include <errno.h>

#include "collector.h"

CONTEND_HIDDEN struct contend_real contend_real;

/* The ABI versions of the condition-variable functions (x86_64). */
#define COND_NEW "GLIBC_2.3.2"
#define COND_OLD "GLIBC_2.2.5"

#define STORE(field, value) \
    __atomic_store_n(&contend_real.field, (__typeof__(contend_real.field))(value), \
                     __ATOMIC_RELAXED)

void *contend_resolve_one(const char *name, const char *version)
{
    return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}

void contend_resolve_reals(void)
{
    if (__atomic_load_n(&contend_g.resolved, __ATOMIC_ACQUIRE))
        return;
    struct contend_thread *ts = &contend_tls;
    struct contend_saved saved = contend_enter(ts);

    STORE(mutex_lock, dlsym(RTLD_NEXT, "pthread_mutex_lock"));
    STORE(mutex_trylock, dlsym(RTLD_NEXT, "pthread_mutex_trylock"));
    STORE(mutex_timedlock, dlsym(RTLD_NEXT, "pthread_mutex_timedlock"));
    STORE(mutex_clocklock, dlsym(RTLD_NEXT, "pthread_mutex_clocklock"));
    STORE(mutex_unlock, dlsym(RTLD_NEXT, "pthread_mutex_unlock"));
    STORE(rwlock_rdlock, dlsym(RTLD_NEXT, "pthread_rwlock_rdlock"));
    STORE(rwlock_wrlock, dlsym(RTLD_NEXT, "pthread_rwlock_wrlock"));
    STORE(rwlock_tryrdlock, dlsym(RTLD_NEXT, "pthread_rwlock_tryrdlock"));
    STORE(rwlock_trywrlock, dlsym(RTLD_NEXT, "pthread_rwlock_trywrlock"));
    STORE(rwlock_timedrdlock, dlsym(RTLD_NEXT, "pthread_rwlock_timedrdlock"));
    STORE(rwlock_timedwrlock, dlsym(RTLD_NEXT, "pthread_rwlock_timedwrlock"));
    STORE(rwlock_clockrdlock, dlsym(RTLD_NEXT, "pthread_rwlock_clockrdlock"));
    STORE(rwlock_clockwrlock, dlsym(RTLD_NEXT, "pthread_rwlock_clockwrlock"));
    STORE(rwlock_unlock, dlsym(RTLD_NEXT, "pthread_rwlock_unlock"));
    STORE(spin_lock, dlsym(RTLD_NEXT, "pthread_spin_lock"));
    STORE(spin_trylock, dlsym(RTLD_NEXT, "pthread_spin_trylock"));
    STORE(spin_unlock, dlsym(RTLD_NEXT, "pthread_spin_unlock"));
    /* each cond wrapper version forwards to the same version */
    STORE(cond_wait, dlvsym(RTLD_NEXT, "pthread_cond_wait", COND_NEW));
    STORE(cond_timedwait, dlvsym(RTLD_NEXT, "pthread_cond_timedwait", COND_NEW));
    STORE(cond_wait_old, dlvsym(RTLD_NEXT, "pthread_cond_wait", COND_OLD));
    STORE(cond_timedwait_old, dlvsym(RTLD_NEXT, "pthread_cond_timedwait", COND_OLD));
    STORE(cond_clockwait, dlsym(RTLD_NEXT, "pthread_cond_clockwait"));
    STORE(barrier_wait, dlsym(RTLD_NEXT, "pthread_barrier_wait"));
    STORE(sem_wait, dlsym(RTLD_NEXT, "sem_wait"));
    STORE(sem_timedwait, dlsym(RTLD_NEXT, "sem_timedwait"));
    STORE(sem_clockwait, dlsym(RTLD_NEXT, "sem_clockwait"));
    STORE(sem_trywait, dlsym(RTLD_NEXT, "sem_trywait"));
    STORE(sem_post, dlsym(RTLD_NEXT, "sem_post"));
    /* init functions (create.c) */
    STORE(mutex_init, dlsym(RTLD_NEXT, "pthread_mutex_init"));
    STORE(rwlock_init, dlsym(RTLD_NEXT, "pthread_rwlock_init"));
    STORE(spin_init, dlsym(RTLD_NEXT, "pthread_spin_init"));
    STORE(cond_init, dlvsym(RTLD_NEXT, "pthread_cond_init", COND_NEW));
    STORE(cond_init_old, dlvsym(RTLD_NEXT, "pthread_cond_init", COND_OLD));
    STORE(barrier_init, dlsym(RTLD_NEXT, "pthread_barrier_init"));
    STORE(sem_init, dlsym(RTLD_NEXT, "sem_init"));
    /* thread joins (join.c) */
    STORE(join, dlsym(RTLD_NEXT, "pthread_join"));
    STORE(timedjoin, dlsym(RTLD_NEXT, "pthread_timedjoin_np"));
    STORE(clockjoin, dlsym(RTLD_NEXT, "pthread_clockjoin_np"));

    /* The recording fast path calls these without a NULL check; it is
     * enabled only when they exist (they always do in glibc). */
    int ok = contend_real.mutex_lock && contend_real.mutex_trylock &&
             contend_real.mutex_unlock && contend_real.rwlock_rdlock &&
             contend_real.rwlock_wrlock && contend_real.rwlock_tryrdlock &&
             contend_real.rwlock_trywrlock && contend_real.rwlock_unlock &&
             contend_real.spin_lock && contend_real.spin_trylock &&
             contend_real.spin_unlock && contend_real.sem_trywait;
    __atomic_store_n(&contend_g.resolved, ok ? 1 : 2, __ATOMIC_RELEASE);

    contend_leave(ts, saved);
}
