/* What recording adds per thread that takes one lock once (the per-thread
 * fixed cost of bench/thread_scaling.sh): N threads, started in batches of
 * 64, each locks and unlocks one shared mutex (A times, default once: with
 * a few hundred, each thread's records pass the first page of its chunk)
 * and exits. Usage: thread_start [N [A]]. Run plainly and
 * with the collector preloaded by bench/thread_start.sh; the difference in
 * the CPU time of the threads' phase divided by N is the cost per thread.
 * Prints "acquisitions=<n> cpu_us=<CPU time of the whole process from
 * just before the first thread starts to after the last join, µs>"
 * (getrusage: the collector's start-up and the launcher are not in it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long acquisitions;
static int per_thread = 1;

/* CPU time of the whole process (all threads, user + system), µs. */
static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void *body(void *arg)
{
    (void)arg;
    for (int i = 0; i < per_thread; i++) {
        pthread_mutex_lock(&lock);
        acquisitions++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    if (argc > 2)
        per_thread = atoi(argv[2]);
    enum { BATCH = 64 };
    pthread_t t[BATCH];
    double c0 = cpu_us();
    for (int done = 0; done < n; done += BATCH) {
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&t[i], NULL, body, NULL) != 0)
                return 1;
        for (int i = 0; i < BATCH; i++)
            pthread_join(t[i], NULL);
    }
    printf("acquisitions=%ld cpu_us=%.0f\n", acquisitions, cpu_us() - c0);
    return 0;
}
