"""SIGKILL of the daemon in the middle of edits. Each round copies a frame
(mostly contiguous, every third round sparse), mounts it in the foreground,
starts an edit loop (a vlmetalayer rewritten, a chunk overwritten in place,
data appended to), kills the daemon at a random moment, detaches the mount,
and reads the frame back with the project's own reader (--info and a fresh
mount reading every chunk and layer). The frame must open and hold, for each
kind of edit, the value of the last edit whose close() succeeded or of the
one in flight, and nothing else changed."""

import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, stop_process, wait_or_kill  # noqa: E402
from writes import frame_state  # noqa: E402

ROUNDS = 60
CONTIGUOUS, SPARSE = "metas-vlmetas.b2frame", "sframe-zstd-f4.b2frame"
APPEND = 7000  # bytes appended to data per edit

# Runs in its own process: edits until the mount goes away, logging each edit
# once its close() has succeeded (the commit is then durable).
EDIT_LOOP = r"""
import os, sys
mnt, log_path, append = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = open(log_path, "a", buffering=1)
def whole(path, data, flags):
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
i = 0
try:
    while True:
        whole(os.path.join(mnt, "vlmeta", "k"), b"value-%d\n" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        log.write("v %d\n" % i)
        fd = os.open(os.path.join(mnt, "chunks", "00000001"), os.O_WRONLY)
        try:
            os.pwrite(fd, b"patch-%06d" % i, 100)
        finally:
            os.close(fd)
        log.write("c %d\n" % i)
        whole(os.path.join(mnt, "data"), bytes([i % 251]) * append, os.O_WRONLY | os.O_APPEND)
        log.write("d %d\n" % i)
        i += 1
except OSError:
    pass
"""


def last_done(log_path):
    done = {"v": -1, "c": -1, "d": -1}
    with open(log_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[0] in done:
                done[parts[0]] = max(done[parts[0]], int(parts[1]))
    return done


def one_round(h, rng, number, name, base):
    frame = h.copy_fixture(name)
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, f"edits{number}.log")
    daemon_log = open(os.path.join(h.workdir, f"daemon{number}.log"), "w")
    daemon = h.start_foreground([frame], mnt, stderr=daemon_log, what=f"round {number}: the mount")
    editor = None
    try:
        open(log_path, "w").close()
        editor = subprocess.Popen([sys.executable, "-c", EDIT_LOOP, mnt, log_path, str(APPEND)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.02, 0.8))
        daemon.send_signal(signal.SIGKILL)
        h.wait_killed(daemon, mnt, f"round {number}")
    finally:
        stop_process(daemon)
        h.detach(mnt)
        if editor is not None:
            wait_or_kill(editor)
        daemon_log.close()

    done = last_done(log_path)
    state = frame_state(h, frame)
    what = f"round {number} ({name}, edits done {done})"
    # vlmeta/k: the last value stored, or the one in flight.
    allowed = {b"value-%d\n" % i for i in (done["v"], done["v"] + 1) if i >= 0}
    if done["v"] < 0:
        allowed.add(None)
    check(state["vlmeta"].get("k") in allowed, f"{what}: vlmeta/k is {state['vlmeta'].get('k')!r}")
    others = {k: v for k, v in state["vlmeta"].items() if k != "k"}
    check_equal(others, base["vlmeta"], f"{what}: the other vlmetalayers")
    check_equal(state["meta"], base["meta"], f"{what}: metalayers")
    # chunk 1: patched in place with the last patch or the one in flight.
    chunk1 = state["chunks"][1]
    candidates = []
    for i in (done["c"], done["c"] + 1):
        if i < 0:
            candidates.append(base["chunks"][1])
        else:
            c = bytearray(base["chunks"][1])
            c[100:112] = b"patch-%06d" % i
            candidates.append(bytes(c))
    check(chunk1 in candidates, f"{what}: chunk 1 holds neither the last patch nor the next")
    # data: the appends done, maybe one more; the rest as it was.
    n = (len(state["data"]) - len(base["data"])) // APPEND
    check_equal(len(state["data"]), len(base["data"]) + n * APPEND, f"{what}: data size is base + appends")
    check(n in (done["d"] + 1, done["d"] + 2), f"{what}: {n} appends in the frame")
    start1, end1 = len(base["chunks"][0]), len(base["chunks"][0]) + len(base["chunks"][1])
    check(state["data"][:start1] == base["data"][:start1], f"{what}: data before chunk 1")
    check(state["data"][end1:len(base["data"])] == base["data"][end1:], f"{what}: data after chunk 1")
    appended = b"".join(bytes([i % 251]) * APPEND for i in range(n))
    check(state["data"][len(base["data"]):] == appended, f"{what}: the appended bytes")
    return done


def crash_rounds(h):
    rng = random.Random(int(os.environ.get("BLOSC2FS_CRASH_SEED", "20261121")))
    bases = {name: frame_state(h, h.frame(name)) for name in (CONTIGUOUS, SPARSE)}
    edits = 0
    for number in range(ROUNDS):
        name = SPARSE if number % 3 == 2 else CONTIGUOUS
        done = one_round(h, rng, number, name, bases[name])
        edits += sum(v + 1 for v in done.values())
    print(f"  {ROUNDS} rounds, {edits} edits committed before the kills", flush=True)
    check(edits > ROUNDS, "the edit loops hardly ran: the test does not test much")


def main():
    h = Harness("SIGKILL during edits", watchdog_seconds=600)
    h.require_fuse()
    h.test(f"{ROUNDS} rounds of SIGKILL during edits: old or new state, never broken", crash_rounds, h)
    h.finish()


if __name__ == "__main__":
    main()
