"""Seeded generator of realistic pytest-style JUnit XML result sets for the benchmarks.

Writes one directory per backend (``OUT/torch/results-1.xml`` ...) holding the same tests, with the
backend in every parametrized id, the way Ivy's CI matrix produces them. About 5% of cases fail
(multi-line tracebacks, some after surefire-style ``<rerunFailure>``s), about 5% are skipped, about
1% pass after a rerun (``<flakyFailure>``), and a few carry ``<system-out>``. The verbosity is tuned
to about 145 bytes per case, so 200k cases are about 29 MB in total.

Output is deterministic for a given seed and streamed: each file is written in chunks of a few
thousand cases, and only one byte per case (its planned outcome) is held in memory, so that the
``<testsuite>`` counts can be written before the cases.

``--single-file --bytes 1G`` writes one large file instead (for the flat-memory check).

I/O: writes files under ``--out`` only.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

BACKENDS = ("torch", "numpy", "tensorflow", "jax")

# Outcome codes, one byte per case in the plan.
PASS, FAIL, ERROR, SKIP, FLAKY, RERUN_FAIL = range(6)
# Cumulative thresholds over random() for each outcome: ~88% pass, ~5% failures (errors included,
# a third of them after reruns), ~5% skipped, ~1% flaky.
_THRESHOLDS = (
    (0.030, FAIL),
    (0.035, ERROR),
    (0.050, RERUN_FAIL),
    (0.100, SKIP),
    (0.110, FLAKY),
)
SYSTEM_OUT_RATE = 0.02  # share of passing cases that carry captured stdout
CHUNK_CASES = 4096  # cases rendered per write() call

_GROUPS = (
    "test_functional.test_core",
    "test_functional.test_nn",
    "test_stateful",
    "test_frontends.test_torch",
    "test_frontends.test_jax",
    "test_misc",
)
_MODULE_WORDS = (
    "gradients",
    "random",
    "layers",
    "activations",
    "losses",
    "norms",
    "general",
    "creation",
    "elementwise",
    "linalg",
    "manipulation",
    "searching",
    "set",
    "sorting",
    "statistical",
    "utility",
    "dtype",
    "device",
    "meta",
    "nest",
    "converters",
    "optimizers",
    "sequential",
    "module",
    "tensor",
    "indexing",
    "reduction",
    "pooling",
    "blas",
    "fft",
    "logic",
    "math",
)
_FN_WORDS = (
    "abs",
    "add",
    "argmax",
    "argsort",
    "batch_norm",
    "cat",
    "clip",
    "conv1d",
    "conv2d",
    "cumsum",
    "det",
    "dropout",
    "einsum",
    "exp",
    "flip",
    "gather",
    "gelu",
    "inv",
    "layer_norm",
    "log",
    "matmul",
    "max_pool2d",
    "mean",
    "multinomial",
    "norm",
    "one_hot",
    "pad",
    "permute",
    "qr",
    "relu",
    "reshape",
    "roll",
    "scatter",
    "sigmoid",
    "softmax",
    "sort",
    "split",
    "sqrt",
    "stack",
    "std",
    "svd",
    "tanh",
    "tile",
    "topk",
    "unique",
    "var",
    "where",
    "zeros_like",
    "stop_gradient",
    "jac",
    "grad",
    "vmap",
    "randint",
    "shuffle",
    "uniform",
    "linear",
    "lstm",
    "embedding",
)
_DTYPES = ("float32", "float16", "int32", "bfloat16", "float64", "int64", "bool", "uint8")
_ERRORS = (
    (
        "AssertionError",
        "the results from backend {b} and ground truth framework numpy do not match",
    ),
    ("AssertionError", "assert 0.30000001 == 0.3 within rtol=1e-05, atol=1e-08"),
    ("ValueError", "shapes (3,4) and (5,6) not aligned: 4 (dim 1) != 5 (dim 0)"),
    ("TypeError", "unsupported operand type(s) for +: 'Tensor' and 'NoneType'"),
    ("RuntimeError", "expected scalar type Float but found Half"),
    ("IvyBackendException", "{b}: <lambda>: dtype {d} is not supported"),
)
_SKIPS = (
    "function not implemented for backend {b}",
    "unsupported dtype {d} on cpu",
    "hypothesis: no valid examples",
)


def _escape(text: str) -> str:
    """Escape text for use inside an XML attribute or element."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


