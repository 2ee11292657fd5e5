"""What every Python group of bench/run.sh shares: its table rows, their verdicts
and its log lines. Each script prints ROWS at its end; run.sh gathers them."""

import sys
import time

ROWS = []


def row(what, ours, reference, target, verdict):
    """A row of run.sh's table: | work | blosc2fs | reference | squashfuse | target | result |."""
    ROWS.append(f"| {what} | {ours} | {reference} | — | {target} | {verdict} |")


def verdict(ok):
    return "PASS" if ok else "**FAIL**"


def make_log(prefix):
    """A function printing "[PREFIX HH:MM:SS] text" to stderr (stdout carries the rows)."""
    def log(text):
        print(f"[{prefix} {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)
    return log


def print_rows():
    for r in ROWS:
        print(r)
