"""A small transformer encoder trained with AdamW (issue 14, point 2).

Usage: transformer_loop.py ITERS
torch.nn.TransformerEncoder's layers call scaled_dot_product_attention; the script also calls it
directly on the output so the fused attention path is taken whichever way the layers go. Prints
`iter I ms T`, then `max_memory_allocated BYTES`, to be compared with a real GPU's figure.
"""
import sys
import time

import torch
import torch.nn.functional as F


def main():
    iters = int(sys.argv[1])
    torch.manual_seed(0)
    d_model, heads, layers, seq, batch, vocab = 512, 8, 6, 256, 32, 8192
    embed = torch.nn.Embedding(vocab, d_model).cuda()
    layer = torch.nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=2048, dropout=0.0,
                                             batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).cuda()
    head = torch.nn.Linear(d_model, vocab).cuda()
    params = list(embed.parameters()) + list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    tokens = torch.randint(0, vocab, (batch, seq), device="cuda")
    target = torch.randint(0, vocab, (batch, seq), device="cuda")
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        opt.zero_grad(set_to_none=True)
        h = encoder(embed(tokens))
        q = h.view(batch, seq, heads, d_model // heads).transpose(1, 2)
        h = h + F.scaled_dot_product_attention(q, q, q).transpose(1, 2).reshape(batch, seq, d_model)
        loss = F.cross_entropy(head(h).view(-1, vocab), target.view(-1))
        loss.backward()
        opt.step()
        end.record()
        end.synchronize()
        print(f"iter {i} ms {start.elapsed_time(end):.3f}", flush=True)
    print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}")


if __name__ == "__main__":
    main()
    # PyTorch's autograd device thread drops its last graph task just after backward returns,
    # taking the GIL to do so; if the interpreter is finalizing by then, the thread exits inside a
    # noexcept destructor and the process aborts ("terminate called without an active exception",
    # a shutdown race of PyTorch's: pytorch/pytorch#190489). A pause lets the thread finish.
    time.sleep(0.2)
