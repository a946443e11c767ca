"""Proof by addition: a new protocol is its module in protocols/, its templates and one line of the registry
(`PROTOCOL_MODULES`). So the core apps never name a protocol: not by its name or item kind as a string
literal (a default `protocol="twist_b"`, a dict keyed by protocol, `kind == "lapse"`), not by importing a
protocol's module to special-case it, not in a core template. They ask the spec (`protocols.get`,
`protocols.for_kind`, `protocols.specs()`) instead.

The names are the registry's own, so a protocol registered later is covered without an edit here.
Migrations are not scanned: a data migration keeps the history it ran with (the names as they were then).
"""

import ast
import re
from pathlib import Path

import protocols

ROOT = Path(__file__).resolve().parents[2]
CORE_APPS = ("items", "annotation", "council", "adjudication", "keys", "scoring", "goldkey")
# A protocol's wing app holds the database-side code of that one protocol, which its spec names by dotted
# path (an importer, an agreement panel): it may name its protocol. `lapse/` is the Lapse protocol's wing,
# `judges/` the judged-answer protocol's, `chains/` TWIST Track C's. None is a core app, and no core app imports one.
WING_APPS = {"lapse": "lapse", "judges": "judged", "chains": "twist_c"}

# Each exception says why it is not a branch on a protocol.
ALLOWED_LITERALS: dict[tuple[str, str], str] = {}
ALLOWED_PROTOCOL_IMPORTS = {
    "items/services.py": "the TWIST and Lapse file importers, which their specs name (`importer`); they predate "
                         "wing apps and share the corpus and the bulk writer with the LoCoMo import",
    "council/gates.py": "the generation gates of PROTOCOL §5 are TWIST's (a spec opts in with `generation_gates`)",
    "council/fakellm.py": "the fake OpenAI-compatible server for tests and the demo answers the judged "
                          "protocol's judge prompts as well as annotation prompts",
}
PROTOCOL_MODULE = re.compile(r"^protocols\.(?!base$)([a-z_0-9]+)")


def _protocol_names() -> set[str]:
    return {name for spec in protocols.specs() for name in (spec.name, spec.item_kind)}


def _protocol_modules() -> set[str]:
    return {module.rsplit(".", 1)[1] for module in protocols.PROTOCOL_MODULES}


def naming_problems(source: str, where: str, *, names: set[str], modules: set[str]) -> list[str]:
    """Every place `source` (one Python module) names a protocol: a string literal that is a registered
    protocol's name or item kind, or an import of a protocol's own module."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            if (where, node.value) not in ALLOWED_LITERALS:
                problems.append(f"{where}:{node.lineno}: the string {node.value!r} names a protocol")
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported = [node.module] + ([f"{node.module}.{a.name}" for a in node.names] if node.module == "protocols" else [])
            for module in imported:
                match = PROTOCOL_MODULE.match(module)
                if match and match.group(1) in modules and where not in ALLOWED_PROTOCOL_IMPORTS:
                    problems.append(f"{where}:{node.lineno}: imports the protocol module {module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                match = PROTOCOL_MODULE.match(alias.name)
                if match and match.group(1) in modules and where not in ALLOWED_PROTOCOL_IMPORTS:
                    problems.append(f"{where}:{node.lineno}: imports the protocol module {alias.name}")
    return problems


def _core_sources():
    for app in CORE_APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def _templates_of_protocols() -> set[str]:
    """Every template a spec names: the protocol's own, which may say what it is."""
    named = set()
    for spec in protocols.specs():
        named |= {spec.item_template, spec.adjudication_template, spec.agreement_template}
        named |= {panel.template for panel in (*spec.agreement_panels, *spec.queue_panels)}
    return named - {""}


def test_no_core_app_names_a_protocol_by_its_name_kind_or_module():
    names, modules = _protocol_names(), _protocol_modules()
    problems = []
    for path in _core_sources():
        where = path.relative_to(ROOT).as_posix()
        problems += naming_problems(path.read_text(encoding="utf-8"), where, names=names, modules=modules)
    assert problems == [], "ask the protocol spec (protocols.get / for_kind / specs) instead:\n" + "\n".join(problems)


def test_no_core_template_names_a_protocol():
    names = "|".join(map(re.escape, sorted(_protocol_names())))
    quoted = re.compile(rf"""['"]({names})['"]""")
    own = _templates_of_protocols()
    problems = []
    for path in sorted((ROOT / "templates").rglob("*")):
        where = path.relative_to(ROOT / "templates").as_posix()
        if not path.is_file() or where in own or where.split("/", 1)[0] in WING_APPS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if quoted.search(line):
                problems.append(f"templates/{where}:{number}: {line.strip()}")
    assert problems == [], "a core template asks the protocol's spec or includes the protocol's template:\n" + "\n".join(problems)


def test_the_check_finds_a_default_a_dict_key_a_comparison_and_an_import():
    source = (
        'from protocols.twist_b import GOLD_TYPES\n'
        'from protocols import lapse\n'
        'def f(*, protocol="twist_b"):\n'
        '    return {"lapse": 1}.get(protocol) if protocol == "judged" else kind == "twist"\n'
    )
    problems = naming_problems(source, "keys/example.py", names=_protocol_names(), modules=_protocol_modules())
    found = {p.split(": ", 1)[1] for p in problems}
    assert found == {
        "imports the protocol module protocols.twist_b", "imports the protocol module protocols.lapse",
        "the string 'twist_b' names a protocol", "the string 'lapse' names a protocol",
        "the string 'judged' names a protocol", "the string 'twist' names a protocol",
    }


def test_the_base_module_and_the_registry_are_not_a_protocol():
    source = "import protocols\nfrom protocols import base, get\nfrom protocols.base import ItemContent\n"
    assert naming_problems(source, "items/x.py", names=_protocol_names(), modules=_protocol_modules()) == []


def test_each_wing_app_is_its_protocols_and_named_by_its_spec():
    for app, protocol in WING_APPS.items():
        spec = protocols.get(protocol)
        dotted = [spec.importer, *(panel.data for panel in (*spec.agreement_panels, *spec.queue_panels))]
        assert any(path.split(".", 1)[0] == app for path in dotted), f"{app}/ is not named by the {protocol} spec"
        assert app not in CORE_APPS
