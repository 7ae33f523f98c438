/*
 * Thread joins (trace_format.h, "Join records"): the interposed
 * pthread_join, pthread_timedjoin_np and pthread_clockjoin_np write a
 * REQUEST before the real call and ACQUIRED, BUSY or ERROR after it; a
 * thread that recorded something writes a RELEASE naming its own
 * pthread_t when it ends (contend_join_exit, called from the collector's
 * thread-specific destructor). The analysis pairs a join that waited with
 * the end of the thread it waited for, as a semaphore wait with its post,
 * and the critical path follows the joining thread to the joined one.
 *
 * Return values are the real call's; the join functions report errors by
 * their return value, and errno is kept (the recording's slow path saves
 * it). pthread_join is a cancellation point: a cancellation inside it
 * writes ERROR (ECANCELED) from a cleanup handler, as the semaphore waits
 * do. pthread_tryjoin_np never waits and is not recorded.
 */
#include <pthread.h>

#include "collector.h"

CONTEND_INLINE uint64_t join_ext(uint32_t phase, int32_t value)
{
    return (uint64_t)phase | ((uint64_t)(uint32_t)value << CONTEND_JOIN_VALUE_SHIFT);
}

struct join_ctx {
    struct contend_thread *ts;
    const void *thread;
    const void *site;
};

static void join_cancelled(void *arg)
{
    const struct join_ctx *x = arg;
    if (x->ts->guard == 0)
        contend_emit_ext(x->ts, CONTEND_TAG_JOIN, join_ext(CONTEND_PHASE_ERROR, ECANCELED),
                         x->thread, x->site, contend_now(), 0);
}

/* kind: 0 join, 1 timedjoin, 2 clockjoin */
static CONTEND_NOINLINE int join_block(struct contend_thread *ts, pthread_t th, void **ret,
                                       const void *site, int kind, clockid_t clk,
                                       const struct timespec *abstime)
{
    /* a pthread_t is an address (glibc: the thread's descriptor) */
    struct join_ctx x = {ts, (const void *)(uintptr_t)th, site};
    int r;
    contend_before_wait(ts, x.thread, site);
    contend_emit_ext(ts, CONTEND_TAG_JOIN, join_ext(CONTEND_PHASE_REQUEST, 0), x.thread, site,
                     contend_now(), 1);
    pthread_cleanup_push(join_cancelled, &x);
    if (kind == 0)
        r = CONTEND_REAL(join)(th, ret);
    else if (kind == 1)
        r = CONTEND_REAL(timedjoin)(th, ret, abstime);
    else
        r = CONTEND_REAL(clockjoin)(th, ret, clk, abstime);
    pthread_cleanup_pop(0);
    uint64_t t = contend_now();
    if (CONTEND_LIKELY(ts->guard == 0)) {
        uint32_t phase = r == 0                            ? CONTEND_PHASE_ACQUIRED
                         : (r == ETIMEDOUT || r == EBUSY) ? CONTEND_PHASE_BUSY
                                                           : CONTEND_PHASE_ERROR;
        contend_emit_ext(ts, CONTEND_TAG_JOIN, join_ext(phase, r), x.thread, site, t, 0);
    }
    return r;
}

CONTEND_EXPORT int pthread_join(pthread_t th, void **ret)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(join))
        return join_block(ts, th, ret, site, 0, 0, NULL);
    PASS_PTHREAD(join, "pthread_join", NULL, th, ret);
}

CONTEND_EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(timedjoin))
        return join_block(ts, th, ret, site, 1, 0, abstime);
    PASS_PTHREAD(timedjoin, "pthread_timedjoin_np", NULL, th, ret, abstime);
}

CONTEND_EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clk,
                                        const struct timespec *abstime)
{
    const void *site = SITE();
    struct contend_thread *ts = &contend_tls;
    if (RECORDING(ts) && CONTEND_REAL(clockjoin))
        return join_block(ts, th, ret, site, 2, clk, abstime);
    PASS_PTHREAD(clockjoin, "pthread_clockjoin_np", NULL, th, ret, clk, abstime);
}

void contend_join_exit(struct contend_thread *ts, const void *site)
{
    if (ts->guard == 0 && contend_may_record(ts))
        contend_emit_ext(ts, CONTEND_TAG_JOIN, join_ext(CONTEND_PHASE_RELEASE, 0),
                         (const void *)(uintptr_t)pthread_self(), site, contend_now(), 0);
}
