"""DDP (gloo, CPU), 4 ranks, process-group timeout 15 s. After step 2 rank 0
does 'serial work' alone (an expensive eval/checkpoint export, simulated with
time.sleep(60)) while ranks 1-3 go on and block in the metrics all_reduce.
The classic rank-0 straggler: rank 0 itself prints no error."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def export_checkpoint(model, step):
    print(f"rank 0: exporting checkpoint for step {step} ...", flush=True)
    time.sleep(60)  # serial work that only rank 0 does
    torch.save(model.state_dict(), f"/dev/null")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for step in range(6):
        x = torch.randn(16, 32, generator=g)
        y = torch.randint(0, 4, (16,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 2 and rank == 0:
            export_checkpoint(model.module, step)
        stats = torch.tensor([loss.item(), 1.0])
        dist.all_reduce(stats)  # rank 0 is late here
        if rank == 0:
            print(f"step {step} mean loss {stats[0].item() / stats[1].item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
