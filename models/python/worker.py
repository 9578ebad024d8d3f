#!/usr/bin/env python3
"""tunebench's worker in Python: the same protocol as the C++ worker (`tunebench worker`), for the
arms that need Python torch — torch.compile in training (knob compile) and the Python frontend
against the C++ one on the same LibTorch (knob worker_build = "python").

  PYTHON models/python/worker.py worker < TRIAL_JSON

reads one trial (harness/core/records.h, TrialSpec as JSON) on stdin and writes one result (TrialResult as
JSON) on stdout; everything else goes to stderr. It runs trials alone (the planner's "processes"
design): a paired or resident request is refused with a result that says so.

The model is the C++ model's twin (twins.py) holding the C++ model's own tensors, on the C++
model's own batch: `$TUNEBENCH_EXECUTABLE twin-request` (the orchestrator sets the variable)
builds the C++ model from the trial's seed and writes its tensors, batch and target, so both
frontends train the same function from the same weights and the correctness guard compares them.
The step is the C++ worker's default: gradients zeroed in place, the model's loss, backward, SGD
(lr 1e-3, momentum 0.9); with amp (true or "bf16": the CPU's autocast) the forward and the loss
run under bf16 autocast, as the C++ worker's do. Settings it understands: compile, worker_build,
amp, and the process knobs
that act through the environment the orchestrator already set (omp_threads, omp_affinity,
allocator, malloc_tunables, numa_bind); any other is refused by name.

Evidence: what the C++ worker reads back about the process (threads, environment, mapped
libraries, allocator, affinity), "frontend": "python", and under "compile" the forward that ran
("eager" or "torch.compile"), the mode, compiled graphs and graph breaks (dynamo's counters), the
compiled module's calls in the measured steps, and the first step's seconds (compilation
included) as compile_seconds.
"""
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORTED = {"compile", "worker_build", "amp", "omp_threads", "omp_affinity", "allocator",
             "malloc_tunables", "numa_bind"}
ENV_EVIDENCE = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND",
                "OMP_SCHEDULE", "GOMP_CPU_AFFINITY", "KMP_AFFINITY", "KMP_BLOCKTIME",
                "LD_PRELOAD", "MALLOC_CONF", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                "MALLOC_TOP_PAD_"]
LIBRARIES = ["jemalloc", "tcmalloc", "libgomp", "libomp", "libiomp", "openblas", "libblas",
             "libmkl", "libdnnl"]


class TrialError(Exception):
    """What makes the trial fail, in words."""


def result(status="failed", error="", **fields):
    out = {"status": status, "error": error, "sample_seconds": [], "sample_cpu_seconds": [],
           "probe_seconds": 0.0, "reference_seconds": [], "peak_rss_bytes": 0,
           "page_faults_per_iteration": 0.0, "device_peak_bytes": -1, "items_per_second": 0.0,
           "check_value": 0.0, "evidence": {}, "worker_stderr": ""}
    out.update(fields)
    return out


def mapped_libraries():
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            name = line.rstrip().rsplit("/", 1)[-1] if "/" in line else ""
            if any(key in name for key in LIBRARIES) and name not in found:
                found.append(name)
    return found


def process_evidence(torch):
    libraries = mapped_libraries()
    allocator = "glibc"
    for lib in libraries:
        allocator = "jemalloc" if "jemalloc" in lib else "tcmalloc" if "tcmalloc" in lib else allocator
    return {
        "torch_threads": torch.get_num_threads(),
        "env": {k: os.environ[k] for k in ENV_EVIDENCE if k in os.environ},
        "mapped_libraries": libraries,
        "allocator": allocator,
        "cpu_affinity": ",".join(str(c) for c in sorted(os.sched_getaffinity(0))),
        "executable": os.path.abspath(__file__),
        "frontend": "python",
        "python": sys.executable,
        "torch_version": torch.__version__.split("+")[0],
        "device": "cpu",
    }


def page_faults():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


