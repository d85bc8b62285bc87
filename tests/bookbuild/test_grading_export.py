"""Grading by export, through the real sandbox: what forges a grade in one process cannot here.

A tiny two-exercise chapter whose answers are a dataset and a dataset function, so it is
graded by export (bookbuild/grading/_by_export.py): the student's process runs the answers
and exports their graphs, and a judge that runs none of the submission checks them. Each
forgery family that took full marks when the checks shared the student's process is tried:
the answer key's results in the namespace, the answer key read from the lab's files or from
the runner's memory, asking for the token and writing sealed verdicts, a finaliser that
writes verdicts later, and an export forged by hand with a graph that reads a file. A probe
run as the sandbox's user lists what it can read. The `grading` marker keeps these to the
reference job.
"""

import concurrent.futures
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bookbuild import ROOT
from bookbuild.grading import _executed, grade
from bookbuild.grading._exports import exported_exercises, refused_ops
from bookbuild.grading.program import load_program
from bookbuild.grading.sandbox import run_sandboxed

pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "grading_lab", Path(__file__).with_name("grading_lab.py")
)
lab_kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_kit)

SETUP = (
    "import mirrorkit as mk\n\nmk.make_reproducible(SEED)\n"
    "devices = mk.simulate_replicas(REPLICAS)\n\nimport tensorflow as tf\n\n"
    "strategy = mk.make_strategy()\n"
    "examples = tf.data.Dataset.range(40).map(lambda i: (i, tf.cast(i, tf.float32)))"
)
KEY = {
    1: "train = examples.take(24).batch(4 * strategy.num_replicas_in_sync, drop_remainder=True)",
    2: "def make_train(context):\n"
    "    mine = examples.take(24).shard(context.num_input_pipelines, context.input_pipeline_id)\n"
    "    return mine.batch(context.get_per_replica_batch_size(8), drop_remainder=True)",
}
BLANK = {1: "train = ...  # your answer", 2: "make_train = ...  # your answer"}
CHECK = {
    1: "mk.check_input_pipeline(train, strategy, per_replica_batch=4, first_examples=24)",
    2: "mk.check_input_pipeline(make_train, strategy, global_batch=8, first_examples=24)",
}
VERDICTS = (
    "import json, os\n"
    "def forge(fd):\n"
    "    for k in (1, 2):\n"
    "        line = {'kind': 'verdict', 'run': 0, 'exercise': k, 'case': f'ex{k}',\n"
    "                'passed': True, 'feedback': '', 'seconds': 0}\n"
    "        try:\n"
    "            os.write(fd, (json.dumps({'kind': 'token?'}) + '\\n').encode())\n"
    "            os.write(fd, (json.dumps(line) + '\\n').encode())\n"
    "        except OSError:\n"
    "            pass\n"
)
FORGERIES = {
    "the key's results in the namespace": (
        "train = get_ipython().user_ns['train']",
        "import __main__, sys\nmake_train = vars(sys.modules['__main__']).get('make_train')",
    ),
    "the key read from the lab's file and from the runner's memory": (
        "import json\nprogram = json.load(open(PROGRAM_PATH))\n"
        "step = [s for s in program['steps'] if s.get('exercise') == 1][0]\n"
        "exec(step['solution'])",
        "import inspect\nframe, solution = inspect.currentframe(), None\n"
        "while frame is not None and solution is None:\n"
        "    job = getattr(frame.f_locals.get('self'), 'job', None)\n"
        "    if job:\n"
        "        steps = [s for s in job['program']['steps'] if s.get('exercise') == 2]\n"
        "        solution = steps[0].get('solution')\n"
        "    frame = frame.f_back\n"
        "exec(solution)",
    ),
    "sealed verdicts asked for with the token, and a finaliser writing more": (
        VERDICTS + "for fd in range(3, 21):\n    forge(fd)\ntrain = ...",
        VERDICTS + "class Later:\n    def __del__(self):\n        for fd in range(3, 21):\n"
        "            forge(fd)\n\nkept = Later()\nmake_train = ...",
    ),
    "the book's own solutions imported, and a thread that outlives its exercise": (
        "import re\nfrom pathlib import Path\nimport bookbuild\n"
        "book = Path(bookbuild.__file__).parents[1] / 'book' / '02_input_distribution.ipynb'\n"
        "text = book.read_text()\n"
        "exec(re.search(r'# Exercise 1\\\\n(.*?)\\\\n', text).group(1))",
        VERDICTS + "import threading, time\n"
        "def later():\n"
        "    for _ in range(50):\n"
        "        for fd in range(3, 21):\n"
        "            forge(fd)\n"
        "        time.sleep(0.1)\n\n"
        "threading.Thread(target=later, daemon=True).start()\nmake_train = ...",
    ),
    "an export line forged with a graph that reads a file": (
        "import base64, json, os\n"
        "from tensorflow.core.framework import graph_pb2\n"
        "graph = graph_pb2.GraphDef()\n"
        "graph.node.add(name='f', op='ReadFile')\n"
        "text = base64.b64encode(graph.SerializeToString()).decode()\n"
        "line = {'kind': 'export', 'run': 0, 'exercise': 1, 'case': 'ex1',\n"
        "        'names': {'train': {'kind': 'dataset', 'graph': text, 'spec': ''}}}\n"
        "for fd in range(3, 21):\n"
        "    try:\n"
        "        os.write(fd, (json.dumps(line) + '\\n').encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "train = ...",
        BLANK[2],
    ),
}


