#!/usr/bin/env python3
"""Compiles a C++ benchmark model ahead of time with Inductor (torch.export → AOTInductor
package) through its Python twin (models/python/twins.py). The `compile` knob's worker runs it
when its package cache lacks the package it needs; it is also a command for a person:

  .venv/bin/python models/python/aoti_compile.py REQUEST_DIR PACKAGE_DIR
  .venv/bin/python models/python/aoti_compile.py --check REQUEST_DIR

REQUEST_DIR holds what the worker wrote: request.json ({"model", "config", "device", "mode",
"tolerance"}), state.pt (the C++ model's parameters and buffers by name, torch::pickle_save),
inputs.pt (the batch as a list of tensors) and expected.pt (the C++ model's inference output on
it). Into PACKAGE_DIR (created; must not exist) it writes model.pt2, the generated code under
code/, and meta.json: compile seconds, package bytes, kernels in the generated code, the twin's
agreement with the C++ output, the torch version. Exit 0 done; 2 bad request or a twin that does
not match the C++ model (the message says what differs); 1 compilation failed.

--check only builds the twin and compares it with the C++ model (names, shapes, output) and
prints what it found as JSON: the twins' agreement test (tests/test_compile_knob.cpp).

Modes (the knob's values): "default" (Inductor's defaults), "max-autotune" (Inductor benchmarks
kernel choices: GEMM templates on the CPU, Triton configs on CUDA).
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile

MODES = {"default": {}, "max-autotune": {"max_autotune": True}}


def fail(code, message):
    print(f"aoti_compile: {message}", file=sys.stderr)
    sys.exit(code)


def twin_of(request_dir):
    """The request, the twin holding the C++ model's tensors, the batch, the C++ output, the
    twin's output, the largest difference of the two, and the torch module."""
    try:
        with open(os.path.join(request_dir, "request.json")) as f:
            request = json.load(f)
    except (OSError, ValueError) as e:
        fail(2, f"{request_dir}/request.json: {e}")
    if request.get("mode") not in MODES:
        fail(2, f"mode {request.get('mode')!r} is not one of {', '.join(MODES)}")

    import torch  # after the cheap checks: importing torch takes seconds

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import twins

    device = torch.device(request.get("device", "cpu"))

    import torch.jit._pickle  # noqa: F401 (the module is not imported by torch itself)

    def load(name):
        # torch::pickle_save tags a dict's element types and builds a list of tensors with these
        # two functions: the globals the files need beyond what torch.load trusts by default.
        with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag,
                                               torch.jit._pickle.build_tensorlist]):
            return torch.load(os.path.join(request_dir, name), map_location=device)

    try:
        state, inputs, expected = dict(load("state.pt")), list(load("inputs.pt")), load("expected.pt")
    except Exception as e:
        fail(2, f"{request_dir}: cannot read the request's tensors: {type(e).__name__}: "
                f"{str(e).splitlines()[0]}")
    try:
        twin = twins.build(request["model"], request["config"], state).to(device)
    except twins.TwinError as e:
        fail(2, str(e))
    with torch.no_grad():
        eager = twin(*inputs)
    if eager.shape != expected.shape:
        fail(2, f"{request['model']}: the twin's output is {list(eager.shape)}, the C++ model's "
                f"{list(expected.shape)}")
    difference = (eager - expected).abs().max().item()
    return request, twin, inputs, expected, difference, state, torch


def keep_generated_code(package, code_dir):
    """Copies the package's generated code into code_dir; returns its kernel count (counted by
    their definitions) and the copied files' names."""
    kernels = 0
    sources = []
    with zipfile.ZipFile(package) as z:
        for name in z.namelist():
            if name.endswith((".cpp", ".py", ".h", ".json")) and "/" in name:
                os.makedirs(code_dir, exist_ok=True)
                target = os.path.join(code_dir, os.path.basename(name))
                with z.open(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                sources.append(os.path.basename(name))
                if name.endswith(".cpp"):
                    text = open(target, errors="replace").read()
                    # CPU kernels: extern "C" void cpp_fused_…(; CUDA: Triton kernel launches.
                    kernels += len(set(re.findall(r"void\s+(cpp_fused_\w+)\s*\(", text)))
                    kernels += len(set(re.findall(r"\b(triton_\w+)\b", text)))
    return kernels, sources


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    check_only = bool(argv) and argv[0] == "--check"
    if check_only:
        argv = argv[1:]
    if len(argv) != (1 if check_only else 2):
        print(__doc__, file=sys.stderr)
        return 2
    request_dir = argv[0]
    package_dir = None if check_only else argv[1]
    if package_dir and os.path.exists(package_dir):
        fail(2, f"{package_dir} exists; the package directory is written once")
    request, twin, inputs, expected, difference, state, torch = twin_of(request_dir)
    mode = request["mode"]
    scale = expected.abs().max().item()
    tolerance = float(request.get("tolerance", 1e-4))
    agrees = difference <= tolerance * max(scale, 1.0)
    if check_only:
        print(json.dumps({"model": request["model"], "tensors": len(state),
                          "elements": sum(t.numel() for t in state.values()),
                          "max_abs_difference": difference, "reference_max_abs": scale,
                          "agrees": agrees}))
        return 0 if agrees else 2
    # The twin computes what the C++ model computed, on the same weights and batch.
    if not agrees:
        fail(2, f"{request['model']}: the twin's output differs from the C++ model's by "
                f"{difference:.3g} (largest |output| {scale:.3g}, tolerance {tolerance:g})")

    os.makedirs(os.path.dirname(os.path.abspath(package_dir)), exist_ok=True)
    # Named after the package, so that the worker, holding the package's lock, can remove what a
    # compile it stopped at its deadline left here.
    work = tempfile.mkdtemp(prefix=f".aoti-{os.path.basename(os.path.abspath(package_dir))}-",
                            dir=os.path.dirname(os.path.abspath(package_dir)))
    try:
        package = os.path.join(work, "model.pt2")
        started = time.perf_counter()
        with torch.no_grad():
            exported = torch.export.export(twin, tuple(inputs))
        export_seconds = time.perf_counter() - started
        # A cold compilation, as a new configuration costs: Inductor's own caches (of graphs and
        # kernels, under /tmp) would make the recorded compile time depend on what ran before.
        torch._inductor.config.force_disable_caches = True
        try:
            torch._inductor.aoti_compile_and_package(
                exported, package_path=package, inductor_configs=dict(MODES[mode]))
        except Exception as e:  # Inductor's own errors are many; its message is the useful part
            fail(1, f"AOTInductor failed: {type(e).__name__}: {str(e).splitlines()[0]}")
        compile_seconds = time.perf_counter() - started

        kernels, sources = keep_generated_code(package, os.path.join(work, "code"))
        with torch.no_grad():
            compiled = torch._inductor.aoti_load_package(package)
            out = compiled(*inputs)
        compiled_difference = (out - expected).abs().max().item()
        meta = {
            "model": request["model"],
            "mode": mode,
            "device": request.get("device", "cpu"),
            "torch_version": torch.__version__,
            "export_seconds": round(export_seconds, 3),
            "compile_seconds": round(compile_seconds, 3),
            "package_bytes": os.path.getsize(package),
            "kernels": kernels,
            "sources": sorted(sources),
            "twin_max_abs_difference": difference,
            "compiled_max_abs_difference": compiled_difference,
            "reference_max_abs": scale,
        }
        with open(os.path.join(work, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        os.replace(work, package_dir)  # complete or absent: never a half-written package
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
