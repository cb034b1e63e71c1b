"""Stands in for a failed 4-rank torchrun job: prints its log (rank 2 fails first) and exits 1."""
import pathlib
import sys

sys.stdout.write(pathlib.Path(__file__).with_name("crash.log").read_text(encoding="utf-8"))
sys.exit(1)
