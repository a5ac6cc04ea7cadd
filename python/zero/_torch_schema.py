"""Every argument of an imported ATen call is honoured or refused.

Each mapping of _torch_ops declares, by the names of the op's schema
(`node.target._schema`), the arguments it honours. Before a call is
lowered, every other argument is read from the node (positional or
keyword) and held against the schema's default: a value other than the
default is refused, naming the argument, the op, the module path and the
user's source line. So a mapping cannot drop an argument silently: what it
does not declare, it refuses.
"""

import torch

from zero._torch_values import UnsupportedModuleError, where


def given_arguments(node):
    """(argument, value) for every argument of the node's schema that the
    call gives, positionally or by keyword; arguments left to their default
    are absent."""
    schema = node.target._schema
    given = []
    for index, argument in enumerate(schema.arguments):
        if not argument.kwarg_only and index < len(node.args):
            given.append((argument, node.args[index]))
        elif argument.name in node.kwargs:
            given.append((argument, node.kwargs[argument.name]))
    return given


def _is_default(argument, value):
    if isinstance(value, torch.fx.Node):
        return False
    if not argument.has_default_value():
        return False
    default = argument.default_value
    if isinstance(value, (list, tuple)) or isinstance(default, (list, tuple)):
        return (isinstance(value, (list, tuple))
                and isinstance(default, (list, tuple))
                and list(value) == list(default))
    if isinstance(value, bool) != isinstance(default, bool):
        return False
    return value == default


def _shown(value):
    if isinstance(value, torch.fx.Node):
        return f"a computed tensor ('{value.name}')"
    return repr(value)


def check_arguments(node, honoured, hints=None):
    """Refuses the call where an argument that `honoured` does not name has
    a value other than its schema's default. `hints` maps an argument's
    name to what the user can do instead."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return
    names = {argument.name for argument in schema.arguments}
    unknown = set(honoured) - names
    if unknown:
        # A mapping that names an argument the op does not have was written
        # against another op or another PyTorch: not the user's mistake.
        raise UnsupportedModuleError(
            f"internal: the importer's mapping of {node.target} honours "
            f"{sorted(unknown)}, which its schema ({schema}) does not have")
    for argument, value in given_arguments(node):
        if argument.name in honoured or _is_default(argument, value):
            continue
        default = (f" (default {argument.default_value!r})"
                   if argument.has_default_value() else "")
        hint = (hints or {}).get(argument.name)
        raise UnsupportedModuleError(
            f"{node.target}: argument '{argument.name}' = {_shown(value)}"
            f"{default} is not supported by the importer {where(node)}"
            + (f"; {hint}" if hint else ""))


def normalized(node, args, kwargs):
    """The call's resolved arguments with every argument that may be given
    by position given by position (from a keyword, else its default), and
    only keyword-only ones left as keywords: a mapping reads args[i]
    whichever way the call spelled it."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return args, kwargs
    args, kwargs = list(args), dict(kwargs)
    for index, argument in enumerate(schema.arguments):
        if argument.kwarg_only or index < len(args):
            continue
        if argument.name in kwargs:
            args.append(kwargs.pop(argument.name))
        elif argument.has_default_value():
            args.append(argument.default_value)
        else:
            break
    return args, kwargs
