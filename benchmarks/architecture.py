"""Shape of the source tree at two git revisions: files, function sizes, wide signatures, mypy errors.

Issue 14 asked for these before and after the architecture redesign. Each revision's
``src/redmem`` is exported with ``git archive`` and measured with :mod:`ast`:

- files and lines of the ``.py`` modules (median and p90 lines per file);
- code lines per function: lines of its body that hold code (no blank, comment-only or
  docstring lines), nested functions counted inside their parent and again on their own;
- functions with more than 8 parameters (``self`` / ``cls`` not counted);
- ``mypy --strict`` errors (the revision's own ``[tool.mypy]`` settings, today's mypy);
- a few counts the redesign targets: ``settings()`` reads, ``@query_method`` registrations,
  hand-written "int, not bool" checks and "first field of kind X" scans;
- import circles (strongly connected modules), counting ``if TYPE_CHECKING:`` imports and
  ``importlib.import_module`` of a module named by a string, with the graph and the check of
  ``tests/unit/test_architecture.py``; those closed only by annotation imports are counted apart;
- the public face: names in ``redmem.__all__``, names in every module's ``__all__``, public
  modules (no package face, no ``_``-prefixed part in their path), the names in the ``__all__`` lists
  of the faces and public modules, and the largest module and function by name.

    python benchmarks/architecture.py --before 54531ef --after HEAD

``--test-seconds BEFORE AFTER`` records two measured ``make test`` wall times beside them
(measured by the caller: the suite takes minutes and a loaded host makes it noisy).

With ``--locomo BEFORE.json AFTER.json`` (two ``locomo.py --reproducible`` runs, one per
revision) it also records each system's retrieval quality on both sides and whether every
figure but the timings is identical.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import json
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
WIDE = 8

def _architecture_test() -> Any:
    """``tests/**/test_architecture.py``, whose import graph and circle check this script reuses."""
    path = next(iter(sorted(ROOT.glob("tests/**/test_architecture.py"))))
    spec = importlib.util.spec_from_file_location("redmem_architecture_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module's annotations through it
    spec.loader.exec_module(module)
    return module


PATTERNS = {
    "settings_reads": re.compile(r"\bsettings\(\)"),
    "query_method_registrations": re.compile(r"^@query_method\b", re.M),
    "bool_checks": re.compile(r"isinstance\([^()]*,\s*bool\)"),
    "field_kind_scans": re.compile(r"for \w+ in [\w.]*fields\.values\(\) if isinstance\("),
}


def export(revision: str, target: Path) -> Path:
    """``src/redmem`` and ``pyproject.toml`` of ``revision`` unpacked under ``target``."""
    archive = subprocess.run(["git", "archive", revision, "src/redmem", "pyproject.toml"],
                             cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> int:
    """Lines of the body that hold code: not blank, not a comment, not the docstring."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return 0
    first, last = body[0].lineno, max(getattr(n, "end_lineno", n.lineno) or n.lineno for n in body)
    lines = source[first - 1:last]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return sum(1 for name in names if name not in ("self", "cls"))


def percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else 0.0


