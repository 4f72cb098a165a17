"""A torchvision ResNet-50 training loop on whatever CUDA device torch sees (issue 14, point 1).

Usage: resnet50_loop.py BATCH ITERS
Prints `device NAME`, then `iter I ms T` per iteration and `img_per_s X` over the iterations
after the first (as cnn_train does), timed with CUDA events, which simgpu answers in virtual
time. At a batch that does not fit it prints `oom` and the allocator's message and exits 3.
"""
import sys
import time

import torch
import torchvision


def main():
    batch, iters = int(sys.argv[1]), int(sys.argv[2])
    torch.manual_seed(0)
    print("device", torch.cuda.get_device_name(), flush=True)
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    times = []
    try:
        for i in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
            print(f"iter {i} ms {times[-1]:.3f}", flush=True)
    except torch.cuda.OutOfMemoryError as e:
        print("oom", str(e).splitlines()[0], flush=True)
        sys.exit(3)
    steady = times[1:] or times
    print(f"img_per_s {batch * len(steady) / (sum(steady) / 1000):.1f}")
    print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}")


if __name__ == "__main__":
    main()
    # PyTorch's autograd device thread drops its last graph task just after backward returns,
    # taking the GIL to do so; if the interpreter is finalizing by then, the thread exits inside a
    # noexcept destructor and the process aborts ("terminate called without an active exception",
    # a shutdown race of PyTorch's: pytorch/pytorch#190489). A pause lets the thread finish.
    time.sleep(0.2)
