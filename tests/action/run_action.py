#!/usr/bin/env python3
"""Runs action.yml's steps as a GitHub runner runs a composite action, locally:

    python3 tests/action/run_action.py ACTION_DIR WORKSPACE key=value…

The inputs are the action's defaults overridden by the key=value pairs. Each step's `if:`
is evaluated (the subset of GitHub's expression language action.yml uses: `inputs.*`,
`steps.<id>.outputs.*`, `github.*`, `always()`, `==`, `!=`, `&&`, `||`, `!`, string
literals), `${{ … }}` in `env:` and `with:` is substituted, a `run:` step runs in bash
(`bash --noprofile --norc -eo pipefail`, as `shell: bash` does) in WORKSPACE with
GITHUB_OUTPUT, GITHUB_PATH, GITHUB_ACTION_PATH and RUNNER_TEMP, and what it writes to
GITHUB_OUTPUT / GITHUB_PATH is taken up for the later steps. A `uses:` step is not run
(it needs GitHub): it is printed as JSON (`uses`, its `with:`) for the caller to check.
After a failed step, only steps whose `if:` holds with `always()` run, as on GitHub.

Prints one JSON object per step ({"name", "ran", "outcome", …}) and, last, {"outputs",
"conclusion"}; exits 0 when every step that ran succeeded, 1 otherwise.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import yaml


class Context:
    def __init__(self, inputs, github):
        self.inputs = inputs
        self.github = github
        self.steps = {}
        self.failed = False

    def lookup(self, path):
        parts = path.split(".")
        if parts[0] == "inputs":
            return self.inputs.get(parts[1], "")
        if parts[0] == "github":
            return self.github.get(parts[1], "")
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return self.steps.get(parts[1], {}).get(parts[3], "")
        raise ValueError(f"unsupported context {path!r}")


TOKEN = re.compile(r"\s*(?:(\|\||&&|==|!=|!|\(|\))|'((?:[^']|'')*)'|([A-Za-z_][A-Za-z0-9_.-]*(?:\(\))?))")


def evaluate(expr, ctx):
    """A GitHub expression over strings: the value (a string, or a bool for comparisons)."""
    tokens, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read {expr[pos:]!r}")
        op, lit, name = m.groups()
        tokens.append(("op", op) if op else ("lit", lit.replace("''", "'")) if lit is not None else ("name", name))
        pos = m.end()
    tokens.append(("end", None))
    i = 0

    def peek():
        return tokens[i]

    def take():
        nonlocal i
        i += 1
        return tokens[i - 1]

    def truthy(v):
        return v is True or (isinstance(v, str) and v != "")

    def primary():
        kind, v = take()
        if kind == "op" and v == "!":
            return not truthy(primary())
        if kind == "op" and v == "(":
            x = orexpr()
            assert take() == ("op", ")")
            return x
        if kind == "lit":
            return v
        if kind == "name":
            if v in ("always()", "success()", "failure()"):
                return {"always()": True, "success()": not ctx.failed, "failure()": ctx.failed}[v]
            if v in ("true", "false"):
                return v == "true"
            return ctx.lookup(v)
        raise ValueError(f"unexpected {v!r} in {expr!r}")

    def comparison():
        left = primary()
        while peek() in (("op", "=="), ("op", "!=")):
            op = take()[1]
            right = primary()
            left = (str(left).lower() == str(right).lower()) if op == "==" else (str(left).lower() != str(right).lower())
        return left

    def andexpr():
        left = comparison()
        while peek() == ("op", "&&"):
            take()
            right = comparison()
            left = right if truthy(left) else left
        return left

    def orexpr():
        left = andexpr()
        while peek() == ("op", "||"):
            take()
            right = andexpr()
            left = left if truthy(left) else right
        return left

    value = orexpr()
    assert peek() == ("end", None), expr
    return value


def substitute(text, ctx):
    def one(m):
        v = evaluate(m.group(1), ctx)
        return ("true" if v else "false") if isinstance(v, bool) else str(v)

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def condition(step, ctx):
    """Whether the step runs: its `if:` (`${{ }}` optional), `success()` by default; after a
    failure only a condition that calls always() / failure() can hold."""
    cond = step.get("if")
    if cond is None:
        return not ctx.failed
    cond = str(cond).strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", cond, re.S)
    cond = m.group(1) if m else cond
    if ctx.failed and not re.search(r"\b(always|failure)\(\)", cond):
        return False
    v = evaluate(cond, ctx)
    return v is True or (isinstance(v, str) and v != "")


def read_outputs(path):
    out = {}
    with open(path) as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and "=" not in line.split("<<")[0]:
            key, delim = line.split("<<", 1)
            value = []
            i += 1
            while lines[i] != delim:
                value.append(lines[i])
                i += 1
            out[key] = "\n".join(value)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out


def main():
    action_dir, workspace = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    given = dict(a.split("=", 1) for a in sys.argv[3:])
    with open(os.path.join(action_dir, "action.yml")) as f:
        action = yaml.safe_load(f)
    assert action["runs"]["using"] == "composite", "a composite action"
    inputs = {k: str(v.get("default", "")) for k, v in action.get("inputs", {}).items()}
    unknown = set(given) - set(inputs)
    assert not unknown, f"inputs the action does not declare: {unknown}"
    inputs.update({k: v.replace("\\n", "\n") for k, v in given.items()})
    github = {
        "server_url": "https://github.com",
        "repository": "example/models",
        "sha": "0123456789abcdef0123456789abcdef01234567",
        "action_path": action_dir,
        "action_repository": "",
        "action_ref": "",
        "workspace": workspace,
    }
    ctx = Context(inputs, github)
    temp = tempfile.mkdtemp(prefix="runner-temp-")
    path_file = os.path.join(temp, "github_path")
    open(path_file, "w").close()
    for n, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {n}")
        report = {"name": name, "ran": False}
        if not condition(step, ctx):
            print(json.dumps(report), flush=True)
            continue
        report["ran"] = True
        if "uses" in step:
            report["uses"] = step["uses"]
            report["with"] = {k: substitute(v, ctx) for k, v in step.get("with", {}).items()}
            report["outcome"] = "not run here"
            print(json.dumps(report), flush=True)
            continue
        assert step.get("shell") == "bash", f"{name}: shell: bash"
        output_file = os.path.join(temp, f"output_{n}")
        open(output_file, "w").close()
        env = dict(os.environ)
        with open(path_file) as f:
            extra = [p for p in f.read().splitlines() if p]
        env["PATH"] = os.pathsep.join(list(reversed(extra)) + [env.get("PATH", "")])
        env.update(GITHUB_OUTPUT=output_file, GITHUB_PATH=path_file, GITHUB_ACTION_PATH=action_dir, RUNNER_TEMP=temp, GITHUB_WORKSPACE=workspace)
        env.update({k: substitute(v, ctx) for k, v in step.get("env", {}).items()})
        script = substitute(step["run"], ctx)
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace, env=env)
        report["exit"] = r.returncode
        report["outcome"] = "success" if r.returncode == 0 else "failure"
        if "id" in step:
            ctx.steps[step["id"]] = read_outputs(output_file)
            report["outputs"] = ctx.steps[step["id"]]
        if r.returncode != 0:
            ctx.failed = True
        print(json.dumps(report), flush=True)
    outputs = {k: substitute(v.get("value", ""), ctx) for k, v in action.get("outputs", {}).items()}
    print(json.dumps({"outputs": outputs, "conclusion": "failure" if ctx.failed else "success"}), flush=True)
    return 1 if ctx.failed else 0


if __name__ == "__main__":
    sys.exit(main())
