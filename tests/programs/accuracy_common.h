/*
 * The measuring harness shared by accuracy_mutex.c, accuracy_rwlock.c and
 * accuracy_spin.c: clocks, the per-thread totals, the synchronised start,
 * and the measured round as a macro (so the lock and unlock calls stay
 * direct calls, with nothing between the program's clock reads and the
 * wrappers but the call itself).
 */
#ifndef ACCURACY_COMMON_H
#define ACCURACY_COMMON_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

/* A round this long was stalled from outside (see ACCURACY_ROUNDS). */
#define STALL_NS 2000000u

/* One thread's totals, ns and counts. */
struct rounds {
    uint64_t wait_ns, hold_ns, events;
    uint64_t preempted_events, preempted_span_ns;
};

static atomic_int ready;
static atomic_int go;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_until(uint64_t t)
{
    while (now_ns() < t)
        ;
}

/* Involuntary context switches of the calling thread so far. */
static long preemptions(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nivcsw;
}

/* A worker announces itself and waits until every worker is ready. */
static void wait_for_start(void)
{
    atomic_fetch_add(&ready, 1);
    while (!atomic_load(&go))
        ;
}

/* main: lets the workers go once all `threads` are ready. */
static void start_all(int threads)
{
    while (atomic_load(&ready) < threads)
        ;
    atomic_store(&go, 1);
}

/* Adds one thread's totals to `total`. */
static void add_rounds(struct rounds *total, const struct rounds *r)
{
    total->wait_ns += r->wait_ns;
    total->hold_ns += r->hold_ns;
    total->events += r->events;
    total->preempted_events += r->preempted_events;
    total->preempted_span_ns += r->preempted_span_ns;
}

/* The common JSON fields, without braces. */
static void print_rounds(const struct rounds *t)
{
    printf("\"wait_ns\":%llu,\"hold_ns\":%llu,\"events\":%llu,\"preempted_events\":%llu,"
           "\"preempted_span_ns\":%llu",
           (unsigned long long)t->wait_ns, (unsigned long long)t->hold_ns,
           (unsigned long long)t->events, (unsigned long long)t->preempted_events,
           (unsigned long long)t->preempted_span_ns);
}

/*
 * ITERATIONS rounds of: t0; LOCK; t1; busy HOLD; t2; UNLOCK; t3; busy WORK.
 * Sums wait = t1 - t0 and hold = t2 - t1 into *R. A round is disturbed
 * when the thread was switched out involuntarily, or stalled for longer
 * than any lock hand-over here takes (a virtual CPU descheduled by its host
 * is invisible to ru_nivcsw but shows as such a stall); disturbed rounds
 * and their span t0..t3 are counted apart.
 */
#define ACCURACY_ROUNDS(R, ITERATIONS, HOLD_NS, WORK_NS, LOCK, UNLOCK)                 \
    do {                                                                               \
        for (int i_ = 0; i_ < (ITERATIONS); i_++) {                                    \
            long cs_ = preemptions();                                                  \
            uint64_t t0_ = now_ns();                                                   \
            LOCK;                                                                      \
            uint64_t t1_ = now_ns();                                                   \
            spin_until(t1_ + (HOLD_NS));                                               \
            uint64_t t2_ = now_ns();                                                   \
            UNLOCK;                                                                    \
            uint64_t t3_ = now_ns();                                                   \
            (R)->wait_ns += t1_ - t0_;                                                 \
            (R)->hold_ns += t2_ - t1_;                                                 \
            (R)->events++;                                                             \
            if (preemptions() != cs_ || t3_ - t0_ > STALL_NS) {                        \
                (R)->preempted_events++;                                               \
                (R)->preempted_span_ns += t3_ - t0_;                                   \
            }                                                                          \
            spin_until(now_ns() + (WORK_NS));                                          \
        }                                                                              \
    } while (0)

#endif
