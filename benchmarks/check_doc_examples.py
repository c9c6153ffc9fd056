# SPDX-License-Identifier: BSD-3-Clause
"""Check that the outputs pasted in docs/tutorial.md and docs/verify.md are what their example
scripts (docs/tutorial.py, docs/verify_examples.py) print today.

The scripts are run in full (a few seconds each). Their output is compared with the pasted
blocks: the text must be identical up to whitespace, every number must agree with the documented
one to 0.1 % or one unit of its last printed digit, and a documented zero must still print as
zero. The tutorial's code block must also be the code of docs/tutorial.py (same syntax tree).

Run:  PYTHONPATH=. python benchmarks/check_doc_examples.py           (print the fresh outputs,
                                                                      in the docs' order)
      PYTHONPATH=. python benchmarks/check_doc_examples.py --check   (exit 1 on any mismatch)
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RTOL = 1e-3
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
SECTION = re.compile(r"^# (\d+)\. ", re.MULTILINE)  # the headers verify_examples.py prints


def run(script: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if proc.returncode != 0:
        raise SystemExit(f"{script.name} failed (exit {proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def unit(token: str) -> float:
    """One unit of the last printed digit of a number as printed (3.718e-01 -> 1e-4)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def compare(documented: str, printed: str, where: str) -> list[str]:
    """Mismatches between a documented block and the fresh output (see the module docstring)."""
    doc_nums, out_nums = NUMBER.findall(documented), NUMBER.findall(printed)
    doc_text = " ".join(NUMBER.sub("#", documented).split())
    out_text = " ".join(NUMBER.sub("#", printed).split())
    if doc_text != out_text or len(doc_nums) != len(out_nums):
        for d, o in zip(documented.splitlines(), printed.splitlines(), strict=False):
            if " ".join(NUMBER.sub("#", d).split()) != " ".join(NUMBER.sub("#", o).split()):
                return [f"{where}: text differs\n  docs: {d.strip()}\n  now:  {o.strip()}"]
        return [
            f"{where}: {len(documented.splitlines())} lines documented, {len(printed.splitlines())} printed"
        ]
    errors = []
    for d, o in zip(doc_nums, out_nums, strict=True):
        a, b = float(d), float(o)
        ok = b == 0.0 if a == 0.0 else abs(a - b) <= max(RTOL * abs(a), unit(d))
        if not ok:
            line = next((ln for ln in printed.splitlines() if o in ln), "")
            errors.append(f"{where}: documented {d}, printed {o}   ({line.strip()})")
    return errors


def fenced(text: str, lang: str = "") -> list[str]:
    """Contents of the fenced blocks whose opening line is exactly ```lang, in order."""
    blocks: list[str] = []
    current: list[str] = []
    opener: str | None = None
    for line in text.splitlines():
        if opener is None and line.startswith("```"):
            opener, current = line[3:].strip(), []
        elif opener is not None and line.strip() == "```":
            if opener == lang:
                blocks.append("\n".join(current))
            opener = None
        elif opener is not None:
            current.append(line)
    return blocks


def code_tree(source: str) -> str:
    """The syntax tree of a module without its docstring (the docs show the code only)."""
    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def tutorial(check: bool) -> list[str]:
    md = (DOCS / "tutorial.md").read_text(encoding="utf-8")
    script = DOCS / "tutorial.py"
    out = run(script)
    if not check:
        print(f"== {script.name} (docs/tutorial.md, the block after 'Output:')\n{out}")
        return []
    errors = []
    code = fenced(md, "python")[0]
    if code_tree(code) != code_tree(script.read_text(encoding="utf-8")):
        errors.append("tutorial.md: its code block is not the code of docs/tutorial.py")
    documented = fenced(md.split("\nOutput:\n", 1)[1])[0]
    return errors + compare(documented, out, "tutorial.md")


def verify(check: bool) -> list[str]:
    md = (DOCS / "verify.md").read_text(encoding="utf-8")
    out = run(DOCS / "verify_examples.py")
    parts = SECTION.split(out)[1:]  # number, text, number, text, ...
    printed = {
        int(n): body.split("\n", 1)[1].strip("\n")
        for n, body in zip(parts[::2], parts[1::2], strict=True)
    }
    if not check:
        for n, body in printed.items():
            print(f"== verify_examples.py: docs/verify.md section {n}\n{body}\n")
        return []
    documented = {}
    for section in re.split(r"^## ", md, flags=re.MULTILINE):
        m = re.match(r"(\d+)\. ", section)
        if m:
            documented[int(m.group(1))] = "\n".join(b.strip("\n") for b in fenced(section))
    errors = []
    if set(documented) != set(printed):
        errors.append(
            f"verify.md sections {sorted(documented)} vs script sections {sorted(printed)}"
        )
    for n in sorted(set(documented) & set(printed)):
        errors += compare(documented[n], printed[n], f"verify.md §{n}")
    return errors


def main() -> None:
    check = "--check" in sys.argv[1:]
    errors = tutorial(check) + verify(check)
    if check:
        for e in errors:
            print("MISMATCH", e)
        print(f"--check: {len(errors)} mismatch(es) in docs/tutorial.md, docs/verify.md")
        sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
