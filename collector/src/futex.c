/*
 * The interposed syscall(): futex waits and wakes made through glibc's
 * syscall(SYS_futex, ...) (Rust's std::sync, InnoDB's latches, stress-ng,
 * hand-written locks) and syscall(SYS_futex_waitv, ...).
 *
 * glibc's own pthread and semaphore code issues its futex calls inline
 * (INTERNAL_SYSCALL), never through syscall(), so nothing recorded by the
 * pthread wrappers is recorded again here (tested: a contended
 * pthread_mutex program yields no futex record).
 *
 * Every other system call passes straight through: the six argument words
 * are read as glibc's own syscall() reads them (the ABI gives a variadic
 * callee no count; words the caller did not pass are read but never used
 * by the kernel for that call) and handed to the next syscall() with the
 * same return value and errno. Nothing here allocates, locks or does IO;
 * records are written by contend_emit_ext (whose slow path keeps errno).
 *
 * Record layout: trace_format.h, "Futex records".
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

typedef long (*syscall_fn)(long, ...);

/* glibc's syscall(), looked up on first use (RTLD_NEXT: another preloaded
 * library that wraps syscall() stays in the chain). */
static syscall_fn next_syscall;

/* The system call itself, glibc's way (-4095..-1 is -errno), for the
 * calls that arrive while this very thread is looking next_syscall up. */
static long raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
#if defined(__x86_64__)
    long r;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if ((unsigned long)r > -4096UL) {
        errno = (int)-r;
        return -1;
    }
    return r;
#else
    (void)nr, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6;
    errno = ENOSYS;
    return -1;
#endif
}

static CONTEND_COLD syscall_fn resolve_next(void)
{
    struct contend_thread *ts = &contend_tls;
    if (ts->guard)
        return NULL;
    ts->guard = CONTEND_GUARD_BUSY;
    CONTEND_SIGNAL_FENCE();
    int saved = errno;
    syscall_fn f = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
    errno = saved;
    if (f)
        __atomic_store_n(&next_syscall, f, __ATOMIC_RELAXED);
    CONTEND_SIGNAL_FENCE();
    ts->guard = 0;
    return f;
}

/* Looked up once at load time, so that no later syscall() (in a signal
 * handler, in a fork child) has to call dlsym. */
__attribute__((constructor)) static void resolve_at_load(void)
{
    if (!__atomic_load_n(&next_syscall, __ATOMIC_RELAXED))
        resolve_next();
}

CONTEND_INLINE long pass(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    syscall_fn f = __atomic_load_n(&next_syscall, __ATOMIC_RELAXED);
    if (CONTEND_UNLIKELY(!f)) {
        f = resolve_next();
        if (!f)
            return raw_syscall(nr, a1, a2, a3, a4, a5, a6);
    }
    return f(nr, a1, a2, a3, a4, a5, a6);
}

/* The collector's own system calls (the region recorder's futex wait,
 * gettid): straight to the next syscall(), never recorded. */
long contend_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    return pass(nr, a1, a2, a3, a4, a5, a6);
}

/* What a futex call is: 1 a wait, 2 a wake, 0 anything else. */
static int futex_kind(long nr, int cmd)
{
    if (nr == SYS_futex_waitv)
        return 1;
    switch (cmd) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_LOCK_PI:
    case FUTEX_LOCK_PI2:
    case FUTEX_WAIT_REQUEUE_PI:
        return 1;
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
    case FUTEX_WAKE_OP:
    case FUTEX_REQUEUE:
    case FUTEX_CMP_REQUEUE:
    case FUTEX_UNLOCK_PI:
        return 2;
    default:
        return 0;
    }
}

CONTEND_INLINE uint64_t ext_word(uint32_t phase, uint32_t cmd, int priv, int32_t value)
{
    return (uint64_t)phase | ((uint64_t)(cmd & 0xffu) << CONTEND_FUTEX_CMD_SHIFT) |
           (priv ? (uint64_t)CONTEND_FUTEX_PRIVATE : 0) |
           ((uint64_t)(uint32_t)value << CONTEND_FUTEX_VALUE_SHIFT);
}

static CONTEND_NOINLINE long futex_call(const void *site, long nr, long a1, long a2, long a3,
                                        long a4, long a5, long a6)
{
    int op = (int)a2;
    int cmd = nr == SYS_futex_waitv ? (int)CONTEND_FUTEX_CMD_WAITV : (op & FUTEX_CMD_MASK);
    int priv = nr == SYS_futex_waitv ? 0 : (op & FUTEX_PRIVATE_FLAG) != 0;
    int kind = futex_kind(nr, cmd);
    struct contend_thread *ts = &contend_tls;
    if (kind == 0 || !(CONTEND_LIKELY(contend_may_record(ts)) || contend_prepare(ts)))
        return pass(nr, a1, a2, a3, a4, a5, a6);

    /* the futex word (futex_waitv: the waiter array, never dereferenced) */
    const void *word = (const void *)(uintptr_t)a1;
    uint32_t before = kind == 1 ? CONTEND_PHASE_REQUEST : CONTEND_PHASE_RELEASE;
    if (kind == 1)
        contend_before_wait(ts, word, site);
    contend_emit_ext(ts, CONTEND_TAG_FUTEX, ext_word(before, (uint32_t)cmd, priv, 0), word, site, contend_now(), 1);
    long r = pass(nr, a1, a2, a3, a4, a5, a6);
    int e = errno;
    uint64_t t = contend_now();
    if (CONTEND_LIKELY(ts->guard == 0)) {
        uint32_t phase;
        int32_t value;
        if (r >= 0) {
            phase = kind == 1 ? CONTEND_PHASE_ACQUIRED : CONTEND_PHASE_RELEASED;
            value = r > INT32_MAX ? INT32_MAX : (int32_t)r;
        } else {
            phase = kind == 1 && e == ETIMEDOUT ? CONTEND_PHASE_BUSY : CONTEND_PHASE_ERROR;
            value = e;
        }
        contend_emit_ext(ts, CONTEND_TAG_FUTEX, ext_word(phase, (uint32_t)cmd, priv, value), word, site, t, 0);
    }
    errno = e;
    return r;
}

CONTEND_EXPORT long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    if (CONTEND_LIKELY(nr != SYS_futex && nr != SYS_futex_waitv))
        return pass(nr, a1, a2, a3, a4, a5, a6);
    return futex_call(__builtin_return_address(0), nr, a1, a2, a3, a4, a5, a6);
}
