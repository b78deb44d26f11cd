#!/usr/bin/env bash
# The ways tensorpeek reaches people outside cargo, each run as its user would run it:
#   wheel       `pip install tensorpeek`: maturin (from PyPI, in a fresh venv) builds the
#               wheel; it is installed into another fresh venv and run there
#               (`tensorpeek`, `python -m tensorpeek`);
#   pre-commit  the hook of .pre-commit-hooks.yaml through the real `pre-commit` package, as
#               a user configures it: a `.pre-commit-config.yaml` naming this repository (a
#               snapshot of the working tree as one commit) at a `rev`, in a temporary git
#               repository; pre-commit builds the hook's environment once for that rev;
#   action      action.yml's steps through tests/action/run_action.py (a local runner:
#               its `run:` steps executed, its `uses:` step checked), the SARIF it writes
#               validated by the `jsonschema` package against the committed schema, as is
#               a scan of every pickle and GGUF fixture (tests/scan.rs' log).
# Every check prints PASS or FAIL; nothing is skipped (a missing tool is a FAIL). The last
# line is "integrations: N passed, N failed"; the exit status is 1 when any failed.
# WHEEL_SIZE_FILE, when set, receives the wheel's size in bytes.
# WHEEL_PROFILE (default release) is the Cargo profile of every build here: maturin's own
# (`--profile`) and pip's (MATURIN_PEP517_ARGS, for the pre-commit hook's and the action's
# installs). scripts/test.sh passes `dev` with the shared target directory, so that the
# wheel is linked from what the native tests have just compiled instead of compiling every
# crate again: what these checks test is how the wheel is built, installed and run.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
profile=${WHEEL_PROFILE:-release}
[ "$profile" = release ] || export MATURIN_PEP517_ARGS="--profile $profile"
work=$(mktemp -d "${TMPDIR:-/tmp}/tensorpeek-integrations.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # check NAME COMMAND…: PASS when the command succeeds
  local name=$1
  shift
  if "$@" > "$work/last.log" 2>&1; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    sed 's/^/    | /' "$work/last.log" | tail -n 40
    failed=$((failed + 1))
  fi
}
exits() { # exits CODE COMMAND…: the command exits with CODE
  local want=$1
  shift
  "$@"
  local got=$?
  [ "$got" -eq "$want" ] || { echo "exit status $got, expected $want"; return 1; }
}
contains() { # contains TEXT COMMAND…: the command's output (stdout+stderr) holds TEXT
  local text=$1
  shift
  local out
  out=$("$@" 2>&1)
  printf '%s\n' "$out"
  grep -qF -- "$text" <<< "$out" || { echo "no \"$text\" in the output"; return 1; }
}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

echo "== wheel (maturin, bindings = bin)"
python3 -m venv "$work/build-venv"
check "pip install maturin into a fresh venv" "$work/build-venv/bin/pip" install --quiet "maturin>=1.9,<2.0"
check "maturin build --profile $profile" "$work/build-venv/bin/maturin" build --profile "$profile" --out "$work/wheels"
wheel=$(ls "$work"/wheels/tensorpeek-*.whl 2>/dev/null | head -n 1)
check "one wheel, named for this version" test -f "$wheel" -a "$(basename "${wheel:-none}" | cut -d- -f2)" = "$version"
check "the wheel holds the tensorpeek binary as a script, the python package, no worker" python3 -c '
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print("\n".join(names))
assert "tensorpeek-%s.data/scripts/tensorpeek" % sys.argv[2] in names
assert "tensorpeek/__main__.py" in names
assert not any("worker" in n for n in names)' "${wheel:-missing.whl}" "$version"
if [ -n "${WHEEL_SIZE_FILE:-}" ] && [ -f "${wheel:-}" ]; then stat -c %s "$wheel" > "$WHEEL_SIZE_FILE"; fi
[ -f "${wheel:-}" ] && echo "   wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes"
python3 -m venv "$work/use-venv"
check "pip install the wheel into another fresh venv" "$work/use-venv/bin/pip" install --quiet "${wheel:-missing.whl}"
check "tensorpeek on the venv's PATH: --version" contains "tensorpeek $version" env PATH="$work/use-venv/bin:/usr/bin:/bin" tensorpeek --version
check "tensorpeek scan tests/fixtures/pickle exits 1 (dangerous files)" exits 1 env PATH="$work/use-venv/bin:/usr/bin:/bin" tensorpeek scan tests/fixtures/pickle
check "tensorpeek scan of a clean GGUF exits 0" exits 0 env PATH="$work/use-venv/bin:/usr/bin:/bin" tensorpeek scan tests/fixtures/scan/template_clean.gguf
check "python -m tensorpeek --version" contains "tensorpeek $version" "$work/use-venv/bin/python" -m tensorpeek --version
check "python -m tensorpeek scan … exits 1 with the dangerous line" contains "dangerous   gguf" exits 1 "$work/use-venv/bin/python" -m tensorpeek scan tests/fixtures/scan
check "python -m tensorpeek passes usage errors through (exit 2)" exits 2 "$work/use-venv/bin/python" -m tensorpeek scan --no-such-flag

