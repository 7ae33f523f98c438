/*
 * Lock contention micro-benchmark (Mosli Bouksiaa et al., TPDS 2019,
 * Listing 1): each thread repeats compute(delay), lock, increment,
 * compute(hold), unlock. With "spin" a pthread spinlock, else a POSIX
 * mutex.
 *
 *   lock [mutex|spin] DELAY_NS [ITERATIONS [THREADS [HOLD_NS]]]
 *
 * The delay is in nanoseconds and the critical section holds the lock for
 * HOLD_NS (default 1000) besides the paper's increment: the paper ran 47
 * threads on 48 cores, where the increment alone makes the lock contended
 * for delays of several µs; with 2 threads on 2 CPUs it is contended only
 * at delay 0, so on a small machine the sweep needs a critical section of
 * its own length and delays around it (0 to 16 µs) to go from contended
 * (the threads alternate, each waiting about a hold) to uncontended.
 * HOLD_NS 0 is the paper's Listing 1 exactly.
 *
 * THREADS defaults to the CPUs the process may use (one thread per CPU,
 * pinned: a spinlock holder preempted by another spinner would measure the
 * scheduler, not the lock). The program measures its own X of Table 1,
 * the mean lock acquisition time (the TSC read right before and right
 * after the lock call; x_all_ns, every acquisition), and prints one JSON
 * line:
 *
 *   {"benchmark":"mutex","delay":…,"hold":…,"x_ns":…,"x_all_ns":…,
 *    "long":…,"acquisitions":…,"disturbed":…}
 *
 * x_ns leaves out the acquisitions that took more than 1 ms (`long` of
 * them): with two threads and a critical section of one increment no wait
 * for the lock lasts that long, but on a machine loaded by other programs
 * the thread is preempted inside its own timing window now and then (a
 * scheduler time slice, milliseconds), outside the lock call, where no
 * lock profiler can see it; but an unfair lock (a spinlock above all)
 * also starves a waiter for milliseconds now and then while the holder
 * takes it again and again, a real wait that x_ns leaves out, so the
 * sweep compares SCI with x_all_ns on runs that were not disturbed.
 * x_all_ns is the plain mean. disturbed: the
 * share of the threads' time they were runnable but waiting for a CPU
 * (schedstat run delay): how much other load took from the run.
 *
 * The lock is the global `lock` (the spinlock `spin`), so contend names it.
 */
#include "common.h"
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t spin;
static volatile long value;
static int threads_n;
static volatile int ready;
static int use_spin;
static uint64_t delay_ns, hold_ns = 1000;
static long iterations;

struct result {
    int index;
    uint64_t acquire_ns, long_ns, wall_ns, run_delay_ns;
    long n, long_n;
};

static uint64_t long_ticks;

static void *run(void *arg)
{
    struct result *r = (struct result *)arg;
    pin(r->index);
    /* all threads start together, so that they contend from the start */
    __atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) < threads_n)
        ;
    uint64_t w0 = now_ns(), q0 = run_delay_ns();
    for (long i = 0; i < iterations; i++) {
        compute_ns(delay_ns);
        uint64_t t0 = __rdtsc();
        if (use_spin)
            pthread_spin_lock(&spin);
        else
            pthread_mutex_lock(&lock);
        uint64_t d = __rdtsc() - t0; /* ticks; converted at the end */
        r->acquire_ns += d;
        if (d > long_ticks) {
            r->long_ns += d;
            r->long_n++;
        }
        value++;
        compute_ns(hold_ns);
        if (use_spin)
            pthread_spin_unlock(&spin);
        else
            pthread_mutex_unlock(&lock);
        r->n++;
    }
    r->wall_ns = now_ns() - w0;
    r->run_delay_ns = run_delay_ns() - q0;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lock mutex|spin DELAY_NS [ITERATIONS [THREADS [HOLD_NS]]]\n");
        return 2;
    }
    use_spin = strcmp(argv[1], "spin") == 0;
    delay_ns = strtoull(argv[2], NULL, 10);
    iterations = argc > 3 ? atol(argv[3]) : 20000;
    int threads = argc > 4 ? atoi(argv[4]) : usable_cpus();
    if (argc > 5)
        hold_ns = strtoull(argv[5], NULL, 10);
    if (threads < 2)
        threads = 2;
    if (threads > 64)
        threads = 64;
    threads_n = threads;
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    double per_ns = tsc_per_ns(20);
    long_ticks = (uint64_t)(per_ns * 1e6);
    pthread_t t[64];
    struct result r[64];
    memset(r, 0, sizeof r);
    for (int i = 0; i < threads; i++) {
        r[i].index = i;
        pthread_create(&t[i], NULL, run, &r[i]);
    }
    uint64_t sum = 0, n = 0, long_sum = 0, long_n = 0, wall = 0, delayed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        wall += r[i].wall_ns;
        delayed += r[i].run_delay_ns;
        sum += r[i].acquire_ns;
        n += (uint64_t)r[i].n;
        long_sum += r[i].long_ns;
        long_n += (uint64_t)r[i].long_n;
    }
    printf("{\"benchmark\":\"%s\",\"delay\":%llu,\"hold\":%llu,\"x_ns\":%.1f,\"x_all_ns\":%.1f,\"long\":%llu,"
           "\"acquisitions\":%llu,\"disturbed\":%.4f}\n",
           use_spin ? "spin" : "mutex", (unsigned long long)delay_ns, (unsigned long long)hold_ns,
           (double)(sum - long_sum) / per_ns / (double)(n - long_n), (double)sum / per_ns / (double)n,
           (unsigned long long)long_n, (unsigned long long)n, (double)delayed / (double)wall);
    return 0;
}
