/* mpi_hybrid: a hybrid MPI + pthreads program for `contend record --mpi
 * --locks`. Every rank starts a helper thread that holds `hybrid_lock` for
 * HOLD ms while the main thread waits for it (a lock wait of about HOLD ms
 * per rank, measured by the main thread around its pthread_mutex_lock);
 * then rank r sleeps r × STEP ms before an MPI_Barrier (a wait at barrier
 * of (size − 1 − r) × STEP ms for rank r, measured with CLOCK_MONOTONIC
 * around the barrier call).
 *
 * Usage: mpi_hybrid [HOLD_MS [STEP_MS]] (defaults 60 and 40).
 * Rank 0 prints "lock_wait_ns=<sum over ranks>" and
 * "barrier_wait_ns=<sum over ranks>", then per rank r
 * "rank_lock_wait_ns <r>=<its main thread's lock wait>", then
 * "barrier_wait_def_ns=<the wait at barrier by its definition on the
 * ranks' CLOCK_MONOTONIC stamps of the barrier's entry and exit>" (the
 * time blocked also holds the waking up, long on a loaded machine), then
 * per rank "rank_joined_late <r>=<1 when the helper was still ending
 * after its unlock as the main thread came to join it, else 0>": the
 * join then waited, and the critical path rightly runs through the
 * helper's end and its hold rather than the main thread's lock wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t hybrid_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int helper_holds;
static long hold_ms = 60, step_ms = 40;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void *helper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hybrid_lock);
    __atomic_store_n(&helper_holds, 1, __ATOMIC_RELEASE);
    sleep_ms(hold_ms);
    pthread_mutex_unlock(&hybrid_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (argc > 1)
        hold_ms = atol(argv[1]);
    if (argc > 2)
        step_ms = atol(argv[2]);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    pthread_t t;
    pthread_create(&t, NULL, helper, NULL);
    while (!__atomic_load_n(&helper_holds, __ATOMIC_ACQUIRE))
        sched_yield();
    long long t0 = now_ns();
    pthread_mutex_lock(&hybrid_lock);
    long long lock_wait = now_ns() - t0;
    pthread_mutex_unlock(&hybrid_lock);
    /* pthread_tryjoin_np never waits (and is not recorded) */
    int joined_late = pthread_tryjoin_np(t, NULL) == EBUSY;
    if (joined_late)
        pthread_join(t, NULL);

    sleep_ms((long)rank * step_ms);
    long long b0 = now_ns();
    MPI_Barrier(MPI_COMM_WORLD);
    long long b1 = now_ns();
    long long barrier = b1 - b0;

    long long mine[2] = {lock_wait, barrier}, sum[2] = {0, 0};
    MPI_Reduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    long long *each = calloc((size_t)size, sizeof *each);
    MPI_Gather(&lock_wait, 1, MPI_LONG_LONG, each, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    long long stamps[2] = {b0, b1}, *all = calloc((size_t)size * 2, sizeof *all);
    MPI_Gather(stamps, 2, MPI_LONG_LONG, all, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    int *late = calloc((size_t)size, sizeof *late);
    MPI_Gather(&joined_late, 1, MPI_INT, late, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("lock_wait_ns=%lld\n", sum[0]);
        printf("barrier_wait_ns=%lld\n", sum[1]);
        for (int r = 0; r < size; r++)
            printf("rank_lock_wait_ns %d=%lld\n", r, each[r]);
        /* wait at barrier by its definition on the stamps (one clock on
         * one node): min(last entry, own exit) - own entry */
        long long last = 0, def = 0;
        for (int r = 0; r < size; r++)
            last = all[2 * r] > last ? all[2 * r] : last;
        for (int r = 0; r < size; r++) {
            long long end = last < all[2 * r + 1] ? last : all[2 * r + 1];
            def += end > all[2 * r] ? end - all[2 * r] : 0;
        }
        printf("barrier_wait_def_ns=%lld\n", def);
        for (int r = 0; r < size; r++)
            printf("rank_joined_late %d=%d\n", r, late[r]);
    }
    free(late);
    free(each);
    free(all);
    MPI_Finalize();
    return 0;
}
