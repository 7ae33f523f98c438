/*
 * light_many: one thread takes more distinct mutexes than one count table
 * of `contend record --light` holds (510 entries in a thread's first
 * COUNTS chunk), for the test that counts stay exact across several
 * COUNTS chunks and that the collector does not claim a chunk every few
 * hundred acquisitions.
 *
 *   light_many [LOCKS [ROUNDS]]   (defaults 3000 and 3)
 *
 * Locks and unlocks each of LOCKS mutexes once per round, at one call
 * site, ROUNDS rounds; a second thread only exists so that glibc uses its
 * multi-threaded lock path. Prints {"locks":L,"rounds":R,"events":L*R}.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *idle(void *arg)
{
    return arg;
}

__attribute__((noinline)) static void take(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
}

int main(int argc, char **argv)
{
    long locks = argc > 1 ? atol(argv[1]) : 3000;
    long rounds = argc > 2 ? atol(argv[2]) : 3;
    if (locks < 1 || rounds < 1) {
        fprintf(stderr, "light_many: bad arguments\n");
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    pthread_mutex_t *m = calloc((size_t)locks, sizeof *m);
    if (!m)
        return 1;
    for (long i = 0; i < locks; i++)
        pthread_mutex_init(&m[i], NULL);
    for (long r = 0; r < rounds; r++)
        for (long i = 0; i < locks; i++)
            take(&m[i]);
    printf("{\"locks\":%ld,\"rounds\":%ld,\"events\":%ld}\n", locks, rounds, locks * rounds);
    free(m);
    return 0;
}
