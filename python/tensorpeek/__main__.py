"""`python -m tensorpeek …`: runs the tensorpeek binary that the wheel installed into the
environment's scripts folder, with the same arguments and exit status."""

import os
import shutil
import subprocess
import sys
import sysconfig


def find_tensorpeek_bin() -> str:
    """The tensorpeek executable installed with this package: the scripts folder of this
    interpreter's install scheme, then of the user scheme (`pip install --user`), then
    the `bin` beside a `pip install --target` folder, then PATH."""
    exe = "tensorpeek" + (sysconfig.get_config_var("EXE") or "")
    candidates = [sysconfig.get_path("scripts")]
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if user_scheme and user_scheme in sysconfig.get_scheme_names():
        candidates.append(sysconfig.get_path("scripts", scheme=user_scheme))
    candidates.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin"))
    for folder in candidates:
        path = os.path.join(folder, exe)
        if os.path.isfile(path):
            return path
    found = shutil.which(exe)
    if found:
        return found
    raise FileNotFoundError(f"the {exe} binary was not found (looked in {', '.join(candidates)} and on PATH)")


def main() -> int:
    exe = find_tensorpeek_bin()
    if sys.platform == "win32":
        return subprocess.run([exe, *sys.argv[1:]]).returncode
    os.execv(exe, [exe, *sys.argv[1:]])
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
