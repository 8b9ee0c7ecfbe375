"""DRAM and L2 bytes of one PyTorch SDPA forward (FlashAttention-2 by default), for the L2 wave model.

Run under Nsight Compute on the H200 (simulator/validate/run_ncu_l2.sh does it):
  ncu --clock-control none --profile-from-start off --csv \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
      python3 ncu_sdpa_l2.py N B H D CAUSAL [BACKEND]
BACKEND: flash (default), math, cudnn or efficient (h200_anchors.py profiles flash and math).
Layout (B, H, N, D) bf16, three warm-up calls, then one profiled call between profiler start/stop.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main() -> None:
    if len(sys.argv) not in (6, 7):
        sys.exit("usage: ncu_sdpa_l2.py N B H D CAUSAL [flash|math|cudnn|efficient]")
    n, b, h, d, causal = (int(x) for x in sys.argv[1:6])
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    name = sys.argv[6] if len(sys.argv) == 7 else "flash"
    if name not in backends:
        sys.exit(f"ncu_sdpa_l2.py: backend must be one of {', '.join(backends)} (got '{name}')")
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(backends[name]):
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
