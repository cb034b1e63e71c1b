"""Benchmark of `rootrank measure` on a 7B Llama-shaped config on the meta device (BENCHMARKS.md).

Prints the wall time and the peak RSS of the measurement (the probe is a child process), and compares
the measured activation memory per layer with Korthikanti et al. 2022 (per layer, 16-bit activations,
no recompute, no tensor/sequence parallelism: s*b*h*(34 + 5*a*s/h) bytes).
Usage: python bench/bench_measure.py [--python PATH] [--seq-len 4096] [--batch-size 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LLAMA_7B = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
            "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5, "dtype": "bfloat16", "tie_word_embeddings": False}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for attention in ("eager", "sdpa"):
        with tempfile.TemporaryDirectory() as tmp:
            config = dict(LLAMA_7B, attn_implementation=attention)
            path = Path(tmp) / "config.json"
            path.write_text(json.dumps(config))
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "rootrank", "measure", "--hf-config", str(path),
                                   "--seq-len", str(args.seq_len), "--batch-size", str(args.batch_size),
                                   "--python", args.python, "--format", "json"], capture_output=True, text=True)
            elapsed = time.perf_counter() - start
        if done.returncode not in (0, 1):
            print(done.stderr, file=sys.stderr)
            return 1
        data = json.loads(done.stdout)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB, the largest child so far
        layer = data["blocks"][1]["activation_bytes"]
        s, b, h, a = args.seq_len, args.batch_size, LLAMA_7B["hidden_size"], LLAMA_7B["num_attention_heads"]
        paper = s * b * h * (34 + 5 * a * s / h)
        rows.append((attention, elapsed, rss, layer, paper, data))
    for attention, elapsed, rss, layer, paper, data in rows:
        conf = data["configurations"]
        print(f"attention={attention}: {elapsed:.1f} s, peak RSS so far {rss:.0f} MiB; per layer measured "
              f"{layer / 2**30:.3f} GiB vs Korthikanti {paper / 2**30:.3f} GiB ({layer / paper:.2f}x); "
              f"total none {conf['none']['activation_bytes'] / 2**30:.2f} GiB, every block "
              f"{conf['all-blocks']['activation_bytes'] / 2**30:.2f} GiB, recompute "
              f"+{conf['all-blocks']['recompute_fraction']:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
