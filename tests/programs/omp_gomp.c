/*
 * OpenMP synchronisation with known waits, built with gcc -fopenmp (GCC's
 * libgomp, recorded through the collector's GOMP_* wrappers), for
 * crates/contend-cli/tests/e2e/openmp_gomp.rs. Two threads; work is
 * sleeping, so the two cores are not fought over. Every wait is timed by
 * the threads themselves with CLOCK_MONOTONIC (contend's clock) around the
 * construct, so the truth includes whatever the machine's load adds.
 *
 *   1. named critical section `update`: each thread enters CRIT times and
 *      holds it HOLD_MS (sleeping inside), timing the wait before each
 *      entry; then the unnamed critical section the same way. Before
 *      them, one thread enters each construct once, untimed and without
 *      holding (so each has 2 CRIT + 1 entries).
 *   2. omp_set_lock: the same with an OpenMP lock.
 *   3. barrier: thread t sleeps (t + 1) * BAR_MS, then waits at `#pragma
 *      omp barrier`, timing its own wait there.
 *   4. imbalanced `parallel for`, schedule(static) and schedule(dynamic):
 *      REGIONS regions each of a loop of 2 iterations, iteration i
 *      sleeping (1 + 3 i) * WORK_MS; each thread records when its last
 *      iteration ended. The wait of a thread in the region's implicit
 *      barrier is the last thread's end of work minus its own. With the
 *      dynamic schedule (iteration i sleeping (4 - 3 i) * WORK_MS) one
 *      thread could take both iterations while the other is late, so each
 *      iteration first waits (up to 1 s) until both have begun:
 *      `dyn_split` says in how many regions each thread ran one.
 *   5. the lock API's results, serially: omp_test_lock on a free and on a
 *      held lock, a nest lock set twice and tested once (nesting count 3)
 *      and released three times: `api_ok=1` when every result is right.
 *
 * Prints one line of key=value (waits in ns).
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define CRIT 3
#define HOLD_MS 4
#define BAR_MS 6
#define REGIONS 3
#define WORK_MS 5

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Σ over regions of (last end of work − this thread's), per thread */
static void imbalance(uint64_t end[REGIONS][2], uint64_t imp[2])
{
    imp[0] = imp[1] = 0;
    for (int r = 0; r < REGIONS; r++) {
        uint64_t last = end[r][0] > end[r][1] ? end[r][0] : end[r][1];
        for (int t = 0; t < 2; t++)
            imp[t] += last - end[r][t];
    }
}

/* One entry of each mutex construct, holding it HOLD_MS when `hold`;
 * returns the wait before the entry, ns. */
__attribute__((noinline)) static uint64_t named(omp_lock_t *lock, int hold)
{
    (void)lock;
    uint64_t t0 = now_ns(), w;
#pragma omp critical(update) /* NAMED_CRITICAL */
    {
        w = now_ns() - t0;
        if (hold)
            sleep_ms(HOLD_MS);
    }
    return w;
}

__attribute__((noinline)) static uint64_t unnamed(omp_lock_t *lock, int hold)
{
    (void)lock;
    uint64_t t0 = now_ns(), w;
#pragma omp critical
    {
        w = now_ns() - t0;
        if (hold)
            sleep_ms(HOLD_MS);
    }
    return w;
}

__attribute__((noinline)) static uint64_t locked(omp_lock_t *lock, int hold)
{
    uint64_t t0 = now_ns();
    omp_set_lock(lock); /* SET_LOCK */
    uint64_t w = now_ns() - t0;
    if (hold)
        sleep_ms(HOLD_MS);
    omp_unset_lock(lock);
    return w;
}

