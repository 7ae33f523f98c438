/* service_pingpong: two threads pass one byte back and forth over two
 * pipes for MS milliseconds (default 600), so each blocks and is woken
 * tens of thousands of times a second: few threads, many context
 * switches. Each thread prints its tid, its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) and its round trips at its end.
 * Usage: service_pingpong [MS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int to_b[2], to_a[2];
static atomic_int stop;

static long long now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct side {
    int in, out, first;
};

static void *player(void *arg) {
    struct side *s = arg;
    char b = 0;
    long trips = 0;
    if (s->first && write(s->out, &b, 1) != 1) return NULL;
    for (;;) {
        if (read(s->in, &b, 1) != 1) break;
        trips++;
        if (b == 1) {
            /* the stop byte: pass it on once and end */
            if (write(s->out, &b, 1) != 1) break;
            break;
        }
        b = atomic_load(&stop) ? 1 : 0;
        if (write(s->out, &b, 1) != 1) break;
        if (b == 1) break;
    }
    printf("tid=%ld cpu_ns=%lld trips=%ld\n", (long)syscall(SYS_gettid),
           now_ns(CLOCK_THREAD_CPUTIME_ID), trips);
    fflush(stdout);
    return NULL;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 600;
    if (pipe(to_b) != 0 || pipe(to_a) != 0) return 1;
    struct side a = {to_a[0], to_b[1], 1}, b = {to_b[0], to_a[1], 0};
    pthread_t ta, tb;
    pthread_create(&tb, NULL, player, &b);
    pthread_create(&ta, NULL, player, &a);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    atomic_store(&stop, 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    return 0;
}
