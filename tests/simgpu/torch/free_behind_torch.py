"""Frees a tensor's memory behind torch's back (issue 14, point 3).

Run with PYTORCH_NO_CUDA_MEMORY_CACHING=1, so that the tensor is its own cudaMalloc. The memory
is released through ctypes' cudaFree on data_ptr(); the next kernel that reads the tensor must
fail with cudaErrorIllegalAddress, which torch reports as "an illegal memory access". Prints
`freed`, then `error: MESSAGE` and exits 0 when that error came; exits 1 when nothing failed.
"""
import ctypes
import sys

import torch


def main():
    x = torch.ones(1 << 20, device="cuda")
    (x * 2).sum().item()  # one kernel over the live tensor, so the path itself works
    cudart = ctypes.CDLL("libcudart.so.13")
    rc = cudart.cudaFree(ctypes.c_void_p(x.data_ptr()))
    print("freed", rc, flush=True)
    try:
        y = x * 2
        torch.cuda.synchronize()
        print("no error: the kernel over freed memory ran", y.sum().item())
        sys.exit(1)
    except RuntimeError as e:
        print("error:", str(e).splitlines()[0], flush=True)
        # The sticky error also ends the process' later CUDA calls (x's own free at exit):
        # leave without running them.
        sys.stdout.flush()
        import os
        os._exit(0)


if __name__ == "__main__":
    main()
