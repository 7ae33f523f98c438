/* A lock-intensive, memory-bound kernel for bench/thread_scaling.sh (after
 * the streamcluster- and bodytrack-like programs of HaLock's Figure 6,
 * Huang et al. PACT 2012): THREADS threads each stream through an array of
 * their own (TOTAL_MIB split evenly among them, so the work and the memory
 * traffic are the same at every thread count) PASSES times, summing it and
 * writing every element back, and every BLOCK_KIB of streaming take one
 * shared mutex to add their partial sum to a shared total.
 *
 *   thread_scaling THREADS [TOTAL_MIB [PASSES [BLOCK_KIB]]]
 *
 * Defaults: 2048 MiB, 1 pass, 32 KiB (about 1-3 µs of streaming per lock
 * on the machines of docs/benchmarks.md). Keep PASSES at 1 for a
 * memory-bound run: with many threads on few CPUs a thread's part is small
 * and a second pass in the same time slice finds it in cache.
 *
 * Prints: threads=<n> run_ns=<ns from the first worker's start to the last
 * worker's end>
 * locks=<acquisitions of the shared mutex> total=<checksum>. The run time
 * is measured by the program itself (CLOCK_MONOTONIC), so the launcher's
 * start-up and the trace's finishing are not in it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static uint64_t total;
static long locks;

static size_t words;  /* 8-byte words per thread */
static size_t block;  /* words per lock */
static int passes;

/* CPU time of the whole process (all threads, user + system), ns. */
static double cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Per thread: its array, and when it started and finished, ns. */
struct job {
    uint64_t *a;
    double begin, end;
};

static void *worker(void *arg) {
    struct job *job = arg;
    uint64_t *a = job->a;
    pthread_barrier_wait(&start);
    job->begin = now_ns();
    for (int p = 0; p < passes; p++) {
        for (size_t i = 0; i < words; i += block) {
            size_t end = i + block < words ? i + block : words;
            uint64_t sum = 0;
            for (size_t j = i; j < end; j++) {
                sum += a[j];
                a[j] = sum ^ j;
            }
            pthread_mutex_lock(&shared);
            total += sum;
            locks++;
            pthread_mutex_unlock(&shared);
        }
    }
    job->end = now_ns();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: thread_scaling THREADS [TOTAL_MIB [PASSES [BLOCK_KIB]]]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    long total_mib = argc > 2 ? atol(argv[2]) : 2048;
    passes = argc > 3 ? atoi(argv[3]) : 1;
    long block_kib = argc > 4 ? atol(argv[4]) : 32;
    if (threads < 1 || total_mib < 1 || passes < 1 || block_kib < 1) {
        fprintf(stderr, "thread_scaling: bad arguments\n");
        return 2;
    }
    words = (size_t)total_mib * 1024 * 1024 / 8 / (size_t)threads;
    block = (size_t)block_kib * 1024 / 8;
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    struct job *jobs = calloc((size_t)threads, sizeof *jobs);
    if (!tid || !jobs)
        return 1;
    for (int t = 0; t < threads; t++) {
        jobs[t].a = malloc(words * 8);
        if (!jobs[t].a)
            return 1;
        memset(jobs[t].a, t + 1, words * 8); /* touched before the clock starts */
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0) {
            fprintf(stderr, "thread_scaling: pthread_create failed at %d\n", t);
            return 1;
        }
    }
    double c0 = cpu_ns();
    pthread_barrier_wait(&start);
    double t0 = 0, t1 = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        if (t == 0 || jobs[t].begin < t0)
            t0 = jobs[t].begin;
        if (jobs[t].end > t1)
            t1 = jobs[t].end;
    }
    double c1 = cpu_ns();
    printf("threads=%d run_ns=%.0f cpu_ns=%.0f locks=%ld total=%llu\n", threads, t1 - t0, c1 - c0,
           locks, (unsigned long long)total);
    for (int t = 0; t < threads; t++)
        free(jobs[t].a);
    free(jobs);
    free(tid);
    return 0;
}
