"""A rebuilt dataset's ``filter``, made askable again without the learner's Python.

``mk.check_input_pipeline`` accepts a finite pipeline without ``drop_remainder`` when a
``filter`` after its batching keeps full batches and drops every shorter one: it reads the
filter's input dataset and asks the filter's predicate about shorter batches, through the
Python objects ``tf.data`` keeps (``_input_dataset``, ``_predicate``). A dataset rebuilt from
its graph (:mod:`bookbuild.grading._exports`) has none, so this gives it both, from the
graph alone: the filter's input is the same graph ending at that node, and the predicate is
asked by splicing a one-element dataset in front of the learner's own ``FilterDataset``
node and counting what comes out. No code from the submission runs.

Example:
    >>> _renamed("Const/_0:1", "p_")
    'p_Const/_0:1'
"""

from __future__ import annotations

from types import SimpleNamespace

PREFIX = "mirrorbook_probe_"


def with_filter_probe(dataset, graph: bytes, structure):
    """Give ``dataset`` its first filter's input and predicate, if a filter is in its chain."""
    from tensorflow.core.framework import graph_pb2

    parsed = graph_pb2.GraphDef()
    parsed.ParseFromString(graph)
    nodes = {node.name: node for node in parsed.node}
    returned = [node for node in parsed.node if node.op == "_Retval"]
    name = returned[0].input[0] if returned and returned[0].input else ""
    while name in nodes:
        node = nodes[name]
        if node.op == "FilterDataset" and node.input:
            flat = _flat_specs(node)
            source = _rebuilt(_ending_at(parsed, node.input[0]), _shaped(flat, structure))
            dataset._input_dataset = source
            dataset._predicate = SimpleNamespace(function=_Predicate(parsed, node.name, flat))
            return dataset
        name = node.input[0].split(":")[0] if node.input else ""
    return dataset


def _flat_specs(node) -> list:
    import tensorflow as tf

    types = node.attr["output_types"].list.type
    shapes = node.attr["output_shapes"].list.shape
    return [
        tf.TensorSpec(tf.TensorShape(shape), tf.dtypes.as_dtype(dtype))
        for dtype, shape in zip(types, shapes, strict=True)
    ]


def _shaped(flat: list, structure):
    """The filter's element structure: the dataset's own when the counts agree."""
    import tensorflow as tf

    if len(tf.nest.flatten(structure)) == len(flat):
        return tf.nest.pack_sequence_as(structure, flat)
    return tuple(flat)


def _ending_at(graph, name: str):
    """A copy of ``graph`` whose result is the node ``name``."""
    from tensorflow.core.framework import graph_pb2

    copy = graph_pb2.GraphDef()
    copy.CopyFrom(graph)
    for node in copy.node:
        if node.op == "_Retval":
            node.input[0] = name
    return copy


def _rebuilt(graph, structure):
    import tensorflow as tf

    variant = tf.raw_ops.DatasetFromGraph(graph_def=graph.SerializeToString())
    return tf.data.experimental.from_variant(variant, structure=structure)


def _renamed(reference: str, prefix: str) -> str:
    return f"^{prefix}{reference[1:]}" if reference.startswith("^") else prefix + reference


class _Predicate:
    """The learner's filter node, asked about one element by running it on a copy."""

    def __init__(self, graph, filter_name: str, flat: list) -> None:
        self.graph, self.filter_name, self.flat = graph, filter_name, flat

    def __call__(self, *components):
        import tensorflow as tf

        element = tf.data.Dataset.from_tensors(tuple(tf.nest.flatten(components)))
        probe_graph = tf.compat.v1.GraphDef()
        probe_graph.ParseFromString(element._as_serialized_graph().numpy())
        spliced = _ending_at(self.graph, self.filter_name)
        probe_out = ""
        for node in probe_graph.node:
            if node.op == "_Retval":
                probe_out = _renamed(node.input[0], PREFIX)
                continue
            added = spliced.node.add()
            added.CopyFrom(node)
            added.name = PREFIX + node.name
            added.input[:] = [_renamed(i, PREFIX) for i in node.input]
        for node in spliced.node:
            if node.name == self.filter_name:
                node.input[0] = probe_out
        specs = tuple(tf.TensorSpec(c.shape, c.dtype) for c in tf.nest.flatten(components))
        kept = sum(1 for _ in _rebuilt(spliced, specs))
        return tf.constant(kept == 1)
