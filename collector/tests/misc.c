/* Edge cases:
 *   misc cancel   thread cancelled inside pthread_cond_wait and sem_wait
 *   misc churn N  N short-lived threads one after another (bounded memory)
 *   misc exit     exit() while other threads keep locking
 *   misc signal   sem_post from a signal handler while the thread records
 * Prints "ok". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t s;

static void unlock_m(void *arg)
{
    pthread_mutex_unlock(arg);
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock_m, &m);
    for (;;)
        pthread_cond_wait(&c, &m);
    pthread_cleanup_pop(1);
    return NULL;
}

static void *sem_waiter(void *arg)
{
    (void)arg;
    for (;;)
        sem_wait(&s);
    return NULL;
}

static long vm_size_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmSize:", 7) == 0)
            kb = atol(line + 7);
    if (f)
        fclose(f);
    return kb;
}

static void *short_lived(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static volatile int stop;
static void *locker(void *arg)
{
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    int e = errno;
    sem_post(&s); /* async-signal-safe */
    errno = e;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "cancel";
    sem_init(&s, 0, 0);
    if (strcmp(what, "cancel") == 0) {
        pthread_t a, b;
        pthread_create(&a, NULL, cond_waiter, NULL);
        pthread_create(&b, NULL, sem_waiter, NULL);
        usleep(50000);
        pthread_cancel(a);
        pthread_cancel(b);
        void *ra, *rb;
        pthread_join(a, &ra);
        pthread_join(b, &rb);
        int ok = ra == PTHREAD_CANCELED && rb == PTHREAD_CANCELED &&
                 pthread_mutex_trylock(&m) == 0; /* cleanup released m */
        printf(ok ? "ok\n" : "FAIL\n");
        return !ok;
    }
    if (strcmp(what, "churn") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 2000;
        long before = 0;
        for (int i = 0; i < n; i++) {
            pthread_t t;
            pthread_create(&t, NULL, short_lived, NULL);
            pthread_join(t, NULL);
            if (i == 100)
                before = vm_size_kb();
        }
        long after = vm_size_kb();
        int ok = after - before < 4096; /* no chunk mapping leaked per thread */
        printf(ok ? "ok (VmSize %ld -> %ld kB)\n" : "FAIL (VmSize %ld -> %ld kB)\n", before,
               after);
        return !ok;
    }
    if (strcmp(what, "exit") == 0) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, locker, NULL);
        usleep(50000);
        printf("ok\n");
        fflush(stdout);
        exit(0); /* the lockers are still running */
    }
    if (strcmp(what, "signal") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 50}, {0, 50}};
        setitimer(ITIMER_REAL, &it, NULL);
        long n = 0;
        for (int i = 0; i < 2000000; i++) {
            pthread_mutex_lock(&m);
            n++;
            pthread_mutex_unlock(&m);
        }
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        int posted = 0;
        while (sem_trywait(&s) == 0)
            posted++;
        printf(n == 2000000 && posted > 0 ? "ok (%d posts)\n" : "FAIL\n", posted);
        return 0;
    }
    return 2;
}
