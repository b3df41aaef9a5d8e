"""Config files read as plain, bounded data: a safe YAML loader that refuses tags, duplicate keys and alias bombs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rankbench.errors import InputError

MAX_CONFIG_BYTES = 1_000_000
# YAML nodes of a config once every alias is expanded (the demo config has about 250).
MAX_CONFIG_NODES = 100_000
# Nesting levels (the demo config has 5); PyYAML composes recursively, so deeper files would hit Python's limit.
MAX_CONFIG_DEPTH = 50


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts composed nodes and refuses a mapping key given twice (YAML would keep the last)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.composed = 0
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """Every node written in the file, counted (and its nesting measured) before either can pass its bound."""
        self.composed += 1
        if self.composed > MAX_CONFIG_NODES:
            raise _TooLarge(None, self.peek_event().start_mark)
        if self.depth >= MAX_CONFIG_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"values nest deeper than {MAX_CONFIG_DEPTH} levels",
                                              self.peek_event().start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice (first on line {seen[key].start_mark.line + 1}); "
                    "YAML would silently keep the last one", key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


class _TooLarge(Exception):
    """Raised while composing: more nodes than MAX_CONFIG_NODES (key: where it was found, if known)."""

    def __init__(self, key: str | None, mark: yaml.Mark | None) -> None:
        super().__init__(key)
        self.key, self.mark = key, mark


def _expanded_sizes(root: yaml.Node) -> dict[int, int]:
    """Nodes under each node with aliases expanded (shared nodes counted once per use); refuses cycles."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            on_path.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes[id(child)] for child in children), MAX_CONFIG_NODES + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            raise yaml.composer.ComposerError(None, None, "an alias refers to a node that contains it (a loop)",
                                              node.start_mark)
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_config_file(path: str | Path) -> dict[str, Any]:
    """One config file as plain data: a mapping at top level, standard YAML types only, within the size bounds."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise InputError(path, None, f"is {path.stat().st_size:,} bytes, more than a config may be "
                             f"({MAX_CONFIG_BYTES:,})", "A config names files; it does not hold data.")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, None, "does not exist", "Give the path of an existing config file.") from None
    except UnicodeDecodeError as error:
        raise InputError(path, None, f"is not UTF-8 text ({error.reason} at byte {error.start})",
                         "Save the config as UTF-8.") from None
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
        if root is not None:
            sizes = _expanded_sizes(root)
            if sizes[id(root)] > MAX_CONFIG_NODES:
                raise _TooLarge(_largest_key(root, sizes), None)
        data = loader.construct_document(root) if root is not None else None
    except _TooLarge as error:
        where = (f"line {error.mark.line + 1}" if error.mark is not None else error.key)
        raise InputError(path, where, f"expands to more than {MAX_CONFIG_NODES:,} YAML nodes "
                         "(aliases counted at every use)",
                         "Write the config out plainly; a config is a few hundred values.") from None
    except yaml.MarkedYAMLError as error:
        raise _yaml_error(path, error) from None
    except yaml.YAMLError as error:
        raise InputError(path, None, f"is not valid YAML ({error})", "Fix the YAML syntax.") from None
    finally:
        loader.dispose()
    if data is None:
        raise InputError(path, None, "is empty", "Write the config's keys (see docs/reference/config.md).")
    if not isinstance(data, dict):
        raise InputError(path, "top level", f"is a {type(data).__name__}, not a mapping of keys",
                         "Write the config as `key: value` lines at top level (see docs/reference/config.md).")
    return data


def _largest_key(root: yaml.Node, sizes: dict[int, int]) -> str | None:
    """The top-level key whose value expands to the most nodes: the one to name in the error."""
    if not isinstance(root, yaml.MappingNode) or not root.value:
        return None
    key_node, _ = max(root.value, key=lambda pair: sizes[id(pair[1])])
    return str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None


def _yaml_error(path: Path, error: yaml.MarkedYAMLError) -> InputError:
    """A YAML syntax or type error as the file's line, what is wrong and what to do."""
    mark = error.problem_mark or error.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
    problem = " ".join(str(part) for part in (error.context, error.problem) if part)
    if "tag" in problem and "constructor" in problem:
        return InputError(path, where, f"uses a YAML tag that is not plain data ({error.problem})",
                          "Remove the tag: configs are read with a safe loader (strings, numbers, lists, mappings).")
    if "'\\t'" in problem:
        return InputError(path, where, problem, "Indent with spaces, not tabs.")
    if "given twice" in problem:
        return InputError(path, where, problem, "Keep one of them (or rename the second).")
    if "levels" in problem:
        return InputError(path, where, problem, "A config is a few levels of keys and lists; write it out plainly.")
    if "a loop" in problem:
        return InputError(path, where, problem, "Remove the alias.")
    return InputError(path, where, problem, "Fix the YAML syntax (quote values that contain `: ` or `#`).")


def merge_configs(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`update` merged into `base` (nested mappings merged, other values replaced), as Snakemake merges configs."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_configs(merged[key], value)
        else:
            merged[key] = value
    return merged


def sorted_mappings(value: Any) -> Any:
    """Every mapping's keys sorted, all the way down (lists keep their order). A dataset config's key order means
    nothing; Snakemake compares a rule's params by their repr, so params built from a sorted config stay the same
    when only the order of the keys in the YAML changes."""
    if isinstance(value, Mapping):
        return {key: sorted_mappings(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))}
    if isinstance(value, list):
        return [sorted_mappings(item) for item in value]
    return value


def read_configs(paths: Sequence[str | Path], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The config of a run: every file read safely, later ones merged over earlier ones, then `--config` values."""
    config: dict[str, Any] = {}
    for path in paths:
        config = merge_configs(config, load_config_file(path))
    return merge_configs(config, overrides)
