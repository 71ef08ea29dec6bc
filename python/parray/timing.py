"""The timing helpers of parray's Python benchmarks (python/bench, python/examples).

Each runs the work once as a warm-up first; `sync` waits for work a call leaves queued (a GPU's:
torch.cuda.synchronize), inside the timed span.
"""
import time


def seconds(run, repeats=5, sync=lambda: None, statistic=min):
    """The statistic (min, statistics.median, ...) over `repeats` timings of one run()."""
    run()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistic(times)


def per_call_seconds(run, calls, sync=lambda: None, rounds=5):
    """Seconds per call of `calls` back-to-back calls of run(), the best of `rounds` rounds."""
    run()
    sync()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def interleaved(runs, repeats=5, sync=lambda: None, statistic=min):
    """{name: statistic of its timings} for a dict of runs timed in turn, one of each per round, so that a
    change in the machine's load (other processes) falls on all of them alike."""
    times = {name: [] for name in runs}
    for run in runs.values():
        run()
        sync()
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            sync()
            times[name].append(time.perf_counter() - start)
    return {name: statistic(t) for name, t in times.items()}
