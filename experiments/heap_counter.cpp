// experiments/heap_counter.cpp: malloc interposition that counts live heap bytes (see the header).
#include "heap_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#include <malloc.h>

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_seen{false};

void on_alloc(void* p) {
  if (!p) return;
  g_seen.store(true, std::memory_order_relaxed);
  const auto n = int64_t(malloc_usable_size(p));
  const int64_t now = g_live.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void on_free(void* p) {
  if (p) g_live.fetch_sub(int64_t(malloc_usable_size(p)), std::memory_order_relaxed);
}

}  // namespace

extern "C" {

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  on_alloc(p);
  return p;
}

void free(void* p) {
  on_free(p);
  __libc_free(p);
}

void* calloc(size_t n, size_t s) {
  void* p = __libc_calloc(n, s);
  on_alloc(p);
  return p;
}

void* realloc(void* old, size_t n) {
  const auto before = old ? int64_t(malloc_usable_size(old)) : 0;
  void* p = __libc_realloc(old, n);
  if (p || n == 0) g_live.fetch_sub(before, std::memory_order_relaxed);  // old block released
  on_alloc(p);
  return p;
}

void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  on_alloc(p);
  return p;
}

void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void** out, size_t align, size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = memalign(align, n);
  if (!p && n != 0) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace ioattn::exp {

int64_t heap_live_bytes() { return g_live.load(std::memory_order_relaxed); }
int64_t heap_peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void heap_reset_peak() { g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed); }
bool heap_counter_active() { return g_seen.load(std::memory_order_relaxed); }

}  // namespace ioattn::exp
