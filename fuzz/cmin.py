"""Minimizes a fuzz target's queue into corpus/TARGET: the fewest inputs (greedy set cover,
smaller first on ties) that keep every coverage tuple afl-showmap reports for the queue.
(`cargo afl cmin` found no tuples for the targets whose harness runs in microseconds.)

Usage: python3 cmin.py TARGET QUEUE_DIR   (from fuzz/, after `cargo afl build --release`)
"""
import os
import shutil
import subprocess
import sys

target, queue = sys.argv[1], sys.argv[2]
out = os.path.join("corpus", target)
binary = os.path.join("target", "release", target)
files = sorted(
    (os.path.join(queue, f) for f in os.listdir(queue) if f.startswith("id:")),
    key=os.path.getsize,
)
tuples = {}
for f in files:
    with open(f, "rb") as inp:
        subprocess.run(
            ["cargo", "afl", "showmap", "-q", "-o", ".showmap", "-t", "5000", "-m", "2048",
             "--", binary],
            stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    with open(".showmap") as m:
        tuples[f] = {line.strip() for line in m if line.strip()}
os.remove(".showmap")
universe = set().union(*tuples.values()) if tuples else set()
covered, keep = set(), []
while covered != universe:
    best = max(files, key=lambda f: (len(tuples[f] - covered), -os.path.getsize(f)))
    keep.append(best)
    covered |= tuples[best]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
for i, f in enumerate(sorted(keep)):
    shutil.copy(f, os.path.join(out, f"{i:04d}"))
print(f"{target}: {len(files)} inputs -> {len(keep)}, {len(universe)} tuples")
