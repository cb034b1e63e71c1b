"""DDP (gloo, CPU) MLP classifier, 4 ranks, no @record.
At step 3 rank 2's augmentation raises ValueError; the other ranks are
waiting in the DDP gradient all-reduce."""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def random_crop(x, size, step, rank):
    width = x.shape[-1] + (10 if (rank == 2 and step == 3) else 0)  # rank 2 got a resized shard
    if size > x.shape[-1] or width != x.shape[-1]:
        raise ValueError(f"random_crop: crop width {size} does not fit input width {width} (rank {rank}, step {step})")
    return x[..., :size]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(8):
        x = torch.randn(16, 32, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        x = random_crop(x, 32, step, rank)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
