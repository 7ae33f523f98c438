/*
 * glibc's internal locks (crates/contend-cli/tests/e2e/glibc_locks.rs):
 * taken by glibc with its own futex code (lll_lock), never through a
 * pthread_* or syscall() call, so only the kernel's futex tracepoints see
 * them (`contend record --futex-trace on`).
 *
 *   - stdio: the main thread holds stdout's lock (flockfile) for HOLD_US
 *     at a time while two threads call fputs on stdout (an empty string:
 *     the lock is taken, nothing is written): they wait on the lock of
 *     stdout (_IO_stdfile_1_lock inside libc);
 *   - malloc: run with GLIBC_TUNABLES=glibc.malloc.arena_max=1 (one arena,
 *     main_arena) and tcache_count=0, two threads malloc and free blocks
 *     for MALLOC_MS: they wait on main_arena's mutex.
 *
 * Prints on stderr: calls=<fputs calls> blocks=<mallocs>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 20
#define HOLD_US 2000
#define MALLOC_MS 200

static long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

static void spin_us(long us)
{
    long end = now_us() + us;
    while (now_us() < end)
        ;
}

static volatile int printing = 1;
static long printed[2];

static void *printer(void *arg)
{
    long *n = arg;
    while (printing) {
        /* takes and releases stdout's lock, writes nothing */
        if (fputs("", stdout) == EOF)
            abort();
        ++*n;
    }
    return NULL;
}

static long blocks[2];

static void *allocator(void *arg)
{
    long *n = arg;
    long end = now_us() + MALLOC_MS * 1000L;
    while (now_us() < end) {
        for (int i = 0; i < 64; i++) {
            char *p = malloc(4096 + (size_t)(i * 64));
            if (!p)
                abort();
            p[0] = (char)i;
            free(p);
            ++*n;
        }
    }
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, printer, &printed[i]);
    for (int r = 0; r < ROUNDS; r++) {
        flockfile(stdout);
        spin_us(HOLD_US);
        funlockfile(stdout);
        spin_us(HOLD_US / 4);
    }
    printing = 0;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, allocator, &blocks[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "calls=%ld blocks=%ld\n", printed[0] + printed[1], blocks[0] + blocks[1]);
    return 0;
}
