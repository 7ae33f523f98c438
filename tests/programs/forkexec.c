/*
 * forkexec: exercises fork + exec and exec without fork.
 *
 *   forkexec           the start: locks, forks a child that execs this
 *                      program with "child", forks a child that execs
 *                      /bin/true, waits for both, then execs itself with
 *                      "final" (same pid, a new image)
 *   forkexec child     locks a mutex 200 times in two threads, prints
 *   forkexec final     locks a mutex 100 times, prints
 *
 * Every line is printed (and flushed) before the next process starts, so
 * the output is deterministic.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;
static long count;

static void *locker(void *arg)
{
    long n = (long)arg;
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&exec_lock);
        count++;
        pthread_mutex_unlock(&exec_lock);
    }
    return NULL;
}

static int run_and_wait(char *const argv[])
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        execv(argv[0], argv);
        perror("execv");
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        exit(1);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    static char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        perror("readlink");
        return 1;
    }
    self[n] = 0;

    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, locker, (void *)100L);
        locker((void *)100L);
        pthread_join(t, NULL);
        printf("child: count=%ld\n", count);
        return 7;
    }
    if (argc > 1 && strcmp(argv[1], "final") == 0) {
        locker((void *)100L);
        printf("final: count=%ld\n", count);
        return 0;
    }

    locker((void *)100L);
    printf("start: count=%ld\n", count);
    char *child_argv[] = {self, "child", NULL};
    printf("start: child exited %d\n", run_and_wait(child_argv));
    char *true_argv[] = {"/bin/true", NULL};
    printf("start: /bin/true exited %d\n", run_and_wait(true_argv));
    fflush(stdout);
    char *final_argv[] = {self, "final", NULL};
    execv(self, final_argv);
    perror("execv");
    return 1;
}