int main(void)
{
    uint64_t crit_wait[2] = {0, 0}, unnamed_wait[2] = {0, 0}, lock_wait[2] = {0, 0};
    uint64_t bar_wait[2] = {0, 0};
    uint64_t static_end[REGIONS][2], dyn_end[REGIONS][2];
    int dyn_iters[REGIONS][2] = {{0}}, dyn_started[REGIONS] = {0};
    omp_lock_t lock;
    omp_init_lock(&lock);
    omp_set_num_threads(2);
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        /* one untimed entry of each, on one thread: the collector's
         * first-time work for an object and a site (its tables) is done
         * before the timed entries */
#pragma omp single
        {
            named(&lock, 0);
            unnamed(&lock, 0);
            locked(&lock, 0);
        }
        /* every phase starts together (single ends in a barrier), so its
         * entries are contended */
        for (int i = 0; i < CRIT; i++)
            crit_wait[t] += named(&lock, 1);
#pragma omp barrier
        for (int i = 0; i < CRIT; i++)
            unnamed_wait[t] += unnamed(&lock, 1);
#pragma omp barrier
        for (int i = 0; i < CRIT; i++)
            lock_wait[t] += locked(&lock, 1);
#pragma omp barrier
        sleep_ms((t + 1) * BAR_MS);
        uint64_t t0 = now_ns();
#pragma omp barrier /* EXPLICIT_BARRIER */
        bar_wait[t] = now_ns() - t0;
    }
    for (int r = 0; r < REGIONS; r++) {
#pragma omp parallel for schedule(static) /* STATIC_FOR */
        for (int i = 0; i < 2; i++) {
            sleep_ms((1 + 3 * i) * WORK_MS);
            static_end[r][omp_get_thread_num()] = now_ns();
        }
    }
    for (int r = 0; r < REGIONS; r++) {
#pragma omp parallel for schedule(dynamic) /* DYNAMIC_FOR */
        for (int i = 0; i < 2; i++) {
            /* each iteration waits (up to 1 s) until both have begun, so
             * that neither thread can take both */
            __atomic_add_fetch(&dyn_started[r], 1, __ATOMIC_SEQ_CST);
            for (int k = 0; k < 10000 && __atomic_load_n(&dyn_started[r], __ATOMIC_SEQ_CST) < 2;
                 k++)
                nanosleep(&(struct timespec){0, 100000}, NULL);
            sleep_ms((4 - 3 * i) * WORK_MS);
            int t = omp_get_thread_num();
            dyn_end[r][t] = now_ns();
            dyn_iters[r][t]++;
        }
    }
    omp_destroy_lock(&lock);
    omp_lock_t tlock;
    omp_nest_lock_t nlock;
    omp_init_lock(&tlock);
    omp_init_nest_lock(&nlock);
    int api_ok = omp_test_lock(&tlock) == 1; /* TEST_LOCK */
    api_ok &= omp_test_lock(&tlock) == 0;
    omp_unset_lock(&tlock);
    omp_set_nest_lock(&nlock); /* NEST_LOCK */
    omp_set_nest_lock(&nlock);
    api_ok &= omp_test_nest_lock(&nlock) == 3;
    for (int i = 0; i < 3; i++)
        omp_unset_nest_lock(&nlock);
    api_ok &= omp_test_nest_lock(&nlock) == 1;
    omp_unset_nest_lock(&nlock);
    omp_destroy_lock(&tlock);
    omp_destroy_nest_lock(&nlock);
    uint64_t simp[2], dimp[2];
    imbalance(static_end, simp);
    int split = 0;
    for (int r = 0; r < REGIONS; r++)
        split += dyn_iters[r][0] == 1 && dyn_iters[r][1] == 1;
    if (split == REGIONS)
        imbalance(dyn_end, dimp);
    else
        dimp[0] = dimp[1] = 0;
    printf("threads=2 crit=%d crit_wait_ns=%llu unnamed_wait_ns=%llu lock_wait_ns=%llu "
           "bar0_ns=%llu bar1_ns=%llu regions=%d static0_ns=%llu static1_ns=%llu "
           "dyn_split=%d dyn0_ns=%llu dyn1_ns=%llu api_ok=%d\n",
           CRIT, (unsigned long long)(crit_wait[0] + crit_wait[1]),
           (unsigned long long)(unnamed_wait[0] + unnamed_wait[1]),
           (unsigned long long)(lock_wait[0] + lock_wait[1]), (unsigned long long)bar_wait[0],
           (unsigned long long)bar_wait[1], REGIONS, (unsigned long long)simp[0],
           (unsigned long long)simp[1], split, (unsigned long long)dimp[0],
           (unsigned long long)dimp[1], api_ok);
    return 0;
}
