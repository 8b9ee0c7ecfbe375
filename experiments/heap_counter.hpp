// experiments/heap_counter.hpp: measure the heap bytes a call allocates, by counting malloc.
//
// heap_counter.cpp defines malloc, free, calloc, realloc, posix_memalign, aligned_alloc and
// memalign in the executable; the dynamic linker then binds every library's calls (libstdc++'s
// operator new, Eigen's aligned allocations, the OpenMP runtime) to them. Each forwards to glibc's
// __libc_* functions and adds malloc_usable_size(ptr) to a live-bytes counter, keeping its peak.
// The executable must export them (CMake ENABLE_EXPORTS, i.e. -rdynamic).
//
//   HeapPeak scope;            // resets the peak to the bytes live now
//   auto out = forward_fa2(...);
//   scope.peak_delta();        // most bytes live at once during the call, minus those live before
//
// The counts include allocator rounding (usable size >= requested size) and every thread.
#pragma once

#include <cstdint>

namespace ioattn::exp {

int64_t heap_live_bytes();
int64_t heap_peak_bytes();
void heap_reset_peak();          // peak := live
bool heap_counter_active();      // false if the interposition did not take (then counts are 0)

class HeapPeak {
 public:
  HeapPeak() : base_(heap_live_bytes()) { heap_reset_peak(); }
  int64_t peak_delta() const { return heap_peak_bytes() - base_; }

 private:
  int64_t base_;
};

}  // namespace ioattn::exp
