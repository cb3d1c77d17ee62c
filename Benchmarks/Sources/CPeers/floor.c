// The floor: what the work costs with bare Linux calls and no loop at all. An empty pass is
// one epoll_wait with a zero timeout on an epoll set holding an eventfd; a ping-pong hop is
// one write to the other thread's edge-triggered eventfd and one epoll_wait on one's own.
#include "internal.h"

#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

uint64_t floor_empty_passes(long passes) {
  int event = eventfd(0, EFD_CLOEXEC);
  int poll = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event interest = {.events = EPOLLIN, .data.u64 = 1};
  epoll_ctl(poll, EPOLL_CTL_ADD, event, &interest);
  struct epoll_event events[8];
  for (long index = 0; index < 1000; index++) epoll_wait(poll, events, 8, 0);
  uint64_t start = peers_now();
  for (long index = 0; index < passes; index++) epoll_wait(poll, events, 8, 0);
  uint64_t elapsed = peers_now() - start;
  close(event);
  close(poll);
  return elapsed;
}

typedef struct {
  int poll;
  int event;  // this side's eventfd, edge-triggered in `poll`
  int other;  // the other side's eventfd
  long round_trips;
  peers_thread_usage used;
} floor_side;

static void floor_wait(int poll) {
  struct epoll_event events[4];
  while (epoll_wait(poll, events, 4, -1) < 1) {
  }
}

static void floor_poke(int event) {
  uint64_t one = 1;
  (void)!write(event, &one, sizeof(one));
}

static void floor_side_open(floor_side *side) {
  side->event = eventfd(0, EFD_CLOEXEC);
  side->poll = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event interest = {.events = EPOLLIN | EPOLLET, .data.u64 = 1};
  epoll_ctl(side->poll, EPOLL_CTL_ADD, side->event, &interest);
}

// The side that answers: waits, then wakes the other, round_trips times.
static void *floor_pong(void *context) {
  floor_side *side = context;
  peers_thread_usage start = peers_thread_usage_now();
  for (long index = 0; index < side->round_trips; index++) {
    floor_wait(side->poll);
    floor_poke(side->other);
  }
  side->used = peers_usage_since(start);
  return NULL;
}

// The side that serves: wakes the other, then waits for its answer.
static void *floor_ping(void *context) {
  floor_side *side = context;
  peers_thread_usage start = peers_thread_usage_now();
  for (long index = 0; index < side->round_trips; index++) {
    floor_poke(side->other);
    floor_wait(side->poll);
  }
  side->used = peers_usage_since(start);
  return NULL;
}

peers_ping_pong_result floor_ping_pong(long round_trips) {
  floor_side a = {.round_trips = round_trips};
  floor_side b = {.round_trips = round_trips};
  floor_side_open(&a);
  floor_side_open(&b);
  a.other = b.event;
  b.other = a.event;
  uint64_t start = peers_now();
  pthread_t pong, ping;
  peers_start_thread(&pong, floor_pong, &b);
  peers_start_thread(&ping, floor_ping, &a);
  pthread_join(ping, NULL);
  uint64_t elapsed = peers_now() - start;
  pthread_join(pong, NULL);
  peers_ping_pong_result result = peers_result(elapsed, a.used, b.used);
  int descriptors[] = {a.event, a.poll, b.event, b.poll};
  for (int index = 0; index < 4; index++) close(descriptors[index]);
  return result;
}
