/* OpenMP and pthread synchronisation on the same threads, for the OTF2
 * export: two threads of one parallel region each take, ROUNDS times, a
 * named critical section with a pthread mutex nested inside it, the mutex
 * alone, and an OpenMP lock; then an explicit barrier. Prints the counter
 * (4 increments per thread and round). */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 200

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static omp_lock_t lock;
static long counter;

int main(void)
{
    omp_init_lock(&lock);
#pragma omp parallel num_threads(2)
    {
        for (int i = 0; i < ROUNDS; i++) {
#pragma omp critical(update)
            {
                pthread_mutex_lock(&mutex);
                counter++;
                pthread_mutex_unlock(&mutex);
            }
            pthread_mutex_lock(&mutex);
            counter++;
            pthread_mutex_unlock(&mutex);
            omp_set_lock(&lock);
            counter += 2;
            omp_unset_lock(&lock);
        }
#pragma omp barrier
    }
    omp_destroy_lock(&lock);
    printf("counter=%ld\n", counter);
    return counter == 2L * ROUNDS * 4 ? 0 : 1;
}
