#!/usr/bin/env python3
"""Thin wrapper: the live benchmark is `lwt6 bench live` (docs/live.md, *Benchmark*).

    sudo scripts/bench-live.py [--lwt6 target/release/lwt6] [ARGS of lwt6 bench live ...]
"""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    args = sys.argv[1:]
    lwt6 = os.path.join(ROOT, "target", "release", "lwt6")
    if args[:1] == ["--lwt6"] and len(args) > 1:
        lwt6, args = args[1], args[2:]
    os.execv(lwt6, [lwt6, "bench", "live"] + args)


if __name__ == "__main__":
    main()
