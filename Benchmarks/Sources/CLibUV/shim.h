// libuv 1.x (Debian's libuv1-dev), for the peers' benchmarks.
#include <uv.h>
