"""Every public name of the Python API has a docstring (test/python/
docstrings.test), so that `help(zero.Graph)` documents what docs/python.md
does.

Walks `zero.__all__`, `zero.nn.__all__`, `zero.torch.__all__` and the public
names of the extension `zero._zero` that these do not export (the
ZeroOptions of graph.config.zero; not `_zero.Trainer`, which `zero.Trainer`
wraps), with every public (non-underscore) method, static method and
property of each class among them, inherited ones included. Prints
`missing: NAME` for each whose docstring is empty or only what pybind11
writes by itself (the signature; for an overloaded function, "Overloaded
function." and the overloads' signatures: each overload needs its own
text), then `N public names, M without a docstring`.

zero.torch imports torch, an optional install that takes seconds to
import, so its names are read from its source (ast) instead.
"""

import ast
import importlib.util
import inspect
import re
import types

import zero
import zero.nn

checked = 0
missing = []


def is_signature(line, name):
    """A line pybind11 writes by itself for `name`: its signature (`name(`
    or, for a property's getter, `(`), numbered when overloaded."""
    return re.match(r"\s*(\d+\.\s+)?%s\(.*\)(\s*->.*)?\s*$" % re.escape(name),
                    line) is not None


def has_text(doc, name):
    """Whether `doc` says something beyond the signatures; for an
    overloaded function, whether every overload does."""
    if not doc or not doc.strip():
        return False
    lines = doc.strip().splitlines()
    if len(lines) > 1 and lines[1].strip() == "Overloaded function.":
        sections, current = [], None
        for line in lines[2:]:
            if re.match(r"\d+\.\s+%s\(" % re.escape(name), line):
                current = []
                sections.append(current)
            elif current is not None and line.strip():
                current.append(line)
        return bool(sections) and all(sections)
    return any(line.strip() and not is_signature(line, name)
               for line in lines)


def record(qualified, doc, name):
    global checked
    checked += 1
    if not has_text(doc, name):
        missing.append(qualified)


def check_class(qualified, cls):
    record(qualified, cls.__dict__.get("__doc__"), cls.__name__)
    # Inherited members too: help(zero.nn.Graph) shows zero.Graph's. Only the
    # class's own docstring counts, not one inherited through getdoc.
    for attr in sorted(dir(cls)):
        if attr.startswith("_"):
            continue
        for owner in cls.__mro__:
            if attr in owner.__dict__:
                member = owner.__dict__[attr]
                break
        else:
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property):
            doc = member.__doc__
        elif callable(member):
            doc = getattr(member, "__doc__", None)
        else:
            continue
        record(f"{qualified}.{attr}", doc, attr)


def check_module(prefix, module):
    record(prefix, module.__doc__, prefix)
    for name in module.__all__:
        if prefix == "zero" and name == "from_torch":
            continue  # zero.torch's, read from its source below
        value = getattr(module, name)
        qualified = f"{prefix}.{name}"
        if isinstance(value, types.ModuleType):
            continue  # checked as a module of its own
        if inspect.isclass(value):
            check_class(qualified, value)
        else:
            record(qualified, value.__doc__, name)


def source_definitions(module_name):
    """The top-level classes and functions a module's source defines, and
    the names it imports from other zero modules: {name: node or module}."""
    path = importlib.util.find_spec(module_name).origin
    with open(path) as source:
        tree = ast.parse(source.read(), path)
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found[node.name] = node
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith("zero."):
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return tree, found


def check_source_module(prefix):
    """`prefix`'s __all__, read from its source, without importing it."""
    tree, found = source_definitions(prefix)
    record(prefix, ast.get_docstring(tree), prefix)
    exported = next(ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.Assign) and
                    any(getattr(t, "id", None) == "__all__"
                        for t in node.targets))
    for name in exported:
        node = found.get(name)
        if isinstance(node, str):  # imported from another zero module
            node = source_definitions(node)[1].get(name)
        qualified = f"{prefix}.{name}"
        if node is None:
            record(f"{qualified} (no definition found)", None, name)
            continue
        record(qualified, ast.get_docstring(node), name)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and \
                        not member.name.startswith("_"):
                    record(f"{qualified}.{member.name}",
                           ast.get_docstring(member), member.name)


check_module("zero", zero)
check_module("zero.nn", zero.nn)
check_source_module("zero.torch")

# What the extension hands out without the package exporting it (the
# ZeroOptions of graph.config.zero), and any public name added to it but not
# to __all__. Its Trainer is private: zero.Trainer wraps it.
exported = {id(getattr(m, n)) for m in (zero, zero.nn) for n in m.__all__
            if n != "from_torch"}
for name in sorted(dir(zero._zero)):
    value = getattr(zero._zero, name)
    if name.startswith("_") or name == "Trainer" or id(value) in exported:
        continue
    if inspect.isclass(value):
        check_class(f"zero._zero.{name}", value)
    elif callable(value):
        record(f"zero._zero.{name}", value.__doc__, name)

for name in missing:
    print("missing:", name)
print(f"{checked} public names, {len(missing)} without a docstring")
