// fp8_encode / fp8_decode (include/ioattn/fp8.hpp) against cuda_fp8.h's host conversion, where the
// CUDA toolkit's headers are present (host code only, no GPU): every float of magnitude in
// [2^-20, 2^17) of both signs (the whole rounding range of both formats: below it every float
// rounds to a signed zero, above it saturates or overflows), a 1-in-9973 sample of all floats and
// the special values, in both saturation modes (__NV_SATFINITE, __NV_NOSAT); and all 256 codes of
// each format decoded. NaN codes may differ in sign and payload (CUDA returns a positive NaN and,
// for e5m2, copies payload bits); both must be NaN. Exit code 1 on any other difference.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <cuda_fp8.h>

#include "ioattn/fp8.hpp"

using namespace ioattn;

namespace {

bool is_nan_code(uint8_t c, Fp8Format f) {
  return f == Fp8Format::e4m3 ? (c & 0x7F) == 0x7F : (c & 0x7F) > 0x7C;
}

}  // namespace

int main() {
  long checked = 0, bad = 0;
  auto one = [&](uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    ++checked;
    for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2})
      for (Saturation s : {Saturation::finite, Saturation::none}) {
        const uint8_t mine = fp8_encode(x, f, s);
        const uint8_t cuda = __nv_cvt_float_to_fp8(x, s == Saturation::finite ? __NV_SATFINITE : __NV_NOSAT,
                                                    f == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2);
        if (mine != cuda && !(is_nan_code(mine, f) && is_nan_code(cuda, f))) {
          if (bad < 20)
            std::printf("float %a (bits %08x) %s %s: ioattn %02x, cuda_fp8.h %02x\n", double(x), bits,
                        f == Fp8Format::e4m3 ? "e4m3" : "e5m2", s == Saturation::finite ? "satfinite" : "nosat",
                        mine, cuda);
          ++bad;
        }
      }
  };
  for (uint32_t b = 0x35800000u; b < 0x48000000u; ++b) {  // [2^-20, 2^17)
    one(b);
    one(b | 0x80000000u);
  }
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 9973) one(static_cast<uint32_t>(b));
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                     0x00000001u, 0x80000001u, 0x7f7fffffu, 0xff7fffffu})
    one(b);
  for (int c = 0; c < 256; ++c)
    for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
      const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c),
                                                   f == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2);
      const float cuda = __half2float(__half(h)), mine = fp8_decode(static_cast<uint8_t>(c), f);
      if (!(cuda == mine || (cuda != cuda && mine != mine))) {
        std::printf("code %02x %s: ioattn %a, cuda_fp8.h %a\n", c, f == Fp8Format::e4m3 ? "e4m3" : "e5m2",
                    double(mine), double(cuda));
        ++bad;
      }
    }
  std::printf("fp8 vs cuda_fp8.h: %ld floats x 4 conversions and 512 codes, %ld differences\n", checked, bad);
  return bad == 0 ? 0 : 1;
}
