"""A score report as Markdown or CSV. Pure: the report dict in, text out; no figure is computed here.

Both cite the key version and its SHA-256 first, and both keep the paired metrics together: a row
never shows CR without HNS and AS beside it.
"""

from goldkey.lib.csvsafe import csv_text
from scoring.metrics import LONG, SCORE_LEVEL_METRICS, SHORT

HEADLINE = ("CR", "AS", "HNS", "Attr", "GCR")


def fraction(figure: dict) -> str:
    return f"{figure['value']:.3f} ({figure['k']}/{figure['n']})"


def interval(pair) -> str:
    return f"[{pair[0]:.2f}, {pair[1]:.2f}]" if pair else "—"


def report_markdown(report: dict) -> str:
    key = report["key"]
    lines = [
        f"# Scores against {key['version']}",
        "",
        f"Key `{key['version']}`, SHA-256 `{key['sha256']}`.",
        "",
        "| run | CR | CR Wilson | CR bootstrap | AS | AS Wilson | AS bootstrap | HNS | HNS Wilson | HNS bootstrap "
        "| Attr | GCR | fact-only | balanced accuracy |",
        "|---|" + "---|" * 13,
    ]
    for name, run in report["runs"].items():
        cells = [name]
        for metric in ("CR", "AS", "HNS"):
            figure = run[metric]
            cells += [fraction(figure), interval(figure["wilson"]), interval(figure.get("bootstrap"))]
        cells += [fraction(run["Attr"]), fraction(run["GCR"]), fraction(run["fact_only"]), f"{run['balanced_accuracy']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## History strata (≤ 620 turns vs longer)", "",
              "| run | stratum | items | CR | AS | HNS | Attr | GCR |", "|---|---|---|---|---|---|---|---|"]
    for name, run in report["runs"].items():
        for stratum in (SHORT, LONG):
            s = run["strata"][stratum]
            lines.append(f"| {name} | {stratum} | {s['n_items']} | " + " | ".join(fraction(s[m]) for m in HEADLINE) + " |")
    family = report["family"]
    lines += [
        "",
        "## Pairwise exact McNemar",
        "",
        f"Family: {family['size']} tests ({family['test']}, {family['correction']}): {family['description']} "
        f"on {' and '.join(family['classes'])} items (`--family {family['spec']}`). "
        "b = a right and b wrong, c = the reverse.",
        "",
        "| a | b | class | b | c | p | p (Holm) | family size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in report["mcnemar"]:
        lines.append(f"| {t['a']} | {t['b']} | {t['class']} | {t['b_count']} | {t['c_count']} | {t['p']:.4g} | "
                     f"{t['p_holm']:.4g} | {family['size']} |")
    lines += _multi_ingest_markdown(report.get("multi_ingest") or {})
    if report.get("outside_key"):
        lines += ["", "## Predictions outside this key", "",
                  "Scored on the key's items; these predictions name items an earlier version held.", ""]
        lines += [f"- {name}: {', '.join(ids)}" for name, ids in report["outside_key"].items()]
    if report.get("unscorable"):
        lines += ["", "## Not scored against this key", ""]
        lines += [f"- {name}: {why}" for name, why in report["unscorable"].items()]
    return "\n".join(lines) + "\n"


def _multi_ingest_markdown(groups: dict) -> list[str]:
    """The page's ingest section: one point per ingest (per-item runs first, then score-level figures as the
    system gave them), mean, range, and the conversation x ingest bootstrap over the per-item runs."""
    if not groups:
        return []
    lines = ["", "## Ingests", "",
             "One point per ingest: per-item runs first, then score-level-only ingests (as reported; not rescored). "
             "The hierarchical conversation × ingest bootstrap resamples the per-item runs only.", "",
             "| system | ingests | metric | points | mean | range | hierarchical bootstrap |", "|---|---|---|---|---|---|---|"]
    for base, group in groups.items():
        counts = f"{group['ingests']['per_item']} per-item, {group['ingests']['score_level']} score-level"
        for metric in SCORE_LEVEL_METRICS:
            section = group[metric]
            points = ", ".join(f"{p:.3f}" for p in section["points"]) or "—"
            mean = f"{section['mean']:.3f}" if section["points"] else "—"
            span = f"{section['range'][0]:.3f}–{section['range'][1]:.3f}" if section["points"] else "—"
            lines.append(f"| {base} | {counts} | {metric} | {points} | {mean} | {span} | {interval(section.get('hierarchical'))} |")
    for group in groups.values():
        for ingest in group["score_level"]:
            figures = ", ".join(f"{m} {v:.3f}" for m, v in ingest["scores"].items())
            note = f": {ingest['note']}" if ingest["note"] else ""
            lines.append(f"- {ingest['name']} (ingest {ingest['ingest']}, scores only): {figures} — from "
                         f"`{ingest['source']['name']}` (sha256 `{ingest['source']['sha256']}`){note}")
    return lines


CSV_COLUMNS = ["key_version", "key_sha256", "run", "metric", "k", "n", "value", "wilson_low", "wilson_high",
               "bootstrap_low", "bootstrap_high"]


def report_csv(report: dict) -> str:
    """One row per run and metric (CR, AS and HNS are always all present for a run). Run names come from
    imported files, so every cell goes through the formula-safe writer."""
    key = report["key"]
    rows = []
    for name, run in report["runs"].items():
        for metric in (*HEADLINE, "fact_only"):
            figure = run[metric]
            boot = figure.get("bootstrap") or [None, None]
            rows.append([key["version"], key["sha256"], name, metric, figure["k"], figure["n"], float(figure["value"]),
                         float(figure["wilson"][0]), float(figure["wilson"][1]), *boot])
    return csv_text(CSV_COLUMNS, rows)
