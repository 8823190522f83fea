#!/usr/bin/python3
"""Records PyTorch's losses for the first steps of examples/cnn's network
into tests/data/cnn_losses.txt, which `cnn --check` compares with its own
(eager and compiled): the same architecture, the same initial weights (the
64-bit LCG stream of examples/cnn/cnn_model.c), the same images in data
order, SGD with momentum, no dropout (the two random generators differ).

    tools/gen_cnn_ref.py [OUT]     (needs python3-torch, PyTorch 1.13, and
                                    dataset-fashion-mnist)
"""
import gzip
import math
import sys

import torch
import torch.nn.functional as F

BATCH, STEPS, LR, MOMENTUM, SEED = 32, 6, 0.05, 0.9, 1
DATA = "/usr/share/datasets/fashion-mnist"
MASK = (1 << 64) - 1

# (shape, fan_in; 0 for batch norm's weight (ones) and bias (zeros))
PARAMS = [([32, 1, 3, 3], 9), ([32], 9), ([32], 0), ([32], 0),
          ([64, 32, 3, 3], 32 * 9), ([64], 32 * 9), ([64], 0), ([64], 0),
          ([128, 64 * 7 * 7], 64 * 7 * 7), ([128], 64 * 7 * 7), ([10, 128], 128), ([10], 128)]


def init(seed):
    state, params = seed, []
    for i, (shape, fan_in) in enumerate(PARAMS):
        n = math.prod(shape)
        if fan_in:
            bound, vals = 1 / math.sqrt(fan_in), []
            for _ in range(n):
                state = (state * 6364136223846793005 + 1442695040888963407) & MASK
                u = (state >> 11) * (1.0 / 9007199254740992.0)
                vals.append((2 * u - 1) * bound)
            t = torch.tensor(vals, dtype=torch.float64).to(torch.float32).reshape(shape)
        else:
            t = torch.ones(shape) if i in (2, 6) else torch.zeros(shape)
        params.append(t.requires_grad_(True))
    return params


def read_idx(path, n_header):
    with gzip.open(path, "rb") as f:
        data = f.read()
    return data[4 * n_header:]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/cnn_losses.txt"
    n = BATCH * STEPS
    px = read_idx(DATA + "/train-images-idx3-ubyte.gz", 4)[:n * 784]
    lb = read_idx(DATA + "/train-labels-idx1-ubyte.gz", 2)[:n]
    x_all = (torch.tensor(list(px), dtype=torch.float32) / 255.0 - 0.2860) / 0.3530
    x_all = x_all.reshape(n, 1, 28, 28)
    y_all = torch.tensor(list(lb), dtype=torch.int64)
    p = init(SEED)
    running = [torch.zeros(32), torch.ones(32), torch.zeros(64), torch.ones(64)]
    opt = torch.optim.SGD(p, lr=LR, momentum=MOMENTUM)
    losses = []
    for s in range(STEPS):
        x, y = x_all[s * BATCH:(s + 1) * BATCH], y_all[s * BATCH:(s + 1) * BATCH]
        h = F.conv2d(x, p[0], p[1], padding=1)
        h = F.batch_norm(h, running[0], running[1], p[2], p[3], True, 0.1, 1e-5)
        h = F.max_pool2d(F.relu(h), 2)
        h = F.conv2d(h, p[4], p[5], padding=1)
        h = F.batch_norm(h, running[2], running[3], p[6], p[7], True, 0.1, 1e-5)
        h = F.max_pool2d(F.relu(h), 2)
        h = F.relu(F.linear(h.flatten(1), p[8], p[9]))
        loss = F.cross_entropy(F.linear(h, p[10], p[11]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with open(out, "w") as f:
        f.write("# PyTorch %s's losses for examples/cnn's first steps, written by "
                "tools/gen_cnn_ref.py\n" % torch.__version__.split("+")[0].split("a")[0])
        f.write("config batch %d steps %d lr %r momentum %r seed %d\n"
                % (BATCH, STEPS, LR, MOMENTUM, SEED))
        for v in losses:
            f.write("loss %r\n" % v)
    print("%s: %d losses" % (out, len(losses)))


if __name__ == "__main__":
    main()
