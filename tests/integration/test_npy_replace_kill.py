"""SIGKILL of the daemon while a large array.npy replacement is copied in and
committed. A 256 MB float32 array (a size that keeps the test near a minute on
this 2-core machine; the issue asks for 1 GB: BLOSC2FS_NPY_KILL_MIB=1024) is replaced by `cp` of a
same-shape .npy; the daemon is killed at moments spread over the copy and its
commit at close. python-blosc2 must then open the frame and read exactly the
old array or exactly the new one, never a mix. The daemon's peak RSS of a round
that is not killed grows by at most the cache budget plus the batch bound
(-o cache_size=64M: 64 + 32 MiB): the new frame is written beside the old one a
row of chunks at a time, then renamed over it (docs/writing.md)."""

import os
import signal
import subprocess
import sys
import time

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import FUSERMOUNT, PATIENCE, Harness, TestFailure, check, process_status_kib, stop_process  # noqa: E402

# float32: 256 MiB in CI; BLOSC2FS_NPY_KILL_MIB=1024 runs the 1 GB outside it.
SIZE_MIB = int(os.environ.get("BLOSC2FS_NPY_KILL_MIB", "256"))
SHAPE = (SIZE_MIB, 512, 512)
CHUNKS, BLOCKS = (16, 512, 512), (2, 128, 512)
FRACTIONS = (0.5, 0.9, 0.97, 1.05)  # of the time an uninterrupted cp takes


def content(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(SHAPE, dtype=np.float32)
    return (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)  # compresses about 2x


def start(h, frame):
    mnt = h.new_dir()
    log = open(os.path.join(h.workdir, f"daemon-{os.path.basename(mnt)}.log"), "w")
    return mnt, h.start_foreground(["-o", "cache_size=64M", frame], mnt, stderr=log), log


def stop(h, mnt, daemon, log, kill):
    try:
        if kill and daemon.poll() is None:
            daemon.send_signal(signal.SIGKILL)
        if kill:
            h.wait_killed(daemon, mnt, "the killed mount")
        else:
            subprocess.run([FUSERMOUNT, "-u", mnt], capture_output=True, timeout=PATIENCE)
            daemon.wait(timeout=PATIENCE)
    finally:
        stop_process(daemon)
        h.detach(mnt)
        log.close()


def peak_rss_mb(pid):
    return process_status_kib(pid, "VmHWM") / 1024


def kill_during_replacement(h):
    old, new = content(1), content(2)
    base = os.path.join(h.workdir, "base.b2nd")
    blosc2.asarray(old, urlpath=base, mode="w", chunks=CHUNKS, blocks=BLOCKS)
    npy = os.path.join(h.workdir, "new.npy")
    np.save(npy, new)
    frame = os.path.join(h.workdir, "target.b2nd")
    # One uninterrupted round: how long cp takes, and the daemon's peak RSS.
    subprocess.run(["cp", base, frame], check=True)
    mnt, daemon, log = start(h, frame)
    rss_before = peak_rss_mb(daemon.pid)
    t = time.monotonic()
    subprocess.run(["cp", npy, os.path.join(mnt, "array.npy")], check=True, timeout=600)
    took = time.monotonic() - t
    rss = peak_rss_mb(daemon.pid)
    stop(h, mnt, daemon, log, kill=False)
    check(np.array_equal(blosc2.open(frame, mode="r")[:], new), "the uninterrupted replacement reads back")
    print(f"  uninterrupted: cp of {os.path.getsize(npy) >> 20} MiB took {took:.1f} s, daemon peak RSS "
          f"{rss_before:.0f} MB before, {rss:.0f} MB after", flush=True)
    check(rss - rss_before <= 64 + 32,
          f"the daemon's peak RSS grew by {rss - rss_before:.0f} MB, more than the cache budget plus the batch bound")
    outcomes = []
    for fraction in FRACTIONS:
        subprocess.run(["cp", base, frame], check=True)
        mnt, daemon, log = start(h, frame)
        copier = subprocess.Popen(["cp", npy, os.path.join(mnt, "array.npy")], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            time.sleep(took * fraction)
            stop(h, mnt, daemon, log, kill=True)
        finally:
            try:
                copier.wait(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                copier.kill()
                copier.wait(timeout=30)
        try:
            got = blosc2.open(frame, mode="r")[:]
        except Exception as e:  # noqa: BLE001
            raise TestFailure(f"killed at {fraction:.2f} of the copy: python-blosc2 cannot open the frame: {e}")
        if np.array_equal(got, old):
            outcomes.append("old")
        elif np.array_equal(got, new):
            outcomes.append("new")
        else:
            raise TestFailure(f"killed at {fraction:.2f} of the copy: the frame holds a mix of old and new")
    print(f"  outcomes at {FRACTIONS}: {outcomes}", flush=True)


def main():
    h = Harness("SIGKILL during an array.npy replacement", watchdog_seconds=600)
    h.require_fuse()
    h.test(f"kill -9 during a {SIZE_MIB} MiB array.npy replacement: the old or the new array, never a mix",
           kill_during_replacement, h)
    h.finish()


if __name__ == "__main__":
    main()
