/* scale_serial: THREADS threads serialised on one mutex, for the
 * dependency-loss test of `contend scale` (crates/contend-cli/tests/e2e_scale.rs).
 *
 * Usage: scale_serial THREADS MODE [SECTIONS [HOLD_MS]]
 *
 * Every thread takes the one global mutex SECTIONS times (default 20) and
 * holds it HOLD_MS milliseconds (default 5) each time; outside the lock it
 * does nothing, so it only waits for the lock (asleep in the kernel) between
 * its critical sections. MODE says what the holder does:
 *
 *   busy   computes (a spin on the clock) while holding the lock: exactly
 *          one thread is active at any time, whatever the core count, so
 *          the average number of active threads A is 1 and the speed-up
 *          lost to dependencies D = m - A is m - 1 (Venter 2016, Eq. 3.8);
 *   sleep  sleeps (nanosleep) while holding the lock: no thread is active,
 *          A is about 0 and D about m.
 *
 * Prints "cpu_s=<getrusage CPU s> wall_s=<wall s>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int sections = 20, busy;
static double hold_s = 0.005;
static volatile unsigned long sink;

static void *worker(void *arg) {
    (void)arg;
    for (int k = 0; k < sections; k++) {
        pthread_mutex_lock(&lock);
        if (busy) {
            double end = now_s() + hold_s;
            unsigned long x = 0;
            while (now_s() < end)
                for (int i = 0; i < 200; i++) x += (unsigned long)i * 2654435761u;
            sink += x;
        } else {
            struct timespec ts = {0, (long)(hold_s * 1e9)};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    if (threads < 1 || threads > 1024 || argc < 3 ||
        (strcmp(argv[2], "busy") != 0 && strcmp(argv[2], "sleep") != 0)) {
        fprintf(stderr, "usage: scale_serial THREADS busy|sleep [SECTIONS [HOLD_MS]]\n");
        return 2;
    }
    busy = strcmp(argv[2], "busy") == 0;
    if (argc > 3) sections = atoi(argv[3]);
    if (argc > 4) hold_s = atof(argv[4]) / 1000.0;
    if (sections < 1 || hold_s <= 0) {
        fprintf(stderr, "scale_serial: bad SECTIONS or HOLD_MS\n");
        return 2;
    }
    double t0 = now_s();
    pthread_t tid[1024];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, NULL) != 0) return 1;
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    double wall = now_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf("cpu_s=%.6f wall_s=%.6f\n", cpu, wall);
    return 0;
}
