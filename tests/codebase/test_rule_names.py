"""A rule is named after the script it runs (issue 37.4), so a job in the logs, the benchmarks or a dry run's list
leads to its script by name: rule `record_run` runs `record_run.py`."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A rule and the script its `script:` directive names (the next quoted path after `script:`, declared for a job
# worker or not: `in_worker("…")`).
RULE_SCRIPT = re.compile(r"""^(?:rule|checkpoint) (\w+):\n(?:(?!^(?:rule|checkpoint) ).*\n)*?    script:\n"""
                         r"""\s+(?:in_worker\()?["'][^"']*/(\w+)\.py["']""", re.MULTILINE)
# The rewritten questions' variant of a rule runs that rule's script on other inputs: `embed_rewritten_queries`.
VARIANT = "rewritten_"


def rule_scripts(root: Path) -> dict[str, str]:
    """Every rule of the workflow with a script, by name: its script's stem."""
    rules: dict[str, str] = {}
    for path in sorted([*root.glob("workflow/rules/**/*.smk"), root / "workflow/Snakefile"]):
        if path.exists():
            rules |= dict(RULE_SCRIPT.findall(path.read_text()))
    return rules


def misnamed_rules(rules: dict[str, str]) -> list[str]:
    """`rule -> script` of every rule whose name is not its script's stem (nor that with the rewritten variant's
    word)."""
    return [f"{rule} -> {script}.py" for rule, script in sorted(rules.items())
            if script not in (rule, rule.replace(VARIANT, "", 1))]


def test_every_rule_is_named_after_its_script() -> None:
    rules = rule_scripts(REPO)
    assert {"record_run", "record_history", "embed_queries", "embed_rewritten_queries"} <= set(rules)
    assert not misnamed_rules(rules), "rename the rule to its script's name:\n" + "\n".join(misnamed_rules(rules))


def test_the_check_reads_each_rule_s_own_script(tmp_path: Path) -> None:
    (tmp_path / "workflow/rules/methods").mkdir(parents=True)
    (tmp_path / "workflow/rules/methods/a.smk").write_text(
        'rule run_record:\n    input:\n        "x",\n    script:\n        "../scripts/record_run.py"\n\n\n'
        'rule all_done:\n    input:\n        "y",\n\n\n'
        'rule embed_rewritten_queries:\n    script:\n        "../../scripts/embed_queries.py"\n')
    rules = rule_scripts(tmp_path)
    assert rules == {"run_record": "record_run", "embed_rewritten_queries": "embed_queries"}
    assert misnamed_rules(rules) == ["run_record -> record_run.py"]
