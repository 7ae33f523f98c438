/*
 * The recording cost per lock + unlock pair on many distinct mutexes, as
 * the program itself measures it (the truth the sampled estimate of
 * `contend report` is checked against: e2e module recording_cost).
 *
 * usage: cost_truth MUTEXES PAIRS ROUNDS
 *
 * MUTEXES mutexes, one per cache line, taken in a fixed pseudo-random order
 * (so that the collector's object-table probes miss the caches as on a
 * program with many locks). Rounds of PAIRS lock + unlock pairs through
 * the interposed pthread functions (recorded under `contend record`)
 * alternate with rounds through glibc's own functions, looked up in
 * libc's handle (the collector never sees them). Each round is timed with
 * the thread's CPU clock, which leaves out time the thread was not
 * running; the fastest round of each kind counts, so a round disturbed by
 * other work does not.
 *
 * The main thread creates the mutexes (the collector's creation records
 * and their stacks are its work, not the measured thread's); a second
 * thread does one untimed warm-up round of each kind, then the ROUNDS
 * rounds of each kind, so the process is multi-threaded (glibc's
 * multi-threaded path, as in a real server) and everything the measured
 * thread records is lock + unlock pairs.
 *
 * Prints one JSON line: the measured thread's id, the pairs it made
 * through the interposed functions (warm-up included), ns per pair of
 * each kind (fastest round), the difference (the truth) and the spread of
 * the interposed rounds (slowest / fastest: a large one means the run was
 * disturbed); and the difference of the two kinds' means over every
 * round, warm-up included (`truth_mean_ns_per_pair`): what recording
 * added on average over the same pairs the recording's estimate covers,
 * under whatever disturbed them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct slot {
    pthread_mutex_t m;
    char pad[64 - sizeof(pthread_mutex_t) % 64];
} __attribute__((aligned(64)));

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static struct slot *s;
static uint32_t *order;
static unsigned pairs;
static int rounds;
static int (*lock)(pthread_mutex_t *);
static int (*unlock)(pthread_mutex_t *);
static double best[2] = {1e300, 1e300}, worst;
static double sum[2]; /* every round's ns per pair, the warm-up's included */
static long tid;

/* One round of `kind` (0 interposed, 1 glibc's own), CPU ns per pair. */
static double round_of(int kind)
{
    double t0 = cpu_ns();
    if (kind == 0) {
        for (unsigned i = 0; i < pairs; i++) {
            pthread_mutex_lock(&s[order[i]].m);
            pthread_mutex_unlock(&s[order[i]].m);
        }
    } else {
        for (unsigned i = 0; i < pairs; i++) {
            lock(&s[order[i]].m);
            unlock(&s[order[i]].m);
        }
    }
    return (cpu_ns() - t0) / pairs;
}

static void *measure(void *arg)
{
    tid = (long)syscall(SYS_gettid);
    sum[0] += round_of(0);
    sum[1] += round_of(1);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            double ns = round_of(k);
            sum[k] += ns;
            if (ns < best[k])
                best[k] = ns;
            if (k == 0 && ns > worst)
                worst = ns;
        }
    }
    return arg;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: cost_truth MUTEXES PAIRS ROUNDS\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[1]);
    pairs = (unsigned)atoi(argv[2]);
    rounds = atoi(argv[3]);
    if (n < 1 || pairs < 1 || rounds < 1) {
        fprintf(stderr, "cost_truth: arguments must be positive\n");
        return 2;
    }
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    lock = libc ? (int (*)(pthread_mutex_t *))dlsym(libc, "pthread_mutex_lock") : NULL;
    unlock = libc ? (int (*)(pthread_mutex_t *))dlsym(libc, "pthread_mutex_unlock") : NULL;
    if (!lock || !unlock) {
        fprintf(stderr, "cost_truth: cannot find glibc's own pthread_mutex_lock\n");
        return 1;
    }
    s = aligned_alloc(64, (size_t)n * sizeof *s);
    order = malloc((size_t)pairs * sizeof *order);
    if (!s || !order)
        return 1;
    for (unsigned i = 0; i < n; i++)
        pthread_mutex_init(&s[i].m, NULL);
    uint64_t x = 88172645463325252ull; /* xorshift64: a fixed order */
    for (unsigned i = 0; i < pairs; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order[i] = (uint32_t)(x % n);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, measure, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    double all_rounds = (double)(rounds + 1);
    printf("{\"tid\": %ld, \"pairs_interposed\": %llu, \"interposed_ns_per_pair\": %.3f, "
           "\"direct_ns_per_pair\": %.3f, \"truth_ns_per_pair\": %.3f, "
           "\"interposed_spread\": %.3f, \"truth_mean_ns_per_pair\": %.3f}\n",
           tid, (unsigned long long)pairs * (unsigned long long)(rounds + 1), best[0], best[1],
           best[0] - best[1], worst / best[0], (sum[0] - sum[1]) / all_rounds);
    return 0;
}
