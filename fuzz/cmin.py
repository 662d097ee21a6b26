"""Minimizes a fuzz target's queue into corpus/TARGET: few inputs that keep every coverage
tuple afl-showmap reports for the queue (each tuple's smallest input, then redundant ones
dropped; a greedy set cover was too slow for queues of thousands).
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
# afl-cmin's rule: every tuple kept by the smallest input that has it (files are sorted by
# size), then inputs whose tuples the others already cover dropped, largest first.
first = {}
for f in files:
    for t in tuples[f]:
        first.setdefault(t, f)
keep = sorted(set(first.values()), key=os.path.getsize)
count = {}
for f in keep:
    for t in tuples[f]:
        count[t] = count.get(t, 0) + 1
for f in reversed(list(keep)):
    if all(count[t] > 1 for t in tuples[f]):
        keep.remove(f)
        for t in tuples[f]:
            count[t] -= 1
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
for i, f in enumerate(sorted(keep)):
    shutil.copy(f, os.path.join(out, f"{i:04d}"))
print(f"{target}: {len(files)} inputs -> {len(keep)}, {len(universe)} tuples")