@dataclass(frozen=True, slots=True)
class Test:
    """One row of a dashboard: a test function with a parametrization, in one module."""

    classname: str
    fn: str
    params: str  # the id after the backend, e.g. "float32-False-False"


def plan_modules(seed: int, modules: int) -> list[str]:
    """Return ``modules`` distinct dotted module classnames, deterministic for the seed."""
    rng = random.Random(f"modules-{seed}")
    names: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(names) < modules:
        group = _GROUPS[i % len(_GROUPS)]
        word = rng.choice(_MODULE_WORDS)
        name = f"ivy_tests.test_ivy.{group}.test_{word}"
        if name in seen:
            name = f"{name}{i}"
        seen.add(name)
        names.append(name)
        i += 1
    return names


def iter_tests(seed: int, rows: int, modules: list[str], *, variants: int = 4) -> Iterator[Test]:
    """Yield ``rows`` distinct tests spread over the modules, module by module (as pytest runs them).

    Each test function gets 1 to ``variants`` parametrizations; ``variants=1`` gives one case
    per function, so one dashboard row per case (Ivy's hypothesis tests).
    """
    rng = random.Random(f"tests-{seed}")
    per_module = [
        rows // len(modules) + (1 if m < rows % len(modules) else 0) for m in range(len(modules))
    ]
    for classname, count in zip(modules, per_module, strict=True):
        made = 0
        fn_index = 0
        order = rng.sample(range(len(_FN_WORDS)), len(_FN_WORDS))
        while made < count:
            # Each function name appears once per module; later ones get a numeric suffix.
            fn = f"test_{_FN_WORDS[order[fn_index % len(order)]]}"
            if fn_index >= len(order):
                fn = f"{fn}_{fn_index // len(order)}"
            fn_index += 1
            drawn = min(count - made, rng.randint(1, 4))
            if variants < 4:
                drawn = min(drawn, variants)
            for v in range(drawn):
                flags = ("False", "True")
                yield Test(classname, fn, f"{flags[v & 1]}-{flags[v >> 1]}")
            made += drawn


def plan_outcomes(rng: random.Random, count: int) -> bytearray:
    """Draw one outcome code per case (kept as bytes: the only per-case state in memory)."""
    plan = bytearray(count)
    rand = rng.random
    for i in range(count):
        r = rand()
        if r < 0.110:
            for threshold, code in _THRESHOLDS:
                if r < threshold:
                    plan[i] = code
                    break
    return plan


def _traceback(rng: random.Random, test: Test, backend: str, kind: str, message: str) -> str:
    path = test.classname.replace(".", "/")
    depth = 1 if rng.random() < 0.8 else 2
    frames = [
        f'{path}.py:{rng.randint(10, 900)}: in {test.fn}\n    ret = helpers.test_function(input_dtypes, fn_name="{test.fn[5:]}")'
    ]
    frames.extend(
        f"ivy_tests/test_ivy/helpers/function_testing.py:{rng.randint(100, 2000)}: in test_function\n"
        f"    ret, ret_np = get_ret_and_flattened_np_array(backend_to_test, fn)"
        for _ in range(depth - 1)
    )
    frames.append(f"E   {kind}: {message}")
    if rng.random() < 0.15:
        frames.append(f"E   Falsifying example: {test.fn}(backend_fw='{backend}', on_device='cpu')")
    return _escape("\n".join(frames))


