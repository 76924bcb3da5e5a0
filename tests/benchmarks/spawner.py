"""A small process that starts the timed commands for the benchmark harness, as a shell would.

Why: on Linux a process's ru_maxrss keeps the high-water RSS of the process it was forked from until
its `exec` (the kernel carries the old address space's peak over), so a command started by a big
harness (pytest, or a harness that loaded DuckDB) reports at least the harness's own peak. Started by
this process instead (standard library only, run with `python -I -S`: about 10 MB), a command's
ru_maxrss is its own, as under a shell.

Protocol, one JSON document a line: the harness writes {"argv", "env", "out", "err"}; this process
starts the command (stdout to `out`, stderr to `err`), answers {"pid"} (or {"error"}), waits for it
and answers {"status", "seconds", "utime", "stime", "maxrss"} (maxrss in KiB). It exits at the end of
its input.
"""

import json
import os
import sys
import time


def serve() -> None:
    """Answer requests from stdin until it closes."""
    for line in sys.stdin:
        request = json.loads(line)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        actions = [
            (os.POSIX_SPAWN_OPEN, 1, request["out"], flags, 0o600),
            (os.POSIX_SPAWN_OPEN, 2, request["err"], flags, 0o600),
        ]
        start = time.perf_counter()
        try:
            pid = os.posix_spawn(request["argv"][0], request["argv"], request["env"], file_actions=actions)
        except OSError as exc:
            print(json.dumps({"error": f"{request['argv'][0]}: {exc}"}), flush=True)
            continue
        print(json.dumps({"pid": pid}), flush=True)
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
        answer = {
            "status": status,
            "seconds": seconds,
            "utime": usage.ru_utime,
            "stime": usage.ru_stime,
            "maxrss": usage.ru_maxrss,
        }
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
