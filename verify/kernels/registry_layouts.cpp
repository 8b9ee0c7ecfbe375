// Named cases for the registries' layout check (kernels/launch.hpp, registry_precheck): every
// forward and backward entry refuses a packed (varlen) or paged problem (ioattn/layout.hpp) in its
// supports(), launch() and config() with one line naming the variant, unless its registry line
// declares the layout; an invalid layout is refused with validate()'s message; a dense problem is
// never refused for its layout. Runs without a GPU (label unit): the check comes before anything
// touches a device, and before the GPU-less build's "built without GPU support".
#include <string>

#include <gtest/gtest.h>

#include "kernels/backward.hpp"
#include "kernels/launch.hpp"

using namespace ioattn;
using namespace ioattn::kernels;

namespace {

constexpr const char* kRefusal = ": paged KV / varlen not supported";

AttnProblem dense() {
  AttnProblem p;
  p.batch = 2;
  p.heads_q = 8;
  p.heads_kv = 2;
  p.seqlen_q = 4;
  p.seqlen_k = 40;
  p.head_dim = 128;
  p.dtype = DType::bf16;
  return p;
}

AttnProblem varlen() {
  AttnProblem p = dense();
  p.seqlen_q = 5;
  p.layout.cu_seqlens_q = {0, 5, 5};
  p.layout.total_q = 5;
  return p;
}

AttnProblem paged() {
  AttnProblem p = dense();
  set_paged(p.layout, {40, 17}, 16, 1, 3);
  return p;
}

// What an entry should answer for p: the variant's layout refusal, or anything but it.
template <class Info>
void expect_layout_answer(const Info& k, const AttnProblem& p, bool refused, const std::optional<std::string>& got,
                          const char* call) {
  const std::string want = std::string(k.name) + kRefusal;
  if (refused) {
    ASSERT_TRUE(got) << k.name << " " << call << " accepted a " << p.layout.describe() << " problem";
    EXPECT_EQ(got->rfind(want, 0), 0u) << k.name << " " << call << ": " << *got;
    EXPECT_EQ(got->find('\n'), std::string::npos) << *got;
  } else if (got) {
    EXPECT_EQ(got->find(kRefusal), std::string::npos) << k.name << " " << call << ": " << *got;
  }
}

}  // namespace

TEST(RegistryLayouts, ForwardEntriesRefusePackedAndPagedUnlessDeclared) {
  ASSERT_FALSE(registry().empty());
  for (const KernelInfo& k : registry()) {
    for (const auto& [p, declared] : {std::pair{dense(), true}, {varlen(), k.layouts.varlen}, {paged(), k.layouts.paged_kv}}) {
      ASSERT_FALSE(p.validate()) << *p.validate();
      LaunchConfig cfg;
      expect_layout_answer(k, p, !declared, k.supports(p, {}), "supports");
      expect_layout_answer(k, p, !declared, k.launch(p, DeviceTensors{}, {}, nullptr, nullptr), "launch");
      expect_layout_answer(k, p, !declared, k.config(p, {}, cfg), "config");
    }
  }
}

TEST(RegistryLayouts, BackwardEntriesRefusePackedAndPagedUnlessDeclared) {
  ASSERT_FALSE(backward_registry().empty());
  for (const BackwardInfo& k : backward_registry()) {
    for (const auto& [p, declared] : {std::pair{dense(), true}, {varlen(), k.layouts.varlen}, {paged(), k.layouts.paged_kv}}) {
      LaunchConfig cfg;
      expect_layout_answer(k, p, !declared, k.supports(p, {}), "supports");
      expect_layout_answer(k, p, !declared, k.launch(p, BackwardTensors{}, {}, nullptr, nullptr), "launch");
      expect_layout_answer(k, p, !declared, k.config(p, {}, cfg), "config");
    }
  }
}

TEST(RegistryLayouts, InvalidTablesGetValidatesMessage) {
  AttnProblem p = paged();
  p.layout.block_table[0] = 99;  // not a page index
  const std::string why = *p.validate();
  for (const KernelInfo& k : registry()) EXPECT_EQ(k.supports(p, {}).value_or(""), why) << k.name;
  for (const BackwardInfo& k : backward_registry()) EXPECT_EQ(k.supports(p, {}).value_or(""), why) << k.name;
}