class Writer:
    """Renders cases for one file and streams them to ``out`` in chunks."""

    def __init__(self, out: TextIO, backend: str, rng: random.Random) -> None:
        self.out = out
        self.backend = backend
        self.rng = rng
        self.buf: list[str] = []

    def case(self, test: Test, code: int) -> None:
        rng = self.rng
        b = self.backend
        time = f"{rng.random() * (3.0 if code == FAIL else 0.4):.3f}"
        head = f'<testcase classname="{test.classname}" name="{test.fn}[cpu-{b}-{test.params}]" time="{time}"'
        buf = self.buf
        if code == PASS:
            if rng.random() < SYSTEM_OUT_RATE:
                buf.append(
                    f"{head}><system-out>seed={rng.randint(0, 99999)} backend={b}\n</system-out></testcase>\n"
                )
            else:
                buf.append(head + " />\n")
        elif code == SKIP:
            reason = _escape(rng.choice(_SKIPS).format(b=b, d=rng.choice(_DTYPES)))
            buf.append(
                f'{head}><skipped type="pytest.skip" message="{reason}">{test.classname.rsplit(".", 1)[-1]}.py:{rng.randint(10, 900)}: {reason}</skipped></testcase>\n'
            )
        elif code == FLAKY:
            kind, msg = rng.choice(_ERRORS)
            msg = _escape(msg.format(b=b, d=rng.choice(_DTYPES)))
            buf.append(
                f'{head}><flakyFailure message="{kind}: {msg}" type="{kind}"><stackTrace>{kind}</stackTrace></flakyFailure></testcase>\n'
            )
        else:
            kind, msg = rng.choice(_ERRORS)
            msg = msg.format(b=b, d=rng.choice(_DTYPES))
            tb = _traceback(rng, test, b, kind, msg)
            emsg = _escape(f"{kind}: {msg}")
            parts = [f"{head}>"]
            if code == RERUN_FAIL:
                parts.extend(
                    f'<rerunFailure message="{emsg}" type="{kind}"><stackTrace>{kind}</stackTrace></rerunFailure>'
                    for _ in range(rng.randint(1, 2))
                )
            if code == ERROR:
                parts.append(
                    f'<error message="failed on setup with &quot;{emsg}&quot;">{tb}</error>'
                )
            else:
                parts.append(f'<failure message="{emsg}">{tb}</failure>')
            if rng.random() < 0.1:
                parts.append(
                    f"<system-out>backend={b} seed={rng.randint(0, 99999)}\ntrace: {test.fn}\n</system-out>"
                )
            parts.append("</testcase>\n")
            buf.append("".join(parts))
        if len(buf) >= CHUNK_CASES:
            self.flush()

    def flush(self) -> None:
        self.out.write("".join(self.buf))
        self.buf.clear()


def _counts(plan: bytearray) -> dict[str, int]:
    return {
        "tests": len(plan),
        "failures": plan.count(FAIL) + plan.count(RERUN_FAIL),
        "errors": plan.count(ERROR),
        "skipped": plan.count(SKIP),
    }


def write_file(
    path: Path, tests: Iterator[Test], *, count: int, backend: str, seed: int, file_no: int
) -> dict[str, int]:
    """Write one result file of the next ``count`` tests; ``seed`` draws the outcomes."""
    n = count
    plan = plan_outcomes(random.Random(f"plan-{seed}-{backend}-{file_no}"), n)
    counts = _counts(plan)
    rng = random.Random(f"cases-{seed}-{backend}-{file_no}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n", buffering=1 << 20) as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n')
        out.write(
            f'  <testsuite name="pytest" errors="{counts["errors"]}" failures="{counts["failures"]}" '
            f'skipped="{counts["skipped"]}" tests="{n}" time="{n * 0.21:.3f}" '
            f'timestamp="2026-11-21T12:{file_no % 60:02d}:00.000000+00:00" hostname="runner-{backend}-{file_no}">\n'
        )
        w = Writer(out, backend, rng)
        for code in plan:
            w.case(next(tests), code)
        w.flush()
        out.write("  </testsuite>\n</testsuites>\n")
    return counts


