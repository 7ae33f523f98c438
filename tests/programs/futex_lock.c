/*
 * A hand-written futex lock (Drepper, "Futexes Are Tricky", mutex 2)
 * through glibc's syscall(SYS_futex, ...), with known waits, for the futex
 * accuracy test (crates/contend-cli/tests/e2e/futex.rs).
 *
 *   1. hand-over: main holds `lock_word`; the worker's lock() finds it
 *      taken and waits in FUTEX_WAIT; main sees the waiter, sleeps HOLD_MS
 *      more and unlocks (FUTEX_WAKE, 1 woken). ROUNDS rounds. The worker
 *      times each of its FUTEX_WAIT calls with its own clock.
 *   2. timeouts: TIMED FUTEX_WAITs with a TIMEOUT_MS relative timeout on
 *      `idle_word` (never woken: ETIMEDOUT).
 *   3. value changed: AGAIN FUTEX_WAITs whose expected value is not in the
 *      word (EAGAIN at once).
 *   4. pthread: the same hand-over on a pthread mutex, ROUNDS times. glibc
 *      waits on a futex inside pthread_mutex_lock, inline: no futex record
 *      may come of it.
 *   5. futex_waitv (Linux 5.16), one waiter, TIMEOUT_MS: ETIMEDOUT, or
 *      ENOSYS on an older kernel.
 *   6. other syscall() calls: getpid, an invalid syscall number (ENOSYS)
 *      and a bad descriptor (EBADF): return values and errno checked.
 *
 * Prints, on stdout, one line of key=value: counts of calls by outcome,
 * the worker's measured FUTEX_WAIT time (ns), and the wakes and waiters
 * woken, for the test to compare with the report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#define ROUNDS 8
#define HOLD_MS 10
#define TIMED 3
#define TIMEOUT_MS 5
#define AGAIN 2

static _Atomic uint32_t lock_word;  /* 0 free, 1 locked, 2 locked with waiters */
static _Atomic uint32_t idle_word;
static pthread_mutex_t pmutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int round_no;

static uint64_t waits_woken, wait_ns, wakes, woken, eagain_in_lock, preempted;

/*
 * The calling thread's context switches so far (getrusage(RUSAGE_THREAD)):
 * involuntary ones and voluntary ones. Read around each timed wait. A
 * woken FUTEX_WAIT switches voluntarily once (it sleeps), an EAGAIN one not
 * at all; any other switch in the window means the thread was off its CPU
 * for something else (another program preempted it, or it blocked in a
 * page fault while the disk was busy) between its clock read and the
 * system call or after the call returned, so its measurement holds time
 * that was not waiting in the kernel: the run is disturbed.
 */
static void context_switches(uint64_t *involuntary, uint64_t *voluntary)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *involuntary = *voluntary = 0;
        return;
    }
    *involuntary = (uint64_t)ru.ru_nivcsw;
    *voluntary = (uint64_t)ru.ru_nvcsw;
}

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

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, val, timeout, NULL, 0); /* FUTEX_CALL */
}

