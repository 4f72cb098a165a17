"""Trains a torchvision ResNet-50 or a TransformerEncoder deterministically and prints what the
GPU check (scripts/gpu-check.sh) compares: throughput, peak memory and a hash of the parameters.

Usage: torch_train.py MODEL MODE BATCH ITERS
  MODEL  resnet50 | transformer
  MODE   incore (plain), checkpoint (torch.utils.checkpoint on every block), save_on_cpu
         (torch.autograd.graph.save_on_cpu(pin_memory=True) around the forward)
Prints `iter I ms T` per iteration, then `img_per_s X` (samples per second over the second half
of the iterations, timed with CUDA events: past warm-up, and past pooch's profiling when it runs
under pooch), `max_memory_allocated B` and `params_sha256 H` (the parameters' bytes in order). At a
batch that does not fit it prints `oom` and exits 3 (OutOfMemoryError, or the AcceleratorError of a
failed cudaMalloc under PYTORCH_NO_CUDA_MEMORY_CACHING=1). Deterministic: fixed seeds,
torch.use_deterministic_algorithms(True), TF32 off, cuDNN benchmark off.
"""
import hashlib
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch
import torch.nn.functional as F
import torch.utils.checkpoint as cp


def checkpoint_each(blocks):
    """Recomputes each block's activations in backward instead of keeping them. Each block's own
    forward is wrapped, not the block replaced: TransformerEncoder reads attributes of its first
    layer (self_attn) that a wrapping module would hide."""
    for block in blocks:
        forward = block.forward
        block.forward = lambda *args, forward=forward, **kwargs: cp.checkpoint(
            forward, *args, use_reentrant=False, **kwargs)


def resnet50(batch, checkpoint):
    import torchvision

    model = torchvision.models.resnet50().cuda()
    if checkpoint:
        checkpoint_each(block for name in ("layer1", "layer2", "layer3", "layer4")
                        for block in getattr(model, name))
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return model, opt, lambda: F.cross_entropy(model(x), y)


def transformer(batch, checkpoint):
    d_model, heads, layers, seq, vocab = 512, 8, 6, 256, 8192
    embed = torch.nn.Embedding(vocab, d_model).cuda()
    layer = torch.nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=2048, dropout=0.0,
                                             batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).cuda()
    if checkpoint:
        checkpoint_each(encoder.layers)
    head = torch.nn.Linear(d_model, vocab).cuda()
    model = torch.nn.ModuleList([embed, encoder, head])
    tokens = torch.randint(0, vocab, (batch, seq), device="cuda")
    target = torch.randint(0, vocab, (batch, seq), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def loss():
        return F.cross_entropy(head(encoder(embed(tokens))).view(-1, vocab), target.view(-1))

    return model, opt, loss


def main():
    name, mode, batch, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    build = {"resnet50": resnet50, "transformer": transformer}[name]
    model, opt, loss_fn = build(batch, mode == "checkpoint")
    times = []
    try:
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            opt.zero_grad(set_to_none=True)
            if mode == "save_on_cpu":
                with torch.autograd.graph.save_on_cpu(pin_memory=True):
                    loss = loss_fn()
            else:
                loss = loss_fn()
            loss.backward()
            opt.step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
            print(f"iter {len(times) - 1} ms {times[-1]:.3f}", flush=True)
    except (torch.cuda.OutOfMemoryError, torch.AcceleratorError) as e:
        # With PYTORCH_NO_CUDA_MEMORY_CACHING=1 a failed cudaMalloc is not turned into
        # OutOfMemoryError: it comes as AcceleratorError "CUDA error: out of memory".
        if not isinstance(e, torch.cuda.OutOfMemoryError) and "out of memory" not in str(e):
            raise
        print("oom", str(e).splitlines()[0], flush=True)
        sys.exit(3)
    steady = times[len(times) // 2:]
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().cpu().contiguous().numpy().tobytes())
    print(f"img_per_s {batch * len(steady) / (sum(steady) / 1000):.2f}")
    print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}")
    print(f"params_sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
    # PyTorch's autograd device thread drops its last graph task just after backward returns,
    # taking the GIL to do so; if the interpreter is finalizing by then, the thread exits inside a
    # noexcept destructor and the process aborts ("terminate called without an active exception",
    # a shutdown race of PyTorch's: pytorch/pytorch#190489). A pause lets the thread finish.
    time.sleep(0.2)
