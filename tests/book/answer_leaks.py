"""Finding an exercise's answer in a lab's student edition: in its code or in its outputs.

An answer leaks when a cell the student reads before answering already holds it: the value
the solution gives the name the exercise asks for (or the body of the function it asks for)
written in a chapter cell, a distinctive line of the solution or its literal value printed
in an output, or a check's PASS verdict stored. tests/book/test_labs.py runs it on every
built student edition; the names of attributes are compared by their last part, so
``partitioners.MinSizePartitioner(...)`` is found where the solution writes
``tf.distribute.experimental.partitioners.MinSizePartitioner(...)``.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import textwrap

MIN_NODES = 6  # smaller answers (``x = 4``) are found by their printed value only
MIN_LINE = 20  # a solution line this long is distinctive enough to look for in outputs


class _LastName(ast.NodeTransformer):
    """Cuts a dotted name (``tf.data.Options``) to its last part (``Options``)."""

    def visit_Attribute(self, node):
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name):
            return ast.copy_location(ast.Name(id=node.attr, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _shape(nodes) -> str:
    """The nodes' form without positions, attribute paths cut to their last name."""
    nodes = nodes if isinstance(nodes, list) else [nodes]
    tree = ast.Module(body=[], type_ignores=[])
    copies = [_LastName().visit(ast.parse(ast.unparse(n)).body[0]) for n in nodes]
    tree.body = copies
    return ast.dump(tree, annotate_fields=False)


def _body(function: ast.FunctionDef) -> list:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


def asked(blank: str) -> set[str]:
    """The names an exercise asks for: those its blank answer cell assigns."""
    tree = ast.parse(blank)
    return {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _defines(statement, names: set[str]) -> bool:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return statement.name in names
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in names
        for n in ast.walk(statement)
    )


def answer_shapes(solution: str, names: set[str]) -> dict[str, str]:
    """What an answer is made of: ``{shape: the code}`` for each part of the solution.

    A part is a top-level statement that defines one of ``names``: an assignment's value, a
    function's body (without its docstring) or the whole statement (a ``with`` block), when
    it has at least ``MIN_NODES`` nodes.
    """
    found = {}
    for statement in ast.parse(solution).body:
        if not _defines(statement, names):
            continue
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            part = statement.value
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            part = _body(statement)
        else:
            part = statement
        parts = part if isinstance(part, list) else [part]
        if part is not None and sum(len(list(ast.walk(p))) for p in parts) >= MIN_NODES:
            found[_shape(part)] = "\n".join(ast.unparse(p) for p in parts)
    return found


def code_shapes(source: str) -> set[str]:
    """The shapes of every value, function body and statement in a cell's code."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    shapes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            shapes.add(_shape(_body(node)))
        if isinstance(node, ast.expr | ast.stmt):
            with contextlib.suppress(SyntaxError, IndexError):  # a piece of an f-string
                shapes.add(_shape(node))
    return shapes


def output_text(cell) -> str:
    """Everything a code cell's stored outputs show, as text."""
    parts = []
    for output in cell.get("outputs", []):
        parts += [output.get("text", ""), output.get("evalue", "")]
        parts += [
            v if isinstance(v, str) else json.dumps(v) for v in output.get("data", {}).values()
        ]
    return "\n".join(parts)


def printed_code(cell) -> set[str]:
    """The shapes of code a cell prints (``print(inspect.getsource(f))``, say)."""
    shapes = set()
    for output in cell.get("outputs", []):
        for text in [output.get("text", ""), output.get("data", {}).get("text/plain", "")]:
            if text.strip():
                shapes |= code_shapes(textwrap.dedent(text))
    return shapes


def printed_forms(solution: str, names: set[str]) -> set[str]:
    """How the answer would look printed: its long lines naming it, its literal values."""
    forms = {
        line.strip()
        for line in solution.splitlines()
        if len(line.strip()) >= MIN_LINE and names & set(re.findall(r"\w+", line))
    }
    for statement in ast.parse(solution).body:
        if isinstance(statement, ast.Assign) and _defines(statement, names):
            try:
                value = ast.literal_eval(statement.value)
            except ValueError:
                continue
            for form in (repr(value), str(value), json.dumps(value, default=str)):
                if len(form) >= 6:
                    forms.add(form)
    return forms


def leaks(book, cells, answer_cells=()) -> list[str]:
    """Every place where an exercise's answer shows in ``cells``, as readable lines.

    Args:
        book: The chapter (the exercises, their blanks and solutions come from it).
        cells: The cells the student reads (the student edition's, or the chapter's).
        answer_cells: Indices of ``cells`` where the student answers (not searched).
    """
    from bookbuild.exercises import exercises

    code = [code_shapes(c.source) if c.cell_type == "code" else set() for c in cells]
    printed = [printed_code(c) for c in cells]
    found = []
    for exercise in exercises(book):
        names = asked(book.cells[exercise.answer].source)
        shapes = answer_shapes(exercise.solution, names)
        forms = printed_forms(exercise.solution, names)
        for i, cell in enumerate(cells):
            if i in answer_cells:
                continue
            where = f"{exercise.name} in cell {i}"
            found += [f"{where}'s code: {shapes[s]!r}" for s in set(shapes) & code[i]]
            found += [f"{where}'s source: {f!r}" for f in forms if f in cell.source]
            shown = output_text(cell)
            found += [f"{where}'s output: {shapes[s]!r}" for s in set(shapes) & printed[i]]
            found += [f"{where}'s output: {form!r}" for form in forms if form in shown]
            if "PASS" in shown and "mirrorkit-report" in shown:
                found.append(f"{where}'s output: a check's PASS verdict")
    return sorted(set(found))
