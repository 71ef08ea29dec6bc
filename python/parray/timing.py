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


def in_blocks(runs, repeats=5, pause=0.5, statistic=min):
    """{name: seconds(run)} for CPU libraries with thread pools of their own, timed one library at a time
    with a pause between: a BLAS's workers spin for a while after each call (OpenBLAS's do), and a call of
    another library in that time competes with them for every core (parray.matmul at 1024^3 right after
    numpy.matmul on a 16-core Xeon: 24 ms against 2 ms alone)."""
    times = {}
    for name, run in runs.items():
        time.sleep(pause)
        times[name] = seconds(run, repeats, statistic=statistic)
    return times
