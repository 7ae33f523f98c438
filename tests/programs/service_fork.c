/* service_fork: forks a child that burns CPU in two threads while the
 * parent waits, for the service-time sampler's end-to-end test: the
 * child's threads must appear in the samples.
 *
 * Usage: service_fork [MS] (each child thread spins until it has used MS ms
 * of CPU time, default 300: measured on the thread's own CPU clock, so the
 * amount of work does not shrink when a loaded machine runs the threads
 * less often). Prints "child=<pid>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long ms = 300;
static volatile unsigned long sink;

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *spin(void *arg) {
    (void)arg;
    double end = thread_cpu_s() + (double)ms / 1000.0;
    unsigned long x = 0;
    while (thread_cpu_s() < end)
        for (int i = 0; i < 1000; i++) x += (unsigned long)i * 2654435761u;
    sink += x;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) ms = atol(argv[1]);
    /* Let the sampler see the parent alone first. */
    usleep(50000);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        pthread_t t;
        pthread_create(&t, NULL, spin, NULL);
        spin(NULL);
        pthread_join(t, NULL);
        _exit(0);
    }
    printf("child=%d\n", (int)pid);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
