"""The checkpoints a folder holds, newest first; whether each reads in full, and fits.

A checkpoint is a prefix such as ``ckpt-8``: its ``.index`` file and its ``.data-*`` shards.
The folder's ``checkpoint`` state file (written by ``tf.train.CheckpointManager``) names the
latest; the files on disk count too, so a checkpoint the state file names but whose files are
gone, or one the state file forgot, is seen. To see whether one fits, its saved object graph
is walked side by side with the live objects, edge name by edge name, as
``tf.train.Checkpoint.restore`` matches them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

STATE_FILE = "checkpoint"  # tf.train.CheckpointManager's state file


def _number(prefix: str) -> int:
    """The save number of ``ckpt-12`` (12), or -1 for a prefix without one."""
    found = re.search(r"-(\d+)$", prefix)
    return int(found.group(1)) if found else -1


def _state_prefixes(folder: Path) -> tuple[list[str], str | None]:
    """The prefixes the state file names (by base name), and why it is unreadable, if it is."""
    import tensorflow as tf

    if not (folder / STATE_FILE).is_file():
        return [], None
    try:
        state = tf.train.get_checkpoint_state(str(folder))
    except (tf.errors.OpError, ValueError, UnicodeDecodeError) as error:
        return [], f"the state file is unreadable ({short(error)})"
    if state is None:
        return [], "the state file is unreadable"
    paths = [*state.all_model_checkpoint_paths, state.model_checkpoint_path]
    return [os.path.basename(path) for path in paths if path], None


def listed_checkpoints(folder: Path) -> tuple[list[tuple[str, str | None]], list]:
    """``([(prefix path, problem or None)], [(file, problem)])``, checkpoints newest first.

    ``problem`` says why a checkpoint cannot be restored before reading it (its index file is
    missing); the second list holds the problems of the folder itself (its state file).
    """
    if not folder.is_dir():
        return [], []
    named, state_problem = _state_prefixes(folder)
    names = [entry.name for entry in folder.iterdir()]
    indexed = {name[: -len(".index")] for name in names if name.endswith(".index")}
    with_data = {name.split(".data-")[0] for name in names if ".data-" in name}
    prefixes = set(named) | indexed | with_data
    newest_first = sorted(prefixes, key=lambda p: (_number(p), p in named), reverse=True)
    found = []
    for prefix in newest_first:
        problem = None
        if prefix not in indexed:
            where = "the state file names it, but" if prefix in named else ""
            problem = f"{where} {prefix}.index is not there (deleted, or never finished)"
        found.append((str(folder / prefix), problem.strip() if problem else None))
    folder_problems = [(STATE_FILE, state_problem)] if state_problem else []
    return found, folder_problems


def other_model_files(folder: Path) -> list[tuple[str, str]]:
    """``(name, how to load it)`` of each model file of another kind in ``folder``."""
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        path = str(entry)
        if entry.name.endswith(".weights.h5"):
            if (folder / "training_metadata.json").is_file():
                how = (
                    "a backup of keras.callbacks.BackupAndRestore(backup_dir=...); give that "
                    "callback this folder as backup_dir and fit resumes from it"
                )
            else:
                how = f"Keras weights (model.save_weights): model.load_weights({path!r})"
        elif entry.name.endswith(".keras"):
            how = f"a whole Keras model (model.save): keras.models.load_model({path!r})"
        elif entry.name.endswith((".h5", ".hdf5")):
            how = f"a Keras HDF5 model or weights: keras.models.load_model({path!r})"
        elif (entry / "saved_model.pb").is_file() or entry.name == "saved_model.pb":
            where = path if entry.is_dir() else str(folder)
            how = (
                f"a SavedModel (tf.saved_model.save or model.export): "
                f"tf.saved_model.load({where!r}) for serving; it cannot resume training here"
            )
        else:
            continue
        found.append((entry.name, how))
    return found


def short(error: BaseException) -> str:
    """The first line of an error's message, at most 100 characters."""
    text = (getattr(error, "message", None) or str(error)).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 100 else line[:97] + "..."


