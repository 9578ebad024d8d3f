"""A user's model from a torch.export archive (.pt2), as tunebench's Python worker runs it.

torch.export.save writes the archive: a zip of the exported graph (models/model.json), its
weights and, since torch 2.6, the example inputs it was exported with. The module is
torch.export.load(path).module(); its inputs are the archive's example inputs (positional
tensors, batch first), their rows repeated to the suite's batch as for a Python file's
get_example_inputs(), or the inputs the suite gives (option inputs, --input SHAPE:DTYPE), drawn
as for a TorchScript archive. The graph keeps the mode it was exported in: train() and eval() of
an exported module are not supported (NotImplementedError), so dropout and batch norm do in
training what they did at export.

Before torch.export.load, the archive is read as a zip, so that what is not a torch.export
archive (not a zip, a TorchScript archive, an AOTInductor package, another zip: check_layout,
torch-free) and what another torch wrote (its archive or schema version) each get their own
message: torch's own is "We ran into an error when deserializing the saved file" for all of them.
"""
import functools
import json
import logging
import os
import zipfile

from user_model import ModelError, _as_tensors, _first_line, _resized

SAVE = 'torch.export.save(torch.export.export(model, example_inputs), "model.pt2")'
CONV2D_OPS = {"aten.conv2d.default", "aten.convolution.default"}


def _zip_entries(path):
    """The archive's entries, each without the folder torch.export.save puts them in; the texts
    of its format and version records; its names as they are."""
    if not zipfile.is_zipfile(path):
        raise ModelError(f"{path} is not a torch.export archive: it is not a zip file "
                         f"(torch.export.save writes one: {SAVE})")
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        roots = {n.split("/", 1)[0] for n in names if "/" in n}
        root = roots.pop() + "/" if len(roots) == 1 else ""
        entries = {n[len(root):]: n for n in names}
        texts = {}
        for entry in ("archive_format", "archive_version", "models/model.json"):
            if entry in entries:
                texts[entry] = z.read(entries[entry]).decode("utf-8", "replace")
    return entries, texts, names


def check_layout(path):
    """A ModelError for a file that is no torch.export archive, from its zip entries alone, before
    torch is imported (a wrong file is refused in a moment); the archive's records."""
    if not os.path.isfile(path):
        raise ModelError(f"{path} does not exist or is not a file (the option path of model "
                         f"python/export, or run --model)")
    entries, texts, names = _zip_entries(path)
    models = [e for e in entries if e.startswith("models/") and e.endswith(".json")]
    if "data.pkl" in entries and any(e.startswith("code/") for e in entries):
        raise ModelError(f"{path} is a TorchScript archive (torch.jit.save), not a torch.export "
                         f"archive: name it .pt and give its inputs with --input (the C++ worker "
                         f"runs it), or save the model with {SAVE}")
    if not models and any(e.startswith("data/aotinductor/") for e in entries):
        raise ModelError(f"{path} is an AOTInductor package (aoti_compile_and_package: compiled "
                         f"code, no graph), not a torch.export archive: tunebench times the "
                         f"exported graph itself; give the archive it was compiled from "
                         f"({SAVE}); the compile knob measures torch.compile of it")
    if texts.get("archive_format", "").strip() != "pt2" or "models/model.json" not in entries:
        listed = ", ".join(sorted(names)[:5]) + (", …" if len(names) > 5 else "")
        raise ModelError(f"{path} is a zip file but not a torch.export archive: it lacks "
                         f"archive_format and models/model.json (it holds {listed or 'nothing'}); "
                         f"torch.export.save writes one: {SAVE}")
    return texts


def _check_versions(torch, path, texts):
    """A ModelError for an archive another torch wrote in a format this one does not read; the
    torch version its record names."""
    from torch._export.serde.schema import SCHEMA_VERSION
    from torch.export.pt2_archive.constants import ARCHIVE_VERSION_VALUE
    ours = torch.__version__.split("+")[0]
    try:
        record = json.loads(texts["models/model.json"])
        saved_by = str(record.get("torch_version", "an unknown torch")).split("+")[0]
        schema = record.get("schema_version", {})
        major, minor = int(schema.get("major", 0)), int(schema.get("minor", 0))
    except (ValueError, TypeError, AttributeError) as e:
        raise ModelError(f"{path}: its models/model.json is not the record torch.export.save "
                         f"writes ({_first_line(e)}); save the model again with {SAVE}")
    version = texts.get("archive_version", ARCHIVE_VERSION_VALUE).strip()
    if version != ARCHIVE_VERSION_VALUE or (major != SCHEMA_VERSION[0] and (major, minor) != (0, 0)):
        newer = major > SCHEMA_VERSION[0] or (version.isdigit() and
                                              int(version) > int(ARCHIVE_VERSION_VALUE))
        elsewhere = f", or run it with a tunebench built on torch {saved_by}" if saved_by != ours else ""
        raise ModelError(
            f"{path} was saved by torch {saved_by} in {'a newer' if newer else 'another'} format "
            f"than this build's torch {ours} reads (archive version {version}, export schema "
            f"{major}.{minor}; torch {ours} reads archive version {ARCHIVE_VERSION_VALUE}, schema "
            f"{SCHEMA_VERSION[0]}.x): save it again with torch {ours} ({SAVE}){elsewhere}")
    return saved_by


