"""DDP-style loop (gloo, CPU), 3 ranks, process-group timeout 300 s. Each step every rank computes
its loss and all-reduces it; at step 4 rank 1 sleeps inside its training step (a stuck data loader or
a deadlocked call stands in for it), so ranks 0 and 2 wait in all_reduce until the timeout."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def train_step(rank, step, w):
    x = torch.randn(64, 16)
    loss = ((x @ w) ** 2).mean()
    if rank == 1 and step == 4:
        time.sleep(3600)  # rank 1 hangs here
    return loss


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    w = torch.randn(16, 1)
    for step in range(1000):
        loss = train_step(rank, step, w)
        stats = torch.tensor([loss.item()])
        dist.all_reduce(stats)
        print(f"rank {rank} step {step} loss {stats.item() / dist.get_world_size():.4f}", flush=True)
        time.sleep(0.2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
