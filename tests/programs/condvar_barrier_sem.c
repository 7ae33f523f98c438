/*
 * condvar_barrier_sem: the non-lock primitives.
 *   - a bounded buffer (mutex + two condition variables) with 2 producers
 *     and 2 consumers passing 2000 items;
 *   - a barrier of 4 threads crossed 20 times;
 *   - two semaphores ping-ponging 200 times between two threads.
 * Prints deterministic totals.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#define ITEMS_PER_PRODUCER 1000
#define CAPACITY 8

pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static int buf[CAPACITY];
static int head, count;
static int producers_left = 2;

pthread_barrier_t round_barrier;
static long barrier_sum;
pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;

sem_t ping, pong;
static int rallies;

static void *producer(void *arg)
{
    int base = *(int *)arg;
    for (int i = 1; i <= ITEMS_PER_PRODUCER; i++) {
        pthread_mutex_lock(&buf_lock);
        while (count == CAPACITY)
            pthread_cond_wait(&not_full, &buf_lock);
        buf[(head + count) % CAPACITY] = base + i;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&buf_lock);
    }
    pthread_mutex_lock(&buf_lock);
    producers_left--;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&buf_lock);
    return NULL;
}

static void *consumer(void *arg)
{
    long *sum = arg;
    for (;;) {
        pthread_mutex_lock(&buf_lock);
        while (count == 0 && producers_left > 0)
            pthread_cond_wait(&not_empty, &buf_lock);
        if (count == 0) {
            pthread_mutex_unlock(&buf_lock);
            return NULL;
        }
        int v = buf[head];
        head = (head + 1) % CAPACITY;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&buf_lock);
        *sum += v;
    }
}

static void *barrier_worker(void *arg)
{
    long id = (long)arg;
    for (int r = 0; r < 20; r++) {
        pthread_mutex_lock(&sum_lock);
        barrier_sum += id * 100 + r;
        pthread_mutex_unlock(&sum_lock);
        pthread_barrier_wait(&round_barrier);
    }
    return NULL;
}

static void *pinger(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        sem_wait(&ping);
        rallies++;
        sem_post(&pong);
    }
    return NULL;
}

int main(void)
{
    pthread_t p[2], c[2], b[4], pg;
    int base[2] = {0, 100000};
    long sums[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        pthread_create(&p[i], NULL, producer, &base[i]);
        pthread_create(&c[i], NULL, consumer, &sums[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(p[i], NULL);
        pthread_join(c[i], NULL);
    }
    printf("buffer: total=%ld\n", sums[0] + sums[1]);

    pthread_barrier_init(&round_barrier, NULL, 4);
    for (long i = 0; i < 4; i++)
        pthread_create(&b[i], NULL, barrier_worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(b[i], NULL);
    pthread_barrier_destroy(&round_barrier);
    printf("barrier: sum=%ld\n", barrier_sum);

    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    pthread_create(&pg, NULL, pinger, NULL);
    for (int i = 0; i < 200; i++) {
        sem_post(&ping);
        sem_wait(&pong);
    }
    pthread_join(pg, NULL);
    printf("semaphores: rallies=%d\n", rallies);
    sem_destroy(&ping);
    sem_destroy(&pong);
    return 0;
}
