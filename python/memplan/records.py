"""Lifetimes and usage records derived from a memplan-graph/1 graph.

Pure Python (no torch): the one place where the rules of docs/graph-format.md
("How tensors, aliases and lifetimes are counted") are written as code.  The
C liveness of the graph layer must give the same records.
"""

PERSISTENT_KINDS = ("parameter", "gradient")


class GraphError(ValueError):
    """A graph that breaks a rule of the format."""


def root_of(tensors, tid):
    """The tensor that owns the memory of ``tid`` (itself unless an alias)."""
    base = tensors[tid]["alias_of"]
    return tid if base is None else base


def lifetimes(graph):
    """Return {tensor id: (first, last)} for every tensor that owns memory.

    Steps are positions in graph["order"].  A tensor lives from the step of
    the node producing it (step 0 if no node does) to the last step at which
    a node reads it or any alias of it; graph outputs (or their aliases) live
    to the last step; persistent tensors (parameters, gradients) live over
    the whole run.  An unread, non-output tensor lives at its own step only,
    and so does a node's "scratch" (its workspace).
    """
    tensors = {t["id"]: t for t in graph["tensors"]}
    nodes = {n["id"]: n for n in graph["nodes"]}
    nsteps = len(graph["order"])
    end = max(nsteps - 1, 0)
    first = {}
    for step, nid in enumerate(graph["order"]):
        for out in nodes[nid]["outputs"]:
            if tensors[out]["alias_of"] is None:
                first[out] = step
        if nodes[nid].get("scratch") is not None:      # its workspace: this step only
            first[nodes[nid]["scratch"]] = step
    span = {}
    for tid, t in tensors.items():
        if t["alias_of"] is None:
            f = first.get(tid, 0)
            span[tid] = [f, f]
    for step, nid in enumerate(graph["order"]):
        for inp in nodes[nid]["inputs"]:
            r = root_of(tensors, inp)
            if step > span[r][1]:
                span[r][1] = step
    for out in graph["outputs"]:
        span[root_of(tensors, out)][1] = end
    for tid, t in tensors.items():
        if t["alias_of"] is None and t["kind"] in PERSISTENT_KINDS:
            span[tid] = [0, end]
    return {tid: (f, l) for tid, (f, l) in span.items()}


def records(graph, include_persistent=False):
    """Usage records [(id, first, last, size)] sorted by id.

    One record per tensor that owns memory (not an alias) with bytes > 0;
    persistent tensors only with ``include_persistent``.
    """
    if not graph["order"]:
        return []
    tensors = {t["id"]: t for t in graph["tensors"]}
    rows = []
    for tid, (f, l) in sorted(lifetimes(graph).items()):
        t = tensors[tid]
        if t["bytes"] <= 0:
            continue
        if t["kind"] in PERSISTENT_KINDS and not include_persistent:
            continue
        rows.append((tid, f, l, t["bytes"]))
    return rows


def records_csv(rows):
    """The records as the text of a records CSV (docs/formats.md)."""
    lines = ["id,first,last,size"]
    lines += ["%d,%d,%d,%d" % r for r in rows]
    return "\n".join(lines) + "\n"


def validate(graph):
    """Raise GraphError if the graph breaks a structural rule of the format."""
    if graph.get("format") != "memplan-graph/1":
        raise GraphError("format is not memplan-graph/1")
    tensors = {}
    for i, t in enumerate(graph["tensors"]):
        if t["id"] != i:
            raise GraphError("tensor %d has id %r (ids must be 0..n-1 in order)" % (i, t["id"]))
        tensors[i] = t
    for t in tensors.values():
        base = t["alias_of"]
        if base is not None:
            if base not in tensors or tensors[base]["alias_of"] is not None:
                raise GraphError("tensor %d: alias_of %r is not a non-alias tensor" % (t["id"], base))
            if t["bytes"] != 0:
                raise GraphError("tensor %d: an alias must have bytes 0" % t["id"])
        else:
            numel = 1
            for d in t["shape"]:
                numel *= d
            if t["bytes"] != numel * DTYPE_SIZE[t["dtype"]]:
                raise GraphError("tensor %d: bytes %d != numel %d x %s" % (t["id"], t["bytes"], numel, t["dtype"]))
    nodes = {}
    for i, n in enumerate(graph["nodes"]):
        if n["id"] != i:
            raise GraphError("node %d has id %r" % (i, n["id"]))
        nodes[i] = n
    if sorted(graph["order"]) != list(range(len(nodes))):
        raise GraphError("order is not a permutation of the node ids")
    producer = {}
    for n in nodes.values():
        for out in n["outputs"]:
            if out in producer:
                raise GraphError("tensor %d produced by nodes %d and %d" % (out, producer[out], n["id"]))
            producer[out] = n["id"]
    ready = {tid for tid in tensors if tid not in producer}
    for step, nid in enumerate(graph["order"]):
        for inp in nodes[nid]["inputs"]:
            if inp not in ready:
                raise GraphError("node %d (step %d) reads tensor %d before it exists" % (nid, step, inp))
        ready.update(nodes[nid]["outputs"])
    for out in graph["outputs"]:
        if out not in tensors:
            raise GraphError("output %r is not a tensor" % out)


DTYPE_SIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
    "complex64": 8, "complex128": 16,
}


def summary(rows):
    """(naive total, max live bytes) of records: sum of sizes, and the
    offset lower bound (the most bytes live at one time)."""
    naive = sum(r[3] for r in rows)
    events = {}
    for _, f, l, size in rows:
        events[f] = events.get(f, 0) + size
        events[l + 1] = events.get(l + 1, 0) - size
    live = peak = 0
    for t in sorted(events):
        live += events[t]
        peak = max(peak, live)
    return naive, peak
