// Dispatch from the public entry points to each library's file, and what they share.
// sched_setaffinity, the CPU_* macros and RUSAGE_THREAD are GNU extensions.
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glib.h>
#include <uv.h>

void peers_start_thread(pthread_t *thread, void *(*body)(void *), void *context) {
  int status = pthread_create(thread, NULL, body, context);
  if (status != 0) {
    fprintf(stderr, "runloop-peers: pthread_create failed: %d\n", status);
    abort();
  }
}

uint64_t peers_empty_passes(peer_kind kind, long passes) {
  switch (kind) {
  case PEER_FLOOR: return floor_empty_passes(passes);
  case PEER_LIBUV: return uv_empty_passes(passes);
  case PEER_SDEVENT: return sd_empty_passes(passes);
  case PEER_GLIB: return glib_empty_passes(passes);
  }
  return 0;
}

uint64_t peers_timer_churn(peer_kind kind, const double *offsets, long count) {
  switch (kind) {
  case PEER_FLOOR: return 0;
  case PEER_LIBUV: return uv_timer_churn(offsets, count);
  case PEER_SDEVENT: return sd_timer_churn(offsets, count);
  case PEER_GLIB: return glib_timer_churn(offsets, count);
  }
  return 0;
}

double peers_timer_memory(peer_kind kind, long count) {
  switch (kind) {
  case PEER_FLOOR: return 0;
  case PEER_LIBUV: return uv_timer_memory(count);
  case PEER_SDEVENT: return sd_timer_memory(count);
  case PEER_GLIB: return glib_timer_memory(count);
  }
  return 0;
}

peers_ping_pong_result peers_ping_pong(peer_kind kind, long round_trips) {
  switch (kind) {
  case PEER_FLOOR: return floor_ping_pong(round_trips);
  case PEER_LIBUV: return uv_ping_pong(round_trips);
  case PEER_SDEVENT: return sd_ping_pong(round_trips);
  case PEER_GLIB: return glib_ping_pong(round_trips);
  }
  peers_ping_pong_result none = {0, 0, 0};
  return none;
}

int peers_run_on_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    long count = sysconf(_SC_NPROCESSORS_ONLN);
    for (long index = 0; index < count; index++) CPU_SET(index, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : errno;
}

peers_thread_usage peers_thread_usage_now(void) {
  struct rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  uint64_t micros = (uint64_t)usage.ru_utime.tv_sec * 1000000u + (uint64_t)usage.ru_utime.tv_usec +
                    (uint64_t)usage.ru_stime.tv_sec * 1000000u + (uint64_t)usage.ru_stime.tv_usec;
  peers_thread_usage result = {micros * 1000u, peers_thread_allocations()};
  return result;
}

const char *peers_version(peer_kind kind) {
  static char versions[4][64];
  switch (kind) {
  case PEER_FLOOR: return "epoll+eventfd";
  case PEER_LIBUV:
    snprintf(versions[1], sizeof(versions[1]), "libuv %s", uv_version_string());
    return versions[1];
  case PEER_SDEVENT: return "sd-event";
  case PEER_GLIB:
    snprintf(versions[3], sizeof(versions[3]), "GLib %u.%u.%u", glib_major_version,
             glib_minor_version, glib_micro_version);
    return versions[3];
  }
  return "?";
}
