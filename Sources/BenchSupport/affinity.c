// CPU affinity for runloop-bench's ping-pong: glibc's CPU_SET and friends are macros, which
// Swift does not import.
#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <sched.h>
#include <unistd.h>

int cbench_run_on_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    long count = sysconf(_SC_NPROCESSORS_CONF);
    for (long index = 0; index < count && index < CPU_SETSIZE; index++) CPU_SET(index, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  return sched_setaffinity(0, sizeof set, &set);
}
