"""Command line: export a model to memplan-graph/1 JSON and records CSV.

    PYTHONPATH=python /usr/bin/python3 -m memplan.export MODEL [--batch B]
        [--size HxW] [--train] [-o DIR] [--include-persistent] [--quiet]
    PYTHONPATH=python /usr/bin/python3 -m memplan.export FILE.onnx [-o DIR]
        [--include-persistent] [--quiet]
    PYTHONPATH=python /usr/bin/python3 -m memplan.export --list

Writes DIR/MODEL.graph.json and DIR/MODEL.records.csv (MODEL-train.* with
--train); for FILE.onnx (onnx_import.py, docs/onnx.md) DIR/FILE.graph.json
and DIR/FILE.records.csv.  Bad arguments, unreadable files and models that
fail on the requested input exit with status 2 and one message on stderr;
files are written to temporary names and renamed, so a failed export leaves
nothing behind.
"""

import argparse
import os
import sys
import tempfile
import time

from . import records as rec_mod

EXIT_USAGE = 2
EXIT_SIGPIPE = 128 + 13    # what a shell reports for a process killed by SIGPIPE


class UsageError(Exception):
    """A bad command line or input; exit status 2."""


def _fail(msg):
    raise UsageError(msg)


def parse_size(text):
    """'224' or '299x299' -> (H, W)."""
    parts = text.lower().split("x")
    if len(parts) not in (1, 2) or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError("'%s' is not HxW or N (e.g. 224x224)" % text)
    dims = [int(p) for p in parts]
    if len(dims) == 1:
        dims *= 2
    if not all(8 <= d <= 8192 for d in dims):
        raise argparse.ArgumentTypeError("'%s': sides must be 8..8192 pixels" % text)
    return tuple(dims)


def parse_batch(text):
    if not text.strip().isdigit() or not 1 <= int(text) <= 4096:
        raise argparse.ArgumentTypeError("'%s' is not a batch size in 1..4096" % text)
    return int(text)


def write_json(graph, f):
    """The graph as JSON with one tensor or node per line (diff-friendly)."""
    import json
    dump = lambda x: json.dumps(x, separators=(",", ":"), allow_nan=False)
    f.write("{\n")
    keys = list(graph)
    for i, k in enumerate(keys):
        end = ",\n" if i + 1 < len(keys) else "\n"
        v = graph[k]
        if k in ("tensors", "nodes") and v:
            f.write('"%s":[\n' % k + ",\n".join(dump(x) for x in v) + "\n]" + end)
        else:
            f.write('"%s":%s' % (k, dump(v)) + end)
    f.write("}\n")


