/*
 * Functions of known duration and shape for the function-instrumentation
 * tests (uprobes with `contend record --function`, and
 * -finstrument-functions with `--instrumented-functions`):
 *
 *   exe_work(us)   spins `us` µs                     (in the executable)
 *   lib_work(us)   spins `us` µs                     (in libsciprobe.so)
 *   nop()          returns at once: the cost of a probe hit, measured
 *   fib(n)         recursive: fib(6) makes 25 calls (counted)
 *   jumper(d)      recurses d deep, then longjmps out of all of it
 *   bye()          calls exit(0) from inside itself
 *
 * Argument: a mode. "all" runs EXE_CALLS exe_work(1000), LIB_CALLS
 * lib_work(1000), NOPS nop(), FIBS fib(6), JUMPS jumper(3), then bye().
 * "nop" runs only the nops. The program times every call of exe_work,
 * lib_work and nop with its own clock and prints, before bye():
 *
 *   {"exe_calls":…, "exe_ns":…, "exe_disturbed_ns":…, "lib_calls":…,
 *    "lib_ns":…, "lib_disturbed_ns":…, "nop_calls":…, "nop_ns":…,
 *    "fib_calls":…}
 *
 * *_disturbed_ns: Σ duration of the calls during which the thread was
 * switched out involuntarily (getrusage ru_nivcsw) or that took 2 ms more
 * than their work (a virtual CPU descheduled by its host): in those the
 * program's clock reads and the probes' timestamps may be milliseconds
 * apart.
 *
 * Built -O2 (the functions are noinline and noclone, so each call is a call).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXE_CALLS 40
#define LIB_CALLS 30
#define NOPS 400
#define FIBS 10
#define JUMPS 5

void lib_work(unsigned us);

static long preemptions(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nivcsw;
}

/* Times one call of `f(us)`: adds its duration to *sum and, if it was
 * disturbed, to *disturbed. */
#define TIMED(f, us, sum, disturbed)                                     \
    do {                                                                 \
        long p0 = preemptions();                                         \
        uint64_t t0 = now_ns();                                          \
        f(us);                                                           \
        uint64_t d = now_ns() - t0;                                      \
        *(sum) += d;                                                     \
        if (preemptions() != p0 || d > (uint64_t)(us) * 1000u + 2000000u) \
            *(disturbed) += d;                                           \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins for `us` µs, computing between clock reads: a CPU profile then
 * finds the time in this function itself, not in the vDSO's clock read
 * (with a bare clock loop it got 1-5 of ~280 samples on an Intel guest,
 * under the 1 % --hot-functions needs); 256 steps of about a nanosecond
 * each keep the overshoot under a microsecond. */
__attribute__((noinline, noclone)) void exe_work(unsigned us)
{
    uint64_t end = now_ns() + (uint64_t)us * 1000u;
    while (now_ns() < end)
        for (unsigned i = 0; i < 256; i++)
            __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) void nop(void)
{
    __asm__ volatile("" ::: "memory");
}

static volatile int fib_calls;

__attribute__((noinline, noclone)) int fib(int n)
{
    fib_calls++;
    if (n < 2)
        return n;
    /* both results pass through asm, so neither call is a tail call the
     * compiler could turn into a loop: every level is a real call */
    int a = fib(n - 1);
    __asm__ volatile("" : "+r"(a));
    int b = fib(n - 2);
    __asm__ volatile("" : "+r"(b));
    return a + b;
}

static jmp_buf env;
static volatile int jump_out = 1;

__attribute__((noinline, noclone)) void jumper(int depth)
{
    __asm__ volatile("" ::: "memory");
    if (depth == 0) {
        if (jump_out)
            longjmp(env, 1);
        return;
    }
    jumper(depth - 1);
    __asm__ volatile("" ::: "memory");
}

/* Calls jumper(3) `n` times, each left by longjmp from 3 levels down. */
__attribute__((noinline, noclone)) static void run_jumps(int n)
{
    for (volatile int i = 0; i < n; i++)
        if (setjmp(env) == 0)
            jumper(3);
}

__attribute__((noinline, noclone)) void bye(void)
{
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    uint64_t exe_ns = 0, lib_ns = 0, nop_ns = 0, exe_dist = 0, lib_dist = 0;
    int exe_calls = 0, lib_calls = 0, nop_calls = 0;
    if (strcmp(mode, "all") == 0) {
        for (int i = 0; i < EXE_CALLS; i++) {
            TIMED(exe_work, 1000, &exe_ns, &exe_dist);
            exe_calls++;
        }
        for (int i = 0; i < LIB_CALLS; i++) {
            TIMED(lib_work, 1000, &lib_ns, &lib_dist);
            lib_calls++;
        }
    }
    for (int i = 0; i < NOPS; i++) {
        uint64_t t0 = now_ns();
        nop();
        nop_ns += now_ns() - t0;
        nop_calls++;
    }
    volatile int sink = 0;
    if (strcmp(mode, "all") == 0) {
        for (int i = 0; i < FIBS; i++)
            sink += fib(6);
        run_jumps(JUMPS);
    }
    printf("{\"exe_calls\":%d,\"exe_ns\":%llu,\"exe_disturbed_ns\":%llu,\"lib_calls\":%d,"
           "\"lib_ns\":%llu,\"lib_disturbed_ns\":%llu,\"nop_calls\":%d,\"nop_ns\":%llu,"
           "\"fib_calls\":%d,\"sink\":%d}\n",
           exe_calls, (unsigned long long)exe_ns, (unsigned long long)exe_dist, lib_calls,
           (unsigned long long)lib_ns, (unsigned long long)lib_dist, nop_calls,
           (unsigned long long)nop_ns, fib_calls, sink);
    if (strcmp(mode, "all") == 0)
        bye();
    return 0;
}
