/* service_cpu_threads: CPU-bound threads that measure their own CPU time,
 * for the service-time sources' accuracy test
 * (crates/contend-cli/tests/e2e/service_sources.rs).
 *
 * Usage: service_cpu_threads [THREADS] [MS]   (default 2 threads, 300 ms)
 *
 * Each thread spins until its own CPU clock (CLOCK_THREAD_CPUTIME_ID) has
 * advanced MS milliseconds, then reads that clock once more and ends. The
 * main thread only waits. Being preempted by other work on the machine
 * changes neither the thread's CPU clock nor its service time, so the two
 * can be compared whatever the load.
 *
 * Under a hypervisor the host can also take the virtual CPU away while the
 * thread runs on it (steal time). The guest's scheduler does not count that
 * in the thread's CPU clock (paravirtual steal accounting) but it happens
 * between the thread's switch-in and switch-out. Each thread therefore
 * also measures its wall-clock time and its run-queue wait (field 2 of
 * /proc/thread-self/schedstat) over the spin; what is left after its CPU
 * time and run-queue wait is the time taken from it by the host (or by
 * interrupts), printed as steal_ns.
 *
 * Prints one line per thread:
 * "tid=<tid> cpu_ns=<its CPU time at its end> steal_ns=<wall - CPU - run-queue wait>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long ms = 300;
static volatile unsigned long sink;

static long long thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The calling thread's run-queue wait (ns) so far, or -1 when
 * /proc/thread-self/schedstat cannot be read. */
static long long run_queue_wait_ns(void) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) return -1;
    long long on_cpu = 0, wait = -1;
    if (fscanf(f, "%lld %lld", &on_cpu, &wait) != 2) wait = -1;
    fclose(f);
    return wait;
}

struct result {
    long tid;
    long long cpu_ns;
    long long steal_ns;
};

static void *spin(void *arg) {
    struct result *r = arg;
    r->tid = (long)syscall(SYS_gettid);
    long long wait0 = run_queue_wait_ns();
    long long cpu0 = thread_cpu_ns();
    long long wall0 = monotonic_ns();
    while (thread_cpu_ns() < ms * 1000000LL) {
        unsigned long x = 0;
        for (int i = 0; i < 10000; i++) x += (unsigned long)i * 2654435761u;
        sink += x;
    }
    r->cpu_ns = thread_cpu_ns();
    long long wall1 = monotonic_ns();
    long long wait1 = run_queue_wait_ns();
    r->steal_ns = (wait0 < 0 || wait1 < 0) ? -1
                                           : (wall1 - wall0) - (r->cpu_ns - cpu0) - (wait1 - wait0);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) ms = atoll(argv[2]);
    if (n < 1 || n > 64) n = 2;
    pthread_t th[64];
    struct result res[64];
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, spin, &res[i]);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) printf("tid=%ld cpu_ns=%lld steal_ns=%lld\n", res[i].tid, res[i].cpu_ns, res[i].steal_ns);
    return 0;
}