def read_problem(prefix: str):
    """``(reader, None)`` when every tensor of ``prefix`` reads back, else ``(None, problem)``.

    Reading every tensor is what a restore does; doing it first finds a cut-short data file
    before a single variable is overwritten.
    """
    import tensorflow as tf

    name = os.path.basename(prefix)
    try:
        reader = tf.train.load_checkpoint(prefix)
    except Exception as error:  # noqa: BLE001 - whatever the reason, the file is unreadable
        return None, f"{name}.index cannot be read ({short(error)})"
    shards = sorted(p.name for p in Path(prefix).parent.glob(f"{name}.data-*"))
    data = " and ".join(shards) or f"{name}.data-*"
    for key in sorted(reader.get_variable_to_shape_map()):
        try:
            reader.get_tensor(key)
        except Exception as error:  # noqa: BLE001 - TensorFlow raises IndexError, DataLossError...
            return None, f"{data} is damaged or cut short: reading {key} failed ({short(error)})"
    return reader, None


GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


@dataclass(frozen=True)
class Difference:
    """One variable that does not fit: only saved, only live, or of another shape or dtype."""

    path: str
    saved: str | None  # "(4, 1) float32", or None when the checkpoint lacks it
    live: str | None  # the same for the object restored into


def _shown(shape, dtype) -> str:
    shape = tuple(int(d) for d in shape)
    return f"{shape} {dtype.name}"


def _is_variable(value) -> bool:
    import keras
    import tensorflow as tf

    return isinstance(value, tf.Variable | keras.Variable)


def _live_paths(root) -> dict[int, tuple[str, object]]:
    """``{id(variable): (first path, variable)}`` over everything ``root`` tracks."""
    import tensorflow as tf

    view = tf.train.TrackableView(root)
    found, seen, stack = {}, {id(root)}, [("", root)]
    while stack:
        path, value = stack.pop()
        if _is_variable(value):
            found.setdefault(id(value), (path, value))
        children = list(view.children(value).items())
        for name, child in reversed(children):  # depth first, in the order they were added
            if id(child) not in seen:
                seen.add(id(child))
                stack.append((f"{path}/{name}".lstrip("/"), child))
    return found


def _saved_bindings(graph, root) -> tuple[dict[int, object], dict[int, str]]:
    """Each saved node's live object (None when there is none) and its first path."""
    import tensorflow as tf

    view = tf.train.TrackableView(root)
    bound, paths, stack = {0: root}, {0: ""}, [0]
    while stack:
        node = stack.pop()
        live = bound[node]
        children = view.children(live) if live is not None else {}
        for child in reversed(graph.nodes[node].children):
            new = child.node_id not in paths
            if new:
                paths[child.node_id] = f"{paths[node]}/{child.local_name}".lstrip("/")
            if new or (bound[child.node_id] is None and child.local_name in children):
                bound[child.node_id] = children.get(child.local_name)
                stack.append(child.node_id)
    return bound, paths


def differences(root, reader) -> tuple[list[Difference], dict[str, tuple[int, int]]]:
    """What does not fit, and ``{top-level name: (saved variables, live variables)}``.

    "Fits" means: every variable the checkpoint holds reaches, by the same names, a variable
    of ``root`` of the same shape and dtype, and every variable ``root`` tracks is reached.
    """
    import tensorflow as tf
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(GRAPH_KEY))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    bound, paths = _saved_bindings(graph, root)
    live = _live_paths(root)
    found, counts, reached = [], {}, set()
    for node, path in sorted(paths.items(), key=lambda item: item[1]):
        keys = [
            a.checkpoint_key for a in graph.nodes[node].attributes if a.name == "VARIABLE_VALUE"
        ]
        if not keys:
            continue
        saved = _shown(shapes[keys[0]], dtypes[keys[0]])
        value = bound.get(node)
        top = path.split("/")[0]
        counts[top] = (counts.get(top, (0, 0))[0] + 1, 0)
        if value is None or not _is_variable(value):
            found.append(Difference(path, saved, None))
            continue
        reached.add(id(value))
        mine = _shown(value.shape, tf.as_dtype(value.dtype))
        if mine != saved:
            found.append(Difference(path, saved, mine))
    for key, (path, value) in sorted(live.items(), key=lambda item: item[1][0]):
        top = path.split("/")[0]
        counts[top] = (counts.get(top, (0, 0))[0], counts.get(top, (0, 0))[1] + 1)
        if key not in reached:
            found.append(Difference(path, None, _shown(value.shape, tf.as_dtype(value.dtype))))
    return found, counts
