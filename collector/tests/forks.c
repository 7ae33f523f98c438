/* fork, fork + _exit, fork + exit, fork + exec, and exec of the same pid.
 *   forks        : the parent test
 *   forks child  : what the exec'd image runs (locks a little, exits)
 * Every process prints nothing on success; the parent prints "ok". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
/* the other thread's lock: a fork child must not inherit a held m */
static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;

static void lock_some(int n)
{
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
}

static void *spinner(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        for (int k = 0; k < 100; k++) {
            pthread_mutex_lock(&other);
            pthread_mutex_unlock(&other);
        }
        usleep(100);
    }
    return NULL;
}

static int wait_ok(pid_t p)
{
    int st;
    return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        lock_some(10);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "reexec") == 0) {
        /* exec into the same pid: the new image writes <pid>.1.ctrace */
        lock_some(5);
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        return 1;
    }
    int ok = 1;
    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL); /* another thread locks during fork */
    lock_some(10);

    pid_t p = fork();
    if (p == 0) { /* child, leaves with _exit: keeps its events */
        lock_some(7);
        _exit(0);
    }
    ok &= wait_ok(p);

    p = fork();
    if (p == 0) { /* child, exit(): runs the exit path */
        lock_some(3);
        exit(0);
    }
    ok &= wait_ok(p);

    p = fork();
    if (p == 0) { /* fork + exec */
        lock_some(2);
        execl("/proc/self/exe", argv[0], "reexec", (char *)NULL);
        _exit(1);
    }
    ok &= wait_ok(p);

    pthread_join(t, NULL);
    lock_some(10);
    printf(ok ? "ok\n" : "FAIL\n");
    return !ok;
}
