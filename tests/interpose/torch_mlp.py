"""A small PyTorch training loop for `pooch run` on simgpu (tests/interpose, case torch).

Usage: torch_mlp.py ITERS [elementwise|linear|linear-bias]
Eight layers with ReLU and an MSE loss (kernels through __cudaLaunchKernel), SGD with momentum,
batch 1024, width 2048: 8 MiB per feature map, so that a limit below its peak forces swaps. The
layers are `linear` (bias-free nn.Linear: cuBLAS cublasGemmEx), `linear-bias` (nn.Linear with its
bias: forward through cublasLtMatmul's bias epilogue) or `elementwise` (the default:
x * w + b with per-feature parameters, kernels only, so that the case checks the launches and the
allocator whatever cuBLAS calls pooch models). Prints `allocator NAME` (torch's view of the backend),
`iter I` per iteration, `max_memory_allocated B` and `done`.
"""
import sys
import time

import torch


class Elementwise(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(width) * 0.1 + 1.0)
        self.b = torch.nn.Parameter(torch.zeros(width))

    def forward(self, x):
        return x * self.w + self.b


def main():
    iters = int(sys.argv[1])
    kind = sys.argv[2] if len(sys.argv) > 2 else "elementwise"
    torch.manual_seed(0)
    print("allocator", torch.cuda.get_allocator_backend(), flush=True)
    width, depth, batch = 2048, 8, 1024
    layers = []
    for _ in range(depth):
        if kind == "elementwise":
            layer = Elementwise(width)
        else:
            layer = torch.nn.Linear(width, width, bias=kind == "linear-bias")
        layers += [layer, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    # The linear layers' weights are 16 MiB each. SGD's default foreach kernel takes the weights,
    # gradients and momenta of several layers in one launch (over 240 MiB), and the memory one op
    # touches must fit under the limit the cases run at (120 MiB); one layer at a time (48 MiB)
    # does.
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                          foreach=kind == "elementwise")
    x = torch.randn(batch, width, device="cuda")
    y = torch.randn(batch, width, device="cuda")
    for i in range(iters):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print(f"iter {i}", flush=True)
    print("max_memory_allocated", torch.cuda.max_memory_allocated(), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
    # PyTorch's autograd device thread drops its last graph task just after backward returns,
    # taking the GIL to do so; if the interpreter is finalizing by then, the thread exits inside a
    # noexcept destructor and the process aborts ("terminate called without an active exception",
    # a shutdown race of PyTorch's: pytorch/pytorch#190489). A pause lets the thread finish.
    time.sleep(0.2)
