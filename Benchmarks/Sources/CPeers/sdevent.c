// sd-event's side: sd_event_run(e, 0) for a pass, sd_event_add_time_relative for timers,
// an eventfd I/O source for ping-pong (sd-event has no call to wake another thread's loop;
// an eventfd is what its users write, edge-triggered here as the floor's and ours are).
#include "internal.h"

#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

static int sd_ignore_io(sd_event_source *source, int fd, uint32_t events, void *context) {
  (void)source, (void)fd, (void)events, (void)context;
  return 0;
}

static int sd_ignore_time(sd_event_source *source, uint64_t usec, void *context) {
  (void)source, (void)usec, (void)context;
  return 0;
}

uint64_t sd_empty_passes(long passes) {
  sd_event *loop = NULL;
  sd_event_new(&loop);
  int idle = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  sd_event_source *source = NULL;
  sd_event_add_io(loop, &source, idle, EPOLLIN, sd_ignore_io, NULL);
  for (long index = 0; index < 1000; index++) sd_event_run(loop, 0);
  uint64_t start = peers_now();
  for (long index = 0; index < passes; index++) sd_event_run(loop, 0);
  uint64_t elapsed = peers_now() - start;
  sd_event_source_disable_unref(source);
  sd_event_unref(loop);
  close(idle);
  return elapsed;
}

// Accuracy 1 us: sd-event's default (250 ms) would let it coalesce, which ours does only
// for timers given a tolerance.
uint64_t sd_timer_churn(const double *offsets, long count) {
  sd_event *loop = NULL;
  sd_event_new(&loop);
  sd_event_source **timers = malloc(sizeof(sd_event_source *) * (size_t)count);
  uint64_t start = peers_now();
  for (long index = 0; index < count; index++) {
    sd_event_add_time_relative(loop, &timers[index], CLOCK_MONOTONIC,
                               (uint64_t)(offsets[index] * 1e6), 1, sd_ignore_time, NULL);
  }
  for (long index = 0; index < count; index++) sd_event_source_disable_unref(timers[index]);
  uint64_t elapsed = peers_now() - start;
  free(timers);
  sd_event_unref(loop);
  return elapsed;
}

double sd_timer_memory(long count) {
  sd_event *loop = NULL;
  sd_event_new(&loop);
  sd_event_source *warm = NULL;
  sd_event_add_time_relative(loop, &warm, CLOCK_MONOTONIC, 7200000000u, 1, sd_ignore_time, NULL);
  sd_event_source **timers = malloc(sizeof(sd_event_source *) * (size_t)count);
  uint64_t before = peers_heap_bytes_in_use();
  for (long index = 0; index < count; index++) {
    sd_event_add_time_relative(loop, &timers[index], CLOCK_MONOTONIC,
                               3600000000u + (uint64_t)index * 1000000u, 1, sd_ignore_time, NULL);
  }
  double per_timer = peers_heap_growth(before) / (double)count;
  for (long index = 0; index < count; index++) sd_event_source_disable_unref(timers[index]);
  sd_event_source_disable_unref(warm);
  free(timers);
  sd_event_unref(loop);
  return per_timer;
}

typedef struct sd_side {
  sd_event *loop;
  sd_event_source *source;
  int event;
  struct sd_side *other;
  long remaining;
  int finished;
  peers_thread_usage used;
} sd_side;

static void sd_poke(sd_side *side) {
  uint64_t one = 1;
  (void)!write(side->event, &one, sizeof(one));
}

static int sd_ping_arrived(sd_event_source *source, int fd, uint32_t events, void *context) {
  (void)source, (void)fd, (void)events;
  sd_side *side = context;
  if (--side->remaining == 0) {
    __atomic_store_n(&side->other->finished, 1, __ATOMIC_RELEASE);
    sd_poke(side->other);
    return sd_event_exit(side->loop, 0);
  }
  sd_poke(side->other);
  return 0;
}

static int sd_pong_arrived(sd_event_source *source, int fd, uint32_t events, void *context) {
  (void)source, (void)fd, (void)events;
  sd_side *side = context;
  if (__atomic_load_n(&side->finished, __ATOMIC_ACQUIRE)) return sd_event_exit(side->loop, 0);
  sd_poke(side->other);
  return 0;
}

static void sd_side_open(sd_side *side, sd_event_io_handler_t handler) {
  sd_event_new(&side->loop);
  side->event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  sd_event_add_io(side->loop, &side->source, side->event, EPOLLIN | EPOLLET, handler, side);
}

static void sd_side_close(sd_side *side) {
  sd_event_source_disable_unref(side->source);
  sd_event_unref(side->loop);
  close(side->event);
}

static void *sd_side_run(void *context) {
  sd_side *side = context;
  peers_thread_usage start = peers_thread_usage_now();
  sd_event_loop(side->loop);
  side->used = peers_usage_since(start);
  return NULL;
}

peers_ping_pong_result sd_ping_pong(long round_trips) {
  sd_side a = {.remaining = round_trips};
  sd_side b = {0};
  a.other = &b;
  b.other = &a;
  sd_side_open(&a, sd_ping_arrived);
  sd_side_open(&b, sd_pong_arrived);
  uint64_t start = peers_now();
  pthread_t ping, pong;
  peers_start_thread(&pong, sd_side_run, &b);
  peers_start_thread(&ping, sd_side_run, &a);
  sd_poke(&b);
  pthread_join(ping, NULL);
  uint64_t elapsed = peers_now() - start;
  pthread_join(pong, NULL);
  peers_ping_pong_result result = peers_result(elapsed, a.used, b.used);
  sd_side_close(&a);
  sd_side_close(&b);
  return result;
}
