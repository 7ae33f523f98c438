/* OpenMP and pthread synchronisation on the same threads, for the OTF2
 * export: two threads of one parallel region each take, ROUNDS times, a
 * named critical section with a pthread mutex nested inside it, the mutex
 * alone, and an OpenMP lock (on the stack: it has no symbol, so reports
 * name it by where it is taken); then an explicit barrier. Prints the
 * counts (per thread and round: 2 under the mutex, 1 under the OpenMP
 * lock). */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 200

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static long under_mutex, under_lock;

int main(void)
{
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel num_threads(2)
    {
        for (int i = 0; i < ROUNDS; i++) {
#pragma omp critical(update)
            {
                pthread_mutex_lock(&mutex);
                under_mutex++;
                pthread_mutex_unlock(&mutex);
            }
            pthread_mutex_lock(&mutex);
            under_mutex++;
            pthread_mutex_unlock(&mutex);
            omp_set_lock(&lock);
            under_lock++;
            omp_unset_lock(&lock);
        }
#pragma omp barrier
    }
    omp_destroy_lock(&lock);
    printf("under_mutex=%ld under_lock=%ld\n", under_mutex, under_lock);
    return under_mutex == 2L * 2 * ROUNDS && under_lock == 2L * ROUNDS ? 0 : 1;
}
