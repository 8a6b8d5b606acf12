"""The ONNX graph helpers the quantizers share: every graph and subgraph (a Loop body) with the initializers it
reads, fresh names, unread initializers dropped, op counts, and ``Gemm`` on a constant weight as ``MatMul`` + ``Add``
(the only form ONNX Runtime's quantizers take)."""

from __future__ import annotations


def graphs(graph, outer: frozenset = frozenset()):
    """(graph, names of the initializers it can read) for ``graph`` and every subgraph (a Loop body)."""
    from onnx import AttributeProto

    constants = outer | {i.name for i in graph.initializer}
    yield graph, constants
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield from graphs(attr.g, constants)
            for sub in attr.graphs:
                yield from graphs(sub, constants)


def unique_namer(taken: set[str]):
    """``fresh(name)``: ``name``, or it with underscores appended until no name in ``taken`` (which it grows) has it."""

    def fresh(name: str) -> str:
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    return fresh


def drop_unread_initializers(model) -> None:
    """Remove, from every graph, the initializers that no node of any graph reads (nor a graph output)."""
    read = {n for graph, _ in graphs(model.graph) for node in graph.node for n in node.input}
    read |= {o.name for graph, _ in graphs(model.graph) for o in graph.output}
    for graph, _ in graphs(model.graph):
        kept = [i for i in graph.initializer if i.name in read]
        if len(kept) != len(graph.initializer):
            del graph.initializer[:]
            graph.initializer.extend(kept)


def count_matmuls(model) -> tuple[int, int]:
    """(MatMul/Gemm with a constant second input, MatMul/Gemm on two activations), subgraphs included."""
    weight = act = 0
    for graph, constants in graphs(model.graph):
        for node in graph.node:
            if node.op_type in ("MatMul", "Gemm"):
                if node.input[1] in constants:
                    weight += 1
                else:
                    act += 1
    return weight, act


def count_ops(model, op_type: str) -> int:
    """How many nodes of ``op_type`` the model has, subgraphs included."""
    return sum(1 for graph, _ in graphs(model.graph) for node in graph.node if node.op_type == op_type)


def gemm_to_matmul(model) -> int:
    """Rewrite every ``Gemm`` (alpha = beta = 1, A not transposed) whose weight is an initializer of
    its own graph as ``MatMul`` on the [in, out] weight, plus ``Add`` of the bias, in place.

    Returns:
        How many nodes were rewritten.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    rewritten = 0
    for graph, _ in graphs(model.graph):
        inits = {i.name: i for i in graph.initializer}
        nodes, before = [], rewritten
        for node in graph.node:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            if (
                node.op_type != "Gemm"
                or node.input[1] not in inits
                or attrs.get("transA", 0)
                or attrs.get("alpha", 1.0) != 1.0
                or attrs.get("beta", 1.0) != 1.0
            ):
                nodes.append(node)
                continue
            weight = numpy_helper.to_array(inits[node.input[1]])
            if attrs.get("transB", 0):
                weight = weight.T
            name = f"{node.input[1]}.in_out"
            graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(weight), name))
            bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
            product = f"{node.output[0]}.matmul" if bias else node.output[0]
            nodes.append(helper.make_node("MatMul", [node.input[0], name], [product], name=f"{node.name}.matmul"))
            if bias:
                nodes.append(helper.make_node("Add", [product, bias], [node.output[0]], name=f"{node.name}.bias"))
            rewritten += 1
        if rewritten != before:
            del graph.node[:]
            graph.node.extend(nodes)
    if rewritten:
        drop_unread_initializers(model)  # the Gemms' own [out, in] weights
    return rewritten
