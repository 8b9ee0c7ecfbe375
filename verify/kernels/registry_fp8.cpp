// Every forward and backward registry entry refuses an FP8 problem (ioattn/dtype.hpp) in its
// supports(), launch() and config() with one line naming the variant and the dtype: no variant has
// an FP8 path yet (kernels/launch.hpp, registry_precheck). A bad FP8 problem gets validate()'s
// message first. Runs without a GPU (label unit): the check comes before any device call.
#include <string>

#include <gtest/gtest.h>

#include "kernels/backward.hpp"
#include "kernels/launch.hpp"

using namespace ioattn;
using namespace ioattn::kernels;

namespace {

AttnProblem fp8(DType dt) {
  AttnProblem p;
  p.heads_q = 4;
  p.heads_kv = 2;
  p.seqlen_q = 64;
  p.seqlen_k = 64;
  p.head_dim = 128;
  p.dtype = dt;
  p.fp8.q_descale = {0.5f};
  return p;
}

template <class Info>
void expect_refused(const Info& k, const std::optional<std::string>& got, DType dt, const char* call) {
  const std::string want = std::string(k.name) + ": dtype " + std::string(dtype_name(dt)) + " not supported";
  ASSERT_TRUE(got) << k.name << " " << call << " accepted " << dtype_name(dt);
  EXPECT_EQ(*got, want) << k.name << " " << call;
}

}  // namespace

TEST(RegistryFp8, EveryEntryRefusesFp8ByName) {
  for (DType dt : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    const AttnProblem p = fp8(dt);
    ASSERT_FALSE(p.validate());
    for (const KernelInfo& k : registry()) {
      LaunchConfig cfg;
      expect_refused(k, k.supports(p, {}), dt, "supports");
      expect_refused(k, k.launch(p, DeviceTensors{}, {}, nullptr, nullptr), dt, "launch");
      expect_refused(k, k.config(p, {}, cfg), dt, "config");
    }
    for (const BackwardInfo& k : backward_registry()) {
      LaunchConfig cfg;
      expect_refused(k, k.supports(p, {}), dt, "supports");
      expect_refused(k, k.launch(p, BackwardTensors{}, {}, nullptr, nullptr), dt, "launch");
      expect_refused(k, k.config(p, {}, cfg), dt, "config");
    }
  }
}

TEST(RegistryFp8, BadFp8ProblemGetsValidatesMessage) {
  AttnProblem p = fp8(DType::fp8_e4m3);
  p.fp8.v_descale = {0.0f};
  for (const KernelInfo& k : registry())
    EXPECT_EQ(k.supports(p, {}).value_or(""), "v_descale must be finite and positive") << k.name;
}
