/* The floor of a periodic daemon's cost: a loop that only sleeps to
 * absolute deadlines on a grid of INTERVAL_US microseconds
 * (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), as the meter daemon's
 * loop does, a late wake-up skipping to the next point) for SECONDS s,
 * pinned to CPU (default 0). Prints "ticks_per_s cpu_fraction
 * cpu_ns_per_tick": what each wake-up costs in CPU time (timer, context
 * switch and, in a VM, the exit) with no work at all.
 *
 * Usage: sleep_floor [INTERVAL_US [SECONDS [CPU]]] */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static unsigned long long cpu_ns(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return ((unsigned long long)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000ull +
          (unsigned long long)(r.ru_utime.tv_usec + r.ru_stime.tv_usec)) *
         1000ull;
}

int main(int argc, char **argv) {
  unsigned long long interval = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1000) * 1000ull;
  double seconds = argc > 2 ? atof(argv[2]) : 5.0;
  int cpu = argc > 3 ? atoi(argv[3]) : 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    return 1;
  }
  if (interval == 0) {
    fprintf(stderr, "sleep_floor: interval must be at least 1 us\n");
    return 1;
  }
  unsigned long long start = now_ns(), end = start + (unsigned long long)(seconds * 1e9);
  unsigned long long c0 = cpu_ns(), k = 0, ticks = 0;
  for (;;) {
    k++;
    unsigned long long target = start + k * interval, t = now_ns();
    if (target > t) {
      struct timespec ts = {(time_t)(target / 1000000000ull), (long)(target % 1000000000ull)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
      }
    } else {
      k = (t - start) / interval;
    }
    if (now_ns() >= end) break;
    ticks++;
  }
  double dur = (now_ns() - start) / 1e9;
  unsigned long long used = cpu_ns() - c0;
  printf("%.1f %.6f %.0f\n", ticks / dur, used / 1e9 / dur, ticks ? (double)used / ticks : 0.0);
  return 0;
}
