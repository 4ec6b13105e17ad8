"""Start-up time of commands that must not import pyarrow/pyspark/SQLAlchemy.

Prints the median wall time of `acidctl --help`, `acidctl dump --help` and `acidctl --version`
(fresh interpreter each run) and, as the baseline measured in the same run, a bare
`python -c pass`; the ratio shows what acidctl adds. Target: `acidctl --help` <= 0.3 s.
Also lists heavy modules that `acidctl --help` imported (there should be none).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 9


def timed(args: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    base = timed([sys.executable, "-c", "pass"])
    print(f"baseline python -c pass          {base * 1000:7.1f} ms")
    for args in (["--help"], ["dump", "--help"], ["--version"]):
        t = timed([sys.executable, "-m", "acidctl", *args])
        verdict = "ok" if t <= 0.3 else "SLOW (target 0.3 s)"
        print(f"acidctl {' '.join(args):24s} {t * 1000:7.1f} ms  ({t / base:4.1f}x baseline)  {verdict}")
    probe = (
        "import sys; sys.argv=['acidctl','--help']\n"
        "from acidctl.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy=[m for m in ('pyarrow','pyspark','sqlalchemy','pyorc','numpy','fsspec') if m in sys.modules]\n"
        "print('heavy modules imported by --help:', heavy or 'none', file=sys.stderr)"
    )
    subprocess.run([sys.executable, "-c", probe], stdout=subprocess.DEVNULL, check=False)


if __name__ == "__main__":
    main()
