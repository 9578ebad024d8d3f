#!/usr/bin/env python3
"""tunebench's worker in Python: the same protocol as the C++ worker (`tunebench worker`), for what
needs Python torch — a user's model from a Python file (models/python/user_model.py) or a
torch.export archive (models/python/export_archive.py), torch.compile
in training (knob compile) and the Python frontend against the C++ one on the same LibTorch (knob
worker_build = "python").

  PYTHON models/python/worker.py worker < REQUEST_JSON
  PYTHON models/python/worker.py inspect < {"preset": P, "options": {...}, "batch": N, "train": BOOL}

`worker` reads one request as the C++ worker does (harness/core/records.h): a TrialSpec (one arm
alone, its TrialResult on stdout), a PairedSpec ("paired": true: both arms in this process,
alternating in ABBA blocks, a PairedResult), or a resident request ("resident": true: one arm of a
resident pair, spoken to one line at a time). Everything else goes to stderr. `inspect` loads a
Python model, runs its forward once (and in training a backward of its loss) and writes what it
offers the knobs (harness/core/model_spec.h, ModelOffer), or {"error": ...} and exit 2.

Two kinds of model:
- a user's model (model "python": options path and class; preset "export", a torch.export
  archive's module, options path and inputs): the step is the user's forward, in
  training its loss (user_model.loss_of), backward and SGD (lr 1e-3, momentum 0.9), and the knobs
  in USER_KNOBS act on it as the C++ worker's do on a built-in model, each read back as the same
  evidence;
- a built-in model's twin (twins.py) holding the C++ model's own tensors, on the C++ model's own
  batch: `$TUNEBENCH_EXECUTABLE twin-request` builds the C++ model from the trial's seed and
  writes its tensors, batch and target, so both frontends train the same function from the same
  weights. The twin runs TWIN_KNOBS.
The process knobs act through the environment the orchestrator set; the worker reads them back.

Evidence: what the C++ worker reads back about the process (threads, environment, mapped
libraries, allocator, affinity), "frontend": "python", each knob's own (grad and inference mode,
autocast, channels-last layout, gradients after zeroing, anomaly mode, profiler, optimizer), and
under "compile" the forward that ran ("eager" or "torch.compile"), the mode, compiled graphs and
graph breaks (dynamo's counters), the compiled module's calls in the measured steps, and the first
step's seconds (compilation included) as compile_seconds.
"""
import contextlib
import copy
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROCESS_KNOBS = {"omp_threads", "omp_affinity", "allocator", "malloc_tunables", "numa_bind"}
HARNESS_SETTINGS = {"slowdown", "fault"}
TWIN_KNOBS = {"compile", "worker_build", "amp"} | PROCESS_KNOBS
# What the worker runs on a user's model: the knobs `inspect` offers (the planner says every other
# knob is not applicable to a Python model, with this reason).
USER_KNOBS = {"no_grad", "inference_mode", "channels_last", "amp", "compile", "zero_grad_none",
              "fused_adamw", "anomaly_off", "profiler_off"} | PROCESS_KNOBS
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


def numa_policy():
    """The worker's NUMA memory policy as the C++ worker reads it (get_mempolicy(2))."""
    import ctypes
    numbers = {"x86_64": 239, "aarch64": 236}
    number = numbers.get(os.uname().machine)
    if number is None:
        return "unknown"
    mode = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, ctypes.byref(mode), None, ctypes.c_ulong(0), None,
                    ctypes.c_ulong(0)) != 0:
        return "unknown"
    names = {0: "default", 1: "preferred", 2: "bind", 3: "interleave"}
    return names.get(mode.value, f"mode {mode.value}")


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
        "numa_policy": numa_policy(),
        "executable": os.path.abspath(__file__),
        "frontend": "python",
        "python": sys.executable,
        "torch_version": torch.__version__.split("+")[0],
        "device": "cpu",
    }


def page_faults():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


