/*
 * The trace clock of contend's in-process libraries (the lock collector,
 * its region recorder, and the MPI recorder): one definition of how a
 * timestamp is taken and how a calibration point is read, so that every
 * trace of a recording is on the same clock. Internal to those libraries;
 * not part of any public interface.
 *
 * The clock is the TSC (`rdtsc`, about 13 ns on the AMD EPYC guest of
 * docs/benchmarks.md, against 33 ns for clock_gettime there) when the
 * launcher says it is reliable (`CONTEND_CLOCK=tsc`: the CPU reports
 * `constant_tsc` and `nonstop_tsc`), else CLOCK_MONOTONIC ns. A TSC trace
 * stores calibration points (the same instant on the TSC and on
 * CLOCK_MONOTONIC); the reader converts ticks to CLOCK_MONOTONIC ns with
 * the least-squares line through them (contend_trace::clock::ClockFit),
 * the trace's ticks per second (`CONTEND_TSC_HZ`, the launcher's
 * measurement) when it has a single point. docs/trace-format.md, "Clock".
 */
#ifndef CONTEND_CLOCK_H
#define CONTEND_CLOCK_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CONTEND_CLOCK_HAVE_TSC 1
#else
#define CONTEND_CLOCK_HAVE_TSC 0
#endif

/* CLOCK_MONOTONIC, ns. */
static inline __attribute__((always_inline)) uint64_t contend_clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One timestamp on the trace clock: TSC ticks when `tsc`, else
 * CLOCK_MONOTONIC ns. */
static inline __attribute__((always_inline)) uint64_t contend_clock_read(int tsc)
{
#if CONTEND_CLOCK_HAVE_TSC
    if (__builtin_expect(tsc, 1))
        return __rdtsc();
#else
    (void)tsc;
#endif
    return contend_clock_monotonic_ns();
}

/* 1 when the environment asks for the TSC (`CONTEND_CLOCK=tsc`) and this
 * architecture has one; `*hz` gets `CONTEND_TSC_HZ` (0 when absent or not
 * a positive integer). `value` is CONTEND_CLOCK's value (NULL: unset). */
static inline int contend_clock_tsc_wanted(const char *value, const char *hz_value,
                                           uint64_t *hz)
{
    *hz = 0;
    if (hz_value) {
        uint64_t v = 0;
        const char *p = hz_value;
        while (*p >= '0' && *p <= '9' && v < UINT64_MAX / 10)
            v = v * 10 + (uint64_t)(*p++ - '0');
        if (*p == 0 && p != hz_value)
            *hz = v;
    }
#if defined(__x86_64__) /* as the lock collector: rdtsc on x86-64 only */
    return value && strcmp(value, "tsc") == 0;
#else
    (void)value;
    return 0;
#endif
}

/* One instant on the trace clock and on CLOCK_MONOTONIC and
 * CLOCK_REALTIME (ns) (`real` may be NULL). With the TSC: the tightest of
 * five tsc / clock_gettime / tsc brackets, the tick value its midpoint.
 * Not for a hot path (five brackets, about 0.5 us). */
static inline void contend_clock_sample(int tsc, uint64_t *ticks, uint64_t *mono, uint64_t *real)
{
    struct timespec m = {0, 0}, r = {0, 0};
#if CONTEND_CLOCK_HAVE_TSC
    if (tsc) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 5; i++) {
            struct timespec m1, r1 = {0, 0};
            uint64_t a = __rdtsc();
            clock_gettime(CLOCK_MONOTONIC, &m1);
            if (real)
                clock_gettime(CLOCK_REALTIME, &r1);
            uint64_t b = __rdtsc();
            if (b - a < best) {
                best = b - a;
                *ticks = a + (b - a) / 2;
                m = m1;
                r = r1;
            }
        }
        *mono = (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
        if (real)
            *real = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
        return;
    }
#else
    (void)tsc;
#endif
    clock_gettime(CLOCK_MONOTONIC, &m);
    *mono = (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
    if (real) {
        clock_gettime(CLOCK_REALTIME, &r);
        *real = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
    }
    *ticks = *mono;
}

/* The same instant on the trace clock and CLOCK_MONOTONIC, one bracket
 * (chunk headers: cheaper than contend_clock_sample). */
static inline void contend_clock_pair_sample(int tsc, uint64_t *ticks, uint64_t *mono)
{
#if CONTEND_CLOCK_HAVE_TSC
    if (tsc) {
        uint64_t a = __rdtsc();
        uint64_t m = contend_clock_monotonic_ns();
        uint64_t b = __rdtsc();
        *ticks = a + (b - a) / 2;
        *mono = m;
        return;
    }
#else
    (void)tsc;
#endif
    *mono = contend_clock_monotonic_ns();
    *ticks = *mono;
}

#endif /* CONTEND_CLOCK_H */
