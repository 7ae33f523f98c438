/* Thread churn for the chunk preparer's test (crates/contend-cli/tests/
 * e2e/chunk_prep.rs): BATCHES batches of BATCH short threads, each taking
 * one shared mutex PER_THREAD times and exiting, a pause of PAUSE_MS
 * between batches (so that the launcher's chunk preparer sees the claims
 * and catches up). Every thread's first lock claims a chunk of the trace.
 *
 *   thread_churn [BATCHES [BATCH [PER_THREAD [PAUSE_MS]]]]
 *
 * Defaults 20, 16, 5, 5. Prints "acquisitions=<n> threads=<n>". */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long acquisitions;
static int per_thread = 5;

static void *body(void *arg)
{
    (void)arg;
    for (int i = 0; i < per_thread; i++) {
        pthread_mutex_lock(&lock);
        acquisitions++;
        pthread_mutex_unlock(&lock);
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
    if (batches < 1 || batch < 1 || batch > 256 || per_thread < 0 || pause_ms < 0)
        return 2;
    pthread_t t[256];
    struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < batch; i++)
            if (pthread_create(&t[i], NULL, body, NULL) != 0)
                return 1;
        for (int i = 0; i < batch; i++)
            pthread_join(t[i], NULL);
        nanosleep(&pause, NULL);
    }
    printf("acquisitions=%ld threads=%d\n", acquisitions, batches * batch);
    return 0;
}
