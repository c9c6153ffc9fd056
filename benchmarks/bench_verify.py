# SPDX-License-Identifier: BSD-3-Clause
"""What `sg.verify` costs on top of the GD run it wraps, measured side by side in one process.

`PYTHONPATH=. python benchmarks/bench_verify.py` prints, per case, the median wall time of
`sg.train` with the records verify asks for, of `sg.verify`, and their ratio.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import svmgeo as sg


def median_time(fn: Callable[[], Any], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
    relu = sg.random_data(2, 3, 4, seed=25)
    relu_head = {"V": np.random.default_rng(25).standard_normal((4, 3)), "v": [1.0, -1.0, 1.0]}
    rec = ("W_norm", "max_prob", "selected", "W")
    cases = [
        ("(6,8,10) W, 2000 steps", data, {}, rec),
        ("(6,8,10) KQ, 4000 steps", data, {"param": "KQ", "n_steps": 4000, "step_size": 0.02,
                                            "init": ("random", 0.01), "seed": 0}, rec),
        ("(2,3,4) relu, 3000 steps", relu, {"head": "relu", "n_steps": 3000, **relu_head},
         (*rec, "probs")),
    ]  # fmt: skip
    print(f"{'case':<28}{'train s':>10}{'verify s':>10}{'ratio':>8}")
    for name, d, kw, record in cases:
        kw = {"n_steps": 2000, **kw}
        sg.verify(d, **kw)  # warm-up: numba compilation
        t_train = median_time(lambda d=d, kw=kw, record=record: sg.train(d, record=record, **kw))
        t_verify = median_time(lambda d=d, kw=kw: sg.verify(d, **kw))
        print(f"{name:<28}{t_train:>10.3f}{t_verify:>10.3f}{t_verify / t_train:>8.1f}")


if __name__ == "__main__":
    main()
