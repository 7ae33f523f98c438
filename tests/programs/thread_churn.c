/* Thread churn for the chunk preparer's test (crates/contend-cli/tests/
 * e2e/chunk_prep.rs): BATCHES batches of BATCH short threads, each taking
 * one shared mutex PER_THREAD times and exiting, a pause of PAUSE_MS
 * between batches (so that the launcher's chunk preparer sees the claims
 * and catches up). Every thread's first lock claims a chunk of the trace.
 * With LOCKS > 1 the threads take LOCKS shared mutexes in turn, each
 * thread starting at a different one (thread k's i-th acquisition takes
 * mutex (k + i) mod LOCKS), so that the threads' first acquisitions are
 * of different locks (for the light mode's count tables: e2e module
 * light, the cost samples of short threads).
 *
 *   thread_churn [BATCHES [BATCH [PER_THREAD [PAUSE_MS [LOCKS]]]]]
 *
 * Defaults 20, 16, 5, 5, 1 (LOCKS up to 64). Prints "acquisitions=<n>
 * threads=<n>". */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LOCKS_MAX 64
static pthread_mutex_t locks[LOCKS_MAX];
static long acquisitions[LOCKS_MAX]; /* each under its mutex */
static int per_thread = 5, nlocks = 1;

static void *body(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < per_thread; i++) {
        int l = (k + i) % nlocks;
        pthread_mutex_lock(&locks[l]);
        acquisitions[l]++;
        pthread_mutex_unlock(&locks[l]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 20;
    int batch = argc > 2 ? atoi(argv[2]) : 16;
    if (argc > 3)
        per_thread = atoi(argv[3]);
    int pause_ms = argc > 4 ? atoi(argv[4]) : 5;
    if (argc > 5)
        nlocks = atoi(argv[5]);
    if (batches < 1 || batch < 1 || batch > 256 || per_thread < 0 || pause_ms < 0 || nlocks < 1 ||
        nlocks > LOCKS_MAX)
        return 2;
    for (int l = 0; l < nlocks; l++)
        pthread_mutex_init(&locks[l], NULL);
    pthread_t t[256];
    struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < batch; i++)
            if (pthread_create(&t[i], NULL, body, (void *)(intptr_t)(b * batch + i)) != 0)
                return 1;
        for (int i = 0; i < batch; i++)
            pthread_join(t[i], NULL);
        nanosleep(&pause, NULL);
    }
    long total = 0;
    for (int l = 0; l < nlocks; l++)
        total += acquisitions[l];
    printf("acquisitions=%ld threads=%d\n", total, batches * batch);
    return 0;
}
