// What the C files of CPeers share: the clock, per-library entry points, thread start.
#ifndef CPEERS_INTERNAL_H
#define CPEERS_INTERNAL_H

#include "CPeers.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

// Nanoseconds on CLOCK_MONOTONIC.
static inline uint64_t peers_now(void) {
  struct timespec spec;
  clock_gettime(CLOCK_MONOTONIC, &spec);
  return (uint64_t)spec.tv_sec * 1000000000u + (uint64_t)spec.tv_nsec;
}

// Calls to the malloc family made by the calling thread so far (allocations.c).
uint64_t peers_thread_allocations(void);

// What a thread used between two readings.
static inline peers_thread_usage peers_usage_since(peers_thread_usage start) {
  peers_thread_usage now = peers_thread_usage_now();
  peers_thread_usage used = {now.cpu_nanoseconds - start.cpu_nanoseconds,
                             now.allocations - start.allocations};
  return used;
}

// The result of a ping-pong run from its wall time and its two threads' usage.
static inline peers_ping_pong_result peers_result(uint64_t nanoseconds, peers_thread_usage a,
                                                  peers_thread_usage b) {
  peers_ping_pong_result result = {nanoseconds, a.cpu_nanoseconds + b.cpu_nanoseconds,
                                   a.allocations + b.allocations};
  return result;
}

// Starts a joinable thread or aborts: a bench run without its thread measures nothing.
void peers_start_thread(pthread_t *thread, void *(*body)(void *), void *context);

uint64_t floor_empty_passes(long passes);
peers_ping_pong_result floor_ping_pong(long round_trips);

uint64_t uv_empty_passes(long passes);
uint64_t uv_timer_churn(const double *offsets, long count);
double uv_timer_memory(long count);
peers_ping_pong_result uv_ping_pong(long round_trips);

uint64_t sd_empty_passes(long passes);
uint64_t sd_timer_churn(const double *offsets, long count);
double sd_timer_memory(long count);
peers_ping_pong_result sd_ping_pong(long round_trips);

uint64_t glib_empty_passes(long passes);
uint64_t glib_timer_churn(const double *offsets, long count);
double glib_timer_memory(long count);
peers_ping_pong_result glib_ping_pong(long round_trips);

#endif
