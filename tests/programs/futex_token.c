/*
 * A token passed through futex words in a fixed order, for the test of the
 * critical path across futex hand-overs
 * (crates/contend-cli/tests/e2e/critical_path_across.rs).
 *
 * THREADS threads; thread k sleeps in FUTEX_WAIT on its own word slot[k]
 * until the token comes, holds it HOLD_MS (a sleep), then hands it to
 * thread (k + 1) % THREADS: slot[next] = 1 and FUTEX_WAKE(slot[next], 1),
 * through glibc's syscall(). Thread 0 starts with the token once the
 * others are waiting; ROUNDS rounds, so the hand-over chain is
 * 0 → 1 → 2 → 0 → … → 2, THREADS × ROUNDS − 1 hand-overs, each of which
 * the next holder waited for. The last pass wakes nobody.
 *
 * The critical path of the run is that chain, from the first FUTEX_WAKE
 * (thread 0's first pass) to the return of main's pthread_join of the last
 * holder (which ends last): the walk starts on main, whose join hands over
 * to thread THREADS - 1 at its end. The program measures it with its own
 * clock: first_wake_ns is taken just before the first FUTEX_WAKE, path_ns
 * runs from there to just after that join returned. When the last holder
 * had already ended before main joined it (pthread_tryjoin_np succeeds:
 * main was kept off a CPU for milliseconds), late_join=1 says so; the join
 * then did not wait and the path does not go through it.
 *
 * Prints one line of key=value: threads, rounds, hold_ms, each thread's
 * tid (tid0=…), handovers (wakes that woke the next holder), unwaited
 * (receptions that found the token without sleeping: a disturbed run),
 * late_join, wait_ns (Σ of the woken FUTEX_WAIT calls, own clock) and
 * path_ns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 3
#define ROUNDS 8
#define HOLD_MS 3

static _Atomic uint32_t slot[THREADS];
static _Atomic int ready;
static pid_t tids[THREADS];
static _Atomic uint64_t handovers, unwaited, wait_ns;
static uint64_t first_wake_ns;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
    return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

static void *run(void *arg)
{
    int k = (int)(intptr_t)arg;
    tids[k] = (pid_t)syscall(SYS_gettid);
    for (int r = 0; r < ROUNDS; r++) {
        if (k == 0 && r == 0) {
            /* start once every other thread is about to wait */
            while (atomic_load(&ready) != THREADS - 1)
                ;
            sleep_ms(HOLD_MS);
        } else {
            if (r == 0)
                atomic_fetch_add(&ready, 1);
            int slept = 0;
            while (atomic_load(&slot[k]) == 0) {
                uint64_t t0 = now_ns();
                long rc = futex(&slot[k], FUTEX_WAIT_PRIVATE, 0);
                uint64_t t1 = now_ns();
                if (rc == 0) {
                    slept = 1;
                    atomic_fetch_add(&wait_ns, t1 - t0);
                }
            }
            if (!slept)
                atomic_fetch_add(&unwaited, 1);
        }
        atomic_store(&slot[k], 0);
        sleep_ms(HOLD_MS); /* the hold */
        int next = (k + 1) % THREADS;
        if (k == 0 && r == 0)
            first_wake_ns = now_ns();
        atomic_store(&slot[next], 1);
        long n = futex(&slot[next], FUTEX_WAKE_PRIVATE, 1);
        if (n > 0)
            atomic_fetch_add(&handovers, (uint64_t)n);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int k = 0; k < THREADS; k++)
        if (pthread_create(&t[k], NULL, run, (void *)(intptr_t)k) != 0)
            return 1;
    for (int k = 0; k < THREADS - 1; k++)
        pthread_join(t[k], NULL);
    int late_join = pthread_tryjoin_np(t[THREADS - 1], NULL) == 0;
    if (!late_join)
        pthread_join(t[THREADS - 1], NULL);
    uint64_t joined_ns = now_ns();
    printf("threads=%d rounds=%d hold_ms=%d", THREADS, ROUNDS, HOLD_MS);
    for (int k = 0; k < THREADS; k++)
        printf(" tid%d=%d", k, (int)tids[k]);
    printf(" handovers=%llu unwaited=%llu late_join=%d wait_ns=%llu path_ns=%llu\n",
           (unsigned long long)atomic_load(&handovers), (unsigned long long)atomic_load(&unwaited),
           late_join, (unsigned long long)atomic_load(&wait_ns),
           (unsigned long long)(joined_ns - first_wake_ns));
    return 0;
}
