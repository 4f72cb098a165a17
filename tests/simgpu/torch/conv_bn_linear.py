"""A small conv + batch norm + linear training loop (issue 15: cuDNN backend convolutions,
batch norm Ex and cuBLASLt under pooch), on whatever CUDA device torch sees.

Usage: conv_bn_linear.py BATCH ITERS
Prints `iter I` per iteration and `done` at the end.
"""
import sys
import time

import torch


def main():
    batch, iters = int(sys.argv[1]), int(sys.argv[2])
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(64),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(64),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(64),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(64 * 16, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    for i in range(iters):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
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
