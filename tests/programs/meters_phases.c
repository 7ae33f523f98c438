/* Lock waits in two known phases for the split of waits by meter state
 * (contend record --meters): a quiet phase (the program sleeps; only the
 * waiter and the holder below) and a busy phase in which SPINNERS threads
 * spin, so the machine's run queue (runnable tasks) is at least SPINNERS.
 *
 * In each phase, after LEAD_MS for the meters to see the phase, the main
 * thread takes `hand_lock`, meets the waiter at a barrier, sleeps HOLD_MS
 * and releases; the waiter, after the barrier, locks `hand_lock` (it
 * waits about HOLD_MS) and times that wait with its own clock. REPS_Q
 * rounds in the quiet phase, REPS_B in the busy one.
 *
 * Prints, CLOCK_MONOTONIC ns (the clock of contend's recordings):
 *   "window quiet <first request> <last acquisition> <waits> <wait_ns>"
 *   "window busy  <first request> <last acquisition> <waits> <wait_ns>"
 * Usage: meters_phases [SPINNERS LEAD_MS HOLD_MS REPS_Q REPS_B]
 *        (default 48 400 40 4 8) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t hand_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start_b, end_b;
static atomic_int spinning = 1;
static uint64_t hold_ms;
static int reps;
static uint64_t first_req, last_acq, wait_sum;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pause_ms(uint64_t ms)
{
    struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0)
        ;
}

static void *spin(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (atomic_load_explicit(&spinning, memory_order_relaxed))
        x++;
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    for (int r = 0; r < reps; r++) {
        pthread_barrier_wait(&start_b);
        uint64_t t0 = now_ns();
        pthread_mutex_lock(&hand_lock);
        uint64_t t1 = now_ns();
        pthread_mutex_unlock(&hand_lock);
        if (r == 0)
            first_req = t0;
        last_acq = t1;
        wait_sum += t1 - t0;
        pthread_barrier_wait(&end_b);
    }
    return NULL;
}

static void hand_overs(const char *name, int n)
{
    pthread_t w;
    reps = n;
    wait_sum = 0;
    pthread_create(&w, NULL, waiter, NULL);
    for (int r = 0; r < n; r++) {
        pthread_mutex_lock(&hand_lock);
        pthread_barrier_wait(&start_b);
        pause_ms(hold_ms);
        pthread_mutex_unlock(&hand_lock);
        pthread_barrier_wait(&end_b);
    }
    pthread_join(w, NULL);
    printf("window %s %llu %llu %d %llu\n", name, (unsigned long long)first_req,
           (unsigned long long)last_acq, n, (unsigned long long)wait_sum);
}

int main(int argc, char **argv)
{
    int spinners = argc > 1 ? atoi(argv[1]) : 48;
    uint64_t lead_ms = argc > 2 ? strtoull(argv[2], 0, 10) : 400;
    hold_ms = argc > 3 ? strtoull(argv[3], 0, 10) : 40;
    int reps_q = argc > 4 ? atoi(argv[4]) : 4;
    int reps_b = argc > 5 ? atoi(argv[5]) : 8;
    if (spinners < 0 || spinners > 1024 || reps_q < 1 || reps_b < 1)
        return 2;
    pthread_barrier_init(&start_b, NULL, 2);
    pthread_barrier_init(&end_b, NULL, 2);

    pause_ms(lead_ms);
    hand_overs("quiet", reps_q);
    pause_ms(lead_ms / 2);

    pthread_t *t = calloc((size_t)spinners, sizeof *t);
    if (!t)
        return 1;
    for (int i = 0; i < spinners; i++)
        pthread_create(&t[i], NULL, spin, NULL);
    pause_ms(lead_ms);
    hand_overs("busy", reps_b);
    pause_ms(lead_ms / 2);
    atomic_store(&spinning, 0);
    for (int i = 0; i < spinners; i++)
        pthread_join(t[i], NULL);
    free(t);
    pause_ms(lead_ms / 2);
    fflush(stdout);
    return 0;
}
