/* The program the service-time sampler's scheduler events are kept for
 * (bench/sched_events_cost.sh): N threads that each work briefly (a 2,000
 * step loop) and sleep 20 µs, ITERS times; every iteration is a wake-up, a
 * switch in and a switch out (three scheduler event records). Prints the
 * process's CPU time (user + system, all threads) per iteration and the
 * wall time. Usage: sleepers N ITERS (N ≤ 1024). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static int iters;

static void *body(void *arg)
{
    (void)arg;
    struct timespec nap = {0, 20000};
    volatile double x = 0;
    for (int i = 0; i < iters; i++) {
        for (int k = 0; k < 2000; k++)
            x += k;
        nanosleep(&nap, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 32;
    iters = argc > 2 ? atoi(argv[2]) : 3000;
    if (n < 1 || n > 1024 || iters < 1) {
        fprintf(stderr, "usage: sleepers N ITERS (1 <= N <= 1024)\n");
        return 2;
    }
    static pthread_t t[1024];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    printf("cpu_ns_per_iter=%.0f wall_s=%.3f\n", cpu * 1e9 / ((double)n * iters),
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    return 0;
}
