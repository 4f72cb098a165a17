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
    # The output exists before the free, so that its allocation cannot take x's freed block
    # (then x's pointer would point at live memory, on a GPU too).
    y = torch.empty_like(x)
    torch.mul(x, 2, out=y)
    torch.cuda.synchronize()  # one kernel over the live tensor: the path itself works
    cudart = ctypes.CDLL("libcudart.so.13")
    rc = cudart.cudaFree(ctypes.c_void_p(x.data_ptr()))
    print("freed", rc, flush=True)
    try:
        torch.mul(x, 2, out=y)
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