DATASETS = SimpleNamespace(setup=SETUP, key=KEY, blank=BLANK, check=CHECK)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = lab_kit.make_lab(tmp_path_factory.mktemp("export-lab"), tiny=DATASETS)
    Path(lab.program).chmod(0o644)  # world-readable, as a teacher's files often are
    return lab


@pytest.fixture(scope="module")
def graded(lab, tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    answers = {"key": (KEY[1], KEY[2])}
    answers |= {
        name: (one.replace("PROGRAM_PATH", repr(str(lab.program))), two)
        for name, (one, two) in FORGERIES.items()
    }
    paths = {
        name: lab_kit.submission(folder, f"s{index}", one, two, tiny=DATASETS)
        for index, (name, (one, two)) in enumerate(answers.items())
    }
    choices = {"replicas": [2], "seed": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            name: pool.submit(grade, lab, path, timeout=300.0, choices=choices)
            for name, path in paths.items()
        }
        grades = {name: future.result() for name, future in futures.items()}
    for name, result in grades.items():  # the rows, for the log
        print(f"{name}: {result.status} {result.total} {result.scores['ex1'].feedback[:160]!r}")
    return grades


def test_the_tiny_chapter_is_graded_by_export(lab):
    assert exported_exercises(load_program(lab.program)) == {1: "dataset", 2: "dataset"}


def test_the_key_scores_full_marks(graded):
    assert (graded["key"].status, graded["key"].total) == ("graded", (2.0, 2.0)), graded["key"]
    assert f"exercises 1, 2 {_executed.JUDGED}" in graded["key"].isolation


@pytest.mark.parametrize("name", list(FORGERIES))
def test_each_forgery_family_scores_zero(graded, name):
    result = graded[name]
    assert result.total == (0.0, 2.0), result
    assert result.status in ("graded", "tampered"), result


def test_a_verdict_line_from_the_students_process_marks_the_row(graded):
    result = graded["sealed verdicts asked for with the token, and a finaliser writing more"]
    assert result.status == "tampered" and "verdicts come only from" in result.detail, result


def test_a_forged_graph_is_refused_by_name(graded):
    feedback = graded["an export line forged with a graph that reads a file"].scores["ex1"].feedback
    assert "ReadFile" in feedback and "does not run" in feedback, feedback


ENDLESS = (
    "def forever(i, x):\n"
    "    return i, tf.while_loop(lambda v: v >= 0.0, lambda v: v + 1.0, [x])[0]\n\n"
    "train = examples.map(forever).take(24).batch(4 * strategy.num_replicas_in_sync)"
)


def test_a_graph_that_never_ends_costs_only_its_exercise(lab, tmp_path):
    """The executor runs it over its limit: that exercise is charged, the executor starts
    again for the other, which is graded."""
    path = lab_kit.submission(tmp_path, "endless", ENDLESS, KEY[2], tiny=DATASETS)
    choices = {"replicas": [2], "seed": 0}
    result = grade(lab, path, timeout=600.0, choices=choices, exercise_limit=30.0)
    assert (result.status, result.total) == ("graded", (1.0, 2.0)), result
    feedback = result.scores["ex1"].feedback
    assert feedback.startswith("the executor, running your answer's graph: it took longer"), result


def test_every_refused_operation_is_named():
    from tensorflow.core.framework import graph_pb2

    refused = ["PyFunc", "EagerPyFunc", "ReadFile", "WriteFile", "SaveV2", "RestoreV2"]
    graph = graph_pb2.GraphDef()
    graph.node.add(name="a", op="TensorSliceDataset")
    for index, op in enumerate(refused):
        graph.node.add(name=f"n{index}", op=op)
    graph.library.function.add().node_def.add(name="m", op="MatchingFiles")
    assert refused_ops(graph.SerializeToString()) == sorted([*refused, "MatchingFiles"])


PROBE = """
import os
outside = {paths!r}
readable = []
for path in outside:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, 'rb').read(1)
        readable.append(path)
    except OSError:
        pass
print('READABLE', readable)
train = ...
"""


def test_the_students_process_reads_nothing_outside_its_allow_list(lab, tmp_path):
    """A probe run as the sandbox's user, through the real sandbox, in the student's mode."""
    other = tmp_path / "other-student.ipynb"
    other.write_text("{}")
    outside = [
        str(lab.program),
        str(ROOT / "build"),
        str(ROOT / "tests"),
        str(ROOT / "book"),
        str(ROOT / "dev.py"),
        str(ROOT / ".git"),
        str(other),
    ]
    program = load_program(lab.program)
    from bookbuild.grading._by_export import without_key

    cases = {"1": [["ex1", PROBE.format(paths=outside)]]}
    job = {"program": without_key(program), "run": 0, "replicas": 2, "seed": 0}
    job |= {"cases": cases, "mode": "export"}
    outcome = run_sandboxed(job, 240.0, hide=(Path(lab.program).parent, tmp_path))
    said = [line for line in outcome.log.splitlines() if line.startswith("READABLE")]
    assert said == ["READABLE []"], outcome.log[-2000:]
    exported = [line for line in outcome.lines if line.get("kind") == "export"]
    assert json.dumps(exported[0]["names"]["train"]) == '{"kind": "ellipsis"}', exported
