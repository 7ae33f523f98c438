/*
 * In-situ sampling of the collector's own cost (docs/trace-format.md and
 * docs/metrics.md, "Recording cost").
 *
 * The start-up calibration (wrappers.c, contend_calibrate_cost) measures
 * what a record adds on ONE hot mutex; on a program with many locks the
 * collector's table probes and record stores miss the caches and cost
 * more (Huang et al., HaLock, PACT 2012, Section 2: the recording's own
 * memory traffic is what perturbs). So the collector also times itself
 * where the cost happens: one in CONTEND_SAMPLE_EVERY operations of each
 * thread (a per-thread countdown in contend_op / contend_count, no
 * division and no random number on the fast path) runs through the
 * functions below, which
 *   - read the clock, write the record (or count the acquisition, light
 *     mode), read the clock again: two readings more, on sampled
 *     operations only. The operation's own timestamp is not used as the
 *     start: rdtsc does not wait for the instructions before it, so it
 *     may be read while the real call's atomic instruction still misses
 *     the cache, which would put the program's own miss in the window.
 *     The window is taken after the real acquisition returned and before
 *     the real release is called, so the real call is never inside;
 * and add the window to the current chunk's cost_samples word (record
 * chunk for records, COUNTS chunk for counts), a plain store by the
 * owning thread.
 *
 * Both readings are an lfence + rdtsc: the window starts once the real
 * call's instructions have completed and ends once the collector's loads
 * (the table probes that miss) have; the stores may still be in flight
 * (the store buffer hides them from the thread unless it fills). A window that ran into the collector's timed
 * slow path (chunk claim, faulting in pages, maps snapshot: its CPU time
 * is in collector_ns already) or whose record left the fast path is not
 * kept and the next operation is sampled instead, as is a count that
 * entered a new (lock, site) into the thread's table (a one-off per pair,
 * not what later counts cost); a window longer than
 * 10 µs (the thread was descheduled or interrupted) is dropped.
 *
 * What the window cannot see: the wrapper's entry (call, TLS access, the
 * recording check), the timestamp's own reading and whatever the wrapper
 * does outside it (light mode: the release's bookkeeping), which the
 * calibration measured on hot
 * caches (its own windows are stored in the header as
 * cost_window_*_ps: the reader adds cost_*_ps − cost_window_*_ps per
 * operation), and the misses the collector's cache footprint causes in
 * the program's own code afterwards, which nothing here measures.
 */
#include "collector.h"

/* Windows longer than this are a preemption or an interrupt, not cost. */
#define SAMPLE_MAX_NS 10000u

/* Calibration: while on, samples go to these sums (no chunk). */
static int cal_on;
static uint64_t cal_sum[2], cal_n[2]; /* [0] records, [1] counts */
/* The sums at the last round's end, and each round's mean window (1/256
 * trace-clock ticks; a round without windows of a kind has none). The
 * header takes their median: as robust to a round disturbed by other work
 * as the fastest rounds the calibrated cost comes from; the mean of every
 * window was not (a memcached run estimated at 1.4 % among runs at
 * 3.7-5.1 %), and the fastest round's own windows, about eight, were too
 * few (docs/benchmarks.md, "The calibration's windows: the median of its
 * rounds"). */
static uint64_t round_sum[2], round_n[2];
static uint64_t round_mean[2][CONTEND_CAL_WINDOW_ROUNDS];
static uint32_t rounds[2];
/* Longest window kept, trace-clock ticks (set by the calibration). */
static uint64_t max_ticks = 30000u;

/* A window's start or end: after the work before it has completed. */
static inline uint64_t sample_clock(void)
{
#if CONTEND_HAVE_TSC
    if (contend_g.clock_tsc) {
        _mm_lfence();
        return __rdtsc();
    }
#endif
    return contend_now();
}

/* Adds a window of `dt` ticks to `word` (bits 0..39 sum, 40..63 count);
 * saturates instead of wrapping (the reader uses the mean). */
static void sample_add(uint64_t *word, uint64_t dt)
{
    uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
    uint64_t n = w >> CONTEND_SAMPLE_SUM_BITS, sum = w & CONTEND_SAMPLE_SUM_MASK;
    if (n + 1 >= (1u << (64 - CONTEND_SAMPLE_SUM_BITS)) || sum + dt > CONTEND_SAMPLE_SUM_MASK)
        return;
    __atomic_store_n(word, ((n + 1) << CONTEND_SAMPLE_SUM_BITS) | (sum + dt), __ATOMIC_RELAXED);
}

