/*
 * libgomp's task waits, ordered regions and the barrier at the end of a
 * non-static worksharing loop (gcc -fopenmp; collector/src/gomp.c), with
 * waits the program times itself (CLOCK_MONOTONIC), 2 threads, ROUNDS
 * times each:
 *
 *   1. taskwait: the single thread creates a task that sleeps 2 WORK_MS
 *      and waits for it (GOMP_taskwait): timed around the construct;
 *   2. taskgroup: a task that sleeps WORK_MS in a taskgroup; the wait at
 *      the group's end (GOMP_taskgroup_end) timed from after the task's
 *      creation to after the group;
 *   3. ordered: a loop with schedule(static, 1): the even iterations
 *      (thread 0) sleep WORK_MS before their ordered block, so the odd
 *      ones (thread 1) wait at theirs; each wait (GOMP_ordered_start) is
 *      timed from before the construct to its first statement, and the
 *      thread's time waiting for a CPU around it (the kernel's run-queue
 *      delay, /proc/thread-self/schedstat) is summed too: on a loaded
 *      machine a preemption between the program's clock reads and the
 *      call's own start or end is in the program's wait and not in
 *      contend's, and that sum bounds it;
 *   4. the barrier at the end of a `for schedule(dynamic)` inside a
 *      parallel region that goes on after it (GOMP_loop_end): iteration
 *      0 sleeps WORK_MS, iteration 1 4 WORK_MS, one per thread (each
 *      waits, up to 1 s, until both have begun). Each thread notes its end
 *      of work in the loop and its end of the region's own work after it;
 *      a thread's wait at the k-th barrier of the region is the last end
 *      of its team minus its own (the analysis's definition), summed over
 *      the two barriers (the loop's end and the region's end) and rounds.
 *
 * Prints: threads=2 rounds=<ROUNDS> taskwait_ns= taskgroup_ns=
 *         ordered=<ordered entries> ordered_ns= ordered_rq_ns= loop0_ns= loop1_ns=
 *         loop_split=<rounds whose loop ran on both threads>
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS 3
#define WORK_MS 10

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's run-queue delay so far (ns), 0 where schedstat
 * cannot be read. */
static int64_t run_delay_ns(void)
{
    long long run = 0, delay = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%lld %lld", &run, &delay) != 2)
        delay = 0;
    fclose(f);
    return (int64_t)delay;
}

static void sleep_ms(int ms)
{
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&d, NULL);
}

static int64_t max2(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

int main(void)
{
    int64_t taskwait_ns = 0, taskgroup_ns = 0, ordered_ns = 0, ordered_rq_ns = 0;
    long ordered = 0;
    for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel num_threads(2)
        {
#pragma omp single
            {
#pragma omp task
                sleep_ms(2 * WORK_MS);
                int64_t t0 = now_ns();
#pragma omp taskwait /* TASKWAIT */
                taskwait_ns += now_ns() - t0;
                int64_t t1 = 0;
#pragma omp taskgroup
                {
#pragma omp task
                    sleep_ms(WORK_MS);
                    t1 = now_ns();
                }
                taskgroup_ns += now_ns() - t1;
            }
        }
    }

#pragma omp parallel for ordered schedule(static, 1) num_threads(2)
    for (int i = 0; i < 4 * ROUNDS; i++) {
        if (i % 2 == 0)
            sleep_ms(WORK_MS);
        int64_t q0 = run_delay_ns();
        int64_t t0 = now_ns();
#pragma omp ordered
        {
            ordered_ns += now_ns() - t0;
            ordered_rq_ns += run_delay_ns() - q0;
            ordered++;
        }
    }

    int64_t loop_wait[2] = {0, 0};
    int split = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int64_t work_end[2] = {0, 0}, region_end[2] = {0, 0};
        int started = 0, iters[2] = {0, 0};
#pragma omp parallel num_threads(2) /* LOOP_REGION */
        {
            int me = omp_get_thread_num();
            work_end[me] = now_ns();
#pragma omp for schedule(dynamic)
            for (int i = 0; i < 2; i++) {
                __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
                for (int k = 0; k < 10000 && __atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2; k++)
                    nanosleep(&(struct timespec){0, 100000}, NULL);
                sleep_ms((1 + 3 * i) * WORK_MS);
                work_end[omp_get_thread_num()] = now_ns();
                iters[omp_get_thread_num()]++;
            }
            region_end[me] = now_ns();
        }
        split += iters[0] == 1 && iters[1] == 1;
        int64_t last_work = max2(work_end[0], work_end[1]);
        int64_t last_end = max2(region_end[0], region_end[1]);
        for (int t = 0; t < 2; t++)
            loop_wait[t] += (last_work - work_end[t]) + (last_end - region_end[t]);
    }

    printf("threads=2 rounds=%d taskwait_ns=%lld taskgroup_ns=%lld ordered=%ld ordered_ns=%lld "
           "ordered_rq_ns=%lld loop0_ns=%lld loop1_ns=%lld loop_split=%d\n",
           ROUNDS, (long long)taskwait_ns, (long long)taskgroup_ns, ordered,
           (long long)ordered_ns, (long long)ordered_rq_ns, (long long)loop_wait[0],
           (long long)loop_wait[1], split);
    return 0;
}
