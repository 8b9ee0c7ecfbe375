"""DRAM and L2 bytes of one PyTorch SDPA FlashAttention-2 forward, for the L2 wave model.

Run under Nsight Compute on the H200 (simulator/validate/run_ncu_l2.sh does it):
  ncu --clock-control none --profile-from-start off --csv \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
      python3 ncu_sdpa_l2.py N B H D CAUSAL
Layout (B, H, N, D) bf16, three warm-up calls, then one profiled call between profiler start/stop.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main() -> None:
    n, b, h, d, causal = (int(x) for x in sys.argv[1:6])
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
