"""A job that prints the way training jobs do: colours, a \r progress bar, a line without its end,
bytes that are not UTF-8, both streams; exits with the status given (default 0)."""
import os
import sys

out = sys.stdout.buffer
tty = os.isatty(1)
out.write(b"\x1b[32mcolour\x1b[0m\n" if tty else b"plain\n")
out.write(b"tty\n" if tty else b"pipe\n")
for i in range(1, 6):
    out.write(b"\rtrain: %d/5 [" % i + b"#" * i + b"]")
    out.flush()
out.write(b"\n")
out.write(bytes(range(256)).replace(b"\n", b"") + b"\n")
for step in range(200):
    out.write(b"step %d loss 0.%04d\n" % (step, 9999 - step))
sys.stderr.write("a warning on stderr\n")
out.write(b"no newline at the end")
out.flush()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
