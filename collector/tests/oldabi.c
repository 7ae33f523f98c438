/* References the old-ABI symbol versions an old binary would use:
 * pthread_cond_*@GLIBC_2.2.5 and the former libpthread compat versions of
 * pthread_mutex_trylock / sem_wait. The collector must interpose them and
 * forward each cond function to the same version. Prints "ok". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

__asm__(".symver pthread_cond_init, pthread_cond_init@GLIBC_2.2.5");
__asm__(".symver pthread_cond_wait, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver pthread_cond_timedwait, pthread_cond_timedwait@GLIBC_2.2.5");
__asm__(".symver pthread_cond_signal, pthread_cond_signal@GLIBC_2.2.5");
__asm__(".symver pthread_cond_destroy, pthread_cond_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_trylock, pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver sem_wait, sem_wait@GLIBC_2.2.5");

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c;
static int flag;

static void *sig(void *arg)
{
    (void)arg;
    usleep(10000);
    pthread_mutex_lock(&m);
    flag = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    int fails = 0;
    pthread_cond_init(&c, NULL);
    pthread_t t;
    pthread_create(&t, NULL, sig, NULL);
    pthread_mutex_lock(&m);
    while (!flag)
        fails += pthread_cond_wait(&c, &m) != 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 5000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    fails += pthread_cond_timedwait(&c, &m, &ts) != ETIMEDOUT;
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    fails += pthread_mutex_trylock(&m) != 0;
    pthread_mutex_unlock(&m);
    sem_t s;
    sem_init(&s, 0, 1);
    fails += sem_wait(&s) != 0;
    pthread_cond_destroy(&c);
    printf(fails ? "FAIL\n" : "ok\n");
    return fails != 0;
}
