// Every forward and backward registry entry refuses an FP8 problem (ioattn/dtype.hpp) in its
// supports(), launch() and config() with one line naming the variant and the dtype, unless its
// registry line declares that FP8 dtype (kernels/launch.hpp, registry_precheck; today
// v09_fp8_wgmma and v10_fp8_warpspec, fp8_e4m3): that one is let through to its own checks. A bad FP8 problem gets
// validate()'s message first. Runs without a GPU (label unit): the check comes before any device call.
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
      if (lists_dtype(k.dtypes, dtype_name(dt))) {  // an FP8 variant: past the registry's check
        const std::string generic = std::string(k.name) + ": dtype " + std::string(dtype_name(dt)) + " not supported";
        EXPECT_NE(k.supports(p, {}).value_or(""), generic) << k.name;
        EXPECT_NE(k.config(p, {}, cfg).value_or(""), generic) << k.name;
        continue;
      }
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

TEST(RegistryFp8, OnlyV09DeclaresFp8) {
  for (const KernelInfo& k : registry()) {
    EXPECT_EQ(lists_dtype(k.dtypes, "fp8_e4m3"), k.name == "v09_fp8_wgmma" || k.name == "v10_fp8_warpspec")
        << k.name;
    EXPECT_FALSE(lists_dtype(k.dtypes, "fp8_e5m2")) << k.name;
  }
  for (const BackwardInfo& k : backward_registry()) EXPECT_FALSE(lists_dtype(k.dtypes, "fp8_e4m3")) << k.name;
  EXPECT_TRUE(lists_dtype("fp16,bf16", "bf16"));
  EXPECT_FALSE(lists_dtype("fp16,bf16", "bf1"));
  EXPECT_FALSE(lists_dtype("", "fp16"));
}

TEST(RegistryFp8, BadFp8ProblemGetsValidatesMessage) {
  AttnProblem p = fp8(DType::fp8_e4m3);
  p.fp8.v_descale = {0.0f};
  for (const KernelInfo& k : registry())
    EXPECT_EQ(k.supports(p, {}).value_or(""), "v_descale must be finite and positive") << k.name;
}
