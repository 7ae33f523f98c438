/* Loaded with dlopen by dlopen_main.c: its lock call sites lie in a mapping
 * that the collector's first maps snapshot did not know. */
#include <pthread.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int plugin_work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        s += i;
        pthread_mutex_unlock(&m);
    }
    return s;
}
