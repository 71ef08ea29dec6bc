"""The benchmark scripts run (at small sizes) and check their own results: an example that stopped working
fails here."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_script(path, *args, cwd):
    done = subprocess.run([sys.executable, os.path.join(ROOT, path), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_bench_matmul_example(tmp_path):
    plot = tmp_path / "matmul.png"
    out = run_script("python/examples/bench_matmul.py", "--sizes", "32,64", "--out", str(plot), cwd=tmp_path)
    assert "GFLOP/s" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.skip("matplotlib is not installed: the plot is not made")
    assert plot.stat().st_size > 0


def test_targets_benchmark(tmp_path):
    out = run_script("python/bench/targets.py", "--sizes", "64", "--dtypes", "float32", "--calls", "500",
                     "--stacks", "8x16", "--no-gpu", "--csv", str(tmp_path / "t.csv"), cwd=tmp_path)
    assert "us over C++" in out and "x numpy" in out and "matmul stack 8 x 16^3" in out
    assert (tmp_path / "t.csv").read_text().count("\n") == 6
