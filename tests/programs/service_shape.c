/* service_shape: threads with a known service-time shape, for the
 * service-time sampler's end-to-end test (crates/contend-cli/tests/e2e_service.rs).
 *
 * Usage: service_shape [MS]   (MS = run length in milliseconds, default 1000)
 *
 * Thread A is busy the whole run (100%); thread B is busy the first half
 * (50%); thread C is busy from the half to three quarters (25%). At most two
 * threads are busy at any moment, so on two or more idle cores thread A is
 * never preempted by its siblings, and the average number of active threads
 * (Venter 2016, Listing 3.3) equals CPU time / wall time (1.75 ideally).
 *
 * Prints, on one line: "cpu_s=<getrusage CPU s> wall_s=<wall s from the
 * start of main to the end> cpu0_s=<getrusage CPU s at the start of main>"
 * (cpu_s − cpu0_s is the CPU time of the run itself; cpu0_s, the
 * process's start-up before main, ran on one thread).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t0, run_s;

static double cpu_now_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
static volatile unsigned long sink;

struct span {
    double from, to; /* fractions of the run */
};

static void spin_until(double t) {
    unsigned long x = 0;
    while (now_s() < t) {
        for (int i = 0; i < 1000; i++) x += (unsigned long)i * 2654435761u;
    }
    sink += x;
}

static void sleep_until(double t) {
    double d = t - now_s();
    if (d <= 0) return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg) {
    const struct span *s = arg;
    sleep_until(t0 + s->from * run_s);
    spin_until(t0 + s->to * run_s);
    return NULL;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 1000;
    if (ms <= 0) ms = 1000;
    run_s = (double)ms / 1000.0;
    static const struct span spans[3] = {{0.0, 1.0}, {0.0, 0.5}, {0.5, 0.75}};
    pthread_t th[3];
    double cpu0 = cpu_now_s();
    t0 = now_s();
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, worker, (void *)&spans[i]);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    double cpu = cpu_now_s();
    printf("cpu_s=%.6f wall_s=%.6f cpu0_s=%.6f\n", cpu, wall, cpu0);
    return 0;
}