/* Keeps a window: into the chunk's word, or the calibration's sums. */
static void sample_keep(struct contend_thread *ts, void *chunk, int kind, uint64_t dt)
{
    ts->sample_countdown = CONTEND_SAMPLE_EVERY - 1;
    if ((int64_t)dt < 0 || dt > max_ticks)
        return;
    if (CONTEND_UNLIKELY(cal_on)) {
        cal_sum[kind] += dt;
        cal_n[kind]++;
        return;
    }
    if (chunk)
        sample_add(&((contend_chunk_header *)chunk)->cost_samples, dt);
}

void contend_op_sampled(struct contend_thread *ts, uint32_t tag, const void *obj,
                        const void *site, uint64_t t)
{
    uint32_t seq = ts->slow_seq;
    uint64_t *chunk = ts->chunk, *end = ts->end, *cur = ts->cur;
    uint64_t t0 = sample_clock();
    contend_emit(ts, tag, obj, site, t);
    uint64_t t1 = sample_clock();
    if (ts->slow_seq != seq || ts->chunk != chunk || ts->end != end || ts->cur != cur + 1 ||
        (!chunk && !cal_on)) {
        ts->sample_countdown = 0; /* left the fast path: sample the next one */
        return;
    }
    sample_keep(ts, chunk, 0, t1 - t0);
}

void contend_count_sampled(struct contend_thread *ts, uint32_t prim, const void *obj,
                           const void *site)
{
    uint32_t seq = ts->slow_seq, used = ts->count_used;
    void *chunk = ts->count_chunk;
    uint64_t *cur = ts->cur, *rchunk = ts->chunk, *rend = ts->end;
    uint64_t t0 = sample_clock();
    contend_count_op(ts, prim, obj, site);
    uint64_t t1 = sample_clock();
    if (ts->slow_seq != seq || ts->count_chunk != chunk || ts->count_used != used) {
        /* a new COUNTS chunk, the timed slow path, or a new entry: the
         * first count of a (lock, site) in a thread probes an empty part
         * of the table and enters the object into the process's table, a
         * one-off that the mean of the windows would multiply by every
         * later count (a short thread has one window: its first count) */
        ts->sample_countdown = 0;
        return;
    }
    if (ts->cur != cur) {
        /* no entry to be had (a full table of the whole chunk): the
         * acquisition was recorded instead, after the failed probes; one
         * narrow record into the same chunk is a record window, so the
         * estimate's records cost what these cost, not only what a
         * contended acquisition's records cost */
        if (ts->chunk == rchunk && ts->end == rend && ts->cur == cur + 1 && (rchunk || cal_on))
            sample_keep(ts, rchunk, 0, t1 - t0);
        else
            ts->sample_countdown = 0;
        return;
    }
    if (!chunk && !cal_on) {
        ts->sample_countdown = 0;
        return;
    }
    sample_keep(ts, chunk, 1, t1 - t0);
}

/* ticks (trace clock) → ps */
static uint64_t ticks_ps(uint64_t ticks, uint64_t ticks_per_second)
{
    if (!ticks_per_second)
        return 0;
    return (uint64_t)((double)ticks * 1e12 / (double)ticks_per_second);
}

void contend_sampling_calibration_start(void)
{
    uint64_t tps = contend_g.hdr->ticks_per_second;
    if (tps)
        max_ticks = tps / (1000000000u / SAMPLE_MAX_NS);
    cal_sum[0] = cal_sum[1] = cal_n[0] = cal_n[1] = 0;
    round_sum[0] = round_sum[1] = round_n[0] = round_n[1] = 0;
    rounds[0] = rounds[1] = 0;
    cal_on = 1;
}

void contend_sampling_round_end(void)
{
    for (int k = 0; k < 2; k++) {
        uint64_t n = cal_n[k] - round_n[k];
        if (n && rounds[k] < CONTEND_CAL_WINDOW_ROUNDS)
            round_mean[k][rounds[k]++] = ((cal_sum[k] - round_sum[k]) << 8) / n;
        round_sum[k] = cal_sum[k];
        round_n[k] = cal_n[k];
    }
}

/* The median of the first `n` of `v` (sorted in place), 0 if none. */
static uint64_t median(uint64_t *v, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    if (!n)
        return 0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void contend_sampling_calibration_end(void)
{
    contend_trace_header *h = contend_g.hdr;
    uint64_t tps = h->ticks_per_second;
    cal_on = 0;
    for (int k = 0; k < 2; k++) {
        /* the rounds' means are in 1/256 ticks */
        uint64_t ps = ticks_ps(median(round_mean[k], rounds[k]), tps) / 256u;
        if (ps > UINT32_MAX)
            ps = UINT32_MAX;
        if (k == 0)
            h->cost_window_record_ps = (uint32_t)ps;
        else
            h->cost_window_count_ps = (uint32_t)ps;
    }
}