def involuntary_switches():
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def peak_rss_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_pressure_total_us():
    """Microseconds some task on the host waited for a CPU since boot; -1 without PSI."""
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some"):
                    return int(line.rsplit("total=", 1)[1])
    except OSError:
        pass
    return -1


def task_schedstat(skip_self=False):
    """(run ns, run-queue wait ns) summed over this process's threads (but the caller's)."""
    me, run_ns, wait_ns = str(__import__("threading").get_native_id()), 0, 0
    for task in os.listdir("/proc/self/task"):
        if skip_self and task == me:
            continue
        try:
            with open(f"/proc/self/task/{task}/schedstat") as f:
                fields = f.read().split()
            run_ns, wait_ns = run_ns + int(fields[0]), wait_ns + int(fields[1])
        except (OSError, IndexError, ValueError):
            pass
    return run_ns, wait_ns


def cpu_probe_seconds():
    """The C++ worker's probe, in Python's terms: a fixed dependent chain of float work."""
    start, x = time.perf_counter(), 1.0
    for _ in range(200_000):
        x = x * 1.0000001 + 1e-9
    return time.perf_counter() - start


def wait_for_quiet_host(limit_s=1.0):
    """(seconds waited, quiet): until a 50 ms window in which tasks waited for a CPU < 10 %."""
    start = time.monotonic()
    while True:
        before = cpu_pressure_total_us()
        if before < 0:
            return time.monotonic() - start, True
        time.sleep(0.05)
        busy = (cpu_pressure_total_us() - before) * 1e-3 / 50
        waited = time.monotonic() - start
        if busy < 0.10:
            return waited, True
        if waited >= limit_s:
            return waited, False


def wait_until_threads_idle(limit_s=0.5):
    """Until this process's other threads (OpenMP's spin on) have stopped running."""
    start = time.monotonic()
    before = sum(task_schedstat(skip_self=True))
    while True:
        time.sleep(0.01)
        now = sum(task_schedstat(skip_self=True))
        waited = time.monotonic() - start
        if now - before < 500_000 or waited >= limit_s:
            return waited
        before = now


def slowdown_fraction(settings):
    """The positive control's stretch ("slowdown": PCT) or the test-only "fault": "slow:PCT"."""
    fraction = float(settings.get("slowdown", 0) or 0) / 100
    fault = settings.get("fault", "")
    if isinstance(fault, str) and fault.startswith("slow:"):
        fraction += float(fault[5:]) / 100
    return fraction


def stretch(seconds, fraction):
    """A busy wait of `fraction` of `seconds` after them, as the C++ worker's stretch."""
    if fraction > 0:
        until = time.perf_counter() + seconds * fraction
        while time.perf_counter() < until:
            pass
    return seconds * (1 + fraction)


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


def import_torch():
    import torch
    import torch.jit._pickle  # noqa: F401
    sys.path.insert(0, HERE)
    return torch


