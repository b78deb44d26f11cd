"""tensorpeek: the command-line tool (a Rust binary installed beside this package).

`python -m tensorpeek …` runs it; `find_tensorpeek_bin()` says where it is.
"""

from tensorpeek.__main__ import find_tensorpeek_bin

__all__ = ["find_tensorpeek_bin"]
