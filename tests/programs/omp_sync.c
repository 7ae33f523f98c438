/*
 * OpenMP synchronisation with known waits, for the OpenMP test
 * (crates/contend-cli/tests/e2e/openmp.rs). Two threads; work is sleeping,
 * so the two cores are not fought over.
 *
 *   1. named critical section `update`: each thread enters CRIT times and
 *      holds it HOLD_MS (sleeping inside); each thread times the wait
 *      before each entry with its own clock.
 *   2. omp_set_lock: the same with an OpenMP lock; each thread records
 *      when its last hold ended, so that the wait of the thread that
 *      ended last is known (`lock_last_wait_ns`: a critical path that
 *      walks back through this phase does so on that thread, and meets
 *      a lock hand-over only when it waited).
 *   3. explicit barrier: thread t sleeps (t + 1) * BAR_MS, then waits at
 *      `#pragma omp barrier`; each thread records when it arrived and
 *      when it left (the first to arrive stays for its wait and for the
 *      runtime's release of it, however long the machine's load makes
 *      that).
 *   4. imbalanced parallel for: REGIONS parallel regions of a
 *      schedule(static) loop of 2 iterations, iteration i sleeping
 *      (1 + 3 i) * WORK_MS; each thread records when its work ended. The
 *      wait of a thread in the region's implicit barrier is the last
 *      thread's end of work minus its own.
 *
 * Prints one line of key=value: the waits measured per construct (ns),
 * entries, and the barrier and implicit-barrier truths per thread.
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

int main(void)
{
    uint64_t crit_wait[2] = {0, 0}, lock_wait[2] = {0, 0}, lock_end[2] = {0, 0};
    uint64_t bar_arrive[2], bar_leave[2], work_end[REGIONS][2];
    omp_lock_t lock;
    omp_init_lock(&lock);
    omp_set_num_threads(2);
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        for (int i = 0; i < CRIT; i++) {
            uint64_t t0 = now_ns();
#pragma omp critical(update)
            {
                crit_wait[t] += now_ns() - t0;
                sleep_ms(HOLD_MS);
            }
        }
#pragma omp barrier
        for (int i = 0; i < CRIT; i++) {
            uint64_t t0 = now_ns();
            omp_set_lock(&lock);
            lock_wait[t] += now_ns() - t0;
            sleep_ms(HOLD_MS);
            omp_unset_lock(&lock);
        }
        lock_end[t] = now_ns();
#pragma omp barrier
        sleep_ms((t + 1) * BAR_MS);
        bar_arrive[t] = now_ns();
#pragma omp barrier /* EXPLICIT_BARRIER */
        bar_leave[t] = now_ns();
    }
    for (int r = 0; r < REGIONS; r++) {
#pragma omp parallel for schedule(static) /* IMBALANCED_FOR */
        for (int i = 0; i < 2; i++) {
            sleep_ms((1 + 3 * i) * WORK_MS);
            work_end[r][omp_get_thread_num()] = now_ns();
        }
    }
    omp_destroy_lock(&lock);
    /* truths: the explicit barrier's wait, the implicit-barrier waits */
    /* the first to arrive waits for the other */
    uint64_t bar_wait = bar_arrive[1] > bar_arrive[0] ? bar_arrive[1] - bar_arrive[0]
                                                      : bar_arrive[0] - bar_arrive[1];
    /* and how long it stayed in the barrier: its wait plus the time the
       runtime took to let it go (a bound from above that includes the
       wake-up, however late the machine's load makes it) */
    int first = bar_arrive[1] < bar_arrive[0];
    uint64_t bar_span = bar_leave[first] - bar_arrive[first];
    uint64_t imp[2] = {0, 0};
    for (int r = 0; r < REGIONS; r++) {
        uint64_t last = work_end[r][0] > work_end[r][1] ? work_end[r][0] : work_end[r][1];
        for (int t = 0; t < 2; t++)
            imp[t] += last - work_end[r][t];
    }
    uint64_t lock_last_wait = lock_wait[lock_end[1] > lock_end[0]];
    printf("threads=2 crit=%d crit_wait_ns=%llu lock_wait_ns=%llu lock_last_wait_ns=%llu "
           "bar_wait_ns=%llu bar_span_ns=%llu regions=%d imp0_ns=%llu imp1_ns=%llu\n",
           CRIT, (unsigned long long)(crit_wait[0] + crit_wait[1]),
           (unsigned long long)(lock_wait[0] + lock_wait[1]),
           (unsigned long long)lock_last_wait, (unsigned long long)bar_wait,
           (unsigned long long)bar_span, REGIONS, (unsigned long long)imp[0], (unsigned long long)imp[1]);
    return 0;
}
