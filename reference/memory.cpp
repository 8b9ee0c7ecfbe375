// reference/memory.cpp: the preconditions that are not about values: tiling and host memory.
//
// The naive reference materializes S (seqlen_q x seqlen_k) for every (batch, head) a thread works
// on; at seqlen 2^20 that is 8 TiB per head. Rather than let the allocator kill the process, every
// entry point asks memory_error() first and refuses with one line.
#include <algorithm>
#include <unistd.h>

#include <fmt/format.h>
#include <omp.h>

#include "detail.hpp"

namespace ioattn::ref {

std::optional<std::string> Tiling::validate() const {
  if (br < 1) return fmt::format("Br (query block rows) must be >= 1 (got {})", br);
  if (bc < 1) return fmt::format("Bc (key block rows) must be >= 1 (got {})", bc);
  if (splits < 1) return fmt::format("the split count must be >= 1 (got {})", splits);
  if (br > kMaxSeqlen || bc > kMaxSeqlen || splits > kMaxSeqlen)
    return fmt::format("Br, Bc and splits must be <= {}", kMaxSeqlen);
  return std::nullopt;
}

double host_bytes_needed(const AttnProblem& p, Algorithm a) {
  // Doubles throughout: the float64 reference is the largest consumer.
  const double w = 8.0;
  const double q = double(p.q_elems()), kv = double(p.kv_elems()), lse = double(p.lse_elems());
  const double threads = double(std::min<int64_t>(omp_get_max_threads(), p.batch * p.heads_q));
  const double s = double(p.seqlen_q) * double(p.seqlen_k);  // one head's S
  switch (a) {
    case Algorithm::naive_forward: return w * (2 * q + 2 * kv + lse + threads * s);
    case Algorithm::naive_backward: return w * (4 * q + 4 * kv + lse + threads * 3 * s);
    case Algorithm::tiled_forward: return w * (2 * q + 2 * kv + lse);
    case Algorithm::tiled_backward: return w * (4 * q + 4 * kv + lse);
  }
  return 0.0;
}

std::optional<std::string> memory_error(const AttnProblem& p, Algorithm a) {
  const double phys = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  const double need = host_bytes_needed(p, a);
  if (need <= 0.5 * phys) return std::nullopt;
  const bool naive = a == Algorithm::naive_forward || a == Algorithm::naive_backward;
  return fmt::format("{} needs about {:.1f} GiB of host memory{}, more than half of the {:.1f} GiB "
                     "here; use smaller seqlen_q * seqlen_k or fewer heads",
                     naive ? "the naive reference" : "the tiled CPU algorithms", need / 0x1p30,
                     naive ? fmt::format(" (S is {} x {} per head)", p.seqlen_q, p.seqlen_k) : "",
                     phys / 0x1p30);
}

}  // namespace ioattn::ref