def twin_request(spec, folder):
    """The C++ model's tensors, batch and target for this trial, written by tunebench."""
    exe = os.environ.get("TUNEBENCH_EXECUTABLE", "")
    if not exe:
        raise TrialError("TUNEBENCH_EXECUTABLE is not set: the orchestrator names the tunebench "
                         "that writes the model's tensors")
    done = subprocess.run([exe, "twin-request", "--out", folder], input=json.dumps(spec),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise TrialError(f"twin-request failed: {(done.stderr or done.stdout).strip()[-500:]}")


def run(spec):
    import torch
    import torch.jit._pickle  # noqa: F401

    sys.path.insert(0, HERE)
    import twins

    unknown = sorted(set(spec.get("settings", {})) - SUPPORTED)
    if unknown:
        raise TrialError(f"the Python worker does not run setting(s) {', '.join(unknown)}; it runs "
                         f"{', '.join(sorted(SUPPORTED))}")
    settings = spec.get("settings", {})
    if settings.get("device", "cpu") != "cpu":
        raise TrialError("the Python worker runs on the CPU only")
    if "omp_threads" in settings:
        torch.set_num_threads(int(settings["omp_threads"]))
    torch.manual_seed(int(spec.get("seed", 1)))
    with tempfile.TemporaryDirectory(prefix="tunebench-py-") as folder:
        twin_request(spec, folder)
        with open(os.path.join(folder, "request.json")) as f:
            request = json.load(f)

        def load(name):
            with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag,
                                                   torch.jit._pickle.build_tensorlist]):
                return torch.load(os.path.join(folder, name))

        state, inputs, target = dict(load("state.pt")), list(load("inputs.pt")), load("target.pt")
    name = request["model"]
    try:
        model = twins.build(name, request["config"], state)
    except twins.TwinError as e:
        raise TrialError(str(e))
    train = spec["mode"] == "train"
    model.train(train)

    compile_value = settings.get("compile", False)
    evidence = {"compile": {"forward": "eager"}}
    calls = [0]
    forward = model
    if compile_value not in (False, None):
        mode = None if compile_value == "default" else compile_value
        # A cold compilation, as in aoti_compile.py: Inductor's caches under /tmp would make the
        # first step's time depend on what compiled before (seen: 12.9 s cold, 4.2 s warm).
        torch._inductor.config.force_disable_caches = True
        forward = torch.compile(model, mode=mode)
        evidence["compile"] = {"forward": "torch.compile", "mode": compile_value}

    amp = settings.get("amp", False)
    if amp not in (False, True, "bf16"):
        raise TrialError(f"amp={json.dumps(amp)}: the Python worker runs bf16 autocast on the CPU "
                         "(true or \"bf16\") or none")
    autocast_seen = [False]

    def run_forward(*args):
        calls[0] += 1
        return forward(*args)

    def autocast():
        # The C++ worker's around_forward: the forward and the loss inside bf16 autocast.
        if amp is False:
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=torch.bfloat16)

    def loss_of():
        with autocast():
            autocast_seen[0] = torch.is_autocast_enabled("cpu")
            return twins.loss(name, model, run_forward, inputs, target)

    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9) if train else None

    def step():
        if train:
            optimizer.zero_grad(set_to_none=False)
            loss = loss_of()
            loss.backward()
            optimizer.step()
        else:
            with torch.no_grad(), autocast():
                autocast_seen[0] = torch.is_autocast_enabled("cpu")
                run_forward(*inputs)

    # The guard, as the C++ worker's: training, the loss after one step from the seeded weights
    # (the first step compiles: its time is the compilation's); inference, mean |output|.
    started = time.perf_counter()
    if train:
        step()
        first_step = time.perf_counter() - started
        with torch.no_grad():
            check_value = loss_of().item()
        step()
    else:
        with torch.no_grad(), autocast():
            check_value = run_forward(*inputs).double().abs().mean().item()
        first_step = time.perf_counter() - started
    if compile_value not in (False, None):
        from torch._dynamo.utils import counters
        evidence["compile"].update(
            compile_seconds=round(first_step, 3),
            graphs=int(counters["stats"]["unique_graphs"]),
            graph_breaks=int(sum(counters["graph_break"].values())))

    for _ in range(int(spec["warmup"])):
        step()
    calls[0] = 0
    samples, cpu_samples = [], []
    faults_before = page_faults()
    start_ns = time.monotonic_ns()
    iterations = int(spec["iterations"])
    for _ in range(int(spec["samples"])):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(iterations):
            step()
        samples.append((time.perf_counter() - wall) / iterations)
        cpu_samples.append((time.process_time() - cpu) / iterations)
    end_ns = time.monotonic_ns()
    measured = len(samples) * iterations
    evidence["compile"]["package_calls"] = calls[0]
    evidence.update(process_evidence(torch))
    evidence.update(measured_start_ns=start_ns, measured_end_ns=end_ns,
                    grad_mode_in_step=train, model=request["config"],
                    autocast_in_step=autocast_seen[0],
                    autocast_dtype="bf16" if autocast_seen[0] else "none")
    median = sorted(samples)[len(samples) // 2]
    return result("ok", sample_seconds=samples, sample_cpu_seconds=cpu_samples,
                  peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  page_faults_per_iteration=(page_faults() - faults_before) / max(measured, 1),
                  items_per_second=int(spec["batch"]) / median if median > 0 else 0.0,
                  check_value=check_value, evidence=evidence)


def main(argv):
    if argv[:1] != ["worker"]:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a library prints goes to stderr; only the result to stdout
    try:
        text = sys.stdin.readline()
        spec = json.loads(text)
        if spec.get("paired") or spec.get("resident"):
            raise TrialError("the Python worker runs trials alone: give the experiment "
                             "\"design\": \"processes\"")
        outcome = run(spec)
        code = 0
    except TrialError as e:
        outcome, code = result(error=f"python worker: {e}"), 1
    except Exception as e:  # a library's error: its type and first line say what went wrong
        outcome = result(error=f"python worker: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        code = 1
    out.write(json.dumps(outcome) + "\n")
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
