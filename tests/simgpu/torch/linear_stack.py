"""A stack of Linear layers without bias or activation (issue 15: cuBLAS GEMM replay under pooch),
on whatever CUDA device torch sees.

Without a bias PyTorch's Linear is one cublasGemmEx, and without an activation each layer's output
is read only by GEMMs (the next layer's forward, its weight gradient in backward): no elementwise
kernel, which pooch counts as writing every buffer it is handed, comes between, so the plan can
drop an output after forward and rebuild it by replaying its GEMM.

Usage: linear_stack.py BATCH ITERS
Prints `iter I` per iteration and `done` at the end.
"""
import sys
import time

import torch


def main():
    batch, iters = int(sys.argv[1]), int(sys.argv[2])
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256, bias=False),
        torch.nn.Linear(256, 256, bias=False),
        torch.nn.Linear(256, 256, bias=False),
        torch.nn.Linear(256, 10, bias=False),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 64, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    for i in range(iters):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print(f"iter {i}", flush=True)
    print("done")


if __name__ == "__main__":
    main()
    # PyTorch's autograd device thread drops its last graph task just after backward returns,
    # taking the GIL to do so; if the interpreter is finalizing by then, the thread exits inside a
    # noexcept destructor and the process aborts ("terminate called without an active exception",
    # a shutdown race of PyTorch's: pytorch/pytorch#190489). A pause lets the thread finish.
    time.sleep(0.2)
