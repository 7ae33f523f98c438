/*
 * Two calls of pthread_mutex_lock on one source line (a macro), made by
 * two threads ROUNDS times each: two call sites (return addresses) that
 * resolve to one file:line, which the report shows as one call site and
 * scores as one SCI block (crates/contend-cli/tests/e2e/sci.rs). Build
 * with -O0 -g so that the two calls stay apart. Exits 0 when the counter
 * is right.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 1000

static pthread_mutex_t one_line_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

#define TWICE()                                                                                    \
    do {                                                                                           \
        pthread_mutex_lock(&one_line_lock);                                                        \
        counter++;                                                                                 \
        pthread_mutex_unlock(&one_line_lock);                                                      \
        pthread_mutex_lock(&one_line_lock);                                                        \
        counter++;                                                                                 \
        pthread_mutex_unlock(&one_line_lock);                                                      \
    } while (0)

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++)
        TWICE(); /* THE_LINE */
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 2;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", counter);
    return counter == 4 * ROUNDS ? 0 : 1;
}