def write_atomically(directory, files):
    """files: [(name, writer(f))]; all written to temporaries, then renamed."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        _fail("cannot create output directory '%s': %s" % (directory, e.strerror))
    umask = os.umask(0)
    os.umask(umask)
    temps = []
    try:
        for name, writer in files:
            fd, tmp = tempfile.mkstemp(prefix="." + name + ".", dir=directory)
            temps.append((tmp, os.path.join(directory, name)))
            with os.fdopen(fd, "w") as f:
                writer(f)
            os.chmod(tmp, 0o666 & ~umask)     # mkstemp makes 0600 files
        for tmp, final in temps:
            os.replace(tmp, final)
    except OSError as e:
        _fail("cannot write to '%s': %s" % (directory, e.strerror))
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return [final for _, final in temps]


def list_models(out):
    from .models import MODELS
    out.write("%-22s %-26s %-9s %s\n" % ("name", "model", "size", "task"))
    for s in MODELS.values():
        out.write("%-22s %-26s %-9s %s\n" % (s.name, s.title, "%dx%d" % s.natural, s.task))


def run(args, log):
    if args.model.endswith(".onnx"):
        return run_onnx(args, log)
    from .models import MODELS, build
    spec = MODELS.get(args.model)
    if spec is None:
        _fail("unknown model '%s' (--list shows the supported models)" % args.model)
    size = args.size or spec.natural
    if spec.square_multiple and (size[0] != size[1] or size[0] % spec.square_multiple):
        _fail("%s needs a square input whose side is a multiple of %d, not %dx%d"
              % (spec.name, spec.square_multiple, size[0], size[1]))
    import torch
    from .capture import ExportError
    from .trace import export_module

    torch.manual_seed(0)
    mode = "training" if args.train else "inference"
    batch = args.batch or 1
    log("export: %s %s, batch %d, %dx%d" % (spec.name, mode, batch, size[0], size[1]))
    t0 = time.time()
    model = build(spec, size)
    example = torch.randn(batch, 3, size[0], size[1])
    log("export: built the model (%.1f s); tracing and running it" % (time.time() - t0))
    try:
        graph = export_module(model, example, spec.name, train=args.train,
                              title=spec.title, input_size=list(size), task=spec.task)
    except ExportError as e:
        _fail("%s: %s" % (spec.name, e))
    except MemoryError:
        _fail("%s: out of memory at batch %d, %dx%d" % (spec.name, batch, *size))
    write_outputs(graph, spec.name + ("-train" if args.train else ""), args, log, t0)


def run_onnx(args, log):
    """Import an ONNX file (its shapes are fixed in it: no --batch/--size)."""
    given = [o for o, v in (("--train", args.train), ("--batch", args.batch),
                            ("--size", args.size)) if v]
    if given:
        _fail("%s: an ONNX model's input shapes are fixed in the file"
              % " and ".join(given))
    from .onnx_import import OnnxImportError, import_onnx
    t0 = time.time()
    log("export: importing %s" % args.model)
    try:
        graph = import_onnx(args.model)
    except OnnxImportError as e:
        _fail(str(e))
    except MemoryError:
        _fail("%s: out of memory" % args.model)
    write_outputs(graph, graph["model"]["name"], args, log, t0)


def write_outputs(graph, base, args, log, t0):
    """DIR/base.graph.json and DIR/base.records.csv, and the summary."""
    rows = rec_mod.records(graph, include_persistent=args.include_persistent)
    paths = write_atomically(args.output_dir, [
        (base + ".graph.json", lambda f: write_json(graph, f)),
        (base + ".records.csv", lambda f: f.write(rec_mod.records_csv(rows))),
    ])
    naive, peak = rec_mod.summary(rows)
    log("export: %d tensors, %d nodes, %d records; naive %.2f MiB, max live %.2f MiB (%.1f s)"
        % (len(graph["tensors"]), len(graph["nodes"]), len(rows),
           naive / 2**20, peak / 2**20, time.time() - t0))
    for p in paths:
        log("export: wrote %s" % p)


def main(argv=None):
    try:
        return cli(argv)
    except BrokenPipeError:
        # stdout's reader has gone (`--list | head -1`): stop quietly like a
        # Unix filter killed by SIGPIPE (status 128 + 13), with stdout on
        # /dev/null so the interpreter's last flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_SIGPIPE


def cli(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m memplan.export",
        description="Export a torchvision model's computation graph, or import an ONNX "
                    "model, to memplan-graph/1 JSON and usage records "
                    "(docs/graph-format.md, docs/onnx.md).",
        epilog="An ONNX model must have fixed input shapes (no dynamic axes); "
               "--batch, --size and --train do not apply to it.")
    p.add_argument("model", nargs="?",
                   help="model name (see --list), or a FILE.onnx to import "
                        "(writes FILE.graph.json and FILE.records.csv)")
    p.add_argument("--list", action="store_true", help="list the supported models and exit")
    p.add_argument("--batch", type=parse_batch,
                   help="batch size (default 1; torchvision models only)")
    p.add_argument("--size", type=parse_size,
                   help="input HxW (default: the model's own; torchvision models only)")
    p.add_argument("--train", action="store_true",
                   help="export a training step (forward + loss + backward, aten level; "
                        "torchvision models only)")
    p.add_argument("-o", "--output-dir", default=".", help="output directory (default .)")
    p.add_argument("--include-persistent", action="store_true",
                   help="also put parameters (and gradients) in the records")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    if args.list:
        list_models(sys.stdout)
        return 0
    if not args.model:
        p.error("a MODEL is required (--list shows them)")
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    try:
        run(args, log)
    except UsageError as e:
        print("memplan.export: error: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
