"""The grading runner: the child process that runs a chapter and checks the answers.

Started by :mod:`bookbuild.grading.sandbox` as ``python -I <this file>`` with its job as
JSON on stdin. It imports mirrorkit, TensorFlow and Keras, records them
(:mod:`~bookbuild.grading._integrity`), arms the audit hook, then runs the chapter's
program (:mod:`~bookbuild.grading.program`) with the key's solutions. At each answer step
every case (the learner's answer, or the test's variants) runs as source in a shallow copy of
the chapter's namespace, in a fresh thread; its check runs with the names the blank asks for
taken from that copy and everything else, ``mk``, ``tf``, ``keras`` and ``np`` included, from
the runner. Verdicts go out on the results channel (:mod:`~bookbuild.grading._verdicts`).
That is the ``run`` mode, where student code shares this process (docs/design/grading.md
says what that leaves open). The job's ``mode`` picks another part: ``export`` (the
student's process: no solution, no check, each answer written as data), ``judge`` (the key
and the checks on answers rebuilt from those exports), ``execute`` (no solution: each
rebuilt answer asked by its check's ask, the records sealed for the grader's verdict) or
``inputs`` (no answer: a restore's checkpoints drawn from a secret).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import json
import linecache
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

if __name__ == "__main__":  # run by path with -I: the repository is not on sys.path yet
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

MISSING = "no answer cell found: keep exactly one answer cell before the exercise's check"
NOT_DEFINED = "your answer does not define {names}: the exercise asks for {asks}"


class Tampered(Exception):
    """The submission changed the grader's code: the whole submission scores 0."""


class CannotGrade(Exception):
    """A chapter cell raised, or the answer ended the program: an ERROR row."""


class AnswerEnded(CannotGrade):
    """An answer or its check ended the program (``sys.exit`` and the like): its exercise 0."""

    def __init__(self, message: str, exercise: int) -> None:
        super().__init__(message)
        self.exercise = exercise


