/*
 * sharequeue: the shared-queue micro-benchmark of Venter (2016), Section
 * 4.1.3 ("Sharequeue"): threads repeatedly remove an item from a shared
 * queue, compute a new value from it (a fixed amount of work) and insert it
 * back. Two versions with the same number of lock requests:
 *
 *   single  ("Queue-single") one mutex, queue_lock, guards head and tail:
 *           removals and insertions exclude each other.
 *   two     ("Queue-two") the two-lock queue of Michael & Scott (1996):
 *           head_lock guards removals and tail_lock insertions, so one
 *           thread can remove while another inserts.
 *
 * Usage: sharequeue [single|two] [THREADS [ITEMS [ITERATIONS [WORK]]]]
 *   THREADS     worker threads (default 4)
 *   ITEMS       items in the queue (default 64; at least THREADS + 1, so a
 *               removal never finds the queue empty)
 *   ITERATIONS  remove/compute/insert rounds per thread (default 500000)
 *   WORK        rounds of the compute loop per item (default 50; the
 *               smaller, the larger the share of time spent on the queue)
 * Building with -DQUEUE_SINGLE makes `single` the default.
 *
 * Every round adds 1 to the item's counter, so the program can check at
 * the end that no item was lost or duplicated: the sum of counters equals
 * THREADS * ITERATIONS.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct node {
    _Atomic(struct node *) next;
    uint64_t counter; /* rounds this item went through */
    uint64_t value;   /* result of the last computation */
};

/* The queue: a singly linked list with a dummy node at the head (Michael &
 * Scott). Removal takes the dummy's successor's contents and makes that
 * successor the new dummy; the old dummy node is handed to the caller, who
 * fills it and inserts it at the tail, so no memory is allocated while the
 * benchmark runs. */
static struct node *head;
static struct node *tail;

/* Global, named, so that `contend report` shows these names. */
pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER; /* single */
pthread_mutex_t head_lock = PTHREAD_MUTEX_INITIALIZER;  /* two: removals */
pthread_mutex_t tail_lock = PTHREAD_MUTEX_INITIALIZER;  /* two: insertions */

static int two_locks;
static long iterations = 500000;
static int work = 50;
static atomic_int start;

/* Removes the first item; returns the freed node (the old dummy) holding
 * the item's contents, or NULL if the queue was empty. Call with the head
 * guarded. */
static struct node *take_first(void)
{
    struct node *dummy = head;
    struct node *first = atomic_load_explicit(&dummy->next, memory_order_acquire);
    if (!first)
        return NULL;
    dummy->counter = first->counter;
    dummy->value = first->value;
    head = first;
    return dummy;
}

/* Appends n; call with the tail guarded. */
static void append(struct node *n)
{
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&tail->next, n, memory_order_release);
    tail = n;
}

static struct node *dequeue(void)
{
    struct node *n;
    if (two_locks) {
        pthread_mutex_lock(&head_lock);
        n = take_first();
        pthread_mutex_unlock(&head_lock);
    } else {
        pthread_mutex_lock(&queue_lock);
        n = take_first();
        pthread_mutex_unlock(&queue_lock);
    }
    return n;
}

static void enqueue(struct node *n)
{
    if (two_locks) {
        pthread_mutex_lock(&tail_lock);
        append(n);
        pthread_mutex_unlock(&tail_lock);
    } else {
        pthread_mutex_lock(&queue_lock);
        append(n);
        pthread_mutex_unlock(&queue_lock);
    }
}

/* The fixed amount of work done on each item outside the locks. */
static uint64_t compute(uint64_t v)
{
    for (int i = 0; i < work; i++) {
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
    }
    return v;
}

static void *worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&start))
        ;
    for (long i = 0; i < iterations; i++) {
        struct node *n = dequeue();
        if (!n) {
            /* Cannot happen with ITEMS > THREADS; retry anyway. */
            i--;
            continue;
        }
        n->value = compute(n->value + 1);
        n->counter++;
        enqueue(n);
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
#ifdef QUEUE_SINGLE
    const char *mode = "single";
#else
    const char *mode = "two";
#endif
    int threads = 4;
    long items = 64;
    int a = 1;
    if (argc > a && (strcmp(argv[a], "single") == 0 || strcmp(argv[a], "two") == 0))
        mode = argv[a++];
    if (argc > a)
        threads = atoi(argv[a++]);
    if (argc > a)
        items = atol(argv[a++]);
    if (argc > a)
        iterations = atol(argv[a++]);
    if (argc > a)
        work = atoi(argv[a++]);
    if (argc > a || threads < 1 || items <= threads || iterations < 0 || work < 0) {
        fprintf(stderr,
                "usage: %s [single|two] [THREADS [ITEMS [ITERATIONS [WORK]]]]\n"
                "  ITEMS must exceed THREADS\n",
                argv[0]);
        return 2;
    }
    two_locks = strcmp(mode, "two") == 0;

    /* items + 1 nodes: the dummy plus one per item. */
    struct node *nodes = calloc((size_t)items + 1, sizeof *nodes);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!nodes || !tid) {
        perror("calloc");
        return 1;
    }
    head = tail = &nodes[0];
    for (long i = 1; i <= items; i++) {
        nodes[i].value = (uint64_t)i * 0x9e3779b97f4a7c15u;
        append(&nodes[i]);
    }

    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    double t0 = now_s();
    atomic_store(&start, 1);
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    double elapsed = now_s() - t0;

    uint64_t rounds = 0;
    long count = 0;
    for (struct node *n = atomic_load(&head->next); n; n = atomic_load(&n->next)) {
        rounds += n->counter;
        count++;
    }
    int ok = count == items && rounds == (uint64_t)threads * (uint64_t)iterations;
    printf("sharequeue %s: %d threads, %ld items, %ld iterations/thread, work %d: "
           "%.3f s, %s\n",
           mode, threads, items, iterations, work, elapsed, ok ? "check ok" : "CHECK FAILED");
    free(nodes);
    free(tid);
    return ok ? 0 : 1;
}
