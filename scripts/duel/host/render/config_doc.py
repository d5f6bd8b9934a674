"""config/README.md, written from the config schema: every key (nested ones as ``duel.min_samples``)
with its type, its default and the schema's own description, so the schema stays the one home
of what each key means and this page cannot drift from it.

    .venv/bin/python -m duel.host.render.config_doc      # rewrites config/README.md

The default is the value in config/config.yaml (what a run uses unless told otherwise), else
the schema's ``default``; a key in neither is ``required`` (the schema says so) or ``unset``.
tests/host/render/test_config_doc.py holds the committed page to what this writes.
"""
import os
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))))
SCHEMA = os.path.join("config", "schema", "config.schema.yaml")
CONFIG = os.path.join("config", "config.yaml")
OUTPUT = os.path.join("config", "README.md")

HEADER = """# Configuration keys

Every key of `config/config.yaml`, as `config/schema/config.schema.yaml` defines it; each is
checked against that schema before any job is planned. Default: the value in `config/config.yaml`,
else the schema's. Override keys with `--config KEY=VALUE` or a file of your own
(`--configfile`, merged over the default key by key). Nested keys are written with a dot
(`duel.warmup_calls` is `warmup_calls` under `duel:`).

This page is generated from the schema by `.venv/bin/python -m duel.host.render.config_doc`:
change a key's wording in the schema, then run that command;
`tests/host/render/test_config_doc.py` checks the two agree.
"""


def load(repo=REPO):
    """(schema, config) as read from ``repo``."""
    with open(os.path.join(repo, SCHEMA)) as handle:
        schema = yaml.safe_load(handle)
    with open(os.path.join(repo, CONFIG)) as handle:
        config = yaml.safe_load(handle) or {}
    return schema, config


def resolved(node, schema):
    """A schema node with a local ``$ref`` merged in (the node's own keys win)."""
    ref = node.get("$ref")
    if not ref:
        return node
    target = schema
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    merged = dict(resolved(target, schema))
    merged.update((key, value) for key, value in node.items() if key != "$ref")
    return merged


def keys(schema):
    """(dotted name, node, required) of every key, parents before their children, in the
    schema's order; a pattern of keys (``images``) appears as ``images.<pattern>``."""
    def walk(node, prefix, required):
        for name, child in node.get("properties", {}).items():
            child = resolved(child, schema)
            yield prefix + name, child, name in required
            yield from walk(child, prefix + name + ".", set(child.get("required", ())))
        for pattern, child in node.get("patternProperties", {}).items():
            yield prefix + pattern_name(pattern), resolved(child, schema), False
    return list(walk(schema, "", set(schema.get("required", ()))))


def pattern_name(pattern):
    """A readable stand-in for a key pattern: the image keys' ``<era>-<device>``."""
    if pattern.endswith("-(cpu|cuda)$"):
        return "<era>-<device>"
    return "<%s>" % pattern


def bounds(node):
    """' >= 1', ' > 0, <= 10': a number's bounds as the schema gives them."""
    parts = []
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
                      ("exclusiveMaximum", "<")):
        if key in node:
            parts.append("%s %s" % (sign, value_text(node[key])))
    return " " + ", ".join(parts) if parts else ""


def type_text(node, schema):
    """The type of a key in a few words: ``list from (cpu, cuda)``, ``integer >= 1``."""
    node = resolved(node, schema)
    for alternatives in ("oneOf", "anyOf"):
        if alternatives in node:
            return ", or ".join(type_text(each, schema) for each in node[alternatives])
    if "enum" in node:
        return "one of (%s)" % ", ".join(value_text(value) for value in node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        items = resolved(node.get("items", {}), schema)
        if "enum" in items:
            return "list from (%s)" % ", ".join(value_text(value) for value in items["enum"])
        return "list of " + type_text(items, schema)
    if kind == "object":
        return "mapping"
    if kind == "string" and node.get("pattern") == schema["$defs"]["name"]["pattern"]:
        return "name (letters, digits, . _ -)"
    if kind in ("integer", "number"):
        return kind + bounds(node)
    return kind or "any"


def value_text(value):
    """A value as it is written in config.yaml (flow style)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[%s]" % ", ".join(value_text(each) for each in value)
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (key, value_text(each))
                                  for key, each in value.items())
    return str(value)


def default_text(name, node, required, config):
    """The key's default: config.yaml's value, else the schema's, else required or unset."""
    value = config
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            break
        value = value[part]
    else:
        return "`%s`" % value_text(value)
    if node.get("properties") and not node.get("default"):
        return "`%s`" % value_text({key: child["default"] for key, child
                                    in node["properties"].items() if "default" in child})
    if "default" in node:
        return "`%s`" % value_text(node["default"])
    return "required" if required else "unset"


def cell(text, prose=False):
    """Text safe in one Markdown table cell; in ``prose`` a ``<name>`` stays text, not HTML."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text.replace("<", "\\<") if prose else text


def render(schema, config):
    """The whole page, as text."""
    lines = [HEADER, "| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for name, node, required in keys(schema):
        lines.append("| `%s` | %s | %s | %s |" % (
            name, cell(type_text(node, schema)), cell(default_text(name, node, required, config)),
            cell(node.get("description", ""), prose=True)))
    return "\n".join(lines) + "\n"


def main(repo=REPO):
    """Rewrite config/README.md from the schema and the default config."""
    path = os.path.join(repo, OUTPUT)
    with open(path, "w") as handle:
        handle.write(render(*load(repo)))
    print("wrote %s" % os.path.relpath(path, repo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