def declared_names(tree: ast.Module) -> list[str]:
    """The names of a module's ``__all__`` (a literal list or tuple), else none."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.unparse(node).split("=")[0] \
                and isinstance(node.value, (ast.List, ast.Tuple)):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def import_circles(package: Path) -> dict[str, Any]:
    """The import circles of the package (see the module docstring)."""
    check = _architecture_test()
    graph = check.import_graph(package.parent)
    found = check.circles(graph)
    runtime = check.circles({m: [e for e in edges if e.kind != "annotation"] for m, edges in graph.items()})
    return {"import_circles": len(found), "annotation_only_circles": len(found) - len(runtime),
            "modules_in_circles": sum(len(c) for c in found), "circles": found}


def public_face(package: Path, trees: dict[Path, ast.Module]) -> dict[str, Any]:
    """Names the package and its modules declare public, and the modules a reader can import: a
    public module is no package face (``__init__``) and has no ``_``-prefixed part; the public names
    are those of the ``__all__`` of the faces and public modules (what a reader can import)."""
    public = {p: t for p, t in trees.items()
              if not any(part.startswith("_") and part != "__init__.py" for part in p.relative_to(package).parts)}
    return {
        "top_level_names": len(declared_names(trees[package / "__init__.py"])),
        "module_all_names": sum(len(declared_names(t)) for t in trees.values()),
        "public_modules": sum(1 for p in public if p.name != "__init__.py"),
        "public_names": sum(len(declared_names(t)) for t in public.values()),
    }


def shape(package: Path) -> dict[str, Any]:
    """The measures of the module docstring over every ``.py`` file under ``package``."""
    files = sorted(package.rglob("*.py"))
    file_lines, sizes, wide, counts = [], [], [], dict.fromkeys(PATTERNS, 0)
    trees: dict[Path, ast.Module] = {}
    largest_function = (0, "")
    for path in files:
        text = path.read_text()
        source = text.splitlines()
        file_lines.append(len(source))
        trees[path] = ast.parse(text)
        for name, pattern in PATTERNS.items():
            counts[name] += len(pattern.findall(text))
        for node in ast.walk(trees[path]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sizes.append(code_lines(node, source))
                largest_function = max(largest_function, (sizes[-1], f"{path.relative_to(package)}:{node.name}"))
                if parameters(node) > WIDE:
                    wide.append(f"{path.relative_to(package)}:{node.name}")
    return {
        "files": len(files),
        "lines": sum(file_lines),
        "median_file_lines": statistics.median(file_lines),
        "p90_file_lines": percentile(file_lines, 0.9),
        "max_file_lines": max(file_lines),
        "files_over_400_lines": sum(1 for n in file_lines if n > 400),
        "functions": len(sizes),
        "median_function_lines": statistics.median(sizes),
        "p90_function_lines": percentile(sizes, 0.9),
        "max_function_lines": max(sizes),
        "functions_over_8_parameters": len(wide),
        "wide_functions": wide,
        "largest_module": str(max(files, key=lambda p: len(p.read_text().splitlines())).relative_to(package)),
        "largest_function": largest_function[1],
        **counts,
        **public_face(package, trees),
        **import_circles(package),
    }


def mypy_errors(tree: Path) -> int:
    """``mypy --strict`` errors over the exported tree (its own pyproject settings)."""
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", "pyproject.toml",
                          "src/redmem"], cwd=tree, capture_output=True, text=True)
    found = re.search(r"Found (\d+) errors?", run.stdout)
    if found:
        return int(found.group(1))
    if "Success" in run.stdout:
        return 0
    raise RuntimeError(f"mypy gave no count:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")


def measure(revision: str, with_mypy: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        tree = export(revision, Path(tmp))
        result = {"revision": revision, **shape(tree / "src" / "redmem")}
        if with_mypy:
            result["mypy_strict_errors"] = mypy_errors(tree)
        return result


ROWS = [
    ("files", "files"), ("lines", "lines"), ("median_file_lines", "median lines per file"),
    ("p90_file_lines", "p90 lines per file"), ("max_file_lines", "largest file"),
    ("files_over_400_lines", "files over 400 lines"), ("functions", "functions"),
    ("median_function_lines", "median code lines per function"),
    ("p90_function_lines", "p90 code lines per function"), ("max_function_lines", "largest function"),
    ("functions_over_8_parameters", "functions with > 8 parameters"),
    ("mypy_strict_errors", "mypy --strict errors"), ("settings_reads", "`settings()` reads"),
    ("query_method_registrations", "`@query_method` registrations"),
    ("bool_checks", "hand-written \"int, not bool\" checks"),
    ("field_kind_scans", "\"field of kind X\" scans"),
    ("import_circles", "import circles (annotation and importlib imports counted)"),
    ("annotation_only_circles", "circles closed only by `TYPE_CHECKING` imports"),
    ("modules_in_circles", "modules in circles"),
    ("top_level_names", "names in `redmem.__all__`"), ("module_all_names", "names in module `__all__`s"),
    ("public_modules", "public modules (no `_` part, faces not counted)"),
    ("public_names", "names in the `__all__`s of faces and public modules"), ("largest_module", "largest file, by name"),
    ("largest_function", "largest function, by name"), ("make_test_seconds", "`make test` seconds (measured apart)"),
]


def table(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = [f"| | before (`{before['revision']}`) | after (`{after['revision']}`) |", "|---|---:|---:|"]
    lines += [f"| {label} | {before.get(key, '-')} | {after.get(key, '-')} |" for key, label in ROWS]
    return "\n".join(lines) + "\n"


#: Keys of a locomo.py result that measure time, which no two runs share.
TIMED = ("assemble_ms", "embed_ms", "round_trips", "commands")


def quality(result: dict[str, Any]) -> dict[str, Any]:
    """A LoCoMo system's result without its timings."""
    return {key: value for key, value in result.items() if key not in TIMED and not key.endswith("_ms")}


def compare_locomo(before_path: str, after_path: str) -> dict[str, Any]:
    """Per system: recall@1 / @5, MRR on both sides, and whether all of its non-timing figures match."""
    before = json.loads(Path(before_path).read_text())["results"]
    after = json.loads(Path(after_path).read_text())["results"]
    return {
        system: {
            "identical": system in after and quality(before[system]) == quality(after[system]),
            **{f"{side} {metric}": runs[system][metric] for side, runs in (("before", before), ("after", after))
               for metric in ("recall@1", "recall@5", "mrr") if system in runs},
        }
        for system in before
    }


def locomo_table(systems: dict[str, Any]) -> str:
    lines = ["| system | R@5 before | R@5 after | MRR before | MRR after | every figure identical |",
             "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {name} | {row['before recall@5']:.4f} | {row['after recall@5']:.4f} | {row['before mrr']:.4f} "
              f"| {row['after mrr']:.4f} | {'yes' if row['identical'] else 'NO'} |" for name, row in systems.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision before the change")
    parser.add_argument("--after", default="HEAD", help="git revision after it (default HEAD)")
    parser.add_argument("--no-mypy", action="store_true", help="skip the mypy runs (about a minute each)")
    parser.add_argument("--locomo", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="two locomo.py --reproducible result files to compare")
    parser.add_argument("--test-seconds", nargs=2, type=float, metavar=("BEFORE", "AFTER"),
                        help="two measured `make test` wall times to record beside the shape")
    parser.add_argument("--out", default=str(RESULTS / "architecture.json"))
    options = parser.parse_args()
    revisions = {}
    for label, revision in (("before", options.before), ("after", options.after)):
        print(f"measuring {label}: {revision}", file=sys.stderr)
        resolved = subprocess.run(["git", "rev-parse", "--short", revision], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout.strip()
        revisions[label] = measure(resolved, not options.no_mypy)
        if options.test_seconds:
            revisions[label]["make_test_seconds"] = options.test_seconds[0 if label == "before" else 1]
    report = table(revisions["before"], revisions["after"])
    if options.locomo:
        revisions["locomo"] = compare_locomo(*options.locomo)
        report += "\nLoCoMo retrieval quality (`locomo.py --reproducible`, each revision):\n\n"
        report += locomo_table(revisions["locomo"])
    out = Path(options.out)
    out.write_text(json.dumps(revisions, indent=2) + "\n")
    out.with_suffix(".md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
