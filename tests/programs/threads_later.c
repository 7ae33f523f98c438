/*
 * Lock operations made before and after the process has a second thread
 * (e2e module recording_cost: the collector flags the chunks written
 * while the process had one thread, whose operations the recording-cost
 * estimate costs with the single-threaded calibration).
 *
 * usage: threads_later BEFORE AFTER
 *
 * The main thread locks and unlocks one mutex BEFORE times; then, when
 * AFTER is positive, it starts a thread that does AFTER pairs, joins it,
 * and does AFTER pairs more. With AFTER 0 the process never has a second
 * thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long after;

static void pairs(long n)
{
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
}

static void *worker(void *arg)
{
    pairs(after);
    return arg;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: threads_later BEFORE AFTER\n");
        return 2;
    }
    long before = atol(argv[1]);
    after = atol(argv[2]);
    pairs(before);
    if (after > 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return 1;
        pthread_join(t, NULL);
        pairs(after);
    }
    return 0;
}
