/*
 * light_many: one thread takes more distinct (mutex, call site) pairs than
 * a count table of `contend record --light` keeps, for the tests that
 * counts stay exact when the table counts further locks by call site
 * (more than 256 (lock, site) pairs) and when it grows and finally fills
 * (more call sites than a table holds).
 *
 *   light_many [LOCKS [ROUNDS [SITES]]]   (defaults 3000, 3 and 1)
 *
 * Locks and unlocks each of LOCKS mutexes once per round, ROUNDS rounds;
 * acquisition i of a round is made at call site i mod SITES (SITES up to
 * 4096 distinct functions, each with its own lock call). A second thread
 * only exists so that glibc uses its multi-threaded lock path. Prints
 * {"locks":L,"rounds":R,"sites":S,"events":L*R}.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *idle(void *arg)
{
    return arg;
}

typedef void (*take_fn)(pthread_mutex_t *);

/* 4096 functions take_000 .. take_fff, each one call site of
 * pthread_mutex_lock (noinline, and each its own function, so that the
 * compiler cannot merge them). */
#define TAKE(n)                                                                            \
    __attribute__((noinline)) static void take_##n(pthread_mutex_t *m)                     \
    {                                                                                      \
        pthread_mutex_lock(m);                                                             \
        pthread_mutex_unlock(m);                                                           \
    }
/* one list macro per level: a macro is not expanded again inside its own
 * expansion */
#define HEX_A(F, p)                                                                        \
    F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)       \
        F(p##a) F(p##b) F(p##c) F(p##d) F(p##e) F(p##f)
#define HEX_B(F, p)                                                                        \
    F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)       \
        F(p##a) F(p##b) F(p##c) F(p##d) F(p##e) F(p##f)
#define HEX_C(F, p)                                                                        \
    F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)       \
        F(p##a) F(p##b) F(p##c) F(p##d) F(p##e) F(p##f)
#define TAKE16(p) HEX_A(TAKE, p)
#define TAKE256(p) HEX_B(TAKE16, p)
HEX_C(TAKE256, )

#define NAME(n) take_##n,
#define NAME16(p) HEX_A(NAME, p)
#define NAME256(p) HEX_B(NAME16, p)
static const take_fn takes[4096] = {HEX_C(NAME256, )};

int main(int argc, char **argv)
{
    long locks = argc > 1 ? atol(argv[1]) : 3000;
    long rounds = argc > 2 ? atol(argv[2]) : 3;
    long sites = argc > 3 ? atol(argv[3]) : 1;
    if (locks < 1 || rounds < 1 || sites < 1 || sites > 4096) {
        fprintf(stderr, "light_many: bad arguments\n");
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    pthread_mutex_t *m = calloc((size_t)locks, sizeof *m);
    if (!m)
        return 1;
    for (long i = 0; i < locks; i++)
        pthread_mutex_init(&m[i], NULL);
    for (long r = 0; r < rounds; r++)
        for (long i = 0; i < locks; i++)
            takes[i % sites](&m[i]);
    printf("{\"locks\":%ld,\"rounds\":%ld,\"sites\":%ld,\"events\":%ld}\n", locks, rounds, sites,
           locks * rounds);
    free(m);
    return 0;
}
