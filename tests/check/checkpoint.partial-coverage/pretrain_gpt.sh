#!/bin/bash
# Megatron-LM pretraining launch
NUM_LAYERS=32
PP=4

torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers ${NUM_LAYERS} \
    --hidden-size 4096 \
    --pipeline-model-parallel-size $PP \
    --recompute-granularity full \
    --recompute-method block \
    --recompute-num-layers 2 \
    --micro-batch-size 1