class Arm:
    """One arm of a trial: its model, inputs and settings, and a step() that runs them."""

    def __init__(self, spec):
        torch = self.torch = import_torch()
        import twins
        import user_model
        self.spec, self.settings = spec, spec.get("settings", {})
        self.user = spec["model"].get("name") == "python"
        self.train = spec["mode"] == "train"
        allowed = (USER_KNOBS if self.user else TWIN_KNOBS) | HARNESS_SETTINGS
        unknown = sorted(set(self.settings) - allowed)
        if unknown:
            raise TrialError(f"the Python worker does not run setting(s) {', '.join(unknown)} on "
                             f"{'a Python model' if self.user else 'a built-in model'}; it runs "
                             f"{', '.join(sorted(allowed - HARNESS_SETTINGS))}")
        if self.settings.get("fault", "") not in ("",) and not str(
                self.settings["fault"]).startswith("slow:"):
            raise TrialError(f"fault {json.dumps(self.settings['fault'])} is the C++ worker's")
        if self.settings.get("device", "cpu") != "cpu":
            raise TrialError("the Python worker runs on the CPU only")
        if "omp_threads" in self.settings:
            torch.set_num_threads(int(self.settings["omp_threads"]))
        seed = int(spec.get("seed", 1))
        self.target, self.evidence = None, {}
        if self.user:
            try:
                self.model, self.inputs, _ = user_model.load_model(torch, spec["model"],
                                                                   int(spec["batch"]), seed)
            except user_model.ModelError as e:
                raise TrialError(str(e))
            self.path = spec["model"]["options"]["path"]
            self.loss = lambda out: user_model.loss_of(torch, self.model, out, self.path)
            self.evidence["model"] = {"file": self.path,
                                      "parameters": sum(p.numel() for p in self.model.parameters())}
        else:
            torch.manual_seed(seed)
            self.model, self.inputs, self.target, name, config = self.twin(twins, spec)
            self.twin_loss = lambda run: twins.loss(name, self.model, run, self.inputs, self.target)
            self.evidence["model"] = config
        user_model.set_mode(self.model, self.train)
        self.layout()
        self.forward, self.calls = self.compiled(), [0]
        self.optimizer = self.make_optimizer() if self.train else None
        self.amp = self.settings.get("amp", False)
        if self.amp not in (False, True, "bf16"):
            raise TrialError(f"amp={json.dumps(self.amp)}: the Python worker runs bf16 autocast "
                             "on the CPU (true or \"bf16\") or none")
        self.seen, self.steps = {}, 0

    def twin(self, twins, spec):
        torch = self.torch
        with tempfile.TemporaryDirectory(prefix="tunebench-py-") as folder:
            twin_request(spec, folder)
            with open(os.path.join(folder, "request.json")) as f:
                request = json.load(f)

            def load(name):
                with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag,
                                                       torch.jit._pickle.build_tensorlist]):
                    return torch.load(os.path.join(folder, name))

            state, inputs, target = dict(load("state.pt")), list(load("inputs.pt")), load("target.pt")
        try:
            model = twins.build(request["model"], request["config"], state)
        except twins.TwinError as e:
            raise TrialError(str(e))
        return model, inputs, target, request["model"], request["config"]

    def layout(self):
        """channels_last: the module's 4-D parameters and the first input in NHWC."""
        if "channels_last" not in self.settings:
            return
        torch, on = self.torch, self.settings["channels_last"] is True
        import user_model
        if on:
            self.model.to(memory_format=torch.channels_last)
            if self.inputs[0].dim() == 4:
                self.inputs[0] = self.inputs[0].contiguous(memory_format=torch.channels_last)
        weight = user_model.first_conv_weight(torch, self.model)
        self.evidence["input_channels_last"] = bool(
            self.inputs[0].dim() == 4 and
            self.inputs[0].is_contiguous(memory_format=torch.channels_last) and
            (on or not self.inputs[0].is_contiguous()))
        self.evidence["weight_channels_last"] = bool(
            weight is not None and weight.is_contiguous(memory_format=torch.channels_last) and
            (on or not weight.is_contiguous()))

    def compiled(self):
        torch, value = self.torch, self.settings.get("compile", False)
        self.evidence["compile"] = {"forward": "eager"}
        if value in (False, None):
            return self.model
        # A cold compilation, as in aoti_compile.py: Inductor's caches under /tmp would make the
        # first step's time depend on what compiled before (seen: 12.9 s cold, 4.2 s warm).
        torch._inductor.config.force_disable_caches = True
        self.evidence["compile"] = {"forward": "torch.compile", "mode": value}
        return torch.compile(self.model, mode=None if value == "default" else value)

    def make_optimizer(self):
        torch, fused = self.torch, self.settings.get("fused_adamw")
        params = [p for p in self.model.parameters() if p.requires_grad]
        if fused is None:
            self.optimizer_name = "sgd"
            return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        # The C++ worker's pair: one fused AdamW kernel, or AdamW parameter by parameter.
        self.optimizer_name = "adamw_fused" if fused else "adamw"
        kwargs = {"fused": True} if fused else {"foreach": False}
        return torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), **kwargs)

    def run_forward(self, *args):
        self.calls[0] += 1
        return self.forward(*args)

    def autocast(self):
        if self.amp is False:
            return contextlib.nullcontext()
        return self.torch.autocast("cpu", dtype=self.torch.bfloat16)

    def grad_context(self):
        """The inference step's autograd state: no_grad ON or inference_mode OFF give no-grad,
        inference_mode ON inference mode; otherwise grad mode stays on. A twin runs no-grad."""
        torch, s = self.torch, self.settings
        if s.get("inference_mode") is True:
            return torch.inference_mode()
        if not self.user or s.get("no_grad") is True or s.get("inference_mode") is False:
            return torch.no_grad()
        return contextlib.nullcontext()

    def profiler(self):
        if self.settings.get("profiler_off", True) is not False:
            return contextlib.nullcontext()
        return self.torch.autograd.profiler.profile()

    def read_modes(self):
        torch = self.torch
        self.seen.update(grad=torch.is_grad_enabled(), inference=torch.is_inference_mode_enabled(),
                         autocast=torch.is_autocast_enabled("cpu"),
                         anomaly=torch.is_anomaly_enabled(),
                         profiler=bool(torch._C._autograd._profiler_enabled()))

    def loss_of(self):
        with self.autocast():
            self.read_modes()
            if self.user:
                return self.loss(self.run_forward(*self.inputs))
            return self.twin_loss(self.run_forward)

    def step(self):
        self.steps += 1
        with self.profiler() as prof:
            if self.train:
                anomaly = self.settings.get("anomaly_off") is False
                with self.torch.autograd.set_detect_anomaly(anomaly):
                    self.optimizer.zero_grad(set_to_none=self.settings.get("zero_grad_none") is True)
                    if self.steps == 2:
                        self.seen["grads_defined"] = any(
                            p.grad is not None for p in self.model.parameters())
                    self.loss_of().backward()
                    self.optimizer.step()
            else:
                with self.grad_context(), self.autocast():
                    self.read_modes()
                    self.run_forward(*self.inputs)
        if prof is not None:
            self.seen["profiler_events"] = len(prof.function_events)

    def guard(self):
        """The correctness guard, as the C++ worker's: training, the loss after one step from the
        seeded weights (the first step compiles: its time is the compilation's); inference, the
        mean |output| (the first output's)."""
        torch = self.torch
        torch.manual_seed(int(self.spec.get("seed", 1)) + 2)  # dropout alike in both arms
        started = time.perf_counter()
        if self.train:
            self.step()
            first_step = time.perf_counter() - started
            with torch.no_grad():
                self.check_value = self.loss_of().item()
            self.step()
        else:
            import user_model
            with torch.no_grad(), self.autocast():
                out = self.run_forward(*self.inputs)
            if self.user:
                out = user_model.outputs_of(torch, out, self.path)[0]
            self.check_value = out.double().abs().mean().item()
            first_step = time.perf_counter() - started
        if self.evidence["compile"]["forward"] == "torch.compile":
            from torch._dynamo.utils import counters
            self.evidence["compile"].update(
                compile_seconds=round(first_step, 3),
                graphs=int(counters["stats"]["unique_graphs"]),
                graph_breaks=int(sum(counters["graph_break"].values())))

    def warm_up(self):
        self.guard()
        for _ in range(int(self.spec["warmup"])):
            self.step()
        self.calls[0] = 0

    def sample(self):
        """(wall s, CPU s) per iteration of `iterations` steps, stretched by the slowdown."""
        iterations = int(self.spec["iterations"])
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(iterations):
            self.step()
        seconds = (time.perf_counter() - wall) / iterations
        cpu_seconds = (time.process_time() - cpu) / iterations
        fraction = slowdown_fraction(self.settings)
        return stretch(seconds * iterations, fraction) / iterations, cpu_seconds

    def read_back(self):
        torch, e = self.torch, self.evidence
        e["compile"]["package_calls"] = self.calls[0]
        e.update(process_evidence(torch))
        e.update(grad_mode_in_step=self.seen.get("grad", self.train),
                 autocast_in_step=self.seen.get("autocast", False),
                 autocast_dtype="bf16" if self.seen.get("autocast") else "none")
        if self.user:
            s = self.settings
            if self.train:
                e["anomaly_mode_in_step"] = self.seen.get("anomaly", False)
                e["grads_defined_after_zero"] = self.seen.get("grads_defined", False)
                e["optimizer"] = self.optimizer_name
            else:
                e["inference_mode_in_step"] = self.seen.get("inference", False)
            if "profiler_off" in s:
                e["profiler_enabled_in_step"] = self.seen.get("profiler", False)
                e["profiler_events_per_step"] = self.seen.get("profiler_events", 0)
        if slowdown_fraction(self.settings) > 0:
            e["slowdown_fraction"] = slowdown_fraction(self.settings)
        return e


