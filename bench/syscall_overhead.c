/*
 * What the collector's interposed syscall() adds: N calls of a cheap
 * non-futex system call through syscall() (getppid: passed straight
 * through), and N FUTEX_WAKE calls on a word nobody waits on (recorded:
 * two FUTEX records each). Timed by the program with CLOCK_MONOTONIC
 * and with the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time another
 * program holds the CPU is not counted); prints ns per call. Usage:
 * syscall_overhead N
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t word;

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long sum = 0;
    uint64_t c0 = cpu_ns(), t0 = now_ns();
    for (long i = 0; i < n; i++)
        sum += syscall(SYS_getppid);
    uint64_t c1 = cpu_ns(), t1 = now_ns();
    for (long i = 0; i < n; i++)
        sum += syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    uint64_t c2 = cpu_ns(), t2 = now_ns();
    printf("passthrough_ns=%.2f futex_wake_ns=%.2f check=%d passthrough_cpu_ns=%.2f "
           "futex_wake_cpu_ns=%.2f\n",
           (double)(t1 - t0) / n, (double)(t2 - t1) / n, sum != 0, (double)(c1 - c0) / n,
           (double)(c2 - c1) / n);
    return 0;
}
