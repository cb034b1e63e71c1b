#!/bin/bash
# near miss: block recompute of every layer of the stage
torchrun pretrain_gpt.py --num-layers 24 --recompute-granularity full --recompute-method block \
    --recompute-num-layers 24
# near miss: uniform groups cover all layers
torchrun pretrain_gpt.py --num-layers 24 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