echo "== pre-commit hook (.pre-commit-hooks.yaml)"
python3 -m venv "$work/tools-venv"
check "pip install pre-commit and jsonschema into a fresh venv" "$work/tools-venv/bin/pip" install --quiet pre-commit jsonschema
export PRE_COMMIT_HOME=$work/pre-commit-home
git_repo=$work/models
mkdir -p "$git_repo/weights" "$git_repo/docs"
git -C "$git_repo" init --quiet
git -C "$git_repo" config user.email test@example.org
git -C "$git_repo" config user.name test
cp tests/fixtures/one_tensor.safetensors "$git_repo/weights/clean.safetensors"
cp tests/fixtures/scan/template_clean.gguf "$git_repo/weights/chat.gguf"
printf 'not a model\n' > "$git_repo/docs/notes.md"
# The hook's repository: the working tree as it is (tracked and new files, not ignored ones)
# committed once, so that every run below uses one rev and so one hook environment (with
# `try-repo` each run made a new commit, and pip built the wheel again: 45 s each).
hook_repo=$work/hook-repo
mkdir -p "$hook_repo"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$hook_repo"
git -C "$hook_repo" init --quiet
git -C "$hook_repo" add -A
git -C "$hook_repo" -c user.email=test@example.org -c user.name=test commit --quiet -m snapshot
rev=$(git -C "$hook_repo" rev-parse HEAD)
printf 'repos:\n  - repo: %s\n    rev: %s\n    hooks:\n      - id: tensorpeek\n' "$hook_repo" "$rev" > "$git_repo/.pre-commit-config.yaml"
git -C "$git_repo" add -A
hook_run() { (cd "$git_repo" && "$work/tools-venv/bin/pre-commit" run "$@"); }
check "hook passes on staged clean model files (builds the hook once: language python, pip install of this repository)" exits 0 hook_run
cp tests/fixtures/pickle/mal_os_system.pkl "$git_repo/weights/evil.pkl"
cp tests/fixtures/pickle/mal_os_system.pkl "$git_repo/docs/evil.txt"
git -C "$git_repo" add -A
check "hook fails on a staged dangerous pickle and names it" contains "weights/evil.pkl  DangerousGlobal" exits 1 hook_run
check "hook passes only model files (docs/evil.txt is not a model file's name)" bash -c "! (cd '$git_repo' && '$work/tools-venv/bin/pre-commit' run tensorpeek --verbose 2>&1 | grep -q 'docs/evil.txt')"
git -C "$git_repo" rm --cached --quiet weights/evil.pkl docs/evil.txt
rm "$git_repo/weights/evil.pkl" "$git_repo/docs/evil.txt"
check "hook passes again once the pickle is unstaged" exits 0 hook_run

