/*
 * The shared-library half of sci_probe.c: a function of known duration in
 * a library (libsciprobe.so), for `contend record --function
 * libsciprobe:lib_work`.
 */
#include <stdint.h>
#include <time.h>

static uint64_t lib_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins for `us` µs, computing between clock reads (as exe_work in
 * sci_probe.c: the profile's time is then this function's own). */
__attribute__((noinline)) void lib_work(unsigned us)
{
    uint64_t end = lib_now_ns() + (uint64_t)us * 1000u;
    while (lib_now_ns() < end)
        for (unsigned i = 0; i < 256; i++)
            __asm__ volatile("" ::: "memory");
}
