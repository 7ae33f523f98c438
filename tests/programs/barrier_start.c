/* Workers started together: THREADS threads wait at a barrier (with main),
 * then each takes one shared mutex PER_THREAD times. For the light mode's
 * test that a thread waiting at a barrier before its first lock call
 * claims its count table before the wait (crates/contend-cli/tests/e2e/
 * light.rs).
 *
 *   barrier_start [THREADS [PER_THREAD]]   (defaults 8, 100)
 *
 * Prints {"acquisitions":N,"threads":T}. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static long acquisitions; /* under `shared` */
static int per_thread = 100;

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < per_thread; i++) {
        pthread_mutex_lock(&shared);
        acquisitions++;
        pthread_mutex_unlock(&shared);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    per_thread = argc > 2 ? atoi(argv[2]) : 100;
    if (threads < 1 || threads > 1024 || per_thread < 1) {
        fprintf(stderr, "barrier_start: bad arguments\n");
        return 2;
    }
    pthread_t tid[1024];
    if (pthread_barrier_init(&start, NULL, (unsigned)threads + 1) != 0)
        return 1;
    for (int t = 0; t < threads; t++) {
        if (pthread_create(&tid[t], NULL, worker, NULL) != 0) {
            fprintf(stderr, "barrier_start: pthread_create failed\n");
            return 1;
        }
    }
    pthread_barrier_wait(&start);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&start);
    printf("{\"acquisitions\":%ld,\"threads\":%d}\n", acquisitions, threads);
    return 0;
}