def _import_trusted() -> dict:
    """Import mirrorkit (every submodule), TensorFlow, Keras, NumPy and IPython's helpers."""
    import importlib
    import pkgutil

    import mirrorkit

    for info in pkgutil.walk_packages(mirrorkit.__path__, "mirrorkit."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    import keras
    import numpy as np
    import tensorflow as tf
    from IPython.core.inputtransformer2 import TransformerManager
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from mirrorkit.checks.result import CheckResult, raised

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    return {
        "mk": mirrorkit,
        "tf": tf,
        "keras": keras,
        "np": np,
        "shell": shell,
        "transform": TransformerManager().transform_cell,
        "CheckResult": CheckResult,
        "raised": raised,
    }


def _in_thread(function, *args):
    """Run ``function(*args)`` in a fresh thread: (value, error)."""
    box: list = []

    def target() -> None:
        try:
            box.append((function(*args), None))
        except BaseException as error:  # the learner's error, reported as feedback
            box.append((None, error))

    thread = threading.Thread(target=target, name="student", daemon=True)
    thread.start()
    thread.join()
    if len(box) != 1:
        raise Tampered("the student thread's result was tampered with")
    return box[0]


class Runner:
    """One run of a chapter's program at one replica count."""

    def __init__(self, job: dict, trusted: dict, record: dict, refused: list, out) -> None:
        self.job, self.trusted, self.record, self.refused, self.out = (
            job,
            trusted,
            record,
            refused,
            out,
        )
        self.ns: dict = {"__name__": "__main__", "__builtins__": __builtins__}
        self.ns["get_ipython"] = lambda: trusted["shell"]
        trusted["shell"].user_ns = self.ns  # magics expand {names} from the chapter
        self.ns["display"] = _discard
        self.pending: dict[int, list] = {}
        self.answers = 0

    def code(self, source: str, name: str):
        return _compiled(self.trusted["transform"](source), name)

    def verify(self, what: str) -> None:
        """Raise Tampered if the trusted code changed or a refused call was tried."""
        if self.refused:
            raise Tampered(f"{what} tried a call the grader refuses: {self.refused[0]}")
        found = _integrity.changes(self.record)
        if found:
            raise Tampered(f"{what} changed the grader's code: {'; '.join(found)}")

    def run(self) -> None:
        """Run the program's steps up to the check of the last exercise this run grades."""
        steps = self.job["program"]["steps"]
        graded = [
            i
            for i, step in enumerate(steps)
            if step["kind"] == "check" and str(step["exercise"]) in self.job["cases"]
        ]
        for step in steps[: graded[-1] + 1] if graded else steps:
            getattr(self, f"step_{step['kind']}")(step)

    def step_parameters(self, step: dict) -> None:
        self.ns.update(REPLICAS=self.job["replicas"], SEED=self.job["seed"])

    def step_cell(self, step: dict) -> None:
        try:
            exec(self.code(step["source"], f"<chapter cell {step['cell']}>"), self.ns)
        except BaseException as error:
            raised = f"{type(error).__name__}: {error}"[:250]
            raise CannotGrade(
                f"chapter cell {step['cell']}, the chapter's own code (from the answer key, not "
                f"this submission), raised {raised} at seed {self.job['seed']} with "
                f"{self.job['replicas']} replicas: grade this submission again with another "
                "--seed, and report the seed to the book's authors"
            ) from None
        self.verify(f"chapter cell {step['cell']}")

    def step_answer(self, step: dict) -> None:
        mode = self.job.get("mode", "run")
        if mode == "inputs":  # the inputs process runs no answer, the key's or a learner's
            return
        before = dict(self.ns)
        if mode not in ("export", "execute"):  # neither holds the key's solution
            self.step_cell({"source": step["solution"], "cell": step["cell"]})
        cases = self.job["cases"].get(str(step["exercise"]))
        if cases is not None:  # the grader times each exercise
            self.out.write(kind="started", run=self.job["run"], exercise=step["exercise"])
        at_check = mode == "export" and self.kind(step) in _exports.AT_CHECK
        results = []
        for case, given in cases or []:
            if mode in ("judge", "execute"):  # ``given``: what the student's process exported
                wanted = [*step["asks"], *self.reads(step)]
                results.append((case, _imported(wanted, given, self.kind(step), self.ns)))
                continue
            answer = self.answer(step, before, given)
            if mode == "export" and not at_check:
                self.export(step, case, answer)
            results.append((case, answer))
        self.pending[step["exercise"]] = [] if mode == "export" and not at_check else results
        if mode == "export" and cases is not None and not at_check:
            self.out.write(kind="finished", run=self.job["run"], exercise=step["exercise"])

    def export(self, step: dict, case, answer, arguments=(), keywords=None) -> None:
        """Write what a case's answer exported (the student's process: data, not verdicts).

        ``arguments``, ``keywords``: the check's other arguments, for a kind exported at the
        check (``_exports.AT_CHECK``).
        """
        line = {"kind": "export", "run": self.job["run"], "exercise": step["exercise"]}
        if isinstance(answer, str):
            self.out.write(**line, case=case, failed=answer)
            return
        kind, strategy = self.kind(step), self.ns.get("strategy")
        reads = {n: self.ns[n] for n in self.reads(step) if n in self.ns}  # the chapter's
        if kind in _asked.KINDS:  # called here on drawn inputs; what it gave crosses as data
            inputs = self.job.get("inputs", {}).get(str(step["exercise"]))
            names = {
                n: _asked.ask(kind, v, arguments, keywords or {}, inputs, self.job["seed"])
                for n, v in answer.items()
            }
            self.verify(f"the export of exercise {step['exercise']}")
            self.out.write(**line, case=case, names=names)
            return
        try:
            names = {
                n: _exports.export_value(
                    v, self.job["replicas"], kind, strategy, arguments, keywords
                )
                for n, v in {**answer, **reads}.items()
            }
        except _exports.ExportError as error:
            self.out.write(**line, case=case, failed=f"{', '.join(answer)}: {error}")
            return
        self.verify(f"the export of exercise {step['exercise']}")
        self.out.write(**line, case=case, names=names)

    def kind(self, step: dict) -> str:
        """What the exercise's answer crosses as (``dataset``, ``state``...): the grader says."""
        return self.job.get("exports", {}).get(str(step["exercise"]), "dataset")

    def reads(self, step: dict) -> list[str]:
        """The chapter's names that cross with the answer (``_exports.chapter_reads``)."""
        return self.job.get("reads", {}).get(str(step["exercise"]), [])

    def answer(self, step: dict, before: dict, source):
        """Run one case's answer: its namespace, or the feedback that fails it."""
        if source is None:
            return MISSING
        try:
            self.answers += 1
            name = f"<your answer to exercise {step['exercise']} ({self.answers})>"
            code = _compiled(self.trusted["transform"](source), name)
        except SyntaxError as error:
            return f"line {error.lineno}: {type(error).__name__}: {error.msg}"
        ns = dict(before)
        _, error = _in_thread(exec, code, ns)
        self.verify(f"the answer to exercise {step['exercise']}")
        _ended(error, f"your answer to exercise {step['exercise']}", step["exercise"])
        if error is not None:
            return f"your answer raised {self.trusted['raised'](error)}"
        missing = [n for n in step["asks"] if n not in ns]
        if missing:
            return NOT_DEFINED.format(names=", ".join(missing), asks=", ".join(step["asks"]))
        return {n: ns[n] for n in step["asks"]}

    def step_check(self, step: dict) -> None:
        if self.job.get("mode") == "inputs":
            self.draw_inputs(step)
            return
        if self.job.get("mode") == "export":  # checks run in the judge, never beside the answer
            if self.kind(step) in _exports.AT_CHECK:
                self.export_at_check(step)
            return
        if self.job.get("mode") == "execute":
            self.execute_check(step)
            return
        tree = ast.parse(step["source"])
        setup = ast.Module(body=tree.body[:-1], type_ignores=[])
        exec(compile(setup, f"<check cell {step['cell']}>", "exec"), self.ns)
        final = compile(ast.Expression(tree.body[-1].value), "<check>", "eval")
        every = compile(setup, "<check>", "exec")
        for case, answer in self.pending.pop(step["exercise"], []):
            started = time.monotonic()
            if isinstance(answer, str):
                passed, feedback = False, answer
            else:
                passed, feedback = self.check(step, answer, every, final)
            self.out.write(
                kind="verdict",
                run=self.job["run"],
                exercise=step["exercise"],
                case=case,
                passed=passed,
                feedback=feedback,
                seconds=round(time.monotonic() - started, 2),
            )
        if str(step["exercise"]) in self.job["cases"] and self.job.get("mode") != "export":
            self.out.write(kind="finished", run=self.job["run"], exercise=step["exercise"])

    def export_at_check(self, step: dict) -> None:
        """Export each case's answer with the check's other arguments (the student's process).

        The check cell's lines before its call are the chapter's (a batch it names, say);
        they run here as any chapter cell does, also where this run grades none of the
        exercise's cases (a later check may read what they define, as in the judge). The
        call's arguments after the answer are read in the chapter's namespace, as the check
        would be given them.
        """
        positional, named = self.check_call(step)
        for case, answer in self.pending.pop(step["exercise"], []):
            values = ([], {})
            if not isinstance(answer, str):
                bindings = {**self.ns, **answer}
                read, error = _in_thread(
                    lambda b=bindings: (
                        [eval(a, b) for a in positional],  # noqa: S307
                        {k: eval(v, b) for k, v in named.items()},  # noqa: S307
                    )
                )
                _ended(error, f"the export of exercise {step['exercise']}", step["exercise"])
                if error is not None:
                    why = self.trusted["raised"](error)
                    answer = f"the check's arguments could not be read: {why}"
                values = read or values
            self.export(step, case, answer, *values)
        if str(step["exercise"]) in self.job["cases"]:
            self.out.write(kind="finished", run=self.job["run"], exercise=step["exercise"])

    def execute_check(self, step: dict) -> None:
        """Ask each case's rebuilt answer what the check asks (the executor: no verdict).

        The check cell's lines before its call run as the chapter's; the call's arguments
        are read with the rebuilt answer bound, and the check's ask half records what it
        found (:func:`._executed.ask`), sealed, for the grader's verdict.
        """
        positional, named = self.check_call(step)
        pending = self.pending.pop(step["exercise"], [])
        if pending:
            first = ast.unparse(ast.parse(step["source"]).body[-1].value.args[0])
            check = _exports.check_function(step["source"])
        for case, answer in pending:
            given, values = answer, ([], {})
            if not isinstance(answer, str):
                bindings = {**self.ns, **answer}
                bindings |= {n: self.trusted[n] for n in ("mk", "tf", "keras", "np")}
                try:
                    given = eval(first, bindings)  # noqa: S307 - the chapter's text
                    values = (
                        [eval(a, bindings) for a in positional],  # noqa: S307
                        {k: eval(v, bindings) for k, v in named.items()},  # noqa: S307
                    )
                except Exception as error:  # noqa: BLE001 - reported as the answer's feedback
                    given = (
                        f"the check's arguments could not be read: {self.trusted['raised'](error)}"
                    )
            asked = _executed.ask(check, given, *values)
            self.verify(f"the executor's ask of exercise {step['exercise']}")
            self.out.write(
                kind="asked", run=self.job["run"], exercise=step["exercise"], case=case, **asked
            )
        if str(step["exercise"]) in self.job["cases"]:
            self.out.write(kind="finished", run=self.job["run"], exercise=step["exercise"])

    def check_call(self, step: dict) -> tuple[list[str], dict[str, str]]:
        """Run a check cell's lines before its call (the chapter's); the call's arguments
        after the answer, as source: ``(positional, {keyword: source})``."""
        tree = ast.parse(step["source"])
        exec(self.code(ast.unparse(tree.body[:-1]), f"<check cell {step['cell']}>"), self.ns)
        self.verify(f"chapter cell {step['cell']}")
        call = tree.body[-1].value
        positional = [ast.unparse(a) for a in call.args[1:]]
        return positional, {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}

    def draw_inputs(self, step: dict) -> None:
        """Draw the inputs an asked exercise's answer gets (the inputs process: no answers).

        The check cell's lines before its call run as the chapter's; the call's arguments
        after the answer are read, and :func:`._asked.drawn_for` draws from the job's secret.
        """
        if self.kind(step) not in _exports.AT_CHECK:
            return  # the check cell's text is not in this process's program
        positional, named = self.check_call(step)
        if self.kind(step) not in _asked.KINDS or str(step["exercise"]) not in self.job["cases"]:
            return
        arguments = [eval(a, self.ns) for a in positional]  # noqa: S307 - the chapter's text
        keywords = {k: eval(v, self.ns) for k, v in named.items()}  # noqa: S307
        drawn = _asked.drawn_for(self.kind(step), arguments, keywords, self.job["secret"])
        self.out.write(kind="inputs", run=self.job["run"], exercise=step["exercise"], **drawn)

    def check(self, step: dict, answer: dict, setup, final) -> tuple[bool, str]:
        bindings = dict(self.ns)
        bindings.update(answer)
        for name in ("mk", "tf", "keras", "np"):
            bindings[name] = self.trusted[name]

        def run_check():
            exec(setup, bindings)
            return eval(final, bindings)

        result, error = _in_thread(run_check)
        bindings.clear()  # the learner's objects go with the check
        self.verify(f"the check of exercise {step['exercise']}")
        _ended(error, f"the check of exercise {step['exercise']}", step["exercise"])
        if error is not None:
            return False, f"the check stopped: {self.trusted['raised'](error)}"
        if type(result) is not self.trusted["CheckResult"] or type(result.passed) is not bool:
            raise Tampered("the check returned something that is not a CheckResult")
        return result.passed, "" if result.passed else str(result.message)


def _imported(wanted: list[str], given, kind: str, ns: dict) -> dict | str:
    """A case's answer rebuilt from its export (the judge), or the feedback that fails it.

    ``wanted``: the names the answer defines, then the chapter's that cross with it.
    """
    if not isinstance(given, dict):
        return MISSING
    names, why = _wire.opened(given)
    if names is None and "failed" in given:
        return why
    if names is None or sorted(names) != sorted(wanted):
        return NOT_DEFINED.format(names=", ".join(wanted), asks=", ".join(wanted))
    try:
        strategy = ns.get("strategy")
        return {name: _exports.import_value(names[name], kind, strategy) for name in wanted}
    except _exports.ExportError as error:
        return str(error)
    except Exception as error:  # noqa: BLE001 - a malformed graph: the answer's, not ours
        return f"the exported answer could not be rebuilt: {type(error).__name__}: {error}"[:500]


def _compiled(source: str, name: str):
    """Compile a cell, keeping its source where ``inspect`` finds it (AutoGraph needs it)."""
    code = compile(source, name, "exec")
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return code


def _ended(error: BaseException | None, what: str, exercise: int) -> None:
    """Raise AnswerEnded if student code tried to end the program (sys.exit and the like)."""
    if isinstance(error, SystemExit | KeyboardInterrupt | GeneratorExit):
        how = f"sys.exit({error.code!r})" if isinstance(error, SystemExit) else type(error).__name__
        raise AnswerEnded(f"{what} ended the program with {how}", exercise)


def _failure(error: BaseException, found: list[str]) -> dict:
    """The record of a run that stopped: tampered, or an error nobody is to blame for."""
    if isinstance(error, Tampered):
        return {"kind": "tampered", "detail": str(error)}
    if isinstance(error, AnswerEnded):
        return {"kind": "ended", "detail": str(error), "exercise": error.exercise}
    if isinstance(error, CannotGrade):
        return {"kind": "error", "detail": str(error)}
    detail = f"the grader stopped: {type(error).__name__}: {error}"[:300]
    if found:  # the runner itself broke after the trusted code was changed
        return {"kind": "tampered", "detail": f"{'; '.join(found)} ({detail})"}
    return {"kind": "error", "detail": detail}


def _discard(*args, **kwargs) -> None:
    """``display`` in the runner: nothing is shown."""


def _quiet_end(runner: Runner | None, own_namespace: bool) -> str:
    """Drop student objects and make sure nothing of the submission still runs: '' if so."""
    if runner is not None:
        runner.pending.clear()
        runner.ns.clear()
    gc.collect()
    if own_namespace and os.getppid() == 1:
        _end_the_others()  # the sandbox's PID namespace, whose first process is its shell
    # mirrorkit's own threads: the one that started the warm process lives as long as its
    # process unless ended; a LocalCluster's warm-process listener ends once the processes
    # killed above have closed their sockets: give every thread a few seconds in all.
    with contextlib.suppress(Exception):  # if it cannot, the check below names the thread
        from mirrorkit.cluster._procs import end_lasting_thread

        end_lasting_thread()
    deadline = time.monotonic() + 5.0
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if others:
        return f"threads still running at the end: {', '.join(others[:3])}"
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return "a trace or profile function is set"
    return ""


def _end_the_others() -> None:
    """Kill every other process of the sandbox's PID namespace but its shell, and wait."""
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)  # all this user may signal, but the shell and this one
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        if not _others_alive():
            return
        time.sleep(0.05)