def arm_result(arm, samples, faults, peak_rss):
    """One arm's TrialResult from its samples (dicts of PairedSample, or plain (wall, cpu))."""
    seconds = [s["seconds"] for s in samples]
    median = sorted(seconds)[len(seconds) // 2] if seconds else 0
    out = result("ok", sample_seconds=seconds,
                 sample_cpu_seconds=[s["cpu_seconds"] for s in samples],
                 peak_rss_bytes=peak_rss,
                 page_faults_per_iteration=faults / max(len(seconds) * int(arm.spec["iterations"]), 1),
                 items_per_second=int(arm.spec["batch"]) / median if median > 0 else 0.0,
                 check_value=arm.check_value, evidence=arm.read_back())
    if samples and "block" in samples[0]:
        out["paired_samples"] = samples
    return out


def take_block(arm, on, block, count, out):
    """Block `block` of `arm`: `count` samples with their contamination figures; its faults."""
    faults = page_faults()
    for position in range(count):
        start_ns = time.monotonic_ns()
        switches, pressure = involuntary_switches(), cpu_pressure_total_us()
        wait = task_schedstat()[1]
        seconds, cpu_seconds = arm.sample()
        wall_ns = time.monotonic_ns() - start_ns
        share = -1.0
        if pressure >= 0 and wall_ns > 0:
            share = min(max((cpu_pressure_total_us() - pressure) * 1e3 / wall_ns, 0.0), 1.0)
        n = int(arm.spec["iterations"])
        out.append({"on": on, "block": block, "position": position, "seconds": seconds,
                    "cpu_seconds": cpu_seconds,
                    "wait_seconds": (task_schedstat()[1] - wait) * 1e-9 / n,
                    "involuntary_switches": involuntary_switches() - switches,
                    "start_ns": start_ns, "cpu_pressure": share})
    return page_faults() - faults


def abba_order(blocks, on_first):
    """records.h's: blocks 0 and 3 of every four are the first arm's."""
    return [on_first if b % 4 in (0, 3) else not on_first for b in range(blocks)]


def pairing_evidence(blocks, block_samples, on_first, processes):
    return {"blocks": blocks, "block_samples": block_samples, "on_first": on_first,
            "processes": processes}


def before_block(block, waits):
    if block % 2:
        return
    seconds, quiet = wait_for_quiet_host()
    waits["quiet_wait_seconds"] = waits.get("quiet_wait_seconds", 0.0) + seconds
    waits["busy_pairs"] = waits.get("busy_pairs", 0) + (0 if quiet else 1)


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def run_alone(spec):
    probe = cpu_probe_seconds()
    arm = Arm(spec)
    arm.warm_up()
    reset_peak_rss()
    faults, start_ns = page_faults(), time.monotonic_ns()
    samples = []
    for _ in range(int(spec["samples"])):
        seconds, cpu_seconds = arm.sample()
        samples.append({"seconds": seconds, "cpu_seconds": cpu_seconds})
    arm.evidence.update(measured_start_ns=start_ns, measured_end_ns=time.monotonic_ns())
    out = arm_result(arm, samples, page_faults() - faults, peak_rss_bytes())
    out["probe_seconds"] = probe
    return out


def run_paired(request):
    """Both arms in this process, alternating in ABBA blocks (worker/paired.cpp's run_paired)."""
    probe = cpu_probe_seconds()
    blocks, block_samples = int(request["blocks"]), int(request["block_samples"])
    on_first = bool(request.get("on_first", False))
    first_spec, second_spec = ((request["on"], request["off"]) if on_first
                               else (request["off"], request["on"]))
    first, second = Arm(first_spec), Arm(second_spec)
    arms = {on_first: first, not on_first: second}
    first.warm_up()
    second.warm_up()
    reset_peak_rss()
    samples, faults, waits = {False: [], True: []}, {False: 0, True: 0}, {}
    start_ns = time.monotonic_ns()
    for block, is_on in enumerate(abba_order(blocks, on_first)):
        before_block(block, waits)
        faults[is_on] += take_block(arms[is_on], is_on, block, block_samples, samples[is_on])
    end_ns, peak = time.monotonic_ns(), peak_rss_bytes()
    out = {"status": "ok", "error": "", "probe_seconds": probe}
    for is_on, arm in arms.items():
        arm.evidence.update(measured_start_ns=start_ns, measured_end_ns=end_ns)
        arm.evidence["paired"] = dict(pairing_evidence(blocks, block_samples, on_first, 1),
                                      shared_model=False, **waits)
        r = arm_result(arm, samples[is_on], faults[is_on], peak)
        r["probe_seconds"] = probe
        out["on" if is_on else "off"] = r
    return out


def write_line(out, value):
    out.write(json.dumps(value) + "\n")
    out.flush()


def run_resident(request, lines, out):
    """One arm of a resident pair (records.h's protocol): ready, then a block per request."""
    spec, on = request["trial"], bool(request.get("on", False))
    pairing = spec.get("pairing", {})
    probe = cpu_probe_seconds()
    arm = Arm(spec)
    arm.warm_up()
    settle = wait_until_threads_idle()
    write_line(out, {"ready": True})
    reset_peak_rss()
    samples, faults, waits, blocks = [], 0, {}, 0
    start_ns = time.monotonic_ns()
    for line in lines:
        command = json.loads(line)
        if command.get("end"):
            break
        block = int(command["block"])
        before_block(block, waits)
        faults += take_block(arm, on, block, int(pairing.get("block_samples", 1)), samples)
        blocks += 1
        settle += wait_until_threads_idle()
        write_line(out, {"block": block})
    else:
        return 1  # the orchestrator went away without ending the pair: no result to give
    arm.evidence.update(measured_start_ns=start_ns, measured_end_ns=time.monotonic_ns())
    arm.evidence["paired"] = dict(pairing_evidence(int(pairing.get("blocks", blocks)),
                                                   int(pairing.get("block_samples", 1)),
                                                   bool(pairing.get("on_first", False)), 2),
                                  settle_seconds=settle, **waits)
    r = arm_result(arm, samples, faults, peak_rss_bytes())
    r["probe_seconds"] = probe
    write_line(out, r)
    return 0


# What the plan says of a torch.export archive's module (export_archive.py).
EXPORTED_NOTE = ("its graph keeps the mode it was exported in (dropout, batch norm): train() and "
                 "eval() of an exported module are not supported")


def inspect_step(step):
    """Says on stderr which step inspect is in: the orchestrator names it should it not return
    within its deadline (harness/run/python_model.cpp reads the last such line)."""
    sys.stderr.write(f"{INSPECT_STEP}{step}\n")
    sys.stderr.flush()


INSPECT_STEP = "tunebench inspect step: "


def inspect(request):
    """What a Python model offers the knobs (harness/core/model_spec.h, ModelOffer)."""
    options, batch = request.get("options", {}), int(request.get("batch", 1))
    exported = request.get("preset") == "export"
    if exported:
        import export_archive
        export_archive.check_layout(os.path.abspath(options.get("path", "")))
    torch = import_torch()
    import user_model
    torch.set_num_threads(1)  # the orchestrator only reads; the workers measure
    inspect_step("load")
    model, inputs, name = user_model.load_model(torch, request, batch, 1)
    path = os.path.abspath(options.get("path", ""))
    inspect_step("forward")
    try:
        with torch.no_grad():
            out = model(*inputs)
    except Exception as e:
        shapes = ", ".join(f"[{', '.join(map(str, t.shape))}] {str(t.dtype)[6:]}" for t in inputs)
        given = ("as --input gives them" if options.get("inputs")
                 else "the example inputs' rows repeated to it")
        takes = f"; its graph takes {export_archive.takes(model)}" if exported else ""
        raise user_model.ModelError(
            f"{path}: its forward rejected inputs of shapes {shapes} (batch {batch}: {given}"
            f"{takes}): {user_model._first_line(e)}")
    outputs = user_model.outputs_of(torch, out, path)
    trainable = any(p.requires_grad for p in model.parameters())
    if request.get("train"):
        if not trainable:
            raise user_model.ModelError(f"{path}: {name or 'its module'} has no parameter that "
                                        f"requires a gradient: it cannot be trained; measure it "
                                        f"in inference (mode infer)")
        user_model.set_mode(model, True)
        inspect_step("backward")
        try:
            user_model.loss_of(torch, model, model(*inputs), path).backward()
        except user_model.ModelError:
            raise
        except Exception as e:
            graph = " (through the exported graph, as it was exported)" if exported else ""
            raise user_model.ModelError(f"{path}: the backward of its loss failed{graph}: "
                                        f"{user_model._first_line(e)}; measure it in inference "
                                        f"(mode infer)")
    answer = {"file": path, "class": name, "sha256": user_model.sha256_of(path),
              "parameters": sum(p.numel() for p in model.parameters()), "trainable": trainable,
              "conv2d": bool(user_model.has_conv2d(torch, model) and inputs[0].dim() == 4 and
                             inputs[0].is_floating_point()),
              "output": ("tensor" if isinstance(out, torch.Tensor)
                         else f"tuple of {len(outputs)} tensors"),
              "inputs": [user_model.describe_input(torch, t) for t in inputs],
              "knobs": sorted(USER_KNOBS)}
    if exported:
        answer.update(format="torch.export", note=EXPORTED_NOTE)
    return answer


def error_text(e):
    if isinstance(e, TrialError):
        return f"python worker: {e}"
    text = str(e)
    return f"python worker: {type(e).__name__}: {text.splitlines()[0] if text else ''}"


def main(argv):
    if argv[:1] not in (["worker"], ["inspect"]):
        print(__doc__, file=sys.stderr)
        return 2
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a library prints goes to stderr; only the result to stdout
    if argv[0] == "inspect":
        sys.path.insert(0, HERE)
        try:
            write_line(out, inspect(json.loads(sys.stdin.read())))
            return 0
        except Exception as e:
            import user_model
            text = str(e) if isinstance(e, user_model.ModelError) else error_text(e)
            write_line(out, {"error": text})
            return 2
    first = sys.stdin.readline()
    try:
        request = json.loads(first)
    except json.JSONDecodeError:  # a request over several lines
        first += sys.stdin.read()
        request = json.loads(first)
    paired = isinstance(request, dict) and bool(request.get("paired"))
    try:
        if isinstance(request, dict) and request.get("resident"):
            return run_resident(request, sys.stdin, out)
        rest = sys.stdin.read()
        if rest.strip():
            request = json.loads(first + rest)
        outcome, code = (run_paired(request) if paired else run_alone(request)), 0
    except Exception as e:
        outcome, code = result(error=error_text(e)), 1
        if paired:
            outcome = {"status": "failed", "error": error_text(e), "probe_seconds": 0.0}
    write_line(out, outcome)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
