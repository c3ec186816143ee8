#!/usr/bin/env python3
"""PyTorch side of `adjoint bench nn`: the same networks, sizes, precision and timing as nn/nn_bench.cu.

Networks (SHAC): actor 160->[512,256,128]->29 and critic 286->[512,256,128]->1, hidden layers
Linear -> ELU -> LayerNorm, output Linear. Train step: forward, MSE loss against a fixed target, backward (no
input gradient), torch.optim.Adam(fused=True) step. Forward alone: torch.no_grad() forward.
Modes: "eager" (plain PyTorch) and "graph" (the whole step captured once with torch.cuda.graph and replayed;
Adam capturable=True). Timing: CUDA events around each iteration after warm-up, median.
Precision: fp32 with torch.backends.cuda.matmul.allow_tf32 = False (and cudnn), then both True.
GEMMs only (graph-captured, the floor that the GEMMs alone set): the forward's 4 Linear GEMMs (F.linear = addmm with
the bias, chained without activation/LayerNorm), and for the train step those plus autograd's backward GEMMs per
layer: weight gradient grad.t() @ input (all 4 layers) and input gradient grad @ W (layers 2-4; none for the
network input, as in the train step); no bias-gradient sums, no elementwise ops, no optimizer.
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

NETS = {"actor": (160, [512, 256, 128], 29), "critic": (286, [512, 256, 128], 1)}


def make_net(inp, hidden, out):
    layers, d = [], inp
    for h in hidden:
        layers += [nn.Linear(d, h), nn.ELU(), nn.LayerNorm(h)]
        d = h
    layers.append(nn.Linear(d, out))
    return nn.Sequential(*layers).cuda()


def fill(shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.rand(shape, device="cuda", generator=g) * 2 - 1


def time_fn(fn, iters):
    warm = iters // 5 + 3
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    for i in range(warm + iters):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        if i >= warm:
            v.append(e0.elapsed_time(e1))
    return statistics.median(v)


def gemm_only(net, x, iters):
    """Graph-captured time of the forward GEMMs alone and of forward + backward GEMMs alone (see the docstring)."""
    lins = [m for m in net if isinstance(m, nn.Linear)]
    Ws = [m.weight.detach() for m in lins]
    bs = [m.bias.detach() for m in lins]
    B, L = x.shape[0], len(lins)
    gs = [fill((B, W.shape[0]), 20 + l) * 1e-3 for l, W in enumerate(Ws)]  # dz of each layer (B, out)
    hs = [None] * (L + 1)

    def fwd():
        hs[0] = x
        for l in range(L):
            hs[l + 1] = F.linear(hs[l], Ws[l], bs[l])

    def train():
        fwd()
        for l in reversed(range(L)):
            torch.mm(gs[l].t(), hs[l])  # weight gradient (out, in)
            if l > 0:
                gs[l - 1] = torch.mm(gs[l], Ws[l])  # input gradient (B, in)

    res = {}
    with torch.no_grad():
        for key, fn in (("gemm_fwd_graph_ms", fwd), ("gemm_train_graph_ms", train)):
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            res[key] = time_fn(g.replay, iters)
            del g
    return res


def bench(name, batch, iters):
    inp, hidden, out = NETS[name]
    x, t = fill((batch, inp), 11), fill((batch, out), 12)
    res = {}
    # eager
    net = make_net(inp, hidden, out)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, fused=True)

    def train():
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(net(x), t)
        loss.backward()
        opt.step()

    def fwd():
        with torch.no_grad():
            net(x)

    for _ in range(3):
        train()
    res["train_eager_ms"] = time_fn(train, iters)
    res["fwd_eager_ms"] = time_fn(fwd, iters)
    # CUDA graph of the whole step
    net = make_net(inp, hidden, out)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, fused=True, capturable=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            F.mse_loss(net(x), t).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        F.mse_loss(net(x), t).backward()
        opt.step()
    gf = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gf):
        with torch.no_grad():
            net(x)
    res["train_graph_ms"] = time_fn(g.replay, iters)
    res["fwd_graph_ms"] = time_fn(gf.replay, iters)
    del g, gf
    res.update(gemm_only(net, x, iters))
    del net, opt
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, action="append")
    ap.add_argument("--json")
    ap.add_argument("--iters", type=int, default=0)
    a = ap.parse_args()
    batches = a.batch or [4096, 65536, 262144]
    js = open(a.json, "w") if a.json else None
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}; median of timed iterations, CUDA events")
    print(f"{'net':7} {'prec':5} {'batch':>7}  {'train graph':>12} {'train eager':>12}  {'fwd graph':>12} {'fwd eager':>12}"
          f"  {'GEMMs fwd':>10} {'GEMMs train':>12}")
    for name in NETS:
        for prec in ("fp32", "tf32"):
            tf = prec == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = tf
            torch.backends.cudnn.allow_tf32 = tf
            for b in batches:
                it = a.iters or (200 if b <= 8192 else (60 if b <= 65536 else 25))
                r = bench(name, b, it)
                print(f"{name:7} {prec:5} {b:7d}  {r['train_graph_ms']:9.3f} ms {r['train_eager_ms']:9.3f} ms  "
                      f"{r['fwd_graph_ms']:9.3f} ms {r['fwd_eager_ms']:9.3f} ms  {r['gemm_fwd_graph_ms']:7.3f} ms "
                      f"{r['gemm_train_graph_ms']:9.3f} ms", flush=True)
                if js:
                    js.write(json.dumps(dict(impl="torch", kind="time", net=name, precision=prec, batch=b, **r)) + "\n")
                    js.flush()
    if js:
        js.close()


if __name__ == "__main__":
    sys.exit(main())