def generate_set(
    out: Path,
    *,
    cases: int,
    seed: int,
    modules: int,
    files_per_backend: int,
    backends: tuple[str, ...],
    outcome_seed: int | None = None,
    variants: int = 4,
) -> dict[str, Any]:
    """Write a result set: ``cases`` in total, split evenly over backends, then files by module.

    ``seed`` chooses the tests; ``outcome_seed`` (default: ``seed``) chooses how they ended, so a
    later run of the same tests can be generated with a different outcome seed.
    """
    outcomes = seed if outcome_seed is None else outcome_seed
    # Rows are always cases / 4, so a subset of backends gets the same tests as the full matrix.
    rows = cases // len(BACKENDS)
    mods = plan_modules(seed, modules)
    # Shard contiguous modules into files, as a CI job split by test module would.
    bounds = [round(i * len(mods) / files_per_backend) for i in range(files_per_backend + 1)]
    per_module = [rows // len(mods) + (1 if m < rows % len(mods) else 0) for m in range(len(mods))]
    files: list[dict[str, object]] = []
    total_bytes = 0
    for backend in backends:
        tests = iter_tests(seed, rows, mods, variants=variants)
        for f in range(files_per_backend):
            n = sum(per_module[bounds[f] : bounds[f + 1]])
            if n == 0:
                continue
            path = out / backend / f"results-{f + 1}.xml"
            counts = write_file(path, tests, count=n, backend=backend, seed=outcomes, file_no=f + 1)
            size = path.stat().st_size
            total_bytes += size
            files.append({"path": str(path.relative_to(out)), "bytes": size, **counts})
    manifest: dict[str, Any] = {
        "cases": rows * len(backends),
        "rows_per_backend": rows,
        "seed": seed,
        "outcome_seed": outcomes,
        "modules": modules,
        "files_per_backend": files_per_backend,
        "variants": variants,
        "backends": list(backends),
        "bytes": total_bytes,
        "bytes_per_case": round(total_bytes / max(1, rows * len(backends)), 1),
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _endless_tests(seed: int, modules: list[str]) -> Iterator[Test]:
    rows = 100_000
    while True:
        yield from iter_tests(seed, rows, modules)
        seed += 1


def generate_single(path: Path, *, target_bytes: int, seed: int, modules: int) -> dict[str, Any]:
    """Write one file of about ``target_bytes`` (case count estimated from a rendered sample)."""
    mods = plan_modules(seed, modules)
    sample = path.with_suffix(".sample.xml")
    write_file(
        sample, _endless_tests(seed, mods), count=20_000, backend="torch", seed=seed, file_no=1
    )
    per_case = sample.stat().st_size / 20_000
    sample.unlink()
    count = max(1, int(target_bytes / per_case))
    counts = write_file(
        path, _endless_tests(seed, mods), count=count, backend="torch", seed=seed, file_no=1
    )
    return {"path": str(path), "bytes": path.stat().st_size, **counts}


def parse_size(text: str) -> int:
    """Parse ``1G``, ``500M``, ``64K`` or a plain number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="output directory (or file with --single-file)"
    )
    parser.add_argument(
        "--cases", type=int, default=200_000, help="test cases in total, over all backends"
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="chooses the tests (and, by default, their outcomes)"
    )
    parser.add_argument(
        "--outcome-seed",
        type=int,
        default=None,
        help="chooses the outcomes only (a later run of the same tests)",
    )
    parser.add_argument(
        "--modules",
        type=int,
        default=0,
        help="modules (dashboards); default: about 1 per 1,250 cases of one backend, 8 to 120",
    )
    parser.add_argument("--files-per-backend", type=int, default=4)
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help="comma-separated subset of " + ",".join(BACKENDS),
    )
    parser.add_argument(
        "--single-file", action="store_true", help="write one file of --bytes instead of a set"
    )
    parser.add_argument("--bytes", default="1G", help="size of the single file, e.g. 10M or 1G")
    args = parser.parse_args(argv)
    modules = args.modules or default_modules(args.cases)
    if args.single_file:
        info = generate_single(
            args.out, target_bytes=parse_size(args.bytes), seed=args.seed, modules=modules
        )
    else:
        backends = tuple(b for b in args.backends.split(",") if b)
        info = generate_set(
            args.out,
            cases=args.cases,
            seed=args.seed,
            modules=modules,
            files_per_backend=args.files_per_backend,
            backends=backends,
            outcome_seed=args.outcome_seed,
        )
        info = {k: v for k, v in info.items() if k != "files"}
    print(json.dumps(info))
    return 0


def default_modules(cases: int) -> int:
    """About one dashboard per 1,250 cases of one backend, 8 to 120 (Ivy: ~60 test modules)."""
    return max(8, min(120, math.ceil(cases / len(BACKENDS) / 1250)))


if __name__ == "__main__":
    sys.exit(main())
