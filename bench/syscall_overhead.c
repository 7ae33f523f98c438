/*
 * What the collector's interposed syscall() adds: N calls of a cheap
 * non-futex system call through syscall() (getppid: passed straight
 * through), and N FUTEX_WAKE calls on a word nobody waits on (recorded:
 * two FUTEX records each). Timed by the program with CLOCK_MONOTONIC;
 * prints ns per call. Usage: syscall_overhead N
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

static uint32_t word;

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long sum = 0;
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        sum += syscall(SYS_getppid);
    uint64_t t1 = now_ns();
    for (long i = 0; i < n; i++)
        sum += syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    uint64_t t2 = now_ns();
    printf("passthrough_ns=%.2f futex_wake_ns=%.2f check=%d\n", (double)(t1 - t0) / n,
           (double)(t2 - t1) / n, sum != 0);
    return 0;
}
