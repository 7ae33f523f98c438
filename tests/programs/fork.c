/*
 * fork: the parent takes a mutex while a helper thread takes another one,
 * forks; the child takes a third mutex 1000 times in two threads, prints a
 * line and leaves with _exit(0) (no exit path); the parent waits and prints
 * the child's status. Output order is fixed by the waits.
 *
 * Lock operations: parent 500 (main) + 500 (helper) lock/unlock pairs,
 * child 2 x 500.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pthread_mutex_t parent_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t child_lock = PTHREAD_MUTEX_INITIALIZER;
static long parent_count, helper_count, child_count;

static void *helper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&helper_lock);
        helper_count++;
        pthread_mutex_unlock(&helper_lock);
    }
    return NULL;
}

static void *child_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&child_lock);
        child_count++;
        pthread_mutex_unlock(&child_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t h;
    pthread_create(&h, NULL, helper, NULL);
    for (int i = 0; i < 250; i++) {
        pthread_mutex_lock(&parent_lock);
        parent_count++;
        pthread_mutex_unlock(&parent_lock);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        pthread_t c;
        pthread_create(&c, NULL, child_worker, NULL);
        child_worker(NULL);
        pthread_join(c, NULL);
        char line[64];
        int len = snprintf(line, sizeof line, "child: child_count=%ld\n", child_count);
        if (write(STDOUT_FILENO, line, (size_t)len) != len)
            _exit(3);
        _exit(0);
    }
    for (int i = 0; i < 250; i++) {
        pthread_mutex_lock(&parent_lock);
        parent_count++;
        pthread_mutex_unlock(&parent_lock);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    pthread_join(h, NULL);
    printf("parent: parent_count=%ld helper_count=%ld child_exited=%d child_status=%d\n",
           parent_count, helper_count, WIFEXITED(status), WEXITSTATUS(status));
    return 0;
}