def _loaded(torch, path):
    """torch.export.load(path); its failure in one sentence. torch logs the real error and raises
    "check the warnings above": the log record's exception is the one to name."""
    saved_by = _check_versions(torch, path, check_layout(path))
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.exc_info and record.exc_info[1] is not None:
                seen.append(record.exc_info[1])

    logger, keep = logging.getLogger("torch.export"), Keep()
    logger.addHandler(keep)
    try:
        return torch.export.load(path)
    except Exception as e:  # noqa: BLE001: every failure of the user's file is said
        cause = seen[-1] if seen else e
        raise ModelError(f"{path}: torch.export.load failed with this build's torch "
                         f"{torch.__version__.split('+')[0]} (the archive says torch {saved_by} "
                         f"saved it): {_first_line(cause)}")
    finally:
        logger.removeHandler(keep)


def graph_inputs(model):
    """(name, shape, dtype) of each input the exported module's graph takes; a dynamic size is
    its symbol ("s77")."""
    out = []
    for node in model.graph.nodes:
        shape = getattr(node.meta.get("val"), "shape", None) if node.op == "placeholder" else None
        if shape is not None:
            out.append((node.name, [d if isinstance(d, int) else str(d) for d in shape],
                        str(node.meta["val"].dtype).replace("torch.", "")))
    return out


def takes(model):
    """What the graph takes, in words: 'x [s77, 3, 8, 8] float32'."""
    return ", ".join(f"{name} [{', '.join(map(str, shape))}] {dtype}"
                     for name, shape, dtype in graph_inputs(model))


def _drawn(torch, inputs, batch):
    """Inputs as a TorchScript archive's are drawn (models/torchscript.cpp): integers uniform in
    [low, high), floating ones from N(0, 1); the batch first."""
    out = []
    for spec in inputs:
        shape, dtype = [batch] + list(spec["shape"]), getattr(torch, spec.get("dtype", "float32"))
        if dtype == torch.bool or not dtype.is_floating_point:
            low, high = (0, 2) if dtype == torch.bool else (spec.get("low", 0), spec["high"])
            out.append(torch.randint(low, high, shape, dtype=torch.int64).to(dtype))
        else:
            out.append(torch.randn(shape).to(dtype))
    return out


def _example_inputs(torch, program, model, path, batch):
    example = getattr(program, "example_inputs", None)
    if not example:
        raise ModelError(f"{path} holds no example inputs (its ExportedProgram was saved "
                         f"without them): give its forward's inputs with --input SHAPE:DTYPE, "
                         f"one each, per sample (its graph takes {takes(model) or 'nothing'})")
    args, kwargs = example
    if kwargs:
        raise ModelError(f"{path}: its example inputs include keyword inputs "
                         f"({', '.join(sorted(kwargs))}); tunebench passes inputs by position: "
                         f"export the model with positional inputs only")
    inputs = _as_tensors(torch, tuple(args), f"{path}: ExportedProgram.example_inputs")
    taken = graph_inputs(model)
    for name, shape, _ in taken:
        if shape and isinstance(shape[0], int) and shape[0] != batch:
            # By position, one per input: a graph's placeholder names need not be the forward's
            # argument names (Sequential's "input" is "input_1" in the graph).
            each = ", ".join(["{0: batch}"] * len(taken)) + ("," if len(taken) == 1 else "")
            raise ModelError(
                f"{path} was exported with its batch fixed at {shape[0]} ({name} "
                f"[{', '.join(map(str, shape))}]), not {batch}: give --batch {shape[0]}, or "
                f"export it with the batch dimension dynamic (batch = torch.export.Dim(\"batch\"); "
                f"torch.export.export(model, inputs, dynamic_shapes=({each})))")
    return _resized(torch, inputs, batch, path, "the archive holds example inputs")


def load(torch, options, batch, seed):
    """(module, inputs, ""): the archive's module and its inputs at `batch` rows, drawn from
    seed + 1 where the suite gives them (user_model.load's contract: no class made it)."""
    path = os.path.abspath(options.get("path", ""))
    program = _loaded(torch, path)
    try:
        model = program.module()
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{path}: ExportedProgram.module() failed: {_first_line(e)}")
    torch.manual_seed(seed + 1)
    if options.get("inputs"):
        inputs = _drawn(torch, options["inputs"], batch)
    else:
        inputs = _example_inputs(torch, program, model, path, batch)
    return model, inputs, ""


def first_conv_weight(torch, model):
    """The weight of the graph's first 2-D convolution: an exported module has no Conv2d, only
    the aten.conv2d (or aten.convolution) calls of its graph, each reading its weight."""
    if not isinstance(model, torch.fx.GraphModule):
        return None
    for node in model.graph.nodes:
        if node.op != "call_function" or str(node.target) not in CONV2D_OPS:
            continue
        weight = node.args[1] if len(node.args) > 1 else None
        if isinstance(weight, torch.fx.Node) and weight.op == "get_attr":
            value = functools.reduce(getattr, weight.target.split("."), model)
            if isinstance(value, torch.Tensor) and value.dim() == 4:
                return value
    return None
