"""A user's model from a Python file, as tunebench's Python worker runs it (models/python/worker.py).

The file defines a torch.nn.Module class (or a function that returns one, called with no
arguments) and the inputs of its forward: a method get_example_inputs() on the module (the
convention of PyTorch's dynamo benchmarks), or a function get_example_inputs() in the file. The
inputs are a tensor or a tuple of tensors whose first dimension is the batch; tunebench repeats
their rows to the batch a suite asks for. In training the loss is the module's
compute_loss(output) where it has one, else the sum of its floating outputs.

Every failure is a ModelError whose message names the file and says what would be valid.
"""
import hashlib
import importlib.util
import os
import sys
import traceback


class ModelError(Exception):
    """What is wrong with the user's model, in words."""


def _first_line(error):
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _where_in_file(path):
    """'line N' of the innermost frame in `path` of the exception being handled, or ''."""
    frames = [f for f in traceback.extract_tb(sys.exc_info()[2]) if f.filename == path]
    return f" (line {frames[-1].lineno})" if frames else ""


def _import(path):
    if not os.path.isfile(path):
        raise ModelError(f"{path} does not exist or is not a file (the option path of model "
                         f"python, or run --model)")
    name = "tunebench_user_model_" + sha256_of(path)[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"{path} is not a Python file that can be imported (its name should "
                         f"end in .py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))  # the file's own imports of files beside it
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ModelError(f"{path} failed to import (line {e.lineno}): SyntaxError: {e.msg}")
    except BaseException as e:  # SystemExit too: the file is the user's
        raise ModelError(f"{path} failed to import{_where_in_file(path)}: {_first_line(e)}")
    return module


def _candidates(torch, module):
    """The file's own Module classes and functions that have get_example_inputs()."""
    found = []
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__ or name.startswith("_"):
            continue
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
            if hasattr(obj, "get_example_inputs") or hasattr(module, "get_example_inputs"):
                found.append(name)
    return found


def _as_tensors(torch, value, what):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor)
                                                         for v in value):
        return list(value)
    kind = type(value).__name__
    if isinstance(value, (tuple, list)):
        kind = "(" + ", ".join(type(v).__name__ for v in value) + ")"
    raise ModelError(f"{what} returned {kind}: tunebench needs a tensor or a tuple of tensors")


def _resized(torch, inputs, batch, path, what="get_example_inputs() gave inputs"):
    """Each input with its rows repeated (or cut) to `batch`: the suite's batch is dimension 0."""
    firsts = {t.shape[0] if t.dim() > 0 else None for t in inputs}
    if None in firsts or len(firsts) != 1:
        shapes = ", ".join(str(list(t.shape)) for t in inputs)
        raise ModelError(f"{path}: {what} of shapes {shapes}; tunebench "
                         f"needs each to have the batch as its first dimension, the same in all")
    rows = firsts.pop()
    if rows == batch:
        return inputs
    copies = -(-batch // rows)
    return [t.repeat((copies,) + (1,) * (t.dim() - 1))[:batch].contiguous() for t in inputs]


def outputs_of(torch, out, path):
    """The output's tensors; a ModelError for anything else."""
    return _as_tensors(torch, out, f"{path}: its forward")


def loss_of(torch, model, out, path):
    """The model's compute_loss(output) where it has one, else the sum of its floating outputs."""
    if hasattr(model, "compute_loss"):
        loss = model.compute_loss(out)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise ModelError(f"{path}: compute_loss returned {type(loss).__name__}; it must "
                             f"return a tensor of one element")
        return loss
    parts = [t.float().sum() for t in outputs_of(torch, out, path) if t.is_floating_point()]
    if not parts:
        raise ModelError(f"{path}: its forward returned no floating-point tensor to train")
    return sum(parts[1:], parts[0])


def load(torch, options, batch, seed):
    """(module, inputs, name): the model built from a seeded generator, in eval mode, and its
    inputs at `batch` rows, drawn from the next seed."""
    path = os.path.abspath(options.get("path", ""))
    wanted = options.get("class", "")
    module = _import(path)
    found = _candidates(torch, module)
    if wanted:
        maker = getattr(module, wanted, None)
        if maker is None or not callable(maker):
            raise ModelError(f"{path} has no class or function {wanted}; its modules with "
                             f"get_example_inputs(): {', '.join(found) or 'none'}")
    elif len(found) == 1:
        wanted, maker = found[0], getattr(module, found[0])
    else:
        raise ModelError(
            f"{path} defines {len(found)} torch.nn.Module classes with get_example_inputs() "
            f"({', '.join(found) or 'none'}): name one with --class (or the option class)")
    torch.manual_seed(seed)
    try:
        model = maker()
    except BaseException as e:
        raise ModelError(f"{path}: {wanted}() failed{_where_in_file(path)}: {_first_line(e)}")
    if not isinstance(model, torch.nn.Module):
        raise ModelError(f"{path}: {wanted}() made a {type(model).__name__}, not a "
                         f"torch.nn.Module")
    example = getattr(model, "get_example_inputs", None) or getattr(module, "get_example_inputs",
                                                                   None)
    if example is None:
        raise ModelError(f"{path}: {wanted} has no get_example_inputs(): give it a method "
                         f"get_example_inputs() that returns its forward's inputs (a tensor or "
                         f"a tuple of tensors, batch first)")
    torch.manual_seed(seed + 1)
    try:
        inputs = _as_tensors(torch, example(), f"{path}: get_example_inputs()")
    except ModelError:
        raise
    except BaseException as e:
        raise ModelError(f"{path}: get_example_inputs() failed{_where_in_file(path)}: "
                         f"{_first_line(e)}")
    model.eval()
    return model, _resized(torch, inputs, batch, path), wanted


def load_model(torch, model, batch, seed):
    """load() of a Python file (preset "file"), or export_archive.load() of a torch.export
    archive (preset "export"): (module, inputs, class name; "" for an archive)."""
    if model.get("preset") == "export":
        import export_archive
        return export_archive.load(torch, model.get("options", {}), batch, seed)
    return load(torch, model.get("options", {}), batch, seed)


def set_mode(model, train):
    """model.train(train), but for a module torch.export made: its graph keeps the mode it was
    exported in, and its train() and eval() raise NotImplementedError."""
    try:
        model.train(train)
    except NotImplementedError:
        pass


def describe_input(torch, t):
    """An input as tunebench's suites give one: its shape per sample and dtype."""
    out = {"shape": list(t.shape[1:]) or [1], "dtype": str(t.dtype).replace("torch.", "")}
    if not t.is_floating_point() and t.dtype != torch.bool and t.numel():
        out.update(low=int(t.min()), high=int(t.max()) + 1)
    return out


def has_conv2d(torch, model):
    return first_conv_weight(torch, model) is not None


def first_conv_weight(torch, model):
    """The first Conv2d's weight; in a module torch.export made (no Conv2d modules), the weight of
    its graph's first 2-D convolution."""
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            return m.weight
    import export_archive
    return export_archive.first_conv_weight(torch, model)
