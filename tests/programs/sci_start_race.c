/*
 * Every thread begins its first region at the same instant, for the SCI
 * start-up test. One thread per CPU (2 to 8) waits at a spinning barrier,
 * then each executes the region "first" ROUNDS times at once (a few
 * hundred ns of work each), so that all of them reach the recorder while
 * its trace file is still being created by whichever came first. Each
 * thread counts its own executions and prints one JSON line,
 * {"tid":…, "executions":…}. The race is run in CHILDREN processes (or
 * as many as the first argument says) one after the other (fork; each child starts its own trace file on its first
 * region, the parent marks nothing), so one recording holds several
 * start-ups. The report must hold exactly the sum of the executions: none
 * may be lost while a file is created.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <contend/region.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 8
#define ROUNDS 25
#define CHILDREN 4

static unsigned threads;
static unsigned arrived;

/* A spinning barrier: with one thread per CPU they leave it within
 * nanoseconds of each other (a futex barrier wakes them one by one, tens
 * of µs apart, enough for the first to create the file alone). */
static void barrier(void)
{
    __atomic_add_fetch(&arrived, 1u, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < threads)
        __builtin_ia32_pause();
}

static void *run(void *arg)
{
    (void)arg;
    volatile uint64_t sink = 0;
    unsigned executions = 0;
    /* the header's one-time lookup (dlsym takes the loader's lock) out of
     * the race: only the recorder's own start-up is left in it */
    (void)contend__region_get();
    barrier();
    for (int r = 0; r < ROUNDS; r++) {
        CONTEND_REGION_BEGIN("first");
        for (int i = 0; i < 100; i++)
            sink += (uint64_t)i;
        executions++;
        CONTEND_REGION_END("first");
    }
    printf("{\"tid\":%ld,\"executions\":%u}\n", (long)syscall(SYS_gettid), executions);
    return NULL;
}

static int race(void)
{
    pthread_t t[MAX_THREADS];
    for (unsigned i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, run, NULL) != 0)
            return 1;
    for (unsigned i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    int children = argc > 1 ? atoi(argv[1]) : CHILDREN;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    threads = cpus < 2 ? 2 : cpus > MAX_THREADS ? MAX_THREADS : (unsigned)cpus;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int c = 0; c < children; c++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            exit(race()); /* stdout was flushed before fork */
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}
