"""skdp.accounting sits strictly below skdp.mechanisms (issue 40).

The mechanisms import the accounting's event classes; the accounting must never
import the mechanisms back, not even lazily inside a function: the Gaussian
calibration both need lives in ``skdp._gaussian_calibration``, below both.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "skdp"


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph():
    """Module -> skdp modules it imports, at top level or inside functions.

    Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` too, so a
    module's imports include every package above each module it names.
    """
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:  # relative: from the package holding this module
                    base = name.split(".")
                    base = base[: len(base) - node.level + is_package]
                    module = ".".join(base + ([module] if module else []))
                targets.add(module)
                targets.update(f"{module}.{alias.name}" for alias in node.names)
        closed = set()
        for target in targets:
            parts = target.split(".")
            closed.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        graph[name] = sorted(m for m in closed if m in paths and m != name)
    return graph


def test_no_accounting_module_reaches_the_mechanisms():
    graph = _import_graph()
    start = [m for m in graph if m.split(".")[:2] == ["skdp", "accounting"]]
    assert "skdp.accounting._events" in start and "skdp.accounting._pld" in start
    came_from = dict.fromkeys(start)
    todo = list(start)
    while todo:
        module = todo.pop()
        for target in graph[module]:
            if target not in came_from:
                came_from[target] = module
                todo.append(target)
    reached = sorted(m for m in came_from if m.startswith("skdp.mechanisms"))
    chains = []
    for module in reached:
        chain = [module]
        while came_from[chain[-1]] is not None:
            chain.append(came_from[chain[-1]])
        chains.append(" <- ".join(chain))
    assert not chains, chains
    # and the shared calibration imports neither package
    assert not [
        m
        for m in graph["skdp._gaussian_calibration"]
        if m.startswith(("skdp.accounting", "skdp.mechanisms"))
    ]


SCRIPT = """
import sys
from skdp.accounting import PrivacyBudget, describe_release, record_spend, track_budget
from skdp.accounting._pld import gaussian_epsilon

events = describe_release("gaussian", PrivacyBudget(1.0, 1e-5))
assert type(events[0]).__name__ == "GaussianEvent", events
assert 0 < gaussian_epsilon(events[0].noise_multiplier, 1e-5) < 1.0 + 1e-9
with track_budget(epsilon=2.0, delta=1e-4) as acc:
    record_spend(PrivacyBudget(1.0, 1e-5), "fit", mechanism="gaussian")
assert acc.total == PrivacyBudget(1.0, 1e-5), acc.total
try:
    import dp_accounting  # noqa: F401 - the optional extra: PLD paths too
except ImportError:
    pass
else:
    with track_budget(epsilon=2.0, delta=1e-5, accountant="pld") as acc:
        for _ in range(3):
            record_spend(PrivacyBudget(1.0, 1e-5), "fit", mechanism="gaussian")
    assert acc.total.epsilon < 2.0, acc.total
loaded = sorted(m for m in sys.modules if m.startswith("skdp.mechanisms"))
assert not loaded, loaded
print("ok")
"""


def test_the_accounting_works_without_loading_the_mechanisms():
    # the paths that imported skdp.mechanisms lazily: the analytic sigma of a
    # release described as "gaussian", and the Gaussian epsilon of the PLD code
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
