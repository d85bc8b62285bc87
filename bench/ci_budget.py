"""The last `python3 dev.py test` run's stages against their allowances (not a timed test).

Every test run writes test-artifacts/test-times.json; this prints each job's stages with the
seconds they took beside their allowance (bookbuild/timing.py, ALLOWANCES), the wall time
beside its own, and the minutes kept free for the work filed next. A change that adds
minutes shows up here in review. Exit status 1 when something is over.

Wall seconds grow with the load on the machine (a stage takes two or three times as long
beside others); the CPU seconds of the stages' commands, printed beside them when the run
measured them, hardly do. Their sum over CI's 2 cores is the least wall time a run can take.

    python3 bench/ci_budget.py [path/to/test-times.json]
    python3 bench/ci_budget.py --write-durations   # remake tests/durations.json
    python3 bench/ci_budget.py --expected          # the last run's EXPECTED (timing.py)

The second form remakes the seconds of unit tests per test file that balance the unit-test
shards, from the reference job's reports of the last run
(test-artifacts/test-logs/reference--unit-tests-*.xml); a file without unit tests gets 0.
The third prints the last run's wall seconds per stage as bookbuild/timing.py's EXPECTED,
which orders the stages: paste it there after a run on a machine like CI's.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bookbuild.checks import DURATIONS, test_files  # noqa: E402
from bookbuild.timing import (  # noqa: E402
    RESERVED,
    SETTLED,
    WALL_ALLOWANCE,
    budget_report,
    cpu_floor,
    expected_seconds,
    file_durations,
)


def main(argv: list[str]) -> int:
    if argv[1:] == ["--write-durations"]:
        reports = sorted((ROOT / "test-artifacts" / "test-logs").glob("reference--unit-*.xml"))
        seconds = {file: 0.0 for file in test_files()} | file_durations(reports)  # 0: no unit test
        DURATIONS.write_text(json.dumps(dict(sorted(seconds.items())), indent=1) + "\n")
        print(f"wrote {DURATIONS.relative_to(ROOT)} from {len(reports)} reports")
        return 0
    expected = "--expected" in argv[1:]
    argv = [arg for arg in argv if arg != "--expected"]
    path = Path(argv[1]) if len(argv) > 1 else ROOT / "test-artifacts" / "test-times.json"
    if not path.is_file():
        print(f"no stage times at {path}: run `python3 dev.py test` first")
        return 2
    times = json.loads(path.read_text())
    if expected:
        print(expected_seconds(times))
        return 0
    text, within = budget_report(times)
    print(text)
    if floor := cpu_floor(times):
        print(f"\n{floor}")
    settled = ", ".join(f"{work} {minutes} min" for work, minutes in SETTLED.items())
    print(f"\nthe wall-time allowance ({WALL_ALLOWANCE / 60:.1f} min) includes {settled}")
    print("and keeps room for:")
    for work, minutes in RESERVED.items():
        print(f"  {minutes:4} min  {work}")
    print(f"  {sum(RESERVED.values()) + WALL_ALLOWANCE / 60:4} min  in all (the promise: 35)")
    print("\nwithin every allowance" if within else "\nOVER: see the rows marked OVER")
    return 0 if within else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
