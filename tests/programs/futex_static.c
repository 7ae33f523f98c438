/*
 * A futex lock of its own (Drepper's "mutex 2": 0 free, 1 held, 2 held
 * with waiters) through syscall(SYS_futex, ...), built statically
 * (gcc -static) so that no LD_PRELOAD collector can see it: only the
 * kernel's futex tracepoints can.
 *
 * The holder takes g_lock, lets the waiter find it held, holds it for
 * HOLD_US and releases it; the waiter's every FUTEX_WAIT call on g_lock is
 * timed with the program's own CLOCK_MONOTONIC around the call, and their
 * sum printed: contend's wait time of the word g_lock must agree.
 *
 *   futex_static [ROUNDS [HOLD_US [GO_FILE]]]
 *
 * With GO_FILE the program prints "ready pid=<pid>" and waits until that
 * file exists before its rounds (for `contend record -p`).
 *
 * The holder thread names itself `fx-holder` (pthread_setname_np).
 *
 * Prints: lock=<address> rounds=<n> waits=<futex wait calls on g_lock>
 *         wait_ns=<their summed duration> wakes=<wake calls>
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic int g_lock;
static _Atomic int g_turn; /* 1: the holder holds the lock for this round */
static int g_rounds = 20;
static long g_hold_us = 3000;
static _Atomic long g_waits, g_wakes, g_woken; /* both threads count */
static _Atomic int64_t g_wait_ns;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void lock_wait(void)
{
    int c = 0;
    if (atomic_compare_exchange_strong(&g_lock, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&g_lock, 2);
    while (c != 0) {
        int64_t t0 = now_ns();
        long r = syscall(SYS_futex, &g_lock, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        g_wait_ns += now_ns() - t0;
        g_waits++;
        g_woken += r == 0;
        c = atomic_exchange(&g_lock, 2);
    }
}

static void unlock_wake(void)
{
    if (atomic_fetch_sub(&g_lock, 1) != 1) {
        atomic_store(&g_lock, 0);
        syscall(SYS_futex, &g_lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        g_wakes++;
    }
}

static void *holder(void *arg)
{
    (void)arg;
    /* named as a user would see it in the exports (no collector names it:
       the kernel's comm records do) */
    pthread_setname_np(pthread_self(), "fx-holder");
    for (int r = 0; r < g_rounds; r++) {
        lock_wait();
        atomic_store(&g_turn, 1);
        struct timespec d = {0, g_hold_us * 1000};
        nanosleep(&d, NULL);
        unlock_wake();
        while (atomic_load(&g_turn) != 0) /* the waiter's turn */
            sched_yield();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_rounds = atoi(argv[1]);
    if (argc > 2)
        g_hold_us = atol(argv[2]);
    if (argc > 3) {
        printf("ready pid=%d\n", (int)getpid());
        fflush(stdout);
        while (access(argv[3], F_OK) != 0) {
            struct timespec d = {0, 10 * 1000 * 1000};
            nanosleep(&d, NULL);
        }
    }
    pthread_t t;
    if (pthread_create(&t, NULL, holder, NULL) != 0)
        return 1;
    long wakes_seen = 0;
    for (int r = 0; r < g_rounds; r++) {
        while (atomic_load(&g_turn) != 1)
            sched_yield();
        lock_wait(); /* held by the holder: waits about HOLD_US */
        unlock_wake();
        wakes_seen++;
        atomic_store(&g_turn, 0);
    }
    pthread_join(t, NULL);
    printf("lock=%p rounds=%d waits=%ld woken=%ld wait_ns=%lld wakes=%ld\n", (void *)&g_lock,
           g_rounds, (long)g_waits, (long)g_woken, (long long)g_wait_ns, (long)g_wakes);
    return wakes_seen == g_rounds ? 0 : 1;
}
