/* print_affinity: prints the CPUs the main thread and a thread it starts
 * may run on (sched_getaffinity), for the placement test of
 * `contend record --cpus/--cores` (crates/contend-cli/tests/e2e_placement.rs).
 *
 * Prints, on one line: "main=<list> thread=<list>", each list the CPU
 * numbers separated by commas.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static void print_set(const char *name) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("sched_getaffinity");
        return;
    }
    printf("%s=", name);
    int first = 1;
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (CPU_ISSET(i, &set)) {
            printf(first ? "%d" : ",%d", i);
            first = 0;
        }
    }
}

static void *worker(void *arg) {
    (void)arg;
    print_set("thread");
    return NULL;
}

int main(void) {
    print_set("main");
    printf(" ");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) {
        return 1;
    }
    pthread_join(t, NULL);
    printf("\n");
    return 0;
}