def _others_alive() -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in (1, os.getpid()):
            with contextlib.suppress(OSError):
                if entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    return True
    return False


def main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    for name in ("result_fd", "token_fd"):  # to the lowest numbers; never inherited
        old = job[name]
        job[name] = os.dup(old)  # os.dup's copy is not inheritable
        os.close(old)
    out = _verdicts.Writer(job["result_fd"], job["token_fd"])
    work = tempfile.mkdtemp(prefix="grading-")
    os.chdir(work)
    os.environ["HOME"] = work
    runner, record = None, None
    started = time.monotonic()
    try:
        trusted = _import_trusted()
        record = _integrity.snapshot()
        refused = _integrity.install_guard()
        runner = Runner(job, trusted, record, refused, out)
        runner.run()
    except BaseException as error:  # reported below, once the trusted code is back
        found = _integrity.changes(record) if record else []
        if record:
            _integrity.restore(record)  # so that the report itself is written by our code
        out.write(run=job["run"], **_failure(error, found))
    problem = _quiet_end(runner, job.get("own_namespace") is True)
    if problem:
        out.write(kind="tampered", run=job["run"], detail=problem)
    out.write(kind="run", run=job["run"], seconds=round(time.monotonic() - started, 1))
    out.seal()
    sys.stdout.flush()
    os._exit(0)


from bookbuild.grading import (  # noqa: E402
    _asked,
    _executed,
    _exports,
    _integrity,
    _verdicts,
    _wire,
)

if __name__ == "__main__":
    main()
