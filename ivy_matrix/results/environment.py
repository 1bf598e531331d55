"""A leg's environment: which versions of which packages its tests ran against.

Pure: no I/O (commands/environment.py runs the command that reports it). The action's own
Python is private, so it cannot import the test environment's torch or jax: the versions come
from a command run in the test environment (``--env-command``, which prints a JSON object
``{package: version}``), by default :data:`DEFAULT_SCRIPT` run with the ``python`` on the PATH
for the ``--track-packages`` list, and from a result file's ``<properties>`` (pytest's
``record_testsuite_property``).

An environment is kept as sorted ``(package, version)`` pairs (:data:`Env`, hashable, so a
:class:`~ivy_matrix.model.Source` holding one stays a dictionary key), at most
:data:`MAX_PACKAGES` of them, each name and version at most :data:`VALUE_CAP` characters: a
leg file or a state document may come from anyone, and one environment is stored per job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ivy_matrix.escaping import escape_name
from ivy_matrix.jsonshape import MalformedError

# One environment: (package, version) pairs, sorted by package.
Env = tuple[tuple[str, str], ...]

MAX_PACKAGES = 64
VALUE_CAP = 100
# JSON's "\ud800" escapes give a str no encoding can write.
_SURROGATE = re.compile("[\ud800-\udfff]")

# Run as ``python -c DEFAULT_SCRIPT PACKAGE...`` in the test environment: each installed
# package's version, and for one installed from git (PEP 610 ``direct_url.json``) its commit.
# Packages not installed are left out. Kept to the standard library and one process.
DEFAULT_SCRIPT = """\
import importlib.metadata as m, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        d = m.distribution(name)
    except m.PackageNotFoundError:
        continue
    version = d.version
    try:
        url = json.loads(d.read_text("direct_url.json") or "null")
    except ValueError:
        url = None
    vcs = url.get("vcs_info") if isinstance(url, dict) else None
    if isinstance(vcs, dict) and isinstance(vcs.get("commit_id"), str):
        version += "+git." + vcs["commit_id"][:12]
    found[name] = version
print(json.dumps(found))
"""


def cap_env(pairs: Iterable[tuple[str, str]]) -> Env:
    """``pairs`` as an :data:`Env`: names and versions cut to size, the first
    :data:`MAX_PACKAGES` names in sorted order (a later pair of one name wins)."""
    found = {str(name)[:VALUE_CAP]: str(version)[:VALUE_CAP] for name, version in pairs if name}
    return tuple(sorted(found.items()))[:MAX_PACKAGES]


def redacted_env(env: Env, redact: Callable[[str], str]) -> Env:
    """``env`` with the secrets ``redact`` hides out of its names and versions."""
    return cap_env((redact(name), redact(version)) for name, version in env)


def joined(*envs: Env) -> Env:
    """Several reports of one job's environment as one (a later report's version wins)."""
    return cap_env(pair for env in envs for pair in env)


def parse_env_output(text: str) -> Env:
    """What an env command printed: a JSON object of package names to versions (strings or
    numbers). :class:`ValueError` with the reason when it is not one."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError("its output is not JSON") from None
    if not isinstance(document, dict):
        raise ValueError("its output is not a JSON object of package names to versions")  # noqa: TRY004  -- one error kind for every bad output
    pairs = []
    for name, version in document.items():
        if isinstance(version, bool) or not isinstance(version, (str, int, float)):
            raise ValueError(f"the version of {name!r:.60} is not a string")  # noqa: TRY004  -- one error kind for every bad output
        for value in (name, str(version)):
            if _SURROGATE.search(value):
                raise ValueError(
                    f"{value!r:.60} holds a lone surrogate (\\ud800-\\udfff), which is no "
                    f"character; it cannot be recorded"
                )
        pairs.append((name, str(version)))
    return cap_env(pairs)


def env_of(value: object) -> Env:
    """An environment as a state document or leg file keeps it (a JSON object; None for
    none); :class:`MalformedError` when it is not a flat object of strings."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise MalformedError(f"'env': expected an object of package versions, got {value!r:.60}")
    return cap_env(value.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One package whose version differs between two environments ("" where it is absent)."""

    package: str
    before: str
    after: str


def env_diff(before: Env, after: Env) -> tuple[Change, ...]:
    """The packages whose versions differ from ``before`` to ``after``, by name."""
    old: Mapping[str, str] = dict(before)
    new: Mapping[str, str] = dict(after)
    return tuple(
        Change(package=name, before=old.get(name, ""), after=new.get(name, ""))
        for name in sorted(old.keys() | new.keys())
        if old.get(name, "") != new.get(name, "")
    )


def describe_env(env: Env) -> str:
    """An environment in one line: ``jax 0.4.31, numpy 2.1.0``."""
    return ", ".join(f"{name} {version}" for name, version in env)


def env_lines(envs: Sequence[tuple[str, Env]]) -> str:
    """The job summary's lines of the recorded environments ("" when none was)."""
    return "".join(
        f"Environment of {escape_name(label)}: {escape_name(describe_env(env))}.\n\n"
        for label, env in envs
    )
