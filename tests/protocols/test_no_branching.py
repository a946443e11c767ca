"""Outside the protocol modules and the Lapse app, no code branches on the protocol or the item kind:
it asks the spec (protocols.get / protocols.for_kind) instead. The same regex as docs/architecture.md:

  grep -rnE "Protocol\\.(LAPSE|TWIST_B)|ItemKind\\.(LAPSE|TWIST)|== ?['\\"](lapse|twist|twist_b|judged)['\\"]" \\
      items annotation council adjudication keys goldkey      (migrations excluded)
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("items", "annotation", "council", "adjudication", "keys", "goldkey")
BRANCH = re.compile(r"""Protocol\.(LAPSE|TWIST_B)|ItemKind\.(LAPSE|TWIST)|== ?['"](lapse|twist|twist_b|judged)['"]""")


def _offending_lines() -> list[str]:
    lines = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*")):
            if not path.is_file() or "migrations" in path.parts or path.suffix not in {".py", ".html", ".txt", ".md"}:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if BRANCH.search(line):
                    lines.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return lines


def test_no_code_outside_the_protocols_branches_on_the_protocol_or_item_kind():
    offending = _offending_lines()
    assert offending == [], "ask the protocol spec instead:\n" + "\n".join(offending)
