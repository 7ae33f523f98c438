/*
 * futex_waitv(2) (Linux 5.16) on two words, through syscall(), for the
 * futex tracer's sys_enter_futex_waitv / sys_exit_futex_waitv path.
 *
 * The waiter calls futex_waitv on g_waiters = {g_word_a, g_word_b} (both
 * expected 0, private, u32) ROUNDS times; the waker wakes g_word_b each
 * round, repeating FUTEX_WAKE until it woke one waiter (a wake before the
 * waiter is asleep wakes nobody), so every one of those waits is woken on
 * its second word (return value 1). First a probe with a timeout
 * already past (does the kernel have it? ETIMEDOUT at once), last one more futex_waitv with a
 * 5 ms timeout that nobody wakes: ETIMEDOUT. The waiter times each call
 * with its own CLOCK_MONOTONIC around it.
 *
 *   futex_waitv2 [ROUNDS]
 *
 * Prints: waitv=1 rounds=<n> woken=<waits that returned 1>
 *         timedout=<1> wait_ns=<sum of all the waits' durations, the probe's
 *         included>
 *         wakes=<FUTEX_WAKE calls on g_word_b> woke=<waiters they woke>
 * or waitv=0 when the kernel has no futex_waitv (ENOSYS).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

struct waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};

uint32_t g_word_a, g_word_b;
struct waitv g_waiters[2];
static _Atomic int g_round;  /* rounds the waiter finished */
static int g_rounds = 20;
static _Atomic long g_wakes, g_woke;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long waitv(const struct timespec *abs)
{
    return syscall(SYS_futex_waitv, g_waiters, 2, 0, abs, CLOCK_MONOTONIC);
}

static void *waker(void *arg)
{
    (void)arg;
    for (int r = 0; r < g_rounds; r++) {
        struct timespec d = {0, 2000000}; /* 2 ms: the waiter is asleep by then */
        nanosleep(&d, NULL);
        for (;;) {
            long n = syscall(SYS_futex, &g_word_b, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
            atomic_fetch_add(&g_wakes, 1);
            if (n > 0) {
                atomic_fetch_add(&g_woke, n);
                break;
            }
            struct timespec s = {0, 200000};
            nanosleep(&s, NULL);
        }
        while (atomic_load(&g_round) <= r) {
            struct timespec s = {0, 100000};
            nanosleep(&s, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_rounds = atoi(argv[1]);
    for (int i = 0; i < 2; i++) {
        g_waiters[i].val = 0;
        g_waiters[i].flags = 2 /* FUTEX2_SIZE_U32 */ | 128 /* FUTEX2_PRIVATE */;
    }
    g_waiters[0].uaddr = (uint64_t)(uintptr_t)&g_word_a;
    g_waiters[1].uaddr = (uint64_t)(uintptr_t)&g_word_b;

    /* does the kernel have it? (an immediate timeout) */
    struct timespec past = {0, 0};
    int64_t p0 = now_ns();
    long probe = waitv(&past);
    int64_t probe_ns = now_ns() - p0;
    if (probe == -1 && errno == ENOSYS) {
        printf("waitv=0\n");
        return 0;
    }

    pthread_t t;
    if (pthread_create(&t, NULL, waker, NULL) != 0)
        return 1;
    int64_t wait_ns = probe_ns; /* the probe: a wait that timed out at once */
    long woken = 0, bad = 0;
    for (int r = 0; r < g_rounds; r++) {
        struct timespec abs;
        clock_gettime(CLOCK_MONOTONIC, &abs);
        abs.tv_sec += 10;
        int64_t t0 = now_ns();
        long rv = waitv(&abs);
        wait_ns += now_ns() - t0;
        if (rv == 1)
            woken++;
        else
            bad++;
        atomic_store(&g_round, r + 1);
    }
    pthread_join(t, NULL);

    struct timespec abs;
    clock_gettime(CLOCK_MONOTONIC, &abs);
    abs.tv_nsec += 5000000;
    if (abs.tv_nsec >= 1000000000) {
        abs.tv_sec++;
        abs.tv_nsec -= 1000000000;
    }
    int64_t t0 = now_ns();
    long rv = waitv(&abs);
    int timedout = rv == -1 && errno == ETIMEDOUT;
    wait_ns += now_ns() - t0;

    printf("waitv=1 rounds=%d woken=%ld timedout=%d wait_ns=%lld wakes=%ld woke=%ld bad=%ld\n",
           g_rounds, woken, timedout, (long long)wait_ns, atomic_load(&g_wakes),
           atomic_load(&g_woke), bad);
    return bad == 0 && timedout ? 0 : 1;
}