echo "== GitHub Action (action.yml, composite)"
runner() { "$work/tools-venv/bin/python" tests/action/run_action.py "$repo" "$@"; }
# install=none runs use the CLI the wheel installed (first on PATH, as after `pip install tensorpeek`)
runner_none() { PATH="$work/use-venv/bin:$PATH" runner "$@" install=none; }
ws=$work/workspace
mkdir -p "$ws"
cp -r tests/fixtures/pickle "$ws/models"
cp -r tests/fixtures/scan "$ws/gguf"
check "action: install (pip install of the action's folder), scan, upload step, then fail (exit 1)" exits 1 runner "$ws" "paths=models\ngguf" sarif-file=out.sarif
runner "$ws" "paths=models\ngguf" sarif-file=out.sarif > "$work/run.jsonl" 2>"$work/run.err"
step() { python3 -c 'import json, sys; steps = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]; print(json.dumps([s for s in steps if s.get("name") == sys.argv[2] or (sys.argv[2] == "final" and "conclusion" in s)][0]))' "$work/run.jsonl" "$1"; }
check "action: the scan step ran and its exit-code output is 1" contains '"exit-code": "1"' step Scan
check "action: the upload step is github/codeql-action/upload-sarif@v3 with the SARIF file" \
  contains '"uses": "github/codeql-action/upload-sarif@v3", "with": {"sarif_file": "out.sarif", "category": "tensorpeek"}' step "Upload SARIF"
check "action: the fail step ran and failed" contains '"outcome": "failure"' step "Fail on findings"
check "action: outputs exit-code 1 and the SARIF file, conclusion failure" contains '{"outputs": {"exit-code": "1", "sarif-file": "out.sarif"}, "conclusion": "failure"}' step final
check "action: the SARIF log is valid against the SARIF 2.1.0 schema (python jsonschema)" \
  "$work/tools-venv/bin/python" -c 'import json, sys, jsonschema; schema = json.load(open(sys.argv[1])); log = json.load(open(sys.argv[2])); jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log); r = log["runs"][0]["results"]; assert any(x["ruleId"] == "DangerousGlobal" and x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "models/mal_os_system.pkl" for x in r), r[:3]; assert log["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] == "https://github.com/example/models/blob/0123456789abcdef0123456789abcdef01234567/docs/codes.md#filetooshort"; print(len(r), "results")' \
  tests/fixtures/sarif/sarif-2.1.0.json "$ws/out.sarif"
# The log of tests/scan.rs' sarif_points_at_each_import_and_template (the same arguments),
# validated here rather than there: the venv has the validator already.
check "scan --format sarif of every pickle and GGUF fixture is valid SARIF 2.1.0, and a broken copy is not (python jsonschema)" \
  "$work/tools-venv/bin/python" -c 'import json, subprocess, sys, jsonschema; schema = json.load(open(sys.argv[1])); p = subprocess.run([sys.argv[2], "scan", "tests/fixtures/pickle", "tests/fixtures/scan", "--format", "sarif", "--docs-url", "https://example.org/tensorpeek/blob/main/"], capture_output=True); assert p.returncode == 1, p; log = json.loads(p.stdout); v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()); v.validate(log); log["runs"][0]["results"][0]["level"] = "fatal"; assert not v.is_valid(log), "the schema took a broken log"; print(len(log["runs"][0]["results"]), "results")' \
  tests/fixtures/sarif/sarif-2.1.0.json "$work/use-venv/bin/tensorpeek"
check "action: a clean path passes (exit-code 0, no fail step)" contains '"conclusion": "success"' runner_none "$ws" paths=gguf/template_clean.gguf upload=false
check "action: fail-on error lets a dangerous file through" contains '"conclusion": "success"' runner_none "$ws" paths=gguf fail-on=error upload=false
check "action: a usage error (no such path) fails the scan step with exit 2" contains '"exit": 2' runner_none "$ws" paths=no-such-folder

echo "integrations: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
