/*
 * slot_threads: exercises the lock collector's slots (collector.c,
 * "Slots"): a thread's first records go into a 4 KiB slot of a slot chunk
 * shared by up to 31 threads, and a thread that fills its slot goes on in
 * chunks of its own. THREADS threads in waves of WAVE (each wave joined
 * before the next starts, so that slots are handed out while others are
 * given back); thread i takes `counted_lock` pairs(i) times: 1 to 60
 * times (its records fit in its slot) or, every fourth thread, 1,500
 * times (about 24 KiB of records: it leaves its slot for chunks of its
 * own). Then CANCELLED threads take the lock once each and are cancelled
 * where they block (their slots are given back as they unwind). Then the
 * process forks: the child starts CHILD_THREADS threads of
 * its own (its slots come from a slot chunk of its own trace) and exits;
 * the parent waits for it. Prints the counts; the events on counted_lock
 * are the sum of pairs(i), each process's printed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 100
#define WAVE 25
#define CHILD_THREADS 40
#define CANCELLED 8

static pthread_mutex_t counted_lock = PTHREAD_MUTEX_INITIALIZER;
static long taken;
static int blocking; /* blocker threads past their acquisition (atomic) */

static long pairs(long i)
{
    return i % 4 == 0 ? 1500 : 1 + i % 60;
}

static void *worker(void *arg)
{
    long n = pairs((long)arg);
    for (long k = 0; k < n; k++) {
        pthread_mutex_lock(&counted_lock);
        taken++;
        pthread_mutex_unlock(&counted_lock);
    }
    return NULL;
}

static void *blocker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&counted_lock);
    taken++;
    pthread_mutex_unlock(&counted_lock);
    __atomic_add_fetch(&blocking, 1, __ATOMIC_RELEASE);
    for (;;)
        pause(); /* a cancellation point */
    return NULL;
}

/* CANCELLED threads that take the lock once and are cancelled; returns
 * the acquisitions they made. */
static long cancel_threads(void)
{
    pthread_t t[CANCELLED];
    for (int k = 0; k < CANCELLED; k++) {
        if (pthread_create(&t[k], NULL, blocker, NULL) != 0) {
            perror("pthread_create");
            exit(1);
        }
    }
    /* until each has taken the lock (no lock taken to wait) */
    while (__atomic_load_n(&blocking, __ATOMIC_ACQUIRE) < CANCELLED)
        usleep(1000);
    for (int k = 0; k < CANCELLED; k++) {
        void *result;
        pthread_cancel(t[k]);
        pthread_join(t[k], &result);
        if (result != PTHREAD_CANCELED) {
            fprintf(stderr, "thread %d was not cancelled\n", k);
            exit(1);
        }
    }
    return CANCELLED;
}

static long run_threads(long count)
{
    long expected = 0;
    pthread_t t[WAVE];
    for (long first = 0; first < count; first += WAVE) {
        long n = count - first < WAVE ? count - first : WAVE;
        for (long k = 0; k < n; k++) {
            expected += pairs(first + k);
            if (pthread_create(&t[k], NULL, worker, (void *)(first + k)) != 0) {
                perror("pthread_create");
                exit(1);
            }
        }
        for (long k = 0; k < n; k++)
            pthread_join(t[k], NULL);
    }
    return expected;
}

int main(void)
{
    long expected = run_threads(THREADS);
    expected += cancel_threads();
    printf("parent expected=%ld taken=%ld\n", expected, taken);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        taken = 0;
        long e = run_threads(CHILD_THREADS);
        printf("child expected=%ld taken=%ld\n", e, taken);
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
