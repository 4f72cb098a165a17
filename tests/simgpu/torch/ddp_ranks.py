"""DDP over a small model with the gloo backend, one process per rank (issue 39, point 4), run by
torchrun; on whatever CUDA device torch sees.

Each rank trains a stack of Linear layers on its own batch; DDP averages the gradients over the
ranks with gloo's all-reduce, so every rank ends with the same parameters. simgpu shows each
process one device, so a rank takes device LOCAL_RANK modulo the devices it sees (on a GPU
machine with a device per rank, its own).

Usage: torchrun --nproc_per_node N ddp_ranks.py BATCH ITERS
Prints, per rank, `rank R iter I` per iteration, then `rank R ranks_sum S` (a CPU all-reduce of
the ranks' numbers over the same process group: 0 + 1 + ... + N-1 when every rank took part),
`rank R max_memory_allocated B` and, where kernels compute (not in simgpu's timing mode),
`rank R params_checksum C` (the sum of the final parameters' bytes, as 32-bit words).
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def say(line):
    # One write(2) per line: the ranks share torchrun's standard output, and print's separate
    # writes of the text and its newline let two ranks' lines run together.
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def skip_shape_check_in_timing_mode():
    """simgpu's timing mode moves no bytes, so DDP's start-up check that every rank holds the same
    parameter shapes (an all-gather of their sizes through device tensors) reads zeros and fails;
    there it is skipped. Every rank builds the same model here."""
    if os.environ.get("SIMGPU_COMPUTE") == "timing":
        import torch.nn.parallel.distributed as ddp_module

        ddp_module._verify_param_shape_across_processes = lambda *args, **kwargs: None


def main():
    batch, iters = int(sys.argv[1]), int(sys.argv[2])
    skip_shape_check_in_timing_mode()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    torch.manual_seed(0)  # the same initial parameters on every rank, as DDP expects
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024, bias=False),
        torch.nn.Linear(1024, 1024, bias=False),
        torch.nn.Linear(1024, 1024, bias=False),
        torch.nn.Linear(1024, 10, bias=False),
    ).to(device)
    # One gradient bucket (DDP's default puts the last layers' gradients in a first bucket of
    # 1 MiB or so, whose all-reduce then runs on gloo's thread while backward goes on): with one,
    # the all-reduce starts when backward has computed every gradient, and every iteration's CUDA
    # calls come in the same order, which pooch's profile of an iteration needs (two threads'
    # calls interleave as the machine's load has them).
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index],
                                                    bucket_cap_mb=64)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    torch.manual_seed(1 + rank)  # each rank its own batch
    x = torch.randn(batch, 256, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    for i in range(iters):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        say(f"rank {rank} iter {i}")
    ranks = torch.tensor([rank], dtype=torch.int64)
    dist.all_reduce(ranks)
    say(f"rank {rank} ranks_sum {int(ranks.item())}")
    say(f"rank {rank} max_memory_allocated {torch.cuda.max_memory_allocated(device)}")
    if os.environ.get("SIMGPU_COMPUTE") != "timing":  # timing mode computes no parameters
        checksum = sum(int(p.detach().cpu().view(torch.int32).sum()) for p in model.parameters())
        say(f"rank {rank} params_checksum {checksum}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # torch's autograd thread and process exit (see linear_stack.py); a second, not linear_stack's
    # 0.2 s: on a loaded machine four ranks and two launchers share its cores, and a rank of the
    # run without pooch once aborted at exit.
    time.sleep(1.0)
