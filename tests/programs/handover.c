/* Known ownership changes (mutrace's "changed" count).
 *
 * ping_lock: two threads take turns, strictly alternating through two
 * semaphores, ROUNDS times each: 2 * ROUNDS - 1 hand-overs.
 * solo_lock: one thread takes it ROUNDS times, then a second thread
 * ROUNDS times after the first has been joined: exactly 1 hand-over.
 * own_lock: only the main thread: 0.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#define ROUNDS 200

pthread_mutex_t ping_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t solo_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t turn[2];
static volatile long counter;

static void *ping(void *arg) {
    int me = (int)(long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&turn[me]);
        pthread_mutex_lock(&ping_lock);
        counter++;
        pthread_mutex_unlock(&ping_lock);
        sem_post(&turn[1 - me]);
    }
    return NULL;
}

static void *solo(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&solo_lock);
        counter++;
        pthread_mutex_unlock(&solo_lock);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    sem_init(&turn[0], 0, 1);
    sem_init(&turn[1], 0, 0);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, ping, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, solo, NULL);
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&own_lock);
        counter++;
        pthread_mutex_unlock(&own_lock);
    }
    printf("counter %ld\n", counter);
    return 0;
}
