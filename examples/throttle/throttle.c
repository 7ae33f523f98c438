/*
 * throttle: adaptive work throttling after MAESTRO (Fowler et al. 2011,
 * "Adaptive Threading Using Counter-Based Performance Introspection"):
 * a pool of worker threads processes a queue of memory-bound tasks and,
 * before taking a task, reads a memory meter from the contend meters
 * blackboard (contend/meters.h, no library); while the meter's high
 * trigger is set, workers beyond --min-active park, and they resume once
 * the trigger clears (at the low level: hysteresis, docs/meters.md).
 *
 *   throttle [--threads N] [--tasks T] [--task-kb K] [--meter NAME]
 *            [--blackboard NAME] [--min-active M] [--no-throttle]
 *
 * A task is a STREAM triad a[i] = b[i] + 3 c[i] over three private arrays
 * of K KiB each. The program prints one JSON object: whether it throttled,
 * the elapsed time, per worker the tasks done, the times it parked and the
 * time parked, and a trace every 5 ms of the meter's short-term average,
 * its trigger state and the workers running and parked. It also publishes
 * its state (phase, threads running and waiting) in an application slot
 * of the blackboard.
 *
 * A parked worker never waits for a task that will not come: it stops
 * parking when the queue is empty, so the program always ends.
 */
#define _GNU_SOURCE
#include <contend/meters.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define MAX_TRACE 20000

static int threads = 2, min_active = 1, throttle = 1;
static long tasks = 2000, task_kb = 1024;
static const char *meter = "memory_bandwidth";
static const char *board = NULL;

static struct contend_meters bb;
static int have_board;
static atomic_long next_task;
static atomic_int running, waiting, finished;
static long done[MAX_THREADS], parks[MAX_THREADS];
static double parked_s[MAX_THREADS];

struct trace_row {
    double t, avg;
    unsigned state;
    int running, waiting;
};
static struct trace_row trace[MAX_TRACE];
static int trace_len;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The meter's state and short-term average; CONTEND_TRIGGER_NONE when it
 * cannot be read (no daemon, no such meter yet). */
static unsigned meter_state(double *avg)
{
    struct contend_meter_value v;
    int slot;
    *avg = 0.0;
    if (!have_board)
        return CONTEND_TRIGGER_NONE;
    slot = contend_meters_find(&bb, meter, CONTEND_SCOPE_MACHINE, 0);
    if (slot < 0 || contend_meters_read(&bb, slot, &v) != 0)
        return CONTEND_TRIGGER_NONE;
    *avg = v.avg;
    return v.trigger_state;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    size_t n = (size_t)task_kb * 1024 / sizeof(double);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    size_t i;
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "throttle: out of memory\n");
        exit(1);
    }
    for (i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = (double)i;
        c[i] = 1.0;
    }
    atomic_fetch_add(&running, 1);
    for (;;) {
        double avg;
        if (throttle && id >= min_active &&
            meter_state(&avg) == CONTEND_TRIGGER_HIGH &&
            atomic_load(&next_task) < tasks) {
            double t0 = now_s();
            parks[id]++;
            atomic_fetch_sub(&running, 1);
            atomic_fetch_add(&waiting, 1);
            while (meter_state(&avg) == CONTEND_TRIGGER_HIGH && atomic_load(&next_task) < tasks)
                sleep_ms(1);
            atomic_fetch_sub(&waiting, 1);
            atomic_fetch_add(&running, 1);
            parked_s[id] += now_s() - t0;
        }
        long task = atomic_fetch_add(&next_task, 1);
        if (task >= tasks)
            break;
        for (i = 0; i < n; i++)
            a[i] = b[i] + 3.0 * c[i];
        b[task % (long)n] = a[(size_t)task % n];
        done[id]++;
    }
    atomic_fetch_sub(&running, 1);
    atomic_fetch_add(&finished, 1);
    free(a);
    free(b);
    free(c);
    return NULL;
}

static void *monitor(void *arg)
{
    double start = *(double *)arg;
    int app = have_board && bb.writable ? contend_meters_claim_app(&bb) : -1;
    while (atomic_load(&finished) < threads) {
        double avg;
        unsigned st = meter_state(&avg);
        int r = atomic_load(&running), w = atomic_load(&waiting);
        if (trace_len < MAX_TRACE)
            trace[trace_len++] = (struct trace_row){now_s() - start, avg, st, r, w};
        if (app >= 0)
            contend_meters_publish_app(&bb, app, "throttle", (uint32_t)r, (uint32_t)w);
        sleep_ms(5);
    }
    if (app >= 0)
        contend_meters_publish_app(&bb, app, "done", 0, 0);
    return NULL;
}

static long arg_long(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "throttle: %s %s: expected a number from %ld to %ld\n", flag, v, lo, hi);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    pthread_t tid[MAX_THREADS], mon;
    double start, elapsed;
    int i;
    for (i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(f, "--no-throttle") == 0) {
            throttle = 0;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "throttle: %s needs a value\n", f);
            return 2;
        }
        if (strcmp(f, "--threads") == 0)
            threads = (int)arg_long(f, v, 1, MAX_THREADS);
        else if (strcmp(f, "--tasks") == 0)
            tasks = arg_long(f, v, 1, 1L << 40);
        else if (strcmp(f, "--task-kb") == 0)
            task_kb = arg_long(f, v, 1, 1L << 22);
        else if (strcmp(f, "--min-active") == 0)
            min_active = (int)arg_long(f, v, 1, MAX_THREADS);
        else if (strcmp(f, "--meter") == 0)
            meter = v;
        else if (strcmp(f, "--blackboard") == 0)
            board = v;
        else {
            fprintf(stderr, "throttle: unknown flag %s\n", f);
            return 2;
        }
        i++;
    }
    /* Read-write, to publish the program's state; read-only if not allowed. */
    have_board = contend_meters_open(&bb, board, 1) == 0 || contend_meters_open(&bb, board, 0) == 0;
    if (throttle && !have_board)
        fprintf(stderr, "throttle: no blackboard (%s): running without throttling\n",
                strerror(errno));
    start = now_s();
    for (i = 0; i < threads; i++)
        pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i);
    pthread_create(&mon, NULL, monitor, &start);
    for (i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    elapsed = now_s() - start;
    pthread_join(mon, NULL);

    printf("{\"throttled\":%s,\"meter\":\"%s\",\"threads\":%d,\"min_active\":%d,\"tasks\":%ld,"
           "\"task_kb\":%ld,\"elapsed_s\":%.6f,\"done\":[",
           throttle && have_board ? "true" : "false", meter, threads, min_active, tasks, task_kb,
           elapsed);
    for (i = 0; i < threads; i++)
        printf("%s%ld", i ? "," : "", done[i]);
    printf("],\"parks\":[");
    for (i = 0; i < threads; i++)
        printf("%s%ld", i ? "," : "", parks[i]);
    printf("],\"parked_s\":[");
    for (i = 0; i < threads; i++)
        printf("%s%.6f", i ? "," : "", parked_s[i]);
    printf("],\"trace\":[");
    for (i = 0; i < trace_len; i++)
        printf("%s[%.4f,%.6g,%u,%d,%d]", i ? "," : "", trace[i].t, trace[i].avg, trace[i].state,
               trace[i].running, trace[i].waiting);
    printf("]}\n");
    if (have_board)
        contend_meters_close(&bb);
    return 0;
}
