/* A library whose constructor locks mutexes, to run before the collector's
 * constructor (preload it first: LD_PRELOAD="early_lib.so collector.so", or
 * link it into the program). The collector must initialise lazily on this
 * first call and not deadlock or crash. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int early_done;

__attribute__((constructor)) static void early(void)
{
    for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&m);
        early_done++;
        pthread_mutex_unlock(&m);
    }
}
