/* service_sleep: four threads that only sleep, for the service-time
 * sampler's end-to-end test. Usage: service_sleep [MS] (default 300). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static long ms = 300;

static void *sleeper(void *arg) {
    (void)arg;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) ms = atol(argv[1]);
    if (ms < 0) ms = 0;
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, sleeper, NULL);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    return 0;
}