static void lock(void)
{
    uint32_t c = 0;
    if (atomic_compare_exchange_strong(&lock_word, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&lock_word, 2);
    while (c != 0) {
        uint64_t i0, v0, i1, v1;
        context_switches(&i0, &v0);
        uint64_t t0 = now_ns();
        long r = futex(&lock_word, FUTEX_WAIT_PRIVATE, 2, NULL); /* FUTEX_WAIT_SITE */
        int e = errno;
        uint64_t t1 = now_ns();
        context_switches(&i1, &v1);
        uint64_t expected = r == 0 ? 1 : 0; /* the sleep of a woken wait */
        uint64_t other = (i1 - i0) + (v1 - v0 > expected ? v1 - v0 - expected : 0);
        if (r == 0) {
            waits_woken++;
            wait_ns += t1 - t0;
            preempted += other;
        } else if (e == EAGAIN) {
            eagain_in_lock++;
            wait_ns += t1 - t0;
            preempted += other;
        }
        c = atomic_exchange(&lock_word, 2);
    }
}

static void unlock(void)
{
    if (atomic_fetch_sub(&lock_word, 1) != 1) {
        atomic_store(&lock_word, 0);
        long n = futex(&lock_word, FUTEX_WAKE_PRIVATE, 1, NULL); /* FUTEX_WAKE_SITE */
        wakes++;
        woken += (uint64_t)(n > 0 ? n : 0);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        while (atomic_load(&round_no) != 2 * i + 1)
            ;
        lock();
        unlock();
        atomic_store(&round_no, 2 * i + 2);
    }
    for (int i = 0; i < ROUNDS; i++) {
        while (atomic_load(&round_no) != 2 * ROUNDS + 2 * i + 1)
            ;
        pthread_mutex_lock(&pmutex);
        pthread_mutex_unlock(&pmutex);
        atomic_store(&round_no, 2 * ROUNDS + 2 * i + 2);
    }
    return NULL;
}

struct waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    /* 1. futex hand-overs */
    for (int i = 0; i < ROUNDS; i++) {
        lock();
        atomic_store(&round_no, 2 * i + 1);
        while (atomic_load(&lock_word) != 2) /* the worker is about to wait */
            ;
        sleep_ms(HOLD_MS);
        unlock();
        while (atomic_load(&round_no) != 2 * i + 2)
            ;
    }
    /* 4. pthread hand-overs: glibc's own futex calls */
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&pmutex);
        atomic_store(&round_no, 2 * ROUNDS + 2 * i + 1);
        sleep_ms(HOLD_MS);
        pthread_mutex_unlock(&pmutex);
        while (atomic_load(&round_no) != 2 * ROUNDS + 2 * i + 2)
            ;
    }
    pthread_join(t, NULL);

    /* 2. timeouts */
    int timedout = 0;
    for (int i = 0; i < TIMED; i++) {
        struct timespec to = {0, TIMEOUT_MS * 1000000L};
        long r = futex(&idle_word, FUTEX_WAIT_PRIVATE, 0, &to); /* FUTEX_TIMED_SITE */
        timedout += r == -1 && errno == ETIMEDOUT;
    }
    /* 3. the value changed */
    int again = 0;
    for (int i = 0; i < AGAIN; i++) {
        long r = futex(&idle_word, FUTEX_WAIT_PRIVATE, 7, NULL);
        again += r == -1 && errno == EAGAIN;
    }
    /* 5. futex_waitv */
    struct waitv w = {0, (uint64_t)(uintptr_t)&idle_word, 2 /* FUTEX2_SIZE_U32 */ | 128, 0};
    struct timespec abs;
    clock_gettime(CLOCK_MONOTONIC, &abs);
    abs.tv_nsec += TIMEOUT_MS * 1000000L;
    if (abs.tv_nsec >= 1000000000L) {
        abs.tv_sec++;
        abs.tv_nsec -= 1000000000L;
    }
    long rv = syscall(SYS_futex_waitv, &w, 1, 0, &abs, CLOCK_MONOTONIC);
    int waitv = rv == -1 && errno == ETIMEDOUT ? 1 : rv == -1 && errno == ENOSYS ? 0 : -1;

    /* 6. other system calls through syscall() behave as ever */
    int bad = 0;
    errno = 0;
    bad += syscall(SYS_getpid) != getpid();
    bad += errno != 0;
    bad += syscall(100000) != -1 || errno != ENOSYS;
    bad += syscall(SYS_close, -1) != -1 || errno != EBADF;
    char buf[4];
    bad += syscall(SYS_read, -1, buf, sizeof buf) != -1 || errno != EBADF;

    printf("rounds=%d hold_ms=%d waits_woken=%llu eagain_in_lock=%llu wait_ns=%llu wakes=%llu "
           "woken=%llu timed=%d timedout=%d timeout_ms=%d again=%d waitv=%d bad=%d "
           "preempted=%llu\n",
           ROUNDS, HOLD_MS, (unsigned long long)waits_woken, (unsigned long long)eagain_in_lock,
           (unsigned long long)wait_ns, (unsigned long long)wakes, (unsigned long long)woken,
           TIMED, timedout, TIMEOUT_MS, again, waitv, bad, (unsigned long long)preempted);
    return bad != 0;
}
