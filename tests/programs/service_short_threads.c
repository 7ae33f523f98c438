/* service_short_threads: N threads (default 60), one after another, each
 * spins until its own CPU clock shows MS milliseconds (default 3) and
 * ends: every thread lives for less than the sampler's 10 ms interval.
 * Prints the CPU time of all of them together (ns) at the end.
 * Usage: service_short_threads [N [MS]] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long cpu_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long spin_ns;

static void *spin(void *arg)
{
    volatile unsigned long x = 0;
    long long end = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + spin_ns;
    while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        x++;
    *(long long *)arg = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 60;
    spin_ns = (argc > 2 ? atoll(argv[2]) : 3) * 1000000LL;
    long long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        long long own = 0;
        if (pthread_create(&t, NULL, spin, &own) != 0)
            return 1;
        pthread_join(t, NULL);
        total += own;
    }
    printf("threads=%d threads_cpu_ns=%lld\n", n, total);
    return 0;
}
