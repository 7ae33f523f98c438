/*
 * Thread names: the interposed pthread_setname_np() and prctl().
 *
 * Every chunk header carries its thread's name as the kernel has it (the
 * comm, read with PR_GET_NAME when the chunk is claimed, at the thread's
 * exit and at the process's exit: collector.c). A thread that names itself
 * after its first chunk (the usual order: a worker names itself when it
 * starts its loop, after the locks of its set-up) would otherwise keep the
 * old name in its chunk until it claims the next one or exits, and a crash
 * in between would lose the new name. These two wrappers store the new
 * name at once, into the headers of the calling thread's current chunks.
 *
 * Both pass their arguments on unchanged and return the next definition's
 * return value with its errno. A name given to another thread reaches that
 * thread's chunk at its next chunk claim or at its exit (the collector has
 * no way to write another thread's chunk safely).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"

typedef int (*setname_fn)(pthread_t, const char *);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);

static setname_fn next_setname;
static prctl_fn next_prctl;

/* dlsym with the calling thread's guard set (it may take locks). */
static CONTEND_COLD void *resolve(const char *name)
{
    struct contend_thread *ts = &contend_tls;
    struct contend_saved saved = contend_enter(ts);
    void *f = dlsym(RTLD_NEXT, name);
    contend_leave(ts, saved);
    return f;
}

CONTEND_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
    setname_fn f = __atomic_load_n(&next_setname, __ATOMIC_RELAXED);
    if (CONTEND_UNLIKELY(!f)) {
        f = (setname_fn)resolve("pthread_setname_np");
        if (!f)
            return ENOSYS;
        __atomic_store_n(&next_setname, f, __ATOMIC_RELAXED);
    }
    int rc = f(thread, name);
    if (rc == 0 && pthread_equal(thread, pthread_self()))
        contend_thread_renamed();
    return rc;
}

CONTEND_EXPORT int prctl(int option, ...)
{
    /* glibc's prctl() reads four more unsigned long arguments whatever the
     * option: so do we, and pass them on */
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long);
    unsigned long a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long);
    unsigned long a5 = va_arg(ap, unsigned long);
    va_end(ap);
    prctl_fn f = __atomic_load_n(&next_prctl, __ATOMIC_RELAXED);
    if (CONTEND_UNLIKELY(!f)) {
        f = (prctl_fn)resolve("prctl");
        if (f)
            __atomic_store_n(&next_prctl, f, __ATOMIC_RELAXED);
    }
    int rc = f ? f(option, a2, a3, a4, a5) : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc == 0 && option == PR_SET_NAME)
        contend_thread_renamed();
    return rc;
}
