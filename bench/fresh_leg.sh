#!/usr/bin/env bash
# CPU seconds of one matrix leg on a fresh runner: the action's install step, then one update.
#
#   bench/fresh_leg.sh ACTION_YML summary|branch [API_URL]
#
# ACTION_YML is the action.yml whose install step is timed (for the figures in
# docs/development.md: an older one from `git show REV:action.yml > old.yml`, and the current
# one). Each call copies the tracked files to a fresh folder (no __pycache__), makes a fresh venv
# with python3 (PYTHON to change it; setup-python's Python on a runner), installs from the lock
# (this needs the package index) and runs one update of examples/results: the summary target
# only, or with API_URL (a FakeGitHub: `python tests/github/fake_server.py --no-limits --seed S`)
# the branch target too, which imports PyGithub. Prints "install X run Y" in CPU seconds (user
# plus system, children included). Bytecode writing must be on (PYTHONDONTWRITEBYTECODE unset).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
action_yml=$(realpath "$1"); kind=$2; api_url=${3:-}
python=${PYTHON:-python3}
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
mkdir -p "$root/action" "$root/work"
(cd "$repo" && git ls-files -z | xargs -0 -I{} cp --parents {} "$root/action/")
cp -r "$repo/examples/results" "$root/work/"
"$python" - "$action_yml" "$root/install.sh" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
step = next(s for s in doc["runs"]["steps"] if s.get("id") == "install")
open(sys.argv[2], "w", encoding="utf-8").write(step["run"])
PY
unset PYTHONDONTWRITEBYTECODE
: > "$root/output"
/usr/bin/time -f "%U %S" -o "$root/install.time" env GIVEN_PYTHON= SETUP_PYTHON="$python" \
  VENV="$root/venv" GITHUB_ACTION_PATH="$root/action" GITHUB_OUTPUT="$root/output" \
  bash -e "$root/install.sh" > /dev/null 2>&1
args=(update --junit 'results/**/*.xml' --backend-from-path 'results/(?P<backend>[^/]+)/')
args+=(--run-id "$RANDOM" --repository o/r)
if [ "$kind" = branch ]; then
  args+=(--targets branch,summary --job-id 7 --token t --api-url "$api_url")
fi
(cd "$root/work" && /usr/bin/time -f "%U %S" -o "$root/run.time" \
  "$root/venv/bin/python" "$root/action/entrypoint.py" "${args[@]}" > /dev/null 2>&1)
echo "install $(awk '{print $1 + $2}' "$root/install.time") run $(awk '{print $1 + $2}' "$root/run.time")"
