// libuv's side: uv_run(UV_RUN_NOWAIT) for a pass, uv_timer_t for timers, uv_async_t (its way
// to wake another thread's loop) for ping-pong.
#include "internal.h"

#include <stdlib.h>
#include <uv.h>

static void uv_ignore_async(uv_async_t *handle) { (void)handle; }
static void uv_ignore_timer(uv_timer_t *handle) { (void)handle; }
static void uv_free_handle(uv_handle_t *handle) { free(handle); }

// Closes every handle still open and runs the loop until their close callbacks ran.
static void uv_close_walker(uv_handle_t *handle, void *unused) {
  (void)unused;
  if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

static void uv_loop_finish(uv_loop_t *loop) {
  uv_walk(loop, uv_close_walker, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
}

uint64_t uv_empty_passes(long passes) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  // An async handle keeps the loop alive and puts its eventfd in the epoll set.
  uv_async_t idle;
  uv_async_init(&loop, &idle, uv_ignore_async);
  for (long index = 0; index < 1000; index++) uv_run(&loop, UV_RUN_NOWAIT);
  uint64_t start = peers_now();
  for (long index = 0; index < passes; index++) uv_run(&loop, UV_RUN_NOWAIT);
  uint64_t elapsed = peers_now() - start;
  uv_loop_finish(&loop);
  return elapsed;
}

// Each timer's handle is allocated on its own, as our LoopTimer is, and freed by its close
// callback; the pass that runs the close callbacks is part of cancelling.
uint64_t uv_timer_churn(const double *offsets, long count) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_timer_t **timers = malloc(sizeof(uv_timer_t *) * (size_t)count);
  uint64_t start = peers_now();
  for (long index = 0; index < count; index++) {
    uv_timer_t *timer = malloc(sizeof(uv_timer_t));
    uv_timer_init(&loop, timer);
    uv_timer_start(timer, uv_ignore_timer, (uint64_t)(offsets[index] * 1000), 0);
    timers[index] = timer;
  }
  for (long index = 0; index < count; index++) {
    uv_timer_stop(timers[index]);
    uv_close((uv_handle_t *)timers[index], uv_free_handle);
  }
  uv_run(&loop, UV_RUN_NOWAIT);
  uint64_t elapsed = peers_now() - start;
  free(timers);
  uv_loop_finish(&loop);
  return elapsed;
}

double uv_timer_memory(long count) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_timer_t warm;
  uv_timer_init(&loop, &warm);
  uv_timer_start(&warm, uv_ignore_timer, 7200000, 0);
  uv_timer_t **timers = malloc(sizeof(uv_timer_t *) * (size_t)count);
  uint64_t before = peers_heap_bytes_in_use();
  for (long index = 0; index < count; index++) {
    uv_timer_t *timer = malloc(sizeof(uv_timer_t));
    uv_timer_init(&loop, timer);
    uv_timer_start(timer, uv_ignore_timer, 3600000 + (uint64_t)index * 1000, 0);
    timers[index] = timer;
  }
  double per_timer = peers_heap_growth(before) / (double)count;
  for (long index = 0; index < count; index++) {
    uv_close((uv_handle_t *)timers[index], uv_free_handle);
  }
  free(timers);
  uv_loop_finish(&loop);
  return per_timer;
}

typedef struct uv_side {
  uv_loop_t loop;
  uv_async_t async;
  struct uv_side *other;
  long remaining;  // round trips left; the serving side's only
  int finished;    // set (release) by the serving side when the last round trip is back
  peers_thread_usage used;
} uv_side;

// The serving side: counts the round trip that came back and sends the next.
static void uv_ping_arrived(uv_async_t *handle) {
  uv_side *side = handle->data;
  if (--side->remaining == 0) {
    __atomic_store_n(&side->finished, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&side->other->finished, 1, __ATOMIC_RELEASE);
    uv_async_send(&side->other->async);
    uv_close((uv_handle_t *)handle, NULL);
    return;
  }
  uv_async_send(&side->other->async);
}

// The answering side: sends the ball back, or closes once the serving side is done.
static void uv_pong_arrived(uv_async_t *handle) {
  uv_side *side = handle->data;
  if (__atomic_load_n(&side->finished, __ATOMIC_ACQUIRE)) {
    uv_close((uv_handle_t *)handle, NULL);
    return;
  }
  uv_async_send(&side->other->async);
}

static void *uv_side_run(void *context) {
  uv_side *side = context;
  peers_thread_usage start = peers_thread_usage_now();
  uv_run(&side->loop, UV_RUN_DEFAULT);
  side->used = peers_usage_since(start);
  return NULL;
}

peers_ping_pong_result uv_ping_pong(long round_trips) {
  uv_side *a = calloc(1, sizeof(uv_side));
  uv_side *b = calloc(1, sizeof(uv_side));
  a->other = b;
  b->other = a;
  a->remaining = round_trips;
  uv_loop_init(&a->loop);
  uv_loop_init(&b->loop);
  uv_async_init(&a->loop, &a->async, uv_ping_arrived);
  uv_async_init(&b->loop, &b->async, uv_pong_arrived);
  a->async.data = a;
  b->async.data = b;
  uint64_t start = peers_now();
  pthread_t ping, pong;
  peers_start_thread(&pong, uv_side_run, b);
  peers_start_thread(&ping, uv_side_run, a);
  uv_async_send(&b->async);
  pthread_join(ping, NULL);
  uint64_t elapsed = peers_now() - start;
  pthread_join(pong, NULL);
  peers_ping_pong_result result = peers_result(elapsed, a->used, b->used);
  uv_loop_finish(&a->loop);
  uv_loop_finish(&b->loop);
  free(a);
  free(b);
  return result;
}
